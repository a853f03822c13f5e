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
    from_opencv_orb_xy,
    to_cv2_size_angle,
    to_laf_scale_ori,
)
from .errors import InputError, require


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


def opencv_orb_scale_factor(keypoints) -> float | None:
    """ORB's pyramid ``scale_factor`` if ``cv2.KeyPoint``s look like ``cv2.ORB_create()``'s and some lie above
    level 0, else None: every ``octave`` a level from 0 to 31 and every ``size`` exactly
    ``patch_size · scale_factor**octave`` for one ``patch_size`` and one ``scale_factor`` (which ORB writes, and
    no keypoint of SIFT, AKAZE, FAST, GFTT or ``cv2.KeyPoint(x, y, size)`` does). Keypoints of one level above
    0 alone are taken for ORB's only with its defaults (``patch_size`` 31, ``scale_factor`` 1.2)."""
    kps = list(keypoints)
    if not kps:
        return None
    lev = np.array([k.octave for k in kps], np.int64)
    size = np.array([k.size for k in kps], np.float64)
    if lev.min() < 0 or lev.max() > 31 or lev.max() == 0 or not (np.isfinite(size) & (size > 0)).all():
        return None
    levels = np.unique(lev)
    if len(levels) == 1:
        sf, patch = 1.2, 31.0
    else:
        a, b = levels[0], levels[-1]
        sf = float((size[lev == b][0] / size[lev == a][0]) ** (1.0 / (b - a)))
        patch = float(size[lev == a][0] / sf**a)
    want = np.float32(patch) * np.power(sf, lev).astype(np.float32)
    return sf if sf > 1.0 and np.allclose(size, want, rtol=1e-5, atol=0) else None


def keypoint_xy(keypoints, xy_bias=None, image_shape=None) -> np.ndarray:
    """``(N, 2)`` pixel-centre positions of ``cv2.KeyPoint``s (:mod:`patchpose.conventions`).

    ``xy_bias`` (px per axis, a number or ``(N, 2)``): ``pt − xy_bias``. None (default): as the detector put
    them, recognised by their fields: ``pt − 0.25`` for OpenCV SIFT's keypoints (:func:`is_opencv_sift`,
    :data:`~patchpose.conventions.OPENCV_SIFT_XY_BIAS`); for OpenCV ORB's above pyramid level 0
    (:func:`opencv_orb_scale_factor`) the position of their level's pixel, which depends on the size of the
    image they were found in (``image_shape = (H, W)``, required then:
    :func:`~patchpose.conventions.from_opencv_orb_xy`); ``pt`` for any other."""
    kps = list(keypoints)
    pt = np.array([k.pt for k in kps], np.float64).reshape(-1, 2)
    if xy_bias is not None:
        return pt - _check_xy_bias(xy_bias, len(kps))
    if is_opencv_sift(kps):
        return pt - OPENCV_SIFT_XY_BIAS
    sf = opencv_orb_scale_factor(kps)
    if sf is None:
        return pt
    if image_shape is None:
        raise InputError(
            "these look like OpenCV ORB keypoints above pyramid level 0, whose positions depend on the size of "
            "the image they were found in: give image_shape=(H, W) (or xy_bias=0 to read them at pt)"
        )
    return from_opencv_orb_xy(pt, [k.octave for k in kps], image_shape, sf)


def _check_xy_bias(xy_bias, n: int) -> np.ndarray:
    """``xy_bias`` as a float array (a number, or ``(n, 2)``); :class:`InputError` for anything else."""
    bad = InputError(f"xy_bias must be None (auto), a number of pixels or ({n}, 2) numbers, got {xy_bias!r}")
    if isinstance(xy_bias, (bool, str, bytes)):
        raise bad
    try:
        b = np.asarray(xy_bias, np.float64)
    except (TypeError, ValueError):
        raise bad from None
    if (b.ndim != 0 and b.shape != (n, 2)) or not np.isfinite(b).all():
        raise bad
    return b


def from_cv2_keypoints(
    keypoints, size_factor: float = CV2_SIZE_FACTOR, xy_bias=None, image_shape=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``cv2.KeyPoint`` list → ``(xy (N, 2), log2 scale (N,), orientation radians (N,))``, xy in pixel
    centres (:func:`keypoint_xy`; ORB's keypoints above level 0 need ``image_shape``)."""
    keypoints = list(keypoints)
    xy = keypoint_xy(keypoints, xy_bias, image_shape)
    scale, ori = from_cv2_size_angle([k.size for k in keypoints], [k.angle for k in keypoints], size_factor)
    return xy, np.atleast_1d(scale), np.atleast_1d(ori)


def to_laf(xy, scale, orientation, laf_factor: float = LAF_SCALE_FACTOR) -> torch.Tensor:
    """Poses → kornia LAFs ``(1, N, 2, 3)`` (float32)."""
    KF = require("kornia.feature", "kornia")

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
    KF = require("kornia.feature", "kornia")

    xy = KF.get_laf_center(laf)[0].double().numpy()
    s = KF.get_laf_scale(laf)[0, :, 0, 0].double().numpy()
    deg = KF.get_laf_orientation(laf)[0, :, 0].double().numpy()
    scale, ori = from_laf_scale_ori(s, deg, laf_factor)
    return xy, scale, ori
