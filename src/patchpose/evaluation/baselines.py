"""Hand-crafted pose estimators measured side by side with ours (same keypoints, same frames).

Each baseline maps gray patches cut at a frame to a pose in that frame's units, so that the relative pose
of a pair is comparable to the truth exactly as ours is:

* :func:`dominant_gradient_orientation` (the library's, :mod:`patchpose.matching.gradient`): kornia's
  ``PatchDominantGradientOrientation`` (SIFT-like 36-bin gradient histogram with sub-bin interpolation), radians
  CCW as displayed.
* :func:`intensity_centroid_orientation`: ORB's intensity centroid on a disc, radians CCW as displayed.
* :func:`log_scale_selection`: scale-normalised Laplacian-of-Gaussian at the centre, maximised over a
  grid of scales (1/4 octave, parabolic refinement), log2 of the window where its response peaks.
"""

from __future__ import annotations

import math

import numpy as np

from ..conventions import OPENCV_SIFT_XY_BIAS
from ..matching.gradient import (  # the library's, named here with the other baselines
    dominant_gradient_orientation as dominant_gradient_orientation,
)

#: window (in REFERENCE_RADIUS units) of the orientation baselines; their patch side is the gradient's
ORI_WINDOW = 1.0
#: LoG scale selection: a scale space sampled by resampling windows of radius 2^(k/4)·16 px to
#: LOG_PATCH pixels (anti-aliased by the pyramid) and applying one LoG of σ = LOG_SIGMA patch pixels at
#: the centre; the selected image σ is LOG_SIGMA·(2·16·w/LOG_PATCH) px.
LOG_PATCH, LOG_SIGMA = 24, 3.0
LOG_WINDOWS = 2.0 ** (np.arange(-10, 19) / 4.0)  # radius 2.8 … 362 px: σ 0.7 … 90 px


def _log_kernel(ps: int, s: float) -> np.ndarray:
    c = (ps - 1) / 2.0
    y, x = np.mgrid[0:ps, 0:ps] - c
    r2 = x**2 + y**2
    # σ²·∇²G_σ (scale-normalised), zero-mean over the window so flat patches give no response
    k = (r2 / s**2 - 2.0) / (2 * math.pi * s**2) * np.exp(-r2 / (2 * s**2))
    return (k - k.mean()).ravel()


def log_scale_selection(stack: np.ndarray) -> np.ndarray:
    """``(N, len(LOG_WINDOWS), LOG_PATCH, LOG_PATCH)`` gray windows (one per scale) → ``(N,)`` log2 of the
    selected *window* ``w`` of :data:`LOG_WINDOWS` (parabolic refinement over the 1/4-octave grid). The LoG's
    σ there is ``LOG_SIGMA`` patch pixels, i.e. ``LOG_SIGMA·2·w/LOG_PATCH`` reference radii: add
    ``log2(2·LOG_SIGMA/LOG_PATCH)`` for σ (a Gaussian blob of std σ_b is found at σ ≈ σ_b). Differences
    between views, which the PatchPose metrics take, need no offset."""
    n, m = stack.shape[:2]
    resp = np.abs(stack.reshape(n, m, -1).astype(np.float64) @ _log_kernel(stack.shape[-1], LOG_SIGMA))
    i = resp.argmax(1)
    r = np.arange(n)
    left, mid, right = resp[r, np.clip(i - 1, 0, m - 1)], resp[r, i], resp[r, np.clip(i + 1, 0, m - 1)]
    den = left - 2 * mid + right
    off = np.where(
        (den < 0) & (i > 0) & (i < m - 1), 0.5 * (left - right) / np.where(den < 0, den, -1.0), 0.0
    )
    return np.log2(LOG_WINDOWS[0]) + (i + np.clip(off, -0.5, 0.5)) / 4.0


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


#: SIFT on a patch: a gray window of radius SIFT_WINDOW·16 px rendered at SIFT_PATCH px (1 px per image
#: pixel at scale 0); the keypoints OpenCV detects within SIFT_MAX_DIST patch pixels of the centre are the
#: candidates, strongest response first.
SIFT_PATCH, SIFT_WINDOW, SIFT_MAX_DIST = 128, 4.0, 4.0


def sift_patch_poses(patches: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV SIFT's own scale and orientation for the centre of each patch.

    ``(N, 1, PS, PS)`` gray patches in [0, 1] → ``(scale (N, k), orientation (N, k))``: log2 of the
    keypoint size (patch pixels) and radians CCW (``−angle``), NaN where SIFT finds fewer candidates near
    the centre (a failure, counted as wrong). Candidates are SIFT keypoints within ``SIFT_MAX_DIST`` px of
    the centre, strongest response first; SIFT's multiple orientations at one location are separate
    candidates, as in its own multi-orientation keypoints.
    """
    import cv2

    n, ps = len(patches), patches.shape[-1]
    c = (ps - 1) / 2.0
    sift = cv2.SIFT_create()
    scale = np.full((n, k), np.nan)
    ori = np.full((n, k), np.nan)
    for i in range(n):
        img = np.clip(patches[i, 0] * 255.0 + 0.5, 0, 255).astype(np.uint8)
        kps = [  # OpenCV SIFT's pt is a quarter pixel off its pixel-centre position (conventions)
            kp
            for kp in sift.detect(img, None)
            if math.hypot(kp.pt[0] - OPENCV_SIFT_XY_BIAS - c, kp.pt[1] - OPENCV_SIFT_XY_BIAS - c)
            <= SIFT_MAX_DIST
        ]
        kps.sort(key=lambda kp: -kp.response)
        for j, kp in enumerate(kps[:k]):
            scale[i, j] = math.log2(kp.size)
            ori[i, j] = math.radians(-kp.angle) % (2 * math.pi)
    return scale, ori
