"""Synthetic pose-pair evaluation on held-out photos: the paper's protocol (a native, upright reference
patch at a keypoint and its rescaled-only or rotated-only counterpart) plus the joint protocol.

Used for validation during training and by ``patchpose eval synthetic``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..data.pairs import PairConfig, PhotoPool, sample_pairs
from ..inference import decode_poses, predict_histograms
from .metrics import accuracies, relative_errors

PROTOCOLS = ("scale", "rotation", "joint")


def protocol_config(base: PairConfig | None = None) -> PairConfig:
    """Reference patch upright at scale 0, Δs ~ U[−2, 2], Δo ~ U[0, 2π), no photometric change."""
    base = base or PairConfig()
    return replace(base, sigma_min=-2.0, sigma_max=2.0, source_upright=1.0, noise=0.0, gamma=0.0)


def make_protocol_pairs(pool: PhotoPool, n: int, seed: int, patch_size: int, windows, cfg: PairConfig | None = None) -> dict:
    """Fixed pairs per protocol (same keypoints and Δ for every method evaluated on them)."""
    cfg = protocol_config(cfg)
    out = {}
    for i, proto in enumerate(PROTOCOLS):
        rng = np.random.default_rng([seed, i])
        out[proto] = sample_pairs(rng, pool, n, cfg, patch_size, windows, mode=proto, augment=False)
    return out


def evaluate_model(model, pairs: dict, refine: bool = True, k: int = 1, batch_size: int = 128, amp=None) -> dict:
    """``{protocol: {metric: percent}}`` for a :class:`~patchpose.models.PoseNet` on fixed pairs."""
    res = {}
    for proto, b in pairs.items():
        ha = predict_histograms(model, b["patch_a"], batch_size, amp)
        hb = predict_histograms(model, b["patch_b"], batch_size, amp)
        pa, pb = decode_poses(ha, k, refine), decode_poses(hb, k, refine)
        acc = accuracies(relative_errors(pa, pb, b["d_scale"], b["d_ori"]))
        if proto == "scale":
            acc = {m: v for m, v in acc.items() if m.startswith("scale")}
        elif proto == "rotation":
            acc = {m: v for m, v in acc.items() if m.startswith("ori")}
        res[proto] = {**acc, "n_pairs": len(b["d_scale"])}
    return res
