"""``patchpose extract`` and ``extract-merge``: a folder of images as an hloc features file with our poses
(:mod:`patchpose.integrations.extract`), resumable after a kill, in shards that a merge joins; ``patchpose
colmap``: a folder of images reconstructed by COLMAP's own pipeline (:mod:`patchpose.integrations.colmap`). ``extract``
describes keypoints with the recipe ``pose`` (:data:`patchpose.recipes.RECIPES`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..data.keypoints import MAX_KEYPOINTS
from ..errors import InputError
from ..integrations.extract import DESCRIPTORS, DETECTORS
from ..integrations.kornia import ALIKED_MODELS
from ..recipes import MODELS
from .options import add_weights, plain_sigterm

#: the ALIKED ``--aliked`` reads where ``--aliked-model`` is not given
ALIKED_DEFAULT = "aliked-n16"


def extract_command(a: argparse.Namespace) -> int:
    """``extract IMAGES --out FILE``: write (or finish) the features file."""
    from ..integrations.extract import extract_features, parse_shard

    parse_shard(a.shard)  # a bad spec is an error before the model loads
    check_max_keypoints(a.max_keypoints)  # the option named (ALIKED's extractor says max_keypoints)
    extract = _aliked(a)
    if extract is not None and (a.detector is not None or a.descriptor is not None):
        raise InputError("--aliked brings its own keypoints and descriptors: no --detector or --descriptor")
    before = _stamp(a.out)
    out = extract_features(
        a.images,
        a.out,
        estimator=a.weights,
        detector=a.detector or "sift",
        descriptor=a.descriptor or "sift",
        max_keypoints=a.max_keypoints,
        shard=a.shard,
        progress=not a.no_progress,
        extract=extract,
        unturn=a.unturn,
        unturn_window=a.unturn_window,
        unturn_pairs=a.unturn_pairs,
        unturn_retrieval=a.unturn_retrieval,
        overwrite=a.overwrite,
    )
    if before is not None and _stamp(out) == before:  # a finished file of these settings: left as it was
        print(f"{out} was complete already: nothing written")
    else:
        print(f"wrote {out}")
    if a.unturn:
        print(_turns_line(*_file_turns(out), "each group's patchpose_turn_* attributes say its turn"))
    return 0


def _turns_line(applied: dict, lost: list[str], where: str) -> str:
    """What un-turning did, one line for ``extract --unturn`` and ``colmap --unturn`` alike: how many photos were
    turned by more than :data:`~patchpose.matching.upright.SNAP_DEG` (SIFT described upright takes each voted turn as
    it is: a few degrees is no turn, as for a learned feature), and which had no turn found; ``where`` says where
    each photo's turn is kept."""
    from ..matching.upright import SNAP_DEG

    turned = [n for n, t in applied.items() if abs((float(t) + 180.0) % 360.0 - 180.0) > SNAP_DEG]
    return (
        f"un-turned {len(turned)} of {len(applied)} photos (by more than {SNAP_DEG:g}°)"
        + (
            f"; no turn found for {len(lost)}: {', '.join(lost[:5])}{' …' if len(lost) > 5 else ''}"
            if lost
            else ""
        )
        + f"; {where}"
    )


def _file_turns(path) -> tuple[dict, list[str]]:
    """An ``extract --unturn`` file's applied turns (name → degrees) and the photos without a found turn."""
    import json

    import h5py

    from ..integrations.extract import TURN, TURNS

    with h5py.File(path, "r") as f:
        applied = json.loads(f.attrs.get(TURNS, "{}"))
        lost = [n for n in sorted(applied) if n in f and not bool(f[n].attrs.get(f"{TURN}_found", True))]
    return applied, lost


def _stamp(path) -> tuple[int, int] | None:
    """A file's (size, modification time in ns), or None where there is no file."""
    import os
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def check_max_keypoints(n) -> None:
    """``--max-keypoints N`` of ``extract`` and ``colmap``: a one-line :class:`InputError` naming the option unless
    ``N`` is from 1 to :data:`~patchpose.data.keypoints.MAX_KEYPOINTS` (the library's checks, reached first with
    ``--aliked`` and in ``colmap``, name its keyword, ``max_keypoints``)."""
    from ..errors import is_int_in

    if not is_int_in(n, 1, MAX_KEYPOINTS):
        raise InputError(f"--max-keypoints must be an integer from 1 to {MAX_KEYPOINTS:,}, got {n!r}")


def _aliked(a: argparse.Namespace):
    """``--aliked FILE [--aliked-model M]`` as an extractor (None without ``--aliked``); ``--aliked-model``
    without it is a one-line error."""
    if a.aliked is None:
        if a.aliked_model is not None:
            raise InputError("--aliked-model needs --aliked FILE")
        return None
    from ..integrations.kornia import aliked_extractor

    return aliked_extractor(
        a.aliked, a.aliked_model or ALIKED_DEFAULT, max_keypoints=min(a.max_keypoints, MAX_KEYPOINTS)
    )


def merge_command(a: argparse.Namespace) -> int:
    """``extract-merge SHARD... --out FILE``: join the shard files of ``extract --shard i/n``."""
    from ..integrations.extract import merge_features

    print(f"wrote {merge_features(a.shards, a.out)}")
    return 0


def colmap_command(a: argparse.Namespace) -> int:
    """``colmap IMAGES --out DIR``: one COLMAP reconstruction (COLMAP's own pipeline); prints its summary."""
    from ..integrations.colmap import check_settings, reconstruct, summary_table

    plain_sigterm()  # a kill ends it without pycolmap's native stack trace
    set_threads(a.threads)  # torch's too (ALIKED, the votes); first: its message names the option
    check_max_keypoints(a.max_keypoints)  # named as the option (the library's check says max_keypoints)
    if a.seed < 0:  # named as the option too (the library's check says seed)
        raise InputError(f"--seed must be a whole number >= 0, got {a.seed}")
    check_settings(a.max_keypoints, a.seed, a.threads)
    # --aliked-model without --aliked: its one-line error before any work
    extract = _aliked(a)
    before = _stamp(Path(a.out) / "stats.json")
    s = reconstruct(
        a.images,
        a.out,
        extract=extract,
        unturn=a.unturn,
        unturn_window=a.unturn_window,
        max_keypoints=a.max_keypoints,
        seed=a.seed,
        threads=a.threads,
        progress=not a.no_progress,
    )
    print(summary_table(s))
    if "turns" in s:
        applied = {n: t["applied"] for n, t in s["turns"].items()}
        lost = sorted(n for n, t in s["turns"].items() if not t["found"])
        print(_turns_line(applied, lost, "stats.json: turns"))
    if not s["registered"]:  # nothing to open: not a result to take for one (a script sees the exit status)
        raise InputError(
            f"COLMAP placed none of the {s['images']} images ({s['verified_pairs']} verified pair"
            f"{'' if s['verified_pairs'] == 1 else 's'}): no model; "
            f"{a.out} keeps the database and stats.json. Photos of one scene that overlap more, or more keypoints"
        )
    placed = "" if s["registered"] == s["images"] else f"; {s['registered']} of {s['images']} images placed"
    model = (
        "sparse/0" if s["models"] == 1 else f"sparse/ ({s['models']} models; the summary is the largest's)"
    )
    # a finished one, left as it was
    done = before is not None and _stamp(Path(a.out) / "stats.json") == before
    print(f"{a.out} was complete already: nothing written" if done else f"wrote {a.out}", end="")
    print(f" (stats.json; project.ini and {model} open in COLMAP's GUI{placed})")
    return 0


def set_threads(threads: int | None) -> None:
    """``--threads N``: torch's intra-op threads too (COLMAP's are passed on); a one-line error past
    :data:`~patchpose.checks.MAX_THREADS`, before torch takes them."""
    from ..checks import MAX_THREADS
    from ..errors import InputError, is_int_in

    if threads is None:
        return
    if not is_int_in(threads, 1, MAX_THREADS):
        raise InputError(f"--threads must be a whole number from 1 to {MAX_THREADS}, got {threads!r}")
    import torch

    torch.set_num_threads(threads)


def add_aliked(p: argparse.ArgumentParser, what: str, unturn: str | None = None) -> None:
    """``--aliked FILE``, ``--aliked-model M`` and ``--unturn``: a learned feature, its photos un-turned
    (``unturn``: the help of ``--unturn``, where it does more than that)."""
    p.add_argument(
        "--aliked",
        default=None,
        metavar="FILE",
        help=f"ALIKED's weights (the official .pth; nothing is downloaded): {what}",
    )
    p.add_argument(
        "--aliked-model",
        choices=list(ALIKED_MODELS),
        default=None,
        help=f"which ALIKED the --aliked file holds (default: {ALIKED_DEFAULT})",
    )
    p.add_argument(
        "--unturn",
        action="store_true",
        help=unturn
        or "with --aliked: each photo extracted un-turned by the turn our network votes for it over every pair "
        f"({MODELS['upright']}), so that photos taken sideways or rolled match",
    )


def add_unturn_window(p: argparse.ArgumentParser) -> None:
    """``--unturn-window N``: the votes of ``--unturn`` over a sequence's neighbours only."""
    p.add_argument(
        "--unturn-window",
        type=int,
        default=None,
        metavar="N",
        help="with --unturn: vote only pairs of photos at most N apart in the sorted names (a sequence's "
        "neighbours; extract's default: --unturn-retrieval 10; colmap's: every pair)",
    )


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``extract``, ``extract-merge`` and ``colmap`` on the top-level subparsers."""
    e = sub.add_parser(
        "extract", help="keypoints, our poses and descriptors of a folder of images: an hloc features file"
    )
    e.add_argument("images", help="folder of images (every image below it, named by its relative path)")
    e.add_argument("--out", required=True, help="the features file to write, e.g. features.h5")
    e.add_argument(
        "--detector",
        choices=DETECTORS,
        default=None,
        help="keypoint detector: OpenCV SIFT (the default) or Harris corners",
    )
    e.add_argument(
        "--descriptor",
        choices=DESCRIPTORS,
        default=None,
        help="sift (the default): OpenCV SIFT at the recipe pose's poses (at SIFT keypoints SIFT's scale and the "
        "gradient's angle, no model read; at Harris corners our scale); none: keypoints and poses only",
    )
    e.add_argument("--max-keypoints", type=int, default=2048, help="keypoints per image, at most")
    e.add_argument(
        "--shard",
        default=None,
        metavar="i/n",
        help="only images i, i+n, i+2n, ... of the names sorted (0 <= i < n), into their own file; "
        "extract-merge joins the n files",
    )
    e.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a features file of patchpose extract made with other settings or images (and begin its "
        "OUT.parts again); the new file replaces it when whole. Without it: an error naming what differs",
    )
    add_aliked(
        e,
        "kornia's ALIKED's keypoints and descriptors instead of the recipe's (no scales or oris)",
        unturn="each photo's turn in the folder voted by our network over each photo's 10 most similar photos "
        f"({MODELS['upright']}); every keypoint is then described at the angle that shows its photo upright "
        "(upright in the collection) instead of the gradient's; with --aliked each photo is extracted un-turned",
    )
    add_unturn_window(e)
    e.add_argument(
        "--unturn-pairs",
        default=None,
        metavar="FILE",
        help="with --unturn: vote only the pairs of this hloc pairs file (two image names a line, relative to the "
        "folder; e.g. hloc's retrieval pairs; default: --unturn-retrieval 10)",
    )
    e.add_argument(
        "--unturn-retrieval",
        type=int,
        default=None,
        metavar="K",
        help="with --unturn: vote only each photo's K most similar photos (VLAD of the votes' own descriptors; "
        "default 10, chosen on val; K >= the photos - 1: every pair)",
    )
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_weights(
        e,
        read=False,
        model=f"at --detector harris the recipe pose's, {MODELS['pose']}; SIFT's reads none; with --unturn the "
        f"votes', {MODELS['upright']}",
    )
    e.set_defaults(func=extract_command)
    m = sub.add_parser("extract-merge", help="join the shard files of 'extract --shard i/n' into one file")
    m.add_argument("shards", nargs="+", help="the n shard files")
    m.add_argument("--out", required=True, help="the merged features file")
    m.set_defaults(func=merge_command)
    c = sub.add_parser(
        "colmap",
        help="reconstruct a folder of images with COLMAP's own pipeline (pycolmap): its SIFT, matcher, verification "
        "and mapping, with a line per stage, a summary and a project for COLMAP's GUI",
    )
    c.add_argument("images", help="folder of images (every image below it, at least 2)")
    c.add_argument(
        "--out",
        required=True,
        help="the folder for database.db, sparse/, stats.json, summary.md and project.ini (a finished one of the same "
        "settings is reused; one of others is refused)",
    )
    c.add_argument("--seed", type=int, default=0, help="COLMAP's random seed")
    c.add_argument(
        "--max-keypoints",
        type=int,
        default=8192,
        help="keypoints per image: ALIKED's, at most; COLMAP's SIFT's detections (its max_num_features), each with up "
        "to 2 orientations stored as keypoints, so up to twice as many",
    )
    c.add_argument(
        "--threads", type=int, default=None, help="COLMAP's and torch's threads (default: all cores)"
    )
    add_aliked(
        c,
        "kornia's ALIKED instead of COLMAP's SIFT, mutual nearest neighbours of every pair, COLMAP's verification "
        "and mapping",
    )
    add_unturn_window(c)
    c.add_argument("--no-progress", action="store_true", help="no stage lines")
    c.set_defaults(func=colmap_command)
