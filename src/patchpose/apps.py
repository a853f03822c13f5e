"""The library side of the ``estimate``, ``demo``, ``match`` and ``eval synthetic`` commands: typed functions
that compute, write their output files and return what they found (the CLI parses options and prints; ``match``
computes with :func:`patchpose.match_pair`, and :func:`write_match_outputs` writes its files).

Sits above the estimator, matching and evaluation modules and below :mod:`patchpose.cli`; nothing in the
library imports it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError, is_int_in
from .estimator import PatchPoseEstimator
from .fileio import read_keypoints, write_text_atomic
from .outputs import draw_poses, write_matches_csv, write_matches_picture, write_poses

if TYPE_CHECKING:
    from .matching.pair import PairMatches


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
    "eval_synthetic",
    "run_estimate",
    "write_match_outputs",
]
