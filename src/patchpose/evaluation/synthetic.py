"""``patchpose eval synthetic``: the synthetic pose pairs of training's validation
(:mod:`patchpose.training.validation`) on held-out photos, ours against the hand-crafted pair (kornia's dominant
gradient and a LoG scale selection).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..accuracy import accuracies, relative_errors
from ..data.pairs import PhotoPool
from .report import write_results

#: the splits ``eval synthetic --split`` picks from a photo folder (``"all"``: every photo), as ``generate hpatches``
SPLITS = ("train", "val", "test")


def _gray_patches(pool: PhotoPool, b: dict, which: str, patch_size: int, windows) -> np.ndarray:
    from ..data.patches import extract_patches

    sig = b["sigma_a"] if which == "a" else b["sigma_a"] - b["d_scale"]
    th = b["theta_a"] if which == "a" else b["theta_a"] - b["d_ori"]
    out = np.empty((len(sig), len(windows), patch_size, patch_size), np.float32)
    for k in np.unique(b["image"]):
        sel = np.nonzero(b["image"] == k)[0]
        p = extract_patches(pool.pyramids[k], b["xy"][sel], sig[sel], th[sel], patch_size, list(windows))
        if pool.color == "rgb":
            p = p.reshape(len(sel), len(windows), 3, patch_size, patch_size)
            p = 0.299 * p[:, :, 0] + 0.587 * p[:, :, 1] + 0.114 * p[:, :, 2]
        out[sel] = p
    return out


def evaluate_handcrafted(pool: PhotoPool, pairs: dict) -> dict:
    """kornia's dominant-gradient orientation + LoG scale selection on the same pairs."""
    from ..matching.gradient import ORI_PATCH
    from .baselines import (
        LOG_PATCH,
        LOG_WINDOWS,
        ORI_WINDOW,
        dominant_gradient_orientation,
        log_scale_selection,
    )

    res = {}
    for proto, b in pairs.items():
        pa, pb = {}, {}
        if proto in ("scale", "joint"):
            pa["scale"] = log_scale_selection(_gray_patches(pool, b, "a", LOG_PATCH, LOG_WINDOWS))
            pb["scale"] = log_scale_selection(_gray_patches(pool, b, "b", LOG_PATCH, LOG_WINDOWS))
        if proto in ("rotation", "joint"):
            pa["orientation"] = dominant_gradient_orientation(
                _gray_patches(pool, b, "a", ORI_PATCH, [ORI_WINDOW])
            )
            pb["orientation"] = dominant_gradient_orientation(
                _gray_patches(pool, b, "b", ORI_PATCH, [ORI_WINDOW])
            )
        res[proto] = {
            **accuracies(relative_errors(pa, pb, b["d_scale"], b["d_ori"])),
            "n_pairs": len(b["d_scale"]),
        }
    return res


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
    split: str | None = None,
) -> dict:
    """Scale-only, rotation-only and joint pairs at SIFT keypoints of held-out photos (the keypoint at the
    centre of the window), ours (refined and argmax) against the hand-crafted pair.

    ``images``: a photo folder; None: the test photos shipped with the dependencies. ``split``: only the photos of
    this split of ``images`` (``"train"``, ``"val"``, ``"test"``: its ``splits.json``, else split by image, as
    :func:`~patchpose.data.photos.load_splits` reads it); None or ``"all"``: every photo of the folder. Writes
    ``OUT/results.json`` and ``OUT/results.md``; returns the results document."""
    from ..data.pairs import PairConfig
    from ..data.photos import photos_of, wheel_photo_paths
    from ..errors import InputError
    from ..estimator import PatchPoseEstimator
    from ..training.validation import evaluate_model, make_protocol_pairs

    if split == "all":
        split = None
    if split is not None and split not in SPLITS:
        raise InputError(f"split must be one of {(*SPLITS, 'all')}, got {split!r}")
    if split is not None and not images:
        raise InputError("--split picks a split of --images: give --images DIR (e.g. data/photos) too")
    t0 = time.time()
    # a folder without photos (of the split): one line before the model loads
    paths = photos_of(images, split) if images else wheel_photo_paths()
    est = PatchPoseEstimator.load(weights)
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
        "split": split or "all",
        "photos": [str(p) for p in paths],
        "n_photos": len(pool),
        "seed": seed,
        "results": results,
        "seconds": time.time() - t0,
    }
    of = f" of the {split} split" if split else ""
    title = f"# Synthetic pose pairs ({doc['model']}, {len(pool)} photos{of}, seed {seed})\n"
    write_results(out_dir, doc, title + _synthetic_table(results))
    return doc


__all__ = ["eval_synthetic", "evaluate_handcrafted"]
