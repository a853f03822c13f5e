"""Hand-crafted pose estimators measured side by side with ours (same keypoints, same frames).

Each baseline maps gray patches cut at a frame to a pose in that frame's units, so that the relative pose
of a pair is comparable to the truth exactly as ours is:

* :func:`dominant_gradient_orientation`: kornia's ``PatchDominantGradientOrientation`` (SIFT-like
  36-bin gradient histogram with sub-bin interpolation), radians CCW as displayed.
* :func:`intensity_centroid_orientation`: ORB's intensity centroid on a disc, radians CCW as displayed.
* :func:`log_scale_selection`: scale-normalised Laplacian-of-Gaussian at the centre, maximised over a
  fine grid of scales (1/8 octave, parabolic refinement), log2 of the selected σ.
"""

from __future__ import annotations

import math

import numpy as np
import torch

#: patch side and window (in REFERENCE_RADIUS units) for the baselines
ORI_PATCH, ORI_WINDOW = 32, 1.0
LOG_PATCH, LOG_WINDOW = 128, 8.0
_LOG_SIGMAS = 2.0 ** (np.arange(0, 37) / 8.0)  # 1 … 22.6 patch pixels


def dominant_gradient_orientation(patches: np.ndarray) -> np.ndarray:
    """``(N, 1, PS, PS)`` gray patches → ``(N,)`` radians in [0, 2π)."""
    import kornia

    det = kornia.feature.PatchDominantGradientOrientation(patches.shape[-1])
    with torch.inference_mode():
        out = [
            det(torch.from_numpy(np.ascontiguousarray(patches[i : i + 512])))
            for i in range(0, len(patches), 512)
        ]
    return np.mod(torch.cat(out).numpy().astype(np.float64), 2 * math.pi) if out else np.zeros(0)


def intensity_centroid_orientation(patches: np.ndarray) -> np.ndarray:
    """ORB's orientation: the angle of the intensity centroid on the inscribed disc (y down ⇒ the CCW
    angle is ``atan2(−m01, m10)``)."""
    ps = patches.shape[-1]
    c = (ps - 1) / 2.0
    y, x = np.mgrid[0:ps, 0:ps] - c
    disc = (x**2 + y**2) <= (ps / 2.0) ** 2
    p = patches[:, 0] * disc
    m10 = (p * x).sum((1, 2))
    m01 = (p * y).sum((1, 2))
    return np.mod(np.arctan2(-m01, m10), 2 * math.pi)


def _log_kernels(ps: int) -> np.ndarray:
    c = (ps - 1) / 2.0
    y, x = np.mgrid[0:ps, 0:ps] - c
    r2 = (x**2 + y**2).ravel()
    ks = []
    for s in _LOG_SIGMAS:
        # σ²·∇²G_σ, zero-mean over the window so flat patches give no response
        k = (r2 / s**2 - 2.0) / (2 * math.pi * s**2) * np.exp(-r2 / (2 * s**2))
        ks.append(k - k.mean())
    return np.stack(ks, 1)


_KERNELS: dict[int, np.ndarray] = {}


def log_scale_selection(patches: np.ndarray) -> np.ndarray:
    """``(N, 1, PS, PS)`` gray patches → ``(N,)`` log2 of the characteristic σ (patch pixels)."""
    ps = patches.shape[-1]
    if ps not in _KERNELS:
        _KERNELS[ps] = _log_kernels(ps)
    resp = np.abs(patches.reshape(len(patches), -1).astype(np.float64) @ _KERNELS[ps])
    i = resp.argmax(1)
    n = resp.shape[1]
    left = resp[np.arange(len(i)), np.clip(i - 1, 0, n - 1)]
    mid = resp[np.arange(len(i)), i]
    right = resp[np.arange(len(i)), np.clip(i + 1, 0, n - 1)]
    den = left - 2 * mid + right
    off = np.where(
        (den < 0) & (i > 0) & (i < n - 1), 0.5 * (left - right) / np.where(den < 0, den, -1.0), 0.0
    )
    return np.log2(_LOG_SIGMAS[0]) + (i + np.clip(off, -0.5, 0.5)) / 8.0
