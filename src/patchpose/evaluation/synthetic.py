"""Synthetic pose-pair evaluation on held-out photos: the paper's protocol (a native, upright reference
patch at a keypoint and its rescaled-only or rotated-only counterpart) plus the joint protocol.

Used for validation during training and by ``patchpose eval synthetic``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..data.pairs import PairConfig, PhotoPool, sample_pairs
from ..errors import InputError, is_int_in
from ..inference import decode_poses, predict_histograms
from .metrics import accuracies, relative_errors

PROTOCOLS = ("scale", "rotation", "joint")


def protocol_config(base: PairConfig | None = None) -> PairConfig:
    """Reference patch upright at scale 0, Δs ~ U[−2, 2], Δo ~ U[0, 2π), no photometric change."""
    base = base or PairConfig()
    return replace(base, sigma_min=-2.0, sigma_max=2.0, source_upright=1.0, noise=0.0, gamma=0.0)


def check_pair_count(n) -> int:
    """``n`` as an int; :class:`InputError` unless it is a positive integer (pairs per protocol)."""
    if not is_int_in(n, 1, integral_floats=True):
        raise InputError(f"the number of pairs per protocol (--pairs) must be a positive integer, got {n!r}")
    return int(n)


def make_protocol_pairs(
    pool: PhotoPool,
    n: int,
    seed: int,
    patch_size: int,
    windows,
    cfg: PairConfig | None = None,
    polar=None,
) -> dict:
    """Fixed pairs per protocol (same keypoints and Δ for every method evaluated on them); ``n`` pairs per
    protocol, a positive integer (:class:`InputError` otherwise)."""
    n = check_pair_count(n)
    cfg = protocol_config(cfg)
    out = {}
    for i, proto in enumerate(PROTOCOLS):
        rng = np.random.default_rng([seed, i])
        out[proto] = sample_pairs(
            rng, pool, n, cfg, patch_size, windows, mode=proto, augment=False, polar=polar
        )
    return out


def evaluate_model(
    model, pairs: dict, refine: bool = True, k: int = 1, batch_size: int = 128, amp=None
) -> dict:
    """``{protocol: {metric: percent}}`` for a :class:`~patchpose.models.PoseNet` on fixed pairs."""
    res = {}
    for proto, b in pairs.items():
        ha = predict_histograms(model, b["patch_a"], batch_size, amp)
        hb = predict_histograms(model, b["patch_b"], batch_size, amp)
        sr = model.cfg.scale_range
        pa, pb = decode_poses(ha, k, refine, sr), decode_poses(hb, k, refine, sr)
        acc = accuracies(relative_errors(pa, pb, b["d_scale"], b["d_ori"]))
        if proto == "scale":
            acc = {m: v for m, v in acc.items() if m.startswith("scale")}
        elif proto == "rotation":
            acc = {m: v for m, v in acc.items() if m.startswith("ori")}
        res[proto] = {**acc, "n_pairs": len(b["d_scale"])}
    return res


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
    from ..baselines import (
        LOG_PATCH,
        LOG_WINDOWS,
        ORI_PATCH,
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
