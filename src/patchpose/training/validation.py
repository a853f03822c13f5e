"""Validation of a pose network on fixed synthetic pairs of held-out photos: the paper's protocols (a native,
upright reference patch at a keypoint and its rescaled-only or rotated-only counterpart) and the joint one.

Read during training (:mod:`patchpose.training.trainer`) and by ``patchpose eval synthetic``
(:mod:`patchpose.evaluation.synthetic`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..accuracy import accuracies, relative_errors
from ..data.pairs import PairConfig, PhotoPool, sample_pairs
from ..errors import InputError, is_int_in
from ..inference import decode_poses, predict_histograms

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


__all__ = ["PROTOCOLS", "check_pair_count", "evaluate_model", "make_protocol_pairs", "protocol_config"]
