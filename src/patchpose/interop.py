"""Conversions between our poses and OpenCV keypoints / kornia LAFs (units and signs per
:mod:`patchpose.conventions`)."""

from __future__ import annotations

import cv2
import numpy as np
import torch

from .conventions import (
    CV2_SIZE_FACTOR,
    LAF_SCALE_FACTOR,
    from_cv2_size_angle,
    from_laf_scale_ori,
    to_cv2_size_angle,
    to_laf_scale_ori,
)


def to_cv2_keypoints(xy, scale, orientation, size_factor: float = CV2_SIZE_FACTOR) -> list[cv2.KeyPoint]:
    """``(N, 2)`` xy, ``(N,)`` log2 scale and radians (CCW) → ``cv2.KeyPoint`` (size = diameter px,
    angle = degrees clockwise in [0, 360))."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    size, angle = to_cv2_size_angle(
        np.asarray(scale, np.float64), np.asarray(orientation, np.float64), size_factor
    )
    size, angle = np.broadcast_to(size, len(xy)), np.broadcast_to(angle, len(xy))
    return [cv2.KeyPoint(float(x), float(y), float(s), float(a)) for (x, y), s, a in zip(xy, size, angle)]


def from_cv2_keypoints(
    keypoints, size_factor: float = CV2_SIZE_FACTOR
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``cv2.KeyPoint`` list → ``(xy (N, 2), log2 scale (N,), orientation radians (N,))``."""
    xy = np.array([k.pt for k in keypoints], dtype=np.float64).reshape(-1, 2)
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
