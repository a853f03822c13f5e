"""Conversions between our poses and OpenCV keypoints / kornia LAFs (units and signs per
:mod:`patchpose.conventions`)."""

from __future__ import annotations

import cv2
import numpy as np
import torch

from .conventions import (
    CV2_SIZE_FACTOR,
    LAF_SCALE_FACTOR,
    OPENCV_SIFT_XY_BIAS,
    from_cv2_size_angle,
    from_laf_scale_ori,
    to_cv2_size_angle,
    to_laf_scale_ori,
)
from .errors import InputError


def to_cv2_keypoints(xy, scale, orientation, size_factor: float = CV2_SIZE_FACTOR) -> list[cv2.KeyPoint]:
    """``(N, 2)`` xy, ``(N,)`` log2 scale and radians (CCW) → ``cv2.KeyPoint`` (size = diameter px,
    angle = degrees clockwise in [0, 360))."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    size, angle = to_cv2_size_angle(
        np.asarray(scale, np.float64), np.asarray(orientation, np.float64), size_factor
    )
    size, angle = np.broadcast_to(size, len(xy)), np.broadcast_to(angle, len(xy))
    return [cv2.KeyPoint(float(x), float(y), float(s), float(a)) for (x, y), s, a in zip(xy, size, angle)]


def is_opencv_sift(keypoints) -> bool:
    """Whether ``cv2.KeyPoint``s come from OpenCV's SIFT: every ``octave`` field carries SIFT's packing
    (``octave + (layer << 8) + …``, with a layer from 1 up), which no other OpenCV detector (ORB, FAST, GFTT,
    MSER, …) nor ``cv2.KeyPoint(x, y, size)`` writes."""
    kps = list(keypoints)
    return bool(kps) and all((k.octave >> 8) & 255 >= 1 for k in kps)


def keypoint_xy_bias(keypoints, xy_bias=None) -> float:
    """The px per axis to subtract from the keypoints' ``pt`` to get pixel-centre positions: ``xy_bias`` if
    given (a finite number), else :data:`~patchpose.conventions.OPENCV_SIFT_XY_BIAS` (0.25) for OpenCV SIFT's
    keypoints (:func:`is_opencv_sift`) and 0 for any other."""
    if xy_bias is None:
        return OPENCV_SIFT_XY_BIAS if is_opencv_sift(keypoints) else 0.0
    if isinstance(xy_bias, bool) or not isinstance(xy_bias, (int, float, np.floating, np.integer)):
        raise InputError(f"xy_bias must be None (auto) or a number of pixels, got {xy_bias!r}")
    if not np.isfinite(xy_bias):
        raise InputError(f"xy_bias must be finite, got {xy_bias!r}")
    return float(xy_bias)


def keypoint_xy(keypoints, xy_bias: float | None = None) -> np.ndarray:
    """``(N, 2)`` pixel-centre positions of ``cv2.KeyPoint``s: ``pt`` minus :func:`keypoint_xy_bias` (a quarter
    pixel for OpenCV SIFT's keypoints, else 0; ``xy_bias`` overrides)."""
    keypoints = list(keypoints)
    return np.array([k.pt for k in keypoints], np.float64).reshape(-1, 2) - keypoint_xy_bias(
        keypoints, xy_bias
    )


def from_cv2_keypoints(
    keypoints, size_factor: float = CV2_SIZE_FACTOR, xy_bias: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``cv2.KeyPoint`` list → ``(xy (N, 2), log2 scale (N,), orientation radians (N,))``, xy in pixel
    centres (:func:`keypoint_xy`)."""
    keypoints = list(keypoints)
    xy = keypoint_xy(keypoints, xy_bias)
    scale, ori = from_cv2_size_angle([k.size for k in keypoints], [k.angle for k in keypoints], size_factor)
    return xy, np.atleast_1d(scale), np.atleast_1d(ori)


def to_laf(xy, scale, orientation, laf_factor: float = LAF_SCALE_FACTOR) -> torch.Tensor:
    """Poses → kornia LAFs ``(1, N, 2, 3)`` (float32)."""
    import kornia.feature as KF

    s, deg = to_laf_scale_ori(np.asarray(scale, np.float64), np.asarray(orientation, np.float64), laf_factor)
    xy = torch.as_tensor(np.asarray(xy, np.float64).reshape(1, -1, 2), dtype=torch.float32)
    n = xy.shape[1]
    s = torch.as_tensor(np.broadcast_to(s, n).copy(), dtype=torch.float32).view(1, n, 1, 1)
    deg = torch.as_tensor(np.broadcast_to(deg, n).copy(), dtype=torch.float32).view(1, n, 1)
    return KF.laf_from_center_scale_ori(xy, s, deg)


def from_laf(
    laf: torch.Tensor, laf_factor: float = LAF_SCALE_FACTOR
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """kornia LAFs ``(1, N, 2, 3)`` → ``(xy, log2 scale, orientation radians)``."""
    import kornia.feature as KF

    xy = KF.get_laf_center(laf)[0].double().numpy()
    s = KF.get_laf_scale(laf)[0, :, 0, 0].double().numpy()
    deg = KF.get_laf_orientation(laf)[0, :, 0].double().numpy()
    scale, ori = from_laf_scale_ori(s, deg, laf_factor)
    return xy, scale, ori
