"""``patchpose estimate``, ``demo``, ``match`` and ``bench``: poses of an image's keypoints, matches between two
images at those poses, and the speed of both against OpenCV's SIFT."""

from __future__ import annotations

import argparse
import json

from ..apps import run_estimate, write_match_outputs
from ..errors import InputError, is_int_in
from ..matching.pair import DEFAULT_POSE, MATCH_POSES, match_pair
from .options import add_descriptor, add_peers, add_weights, read_plan


def estimate_command(a: argparse.Namespace) -> int:
    """``estimate IMAGE`` and ``demo`` (whose image defaults to a photo shipped with the dependencies)."""
    image = getattr(a, "image", None)
    if image is None:
        from ..data.photos import demo_photo

        image = demo_photo()
    res = run_estimate(
        image,
        getattr(a, "keypoints", None),
        out_dir=a.out or "patchpose_out",
        weights=a.weights,
        max_keypoints=a.max_keypoints,
        top_k=a.top_k,
        fmt=a.format,
        read_plan=read_plan(a),
    )
    print(f"{res['n']} keypoints in {res['seconds']:.2f} s -> {res['poses']} and {res['picture']}")
    return 0


def match_command(a: argparse.Namespace) -> int:
    """``match IMAGE1 IMAGE2``: read the files, match, write the picture, the matches and a summary."""
    from ..data.hpatches import read_homography
    from ..data.patches import load_image
    from ..fileio import read_keypoints

    plan = read_plan(a)
    img1, img2 = load_image(a.image1), load_image(a.image2)
    res = match_pair(
        img1,
        img2,
        pose=a.pose,
        weights=a.weights,
        read_plan=plan,
        top_k=a.top_k,
        homography=read_homography(a.homography) if a.homography else None,
        threshold=a.threshold,
        max_keypoints=a.max_keypoints,
        detector=a.detector,
        keypoints1=read_keypoints(a.keypoints1) if a.keypoints1 else None,
        keypoints2=read_keypoints(a.keypoints2) if a.keypoints2 else None,
        descriptor=a.descriptor,
        descriptor_weights=a.descriptor_weights,
        peers=a.peers,
    )
    out = a.out or "patchpose_match"
    summary = write_match_outputs(out, img1, img2, res)
    print(json.dumps(summary))
    print(f"wrote {out}/matches.png, matches.csv, summary.json")
    return 0


def bench_command(a: argparse.Namespace) -> int:
    """``bench``: seconds for our poses of N keypoints and for OpenCV SIFT's detection, and their ratios."""
    from ..evaluation.bench import bench, scaling

    if a.scaling or a.scaling_max is not None:
        rows = scaling(a.weights, a.scaling_max, threads=a.threads, out=a.out)["rows"]
        print(f"{'keypoints':>10}  {'keypoints/s':>11}  {'peak RSS MB':>11}  {'bytes/keypoint':>14}  threads")
        for r in rows:
            print(
                f"{r['num_keypoints']:>10,}  {r['keypoints_per_s']:>11,.0f}  {r['peak_rss_bytes'] / 2**20:>11,.0f}  "
                f"{r['rss_per_keypoint_bytes']:>14,.0f}  {r['torch_threads']}"
            )
        print(f"wrote {a.out}/scaling.json")
        return 0
    if a.threads is not None:  # this process's threads, for every timing of the run
        if not is_int_in(a.threads, 1, 1024):
            raise InputError(f"--threads must be a positive integer, got {a.threads!r}")
        import cv2
        import torch

        torch.set_num_threads(a.threads)
        cv2.setNumThreads(a.threads)
    res = bench(a.weights, a.keypoints, repeats=a.repeats, out=a.out)
    w = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k:<{w}}  {v:.4f}" if isinstance(v, float) else f"{k:<{w}}  {v}")
    print(f"wrote {a.out}/bench.json")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``match``, ``estimate``, ``demo`` and ``bench`` on the top-level subparsers."""
    for name, helptext in (
        ("estimate", "detect keypoints in an image and estimate their scale and orientation"),
        ("demo", "run the bundled model on a photo that ships with the dependencies"),
    ):
        s = sub.add_parser(name, help=helptext)
        if name == "estimate":
            s.add_argument("image", help="image file")
            s.add_argument(
                "--keypoints", help="keypoints file (.npy (N,2) or .csv/.txt with x,y columns); default: SIFT"
            )
        else:
            s.add_argument("--image", help="another image instead of the bundled photo")
        s.add_argument("--out", default=None, help="output folder (default: ./patchpose_out)")
        add_weights(s)
        s.add_argument(
            "--max-keypoints",
            type=int,
            default=300,
            help="the strongest SIFT keypoints kept (without --keypoints)",
        )
        s.add_argument(
            "--top-k", type=int, default=1, help="pose candidates written per keypoint, strongest first"
        )
        s.add_argument("--format", choices=("json", "csv"), default="json", help="poses file format")
        s.set_defaults(func=estimate_command)

    mt = sub.add_parser("match", help="match two images with pose-normalised patches; picture + matches file")
    mt.add_argument("image1")
    mt.add_argument("image2")
    mt.add_argument("--out", default=None, help="output folder (default: ./patchpose_match)")
    mt.add_argument(
        "--pose",
        choices=tuple(MATCH_POSES),
        default=DEFAULT_POSE,
        help=f"the pose each descriptor patch is cut at (default {DEFAULT_POSE}: the recommended one, docs/peers.md). "
        "pair-pose: every keypoint at one pose per photo, upright in the first and turned in the second by the "
        "turn between the photos that our angles vote for, at one fixed size widened by the zoom our scales vote "
        "for (or through the affine map their matches agree on, where it slants the view), each at 3 sizes, and where "
        "the detector gives a size (SIFT, Key.Net) at 3 sizes about it too (the "
        "votes read patchpose-v10 unless --weights names another model); shape-zoom-blend: our affine shape with the gradient's 4 orientation peaks blended in it at "
        "3 sizes, at the same fixed size, for photos seen at a slant; shape-blend: the same at the "
        "detector's size (16 px for corners); gradient-blend, ours-blend: one descriptor blended over 4 orientation "
        "peaks, the gradient's at the detector's scale or ours at our scale; sift: SIFT's own pose; sift-all: SIFT "
        "with all its orientations, as users run it; sift-resolved: SIFT's pose, where SIFT found several "
        "orientations the one nearest ours; ours: our one pose; ours-angle: our orientation on the upright 16 px "
        "patch; dominant-gradient, log-dominant-gradient: hand-crafted poses; none: upright patches of one fixed "
        "size, the baseline without poses (docs/results.md)",
    )
    mt.add_argument("--top-k", type=int, default=4, help="candidates per keypoint for --pose ours-topk")
    mt.add_argument("--homography", default=None, help="3×3 text file H (image 1 → 2): colours the matches")
    mt.add_argument("--threshold", type=float, default=3.0, help="px: a match is correct within this")
    mt.add_argument("--max-keypoints", type=int, default=2000, help="keypoints detected per image")
    mt.add_argument(
        "--detector",
        choices=("sift", "harris", "gftt", "keynet"),
        default="sift",
        help="without --keypoints1/2 (harris, gftt: corners, Harris's or Shi-Tomasi's; keynet: kornia's Key.Net "
        "with the weights in --peers)",
    )
    mt.add_argument(
        "--keypoints1", default=None, help="keypoints of image 1 (.npy or x,y text); default SIFT"
    )
    mt.add_argument("--keypoints2", default=None, help="keypoints of image 2 (with --keypoints1)")
    add_peers(mt, "--detector keynet, --descriptor tfeat/hardtfeat")
    add_descriptor(mt, peers=True)
    add_weights(mt)
    mt.set_defaults(func=match_command)

    b = sub.add_parser("bench", help="speed: our poses for N keypoints vs OpenCV SIFT detection, one run")
    add_weights(b, read=False)  # it times the model's own read plan and a single read
    b.add_argument("--keypoints", type=int, default=2048, help="keypoints timed (N)")
    b.add_argument("--repeats", type=int, default=7, help="timed runs; the median is reported")
    b.add_argument("--out", default="outputs/bench", help="folder that receives bench.json (scaling.json)")
    b.add_argument(
        "--scaling",
        action="store_true",
        help="instead: keypoints/s and peak resident memory at 2k, 8k, 32k and 128k keypoints, each in a "
        "fresh process",
    )
    b.add_argument(
        "--scaling-max",
        type=int,
        default=None,
        metavar="N",
        help="with --scaling: sizes ×4 up to N (1000000)",
    )
    b.add_argument("--threads", type=int, default=None, help="torch and OpenCV threads (default: theirs)")
    b.set_defaults(func=bench_command)
