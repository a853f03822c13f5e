"""``patchpose`` command line: :func:`build_parser` gathers the commands of each group (one module each:
:mod:`.train`, :mod:`.estimate`, :mod:`.extract`, :mod:`.data`, :mod:`.evaluate`), :func:`main` runs one.

Errors from bad input (:class:`~patchpose.errors.PatchPoseError`, missing files) print one clear line
and exit with status 2; an interrupted command exits with 130.
"""

from __future__ import annotations

import argparse
import logging
import sys

from ..errors import CLEANUP_TAG
from . import data, estimate, evaluate, extract, train

log = logging.getLogger("patchpose")

#: the command groups, in the order ``patchpose --help`` lists them
GROUPS = (train, estimate, extract, data, evaluate)


class _ShowDefaults(argparse.HelpFormatter):
    """Each option's help ends with its default where it has one worth saying (not None, a flag's False, an empty
    list) and the help does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        d = action.default
        if not action.option_strings or d is None or d is argparse.SUPPRESS or isinstance(d, bool) or d == []:
            return text
        return text if "default" in text.lower() else f"{text} (default: %(default)s)"


#: options (and choices) that left patchpose, said as such where a command line still gives them
REMOVED_OPTIONS = (
    "--estimator",
    "--protocol",
    "--descriptor-weights",
    "--orinet-weights",
    "--include-pruned",
    "--b-scale-dist",
    "hardnet",
    "sosnet",
)

#: what an option of these names says where its command gives it no text of its own
_COMMON_HELP = {
    "--out": "output folder",
    "--seed": "random seed",
    "--no-progress": "no progress bars",
    "--max-side": "photos resized so that their longer side is at most this (pixels)",
}


class _Parser(argparse.ArgumentParser):
    """Every ``patchpose`` parser, its subcommands' too (``add_subparsers`` makes them of this class): options
    show their defaults."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _ShowDefaults)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):
        # an option without a help text still shows its default (the formatter adds it to a text, and argparse
        # shows none without one); the common ones say what they are
        if kwargs.get("help") is None and args and str(args[0]).startswith("--"):
            kwargs["help"] = _COMMON_HELP.get(args[0], "")
        return super().add_argument(*args, **kwargs)

    def error(self, message: str):
        # the one option of the whole program, given after the command: say where it goes
        if "unrecognized arguments" in message and "--max-image-pixels" in message:
            message += (
                " (--max-image-pixels goes before the command: patchpose --max-image-pixels N COMMAND ...)"
            )
        removed = [o for o in REMOVED_OPTIONS if o in message.replace("'", " ").split()]
        if removed and ("unrecognized arguments" in message or "invalid choice" in message):
            message += f" ({', '.join(removed)}: removed; git tag {CLEANUP_TAG} of patchpose has it)"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = _Parser(
        prog="patchpose",
        description="Keypoint scale and orientation, learned without labels.",
        epilog="Start here: 'patchpose demo'; 'patchpose estimate photo.jpg' (poses at SIFT keypoints); 'patchpose "
        "match a.jpg b.jpg' (two photos); 'patchpose extract images/ --out f.h5' (a collection). The guide: "
        "docs/usage.md.",
    )
    p.add_argument("--version", action="version", version=f"patchpose {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    p.add_argument(
        "--max-image-pixels",
        type=int,
        default=None,
        metavar="N",
        help="refuse image files of more than N pixels, read from their header before decoding (default "
        "100,000,000, or the environment variable PATCHPOSE_MAX_IMAGE_PIXELS); goes before the command",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    import os

    from ..data.image_header import MAX_PIXELS_ENV
    from ..errors import PatchPoseError

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    log.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    had_limit = os.environ.get(MAX_PIXELS_ENV)
    try:
        if args.max_image_pixels is not None:
            _set_max_image_pixels(args.max_image_pixels)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    # OSError: e.g. --out under a file, a folder in the way
    except (PatchPoseError, OSError, ValueError) as e:
        print(f"patchpose {args.command}: error: {e}", file=sys.stderr)
        return 2
    finally:  # --max-image-pixels holds for this command (and the processes it starts), not after it
        if had_limit is None:
            os.environ.pop(MAX_PIXELS_ENV, None)
        else:
            os.environ[MAX_PIXELS_ENV] = had_limit


def _set_max_image_pixels(n: int) -> None:
    """``--max-image-pixels``: the limit for this process and the processes it starts (data workers)."""
    import os

    from ..data.image_header import MAX_PIXELS_ENV
    from ..errors import InputError

    if n < 1:
        raise InputError(f"--max-image-pixels must be a whole number of pixels >= 1, got {n}")
    os.environ[MAX_PIXELS_ENV] = str(n)


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["main", "build_parser"]
