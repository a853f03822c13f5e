"""``patchpose extract`` and ``extract-merge``: a folder of images as an hloc features file with our poses
(:mod:`patchpose.integrations.extract`), resumable after a kill, in shards that a merge joins; ``patchpose
colmap``: a folder of images reconstructed by COLMAP (:mod:`patchpose.integrations.colmap`)."""

from __future__ import annotations

import argparse

from ..integrations.colmap import COLMAP_MODEL, POSES, colmap_estimator
from ..integrations.extract import DESCRIPTORS, DETECTORS
from .options import add_peers, add_weights, read_plan


def extract_command(a: argparse.Namespace) -> int:
    """``extract IMAGES --out FILE``: write (or finish) the features file."""
    from ..estimator import PatchPoseEstimator
    from ..integrations.extract import extract_features, parse_shard, peers_for

    parse_shard(a.shard)  # a bad spec is an error before the model loads
    peers_for(a.peers, a.detector, a.descriptor)  # so is a missing --peers
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
        peers=a.peers,
    )
    print(f"wrote {out}")
    return 0


def merge_command(a: argparse.Namespace) -> int:
    """``extract-merge SHARD... --out FILE``: join the shard files of ``extract --shard i/n``."""
    from ..integrations.extract import merge_features

    print(f"wrote {merge_features(a.shards, a.out)}")
    return 0


def colmap_command(a: argparse.Namespace) -> int:
    """``colmap IMAGES --out DIR``: one COLMAP reconstruction; prints its statistics."""
    from ..integrations.colmap import OUR_POSES, reconstruct

    set_threads(a.threads)
    est = None
    if a.pose in OUR_POSES:
        est = colmap_estimator(a.weights).with_plan(**read_plan(a))
    s = reconstruct(
        a.images,
        a.out,
        pose=a.pose,
        estimator=est,
        max_keypoints=a.max_keypoints,
        split=a.split,
        seed=a.seed,
        threads=a.threads,
    )
    track = "–" if s["track_length"] is None else f"{s['track_length']:.2f}"
    err = "–" if s["reprojection_px"] is None else f"{s['reprojection_px']:.2f} px"
    print(
        f"{a.pose}: {s['registered']}/{s['images']} images registered, {s['points3D']} 3-D points, "
        f"mean track length {track}, mean reprojection error {err}, {s['seconds']:.0f} s; wrote {a.out}"
    )
    return 0


def add_colmap_options(p: argparse.ArgumentParser, threads: int | None = None) -> None:
    """Options of ``colmap`` that ``eval colmap`` shares (``threads``: the default of ``--threads``)."""
    p.add_argument("--max-keypoints", type=int, default=8192, help="SIFT keypoints per image, at most")
    p.add_argument(
        "--split",
        action="store_true",
        help="each descriptor its own COLMAP keypoint (as COLMAP stores SIFT's orientations) instead of "
        "one keypoint per location",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=threads,
        help=f"COLMAP's and torch's threads (default: {threads or 'all cores'})",
    )
    add_weights(p, model=f"{COLMAP_MODEL}, with our scale more 3-D points than SIFT's own pose")


def set_threads(threads: int | None) -> None:
    """``--threads N``: torch's intra-op threads too (COLMAP's are passed on)."""
    if threads is not None and threads >= 1:
        import torch

        torch.set_num_threads(threads)


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
        default="sift",
        help="keypoint detector; keynet: kornia's Key.Net with the weights in --peers, our angle read in its "
        "region (use --weights patchpose-v10 there)",
    )
    e.add_argument(
        "--descriptor",
        choices=DESCRIPTORS,
        default="sift",
        help="sift: OpenCV SIFT computed at our poses; hardtfeat: HardTFeat (weights in --peers) on patches "
        "at our poses; none: keypoints and poses only",
    )
    add_peers(e, "--detector keynet, --descriptor hardtfeat")
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
    c = sub.add_parser(
        "colmap",
        help="reconstruct a folder of images with COLMAP (pycolmap): SIFT keypoints described at our poses",
    )
    c.add_argument("images", help="folder of images (every image below it, at least 2)")
    c.add_argument("--out", required=True, help="a new folder: database.db, sparse/, stats.json")
    c.add_argument(
        "--pose",
        choices=POSES,
        default="ours",
        help="ours: our scale and angle (default); ours_angle: our angle at SIFT's scale; sift: SIFT's own "
        "(all its orientations); upright: angle 0; colmap: COLMAP's own SIFT and matcher",
    )
    c.add_argument("--seed", type=int, default=0, help="COLMAP's random seed")
    add_colmap_options(c)
    c.set_defaults(func=colmap_command)
