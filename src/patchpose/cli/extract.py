"""``patchpose extract`` and ``extract-merge``: a folder of images as an hloc features file with our poses
(:mod:`patchpose.integrations.extract`), resumable after a kill, in shards that a merge joins."""

from __future__ import annotations

import argparse

from .options import add_weights, read_plan


def extract_command(a: argparse.Namespace) -> int:
    """``extract IMAGES --out FILE``: write (or finish) the features file."""
    from ..estimator import PatchPoseEstimator
    from ..integrations.extract import extract_features, parse_shard

    parse_shard(a.shard)  # a bad spec is an error before the model loads
    est = PatchPoseEstimator.load(a.weights).with_plan(**read_plan(a))
    out = extract_features(
        a.images,
        a.out,
        estimator=est,
        detector=a.detector,
        descriptor=a.descriptor,
        max_keypoints=a.max_keypoints,
        shard=a.shard,
        progress=not a.no_progress,
    )
    print(f"wrote {out}")
    return 0


def merge_command(a: argparse.Namespace) -> int:
    """``extract-merge SHARD... --out FILE``: join the shard files of ``extract --shard i/n``."""
    from ..integrations.extract import merge_features

    print(f"wrote {merge_features(a.shards, a.out)}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``extract`` and ``extract-merge`` on the top-level subparsers."""
    e = sub.add_parser(
        "extract", help="keypoints, our poses and descriptors of a folder of images: an hloc features file"
    )
    e.add_argument("images", help="folder of images (every image below it, named by its relative path)")
    e.add_argument("--out", required=True, help="the features file to write, e.g. features.h5")
    e.add_argument("--detector", choices=("sift", "harris"), default="sift", help="keypoint detector")
    e.add_argument(
        "--descriptor",
        choices=("sift", "none"),
        default="sift",
        help="sift: OpenCV SIFT computed at our poses; none: keypoints and poses only",
    )
    e.add_argument("--max-keypoints", type=int, default=2048, help="keypoints per image, at most")
    e.add_argument(
        "--shard",
        default=None,
        metavar="i/n",
        help="only images i, i+n, i+2n, ... of the names sorted (0 <= i < n), into their own file; "
        "extract-merge joins the n files",
    )
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_weights(e)
    e.set_defaults(func=extract_command)
    m = sub.add_parser("extract-merge", help="join the shard files of 'extract --shard i/n' into one file")
    m.add_argument("shards", nargs="+", help="the n shard files")
    m.add_argument("--out", required=True, help="the merged features file")
    m.set_defaults(func=merge_command)
