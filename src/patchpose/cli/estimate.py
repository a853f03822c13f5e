"""``patchpose estimate``, ``demo`` and ``match``: poses of an image's keypoints, and matches between two
images described with a recipe (:data:`patchpose.recipes.RECIPES`)."""

from __future__ import annotations

import argparse
import json

from ..apps import run_estimate, write_match_outputs
from ..matching.pair import CORRECT_PX, DEFAULT_RECIPES, check_threshold, match_pair
from ..recipes import RECIPES
from .options import add_weights


def estimate_command(a: argparse.Namespace) -> int:
    """``estimate IMAGE`` and ``demo`` (whose image defaults to a photo shipped with the dependencies)."""
    image = getattr(a, "image", None)
    # the demo's own photo: its outputs are the demo's, replaced on every run (the README's set-up runs it again)
    overwrite = a.overwrite or image is None
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
        overwrite=overwrite,
    )
    print(f"{res['n']} keypoints in {res['seconds']:.2f} s -> {res['poses']} and {res['picture']}")
    return 0


def match_command(a: argparse.Namespace) -> int:
    """``match IMAGE1 IMAGE2``: read the files, match, write the picture, the matches and a summary."""
    from ..apps import MATCH_OUTPUTS, check_outputs_free, output_folder
    from ..data.patches import check_image_shape, load_image
    from ..data.warps import read_homography
    from ..errors import InputError, about
    from ..estimator import check_keypoints
    from ..fileio import read_keypoints

    threshold = CORRECT_PX if a.threshold is None else a.threshold
    check_threshold(threshold)  # before any work
    if a.threshold is not None and not a.homography:
        raise InputError("--threshold needs --homography (it says which matches are correct)")
    out = output_folder(a.out or "patchpose_match")
    inputs = (a.image1, a.image2, a.keypoints1, a.keypoints2, a.homography)
    check_outputs_free([out / name for name in MATCH_OUTPUTS], a.overwrite, inputs)  # before any work
    img1, img2 = load_image(a.image1), load_image(a.image2)
    for path, img in ((a.image1, img1), (a.image2, img2)):  # which image is too small or too large
        with about(path):
            check_image_shape(img)
    keypoints = None
    if a.keypoints1 or a.keypoints2:
        if not (a.keypoints1 and a.keypoints2):
            raise InputError("give keypoints for both images (--keypoints1 and --keypoints2) or for none")
        given = [
            o for o, v in (("--detector", a.detector), ("--max-keypoints", a.max_keypoints)) if v is not None
        ]
        if given:  # they choose detected keypoints: with yours they were ignored without a word
            raise InputError(
                f"{' and '.join(given)} choose{'' if len(given) > 1 else 's'} detected keypoints: not with --keypoints1/2"
            )
        keypoints = (read_keypoints(a.keypoints1), read_keypoints(a.keypoints2))
        for path, xy, img in ((a.keypoints1, keypoints[0], img1), (a.keypoints2, keypoints[1], img2)):
            with about(
                path
            ):  # checked here so that the message names the file (match_pair's says "keypoints")
                check_keypoints(xy, img.shape[:2])
    res = match_pair(
        img1,
        img2,
        recipe=a.recipe,
        detector=a.detector or "sift",
        max_keypoints=2000 if a.max_keypoints is None else a.max_keypoints,
        keypoints=keypoints,
        homography=read_homography(a.homography) if a.homography else None,
    ).with_threshold(threshold)
    summary = write_match_outputs(out, img1, img2, res, overwrite=a.overwrite)
    print(json.dumps(summary))
    print(f"wrote {out}/matches.png, matches.csv, summary.json")
    return 0


def _add_overwrite(p: argparse.ArgumentParser, what: str) -> None:
    """``--overwrite``: replace an earlier run's outputs in the output folder (without it, their being there is a
    one-line error before any work; other files in the folder, and the files the command reads, are never
    touched)."""
    p.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace {what} where an earlier run left them in the output folder (without it: an error, before any "
        "work; nothing else in the folder is touched, nor, with it, a file the command reads)",
    )


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
                "--keypoints",
                help="keypoints file: .npy (N, 2), or .csv/.txt whose first two columns are x, y (or those a header "
                "names x and y; other columns, e.g. a score, are ignored, as in an (N, >2) .npy); default: SIFT",
            )
        else:
            s.add_argument("--image", help="another image instead of the bundled photo")
        s.add_argument("--out", default=None, help="output folder (default: ./patchpose_out)")
        add_weights(s, read=False)
        s.add_argument(
            "--max-keypoints",
            type=int,
            default=300,
            help="the strongest SIFT detections kept"
            + (" (without --keypoints)" if name == "estimate" else "")
            + "; a location SIFT gives several orientations is one keypoint, so there may be fewer",
        )
        s.add_argument(
            "--top-k", type=int, default=1, help="pose candidates written per keypoint, strongest first"
        )
        s.add_argument("--format", choices=("json", "csv"), default="json", help="poses file format")
        _add_overwrite(
            s,
            "the image's poses file and picture (NAME_poses.json or .csv, NAME_poses.png)"
            + (" of an --image (the demo's own photo's are replaced on every run)" if name == "demo" else ""),
        )
        s.set_defaults(func=estimate_command)

    mt = sub.add_parser("match", help="match two photos described with a recipe; picture + matches file")
    mt.add_argument("image1")
    mt.add_argument("image2")
    mt.add_argument("--out", default=None, help="output folder (default: ./patchpose_match)")
    mt.add_argument(
        "--recipe",
        choices=tuple(RECIPES),
        default=None,
        help=f"how keypoints are described (default: {DEFAULT_RECIPES['sift']} at SIFT's detections, "
        f"{DEFAULT_RECIPES['other']} at corners or --keypoints1/2): "
        + "; ".join(f"{r.name}: {r.what}" for r in RECIPES.values()),
    )
    mt.add_argument(
        "--detector",
        choices=("sift", "gftt", "harris"),
        default=None,
        help="keypoints detected without --keypoints1/2: OpenCV SIFT, or Shi-Tomasi (gftt) or Harris corners (default: sift)",
    )
    mt.add_argument(
        "--max-keypoints",
        type=int,
        default=None,
        help="keypoints detected per image, not with --keypoints1/2 (default: 2000)",
    )
    mt.add_argument(
        "--keypoints1", default=None, help="your keypoints of image 1 (.npy or x,y text) instead of detecting"
    )
    mt.add_argument("--keypoints2", default=None, help="your keypoints of image 2 (with --keypoints1)")
    mt.add_argument("--homography", default=None, help="3×3 text file H (image 1 → 2): colours the matches")
    mt.add_argument(
        "--threshold",
        type=float,
        default=None,
        help=f"px: with --homography, a match is correct within this (default {CORRECT_PX:g})",
    )
    _add_overwrite(mt, "matches.png, matches.csv and summary.json")
    mt.set_defaults(func=match_command)
