"""The gradient-orientation histogram of a patch and its strongest peaks: the orientation candidates of the
shipped blended descriptors (:mod:`patchpose.matching.blend`, :func:`patchpose.compute_blended`).

It is kornia's ``PatchDominantGradientOrientation`` histogram (SIFT-like, 36 bins, sub-bin interpolation),
rebuilt from the module's own layers because kornia returns only its strongest angle.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import require
from ..histogram import local_maxima, refine_peaks, top_peaks

#: side of the patches the gradient histogram is read on
ORI_PATCH = 32


def dominant_gradient_orientation(patches: np.ndarray) -> np.ndarray:
    """``(N, 1, PS, PS)`` gray patches → ``(N,)`` radians in [0, 2π) (kornia, CCW as displayed)."""
    kornia = require("kornia", "kornia")

    det = kornia.feature.PatchDominantGradientOrientation(patches.shape[-1])
    with torch.inference_mode():
        out = [
            det(torch.from_numpy(np.ascontiguousarray(patches[i : i + 512])))
            for i in range(0, len(patches), 512)
        ]
    return np.mod(torch.cat(out).numpy().astype(np.float64), 2 * math.pi) if out else np.zeros(0)


def dominant_gradient_histograms(patches: np.ndarray) -> np.ndarray:
    """``(N, 1, PS, PS)`` gray patches → ``(N, B)`` the smoothed gradient-orientation histograms that kornia's
    ``PatchDominantGradientOrientation`` takes its angle from (its own gradient, Gaussian weighting, two-bin
    voting and circular smoothing; bin ``i`` at kornia's angle ``π − 2πi/B``). kornia returns the angle
    only, so the histogram is rebuilt here from the module's own layers and its per-pixel gradient helper; a
    test pins its peak against kornia's angle, flat and half-flat patches included."""
    kornia = require("kornia", "kornia")
    from kornia.feature.orientation import _gradient_magnitude_orientation as magnitude_orientation

    det = kornia.feature.PatchDominantGradientOrientation(patches.shape[-1])
    b = det.num_ang_bins
    smooth = det.angular_smooth
    pad = smooth.padding[0]
    out = []
    with torch.inference_mode():
        for i in range(0, len(patches), 512):
            p = torch.from_numpy(np.ascontiguousarray(patches[i : i + 512], np.float32))
            g = det.gradient(p)
            # kornia's own per-pixel magnitude and orientation (a zero gradient votes nothing)
            mag, ang = magnitude_orientation(g[:, :, 0], g[:, :, 1], det.eps)
            mag = mag * det.weighting
            pos = b * (ang + math.pi) / (2.0 * math.pi)
            lo = torch.floor(pos)
            frac = pos - lo
            idx = lo.long() % b
            h = torch.zeros(len(p), b)
            h.scatter_add_(1, idx.flatten(1), ((1.0 - frac) * mag).flatten(1))
            h.scatter_add_(1, ((idx + 1) % b).flatten(1), (frac * mag).flatten(1))
            h = F.conv1d(F.pad(h[:, None], (pad, pad), mode="circular"), smooth.weight, smooth.bias)[:, 0]
            out.append(h)
    return torch.cat(out).numpy().astype(np.float64) if out else np.zeros((0, b))


def dominant_gradient_candidates(patches: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` strongest peaks of :func:`dominant_gradient_histograms` (local maxima first, strongest first;
    too few maxima are filled by the highest other bins, as our candidates are): orientations ``(N, k)``
    (radians in [0, 2π), CCW as displayed; each peak refined by kornia's parabola, so the first is kornia's
    angle) and masses ``(N, k)`` (the share of the histogram within one bin of each)."""
    return histogram_candidates(dominant_gradient_histograms(patches), k)


def histogram_candidates(h: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`dominant_gradient_candidates` of histograms ``(N, B)`` that
    :func:`dominant_gradient_histograms` made."""
    n, b = h.shape
    if n == 0:
        return np.zeros((0, k)), np.zeros((0, k))
    ht = torch.from_numpy(h)
    idx = top_peaks(ht, k, circular=True).numpy()
    # a flat patch votes nothing: its candidates are the first bins, so the first is kornia's argmax (bin 0)
    idx = np.where(h.max(1, keepdims=True) > 0, idx, np.arange(k)[None])
    rows = np.arange(n)[:, None]
    # kornia's parabola through each peak and its neighbours; a filler bin is no peak and keeps its centre
    pos = refine_peaks(ht, torch.from_numpy(idx), circular=True).numpy()
    pos = np.where(local_maxima(ht, circular=True).numpy()[rows, idx], pos, idx)
    ori = np.mod(math.pi - 2.0 * math.pi * pos / b, 2.0 * math.pi)
    mass = (h[rows, idx] + h[rows, (idx - 1) % b] + h[rows, (idx + 1) % b]) / np.maximum(
        h.sum(1, keepdims=True), 1e-12
    )
    return ori, mass


def as_orientation_hist(h: np.ndarray) -> np.ndarray:
    """:func:`dominant_gradient_histograms` ``(N, B)`` (bin ``i`` at kornia's ``π − 2πi/B``) as
    probabilities with bin ``j`` at ``2πj/B`` (CCW as displayed), as :attr:`patchpose.Poses.orientation_hist`
    holds them; a flat patch's is uniform."""
    n, b = h.shape
    out = h[:, (b // 2 - np.arange(b)) % b]
    total = out.sum(1, keepdims=True)
    return np.where(total > 0, out / np.where(total > 0, total, 1.0), 1.0 / b)


__all__ = [
    "ORI_PATCH",
    "as_orientation_hist",
    "dominant_gradient_candidates",
    "dominant_gradient_orientation",
    "dominant_gradient_histograms",
    "histogram_candidates",
]
