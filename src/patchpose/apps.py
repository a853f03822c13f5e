"""The library side of the ``estimate``, ``demo``, ``match`` and ``eval synthetic`` commands: typed functions
that compute, write their output files and return what they found (the CLI parses options and prints).

Sits above the estimator, matching and evaluation modules and below :mod:`patchpose.cli`; nothing in the
library imports it.
"""

from __future__ import annotations

import json
import math
import numbers
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import InputError, is_int_in
from .estimator import PatchPoseEstimator
from .fileio import read_keypoints, write_text_atomic
from .outputs import draw_poses, write_matches_csv, write_matches_picture, write_poses

#: the poses ``match_pair`` can describe keypoints at, by name, and the row of
#: :func:`~patchpose.matching.pipeline.match_images` that computes each
MATCH_POSES: dict[str, str] = {
    "ours": "ours",
    "ours-topk": "ours_top{k}",
    "ours-angle": "ours_angle",
    "sift": "sift",
    "sift-resolved": "sift_resolved_by_ours",
    "dominant-gradient": "dominant_gradient",
    "log-dominant-gradient": "log+dominant_gradient",
    # one descriptor per keypoint blended over 4 orientation peaks (patchpose.matching.blend): ours (for
    # corners), or a gradient histogram's at the detector's scale (SIFT, Key.Net): docs/peers.md
    "ours-blend": "ours_blend",
    "gradient-blend": "dominant_gradient_blend",
    # the same read on the affine shape of our shape network (patchpose.shape), each peak at 3 sizes: for
    # photos seen at a slant (docs/peers.md)
    "shape-blend": "shape_pooled_blend",
    # the same at a fixed size widened by the pair's zoom, which our scales vote for (patchpose.matching.zoom):
    # for corners, and at SIFT keypoints with their size set aside (docs/peers.md)
    "shape-zoom-blend": "shape_zoom_blend",
    "none": "lower",
}
#: the model whose scales vote for the pair's zoom (``shape-zoom-blend``) where none is named: the one
#: fine-tuned at re-detected corners, whose ``ours_blend`` matches corners best (docs/peers.md)
ZOOM_VOTE_MODEL = "patchpose-v10"


def run_estimate(
    image_path: str | Path,
    keypoints_path: str | Path | None = None,
    *,
    out_dir: str | Path = "patchpose_out",
    weights: str | Path | None = None,
    max_keypoints: int = 300,
    top_k: int = 1,
    fmt: str = "json",
    read_plan: Mapping[str, float] | None = None,
) -> dict:
    """Estimate the poses of an image's keypoints and write ``OUT/<stem>_poses.{json,csv}`` and a picture
    ``OUT/<stem>_poses.png`` (:func:`~patchpose.outputs.write_poses`, :func:`~patchpose.outputs.draw_poses`).

    Args:
        image_path: the image file.
        keypoints_path: a keypoints file (``.npy`` ``(N, 2)`` or text with x, y columns); None: the
            ``max_keypoints`` strongest SIFT keypoints.
        out_dir: folder that receives the files (created).
        weights: a bundled model's name or a weights file; None: the default model.
        top_k: candidates per keypoint written (1: one pose each); the picture shows the strongest.
        fmt: ``"json"`` or ``"csv"``.
        read_plan: changes to the weights' read plan (:meth:`~patchpose.reading.ReadPlan.replace` names).

    Returns ``{"poses": path, "picture": path, "n": keypoints, "seconds": estimation time}``."""
    from .data.keypoints import detect_sift
    from .data.patches import check_image_shape, load_image

    if not is_int_in(max_keypoints, 1, integral_floats=True):
        raise InputError(f"max_keypoints (--max-keypoints) must be a positive integer, got {max_keypoints}")
    if not is_int_in(top_k, 1, integral_floats=True):
        raise InputError(f"top_k (--top-k) must be a positive integer, got {top_k}")
    image = load_image(image_path)
    # before detection: load_image gives checked uint8 RGB, so its size is all that is left to check
    check_image_shape(image)
    est = PatchPoseEstimator.load(weights).with_plan(**(read_plan or {}))
    if keypoints_path:
        xy = read_keypoints(keypoints_path)
    else:
        xy, _ = detect_sift(image, max_keypoints)
        if len(xy) == 0:
            raise InputError(f"no SIFT keypoints found in {image_path} (a flat or tiny image?)")
    t = time.perf_counter()
    res = est.estimate(image, xy, top_k=top_k if top_k > 1 else None)
    dt = time.perf_counter() - t
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = Path(image_path).stem
    poses = write_poses(out / f"{stem}_poses", xy, res, fmt)
    first = lambda a: a[:, 0] if a.ndim == 2 else a  # noqa: E731
    pic = draw_poses(
        image,
        xy,
        first(res.scale),
        first(res.orientation),
        out / f"{stem}_poses.png",
        title=f"{Path(image_path).name}: {len(xy)} keypoints (circle = scale, arrow = orientation)",
    )
    return {"poses": str(poses), "picture": str(pic), "n": len(xy), "seconds": dt}


@dataclass(frozen=True)
class PairMatches:
    """Mutual nearest-neighbour matches between two images' keypoints, described at one kind of pose."""

    pose: str  #: the pose the descriptors were cut at (a key of :data:`MATCH_POSES`)
    xy1: np.ndarray  #: (N, 2) keypoints of image 1, pixels
    xy2: np.ndarray  #: (M, 2) keypoints of image 2
    matches: np.ndarray  #: (L, 2) indices into xy1, xy2
    distances: np.ndarray  #: (L,) descriptor distances
    error_px: np.ndarray | None  #: (L,) reprojection error under the homography; None without one
    correct: np.ndarray | None  #: (L,) error within the threshold; None without a homography
    threshold: float  #: px: a match is correct within this
    seconds: float  #: detection, poses, description and matching

    def summary(self) -> dict:
        """Counts for a report: keypoints per image, matches, and with ground truth the correct ones and
        their share (``mma@Tpx``, 0 when there is no match)."""
        doc = {
            "pose": self.pose,
            "keypoints": [len(self.xy1), len(self.xy2)],
            "matches": int(len(self.matches)),
            "seconds": round(self.seconds, 3),
        }
        if self.correct is not None:
            doc[f"correct@{self.threshold:g}px"] = int(self.correct.sum())
            doc[f"mma@{self.threshold:g}px"] = float(self.correct.mean()) if len(self.matches) else 0.0
        return doc


def match_pair(
    image1: np.ndarray,
    image2: np.ndarray,
    *,
    pose: str = "ours",
    weights: str | Path | None = None,
    read_plan: Mapping[str, float] | None = None,
    top_k: int = 4,
    homography: np.ndarray | None = None,
    threshold: float = 3.0,
    max_keypoints: int = 2000,
    detector: str = "sift",
    keypoints1: np.ndarray | None = None,
    keypoints2: np.ndarray | None = None,
    descriptor: str = "sift",
    descriptor_weights: str | Path | None = None,
) -> PairMatches:
    """Detect keypoints (or take ``keypoints1``/``keypoints2``), give them a ``pose`` (a key of
    :data:`MATCH_POSES`), describe the patches cut at those poses and match them (mutual nearest neighbours).

    ``top_k``: candidates per keypoint for ``pose="ours-topk"`` (at least 2). ``homography``: the 3×3 map from
    image 1 to image 2, if known: each match then gets its reprojection error and is correct within
    ``threshold`` px. ``weights``, ``read_plan``: the model read for the poses that use it, as in
    :func:`run_estimate` (``shape-zoom-blend``: :data:`ZOOM_VOTE_MODEL` where ``weights`` is None)."""
    from .matching.pipeline import PAIR_ROWS, MatchConfig, match_images

    if pose not in MATCH_POSES:
        raise InputError(f"pose must be one of {sorted(MATCH_POSES)}, got {pose!r}")
    if isinstance(threshold, bool) or not (
        isinstance(threshold, numbers.Real) and math.isfinite(threshold) and threshold > 0
    ):
        raise InputError(
            f"the match threshold (--threshold) must be a positive number of pixels, got {threshold}"
        )
    if pose == "ours-topk" and not is_int_in(top_k, 2):
        raise InputError(f"pose ours-topk needs top_k (--top-k) of at least 2, got {top_k}")
    if (keypoints1 is None) != (keypoints2 is None):
        raise InputError("give keypoints for both images (--keypoints1 and --keypoints2) or for none")
    row = MATCH_POSES[pose].format(k=top_k)
    if weights is None and row in PAIR_ROWS:
        weights = ZOOM_VOTE_MODEL
    # only the rows that read our model load it
    est = (
        PatchPoseEstimator.load(weights).with_plan(**(read_plan or {}))
        if row not in ("lower", "sift", "shape_pooled_blend")
        else None
    )
    cfg = MatchConfig(
        max_keypoints=max_keypoints,
        descriptor=descriptor,
        descriptor_weights=descriptor_weights,
        top_k=max(2, top_k),
        detector=detector,
    )
    t0 = time.time()
    res = match_images(
        image1, image2, est, cfg, rows=(row,), H=homography, keypoints1=keypoints1, keypoints2=keypoints2
    )
    r = res["rows"][row]
    err = r["error_px"]
    return PairMatches(
        pose=pose,
        xy1=res["xy1"],
        xy2=res["xy2"],
        matches=r["matches"],
        distances=r["distances"],
        error_px=err,
        correct=None if err is None else err <= threshold,
        threshold=float(threshold),
        seconds=time.time() - t0,
    )


def write_match_outputs(
    out_dir: str | Path, image1: np.ndarray, image2: np.ndarray, result: PairMatches
) -> dict:
    """Write ``OUT/matches.png`` (the pair with its matches), ``OUT/matches.csv`` (one row per match) and
    ``OUT/summary.json`` (:meth:`PairMatches.summary`); return the summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    r = result
    write_matches_picture(out / "matches.png", image1, image2, r.xy1, r.xy2, r.matches, r.correct)
    write_matches_csv(out / "matches.csv", r.xy1, r.xy2, r.matches, r.distances, r.error_px)
    summary = r.summary()
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=1))
    return summary


def _synthetic_table(results: dict) -> str:
    cols = ["scale_acc@1/6", "scale_acc@1/3", "ori_acc@5", "ori_acc@10"]
    lines = []
    for proto, methods in results.items():
        lines += [
            f"\n### {proto} pairs\n",
            "| method | " + " | ".join(cols) + " | pairs |",
            "|---" * (len(cols) + 2) + "|",
        ]
        for m, r in methods.items():
            cells = [f"{r[c]:.1f}" if c in r else "–" for c in cols]
            lines.append(f"| {m} | " + " | ".join(cells) + f" | {r['n_pairs']} |")
    return "\n".join(lines) + "\n"


def eval_synthetic(
    images: str | Path | None,
    weights: str | Path | None,
    n_pairs: int,
    seed: int,
    out_dir: str | Path,
) -> dict:
    """Scale-only, rotation-only and joint pairs at SIFT keypoints of held-out photos (the keypoint at the
    centre of the window), ours (refined and argmax) against the hand-crafted pair.

    ``images``: a photo folder; None: the test photos shipped with the dependencies. Writes
    ``OUT/results.json`` and ``OUT/results.md``; returns the results document."""
    from .data.pairs import PairConfig, PhotoPool
    from .data.photos import photos_of, wheel_photo_paths
    from .evaluation.synthetic import evaluate_handcrafted, evaluate_model, make_protocol_pairs

    t0 = time.time()
    est = PatchPoseEstimator.load(weights)
    paths = photos_of(images) if images else wheel_photo_paths()
    pcfg = PairConfig(long_side=0, margin=24)
    pool = PhotoPool(paths, pcfg, est.cfg.color)
    pairs = make_protocol_pairs(
        pool, n_pairs, seed, est.cfg.patch_size, est.cfg.windows, pcfg, polar=est.cfg.polar_grid
    )
    by_method = {
        "patchpose (refined)": evaluate_model(est.model, pairs, refine=True),
        "patchpose (argmax)": evaluate_model(est.model, pairs, refine=False),
        "dominant-gradient + LoG": evaluate_handcrafted(pool, pairs),
    }
    results = {proto: {m: r[proto] for m, r in by_method.items()} for proto in pairs}
    doc = {
        "model": est.meta.get("name", str(weights)),
        "photos": [str(p) for p in paths],
        "n_photos": len(pool),
        "seed": seed,
        "results": results,
        "seconds": time.time() - t0,
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "results.json", json.dumps(doc, indent=1))
    write_text_atomic(
        out / "results.md",
        f"# Synthetic pose pairs ({doc['model']}, {len(pool)} photos, seed {seed})\n"
        + _synthetic_table(results),
    )
    return doc


__all__ = [
    "MATCH_POSES",
    "PairMatches",
    "eval_synthetic",
    "match_pair",
    "run_estimate",
    "write_match_outputs",
]
