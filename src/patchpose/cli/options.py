"""Options that several ``patchpose`` commands share, and the helpers that turn them into library arguments."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

READ_HELP = (
    "change how the model is read (its read plan, stored in the weights file; repeatable): passes=N "
    "(reads per keypoint, an integer), orientation_offset=OCTAVES, descriptor_region=RADII (decimals or "
    "fractions such as -4/3), reread_scale=true|false; "
    "docs/usage.md, 'The read plan'"
)


def add_weights(p: argparse.ArgumentParser, read: bool = True, model: str | None = None) -> None:
    """``--weights`` and, with ``read``, ``--read KEY=VALUE`` (commands that read a model the way its weights
    file says, unless told otherwise); ``model`` names what the command reads without ``--weights`` (None: the
    reader's model, ``MODELS["estimate"]``)."""
    from ..recipes import MODELS

    model = model or f"{MODELS['estimate']}, the reader's model"
    p.add_argument(
        "--weights",
        default=None,
        help=f"safetensors file or bundled model name, e.g. patchpose-v10 (default: {model})",
    )
    if read:
        add_read(p)


def add_read(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--read KEY=VALUE`` (repeatable), collected as a list of strings for :func:`read_plan`."""
    p.add_argument("--read", action="append", default=[], metavar="KEY=VALUE", help=help or READ_HELP)


def add_peers(p: argparse.ArgumentParser, enables: str) -> None:
    """``--peers DIR``: the folder of the peers' weights, for the benchmarks only; ``enables`` says
    what it adds to this command."""
    p.add_argument(
        "--peers",
        default=None,
        metavar="DIR",
        help="folder of the peers' weights (its README names the files), for the benchmarks only, "
        f"never bundled: {enables}",
    )


def add_descriptor(p: argparse.ArgumentParser, peers: bool = False) -> None:
    """``--descriptor``: the descriptor cut at each pose, for matching; with ``peers`` (commands that take
    ``--peers DIR``) also the peers' ``tfeat`` and ``hardtfeat``."""
    p.add_argument(
        "--descriptor",
        choices=("sift", *(("tfeat", "hardtfeat") if peers else ())),
        default="sift",
        help="descriptor computed on the patch cut at each keypoint's pose"
        + ("; tfeat and hardtfeat take their weights from --peers" if peers else ""),
    )


def read_plan(a: argparse.Namespace) -> dict[str, float | bool]:
    """The ``--read KEY=VALUE`` changes as :meth:`~patchpose.reading.ReadPlan.replace` takes them; unknown
    names and bad values are an :class:`~patchpose.InputError` here, before any work."""
    from ..reading import ReadPlan

    return ReadPlan.parse(a.read)


def plain_sigterm() -> None:
    """A kill (SIGTERM) ends a command that runs COLMAP as it ends any other: pycolmap installs glog's failure
    handler when imported, which printed a native stack trace of some 24 lines. Its handlers of crashes stay.
    Nothing where pycolmap is not installed (the command then says so in one line)."""
    import signal

    import cv2  # noqa: F401 - before pycolmap: pycolmap imported first breaks OpenCV's PNG writer

    try:
        import pycolmap  # noqa: F401 - imported here so that its handler is in place before it is replaced
    except ImportError:
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):  # glog's C handler, or the default
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def print_line(text: str) -> None:
    """Write ``text`` and a newline in one call and flush: under torchrun every rank prints its own line, and
    a pipe keeps writes under 4 KiB whole, so the ranks' lines never interleave."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def print_results(out: str | Path, wrote: str) -> None:
    """Print an evaluation's ``OUT/results.md``, then ``wrote ...`` (what it wrote, and its time)."""
    print(Path(out, "results.md").read_text())
    print(wrote)
