"""Conversions between our poses and OpenCV keypoints / kornia LAFs (units and signs per
:mod:`patchpose.conventions`)."""

from __future__ import annotations

import cv2
import numpy as np
import torch

from . import checks
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
from .errors import InputError, is_int_in, require


def check_cv2_keypoints(keypoints) -> list[cv2.KeyPoint]:
    """A list of ``cv2.KeyPoint`` (possibly empty), or an :class:`InputError`."""
    if (
        keypoints is None
        or isinstance(keypoints, (str, bytes, np.ndarray))
        or not hasattr(keypoints, "__iter__")
    ):
        hint = (
            ": for an (N, 2) array of x, y use est.estimate(image, xy)"
            if isinstance(keypoints, np.ndarray)
            else ""
        )
        raise InputError(
            f"keypoints must be a sequence of cv2.KeyPoint, got {type(keypoints).__name__}{hint}"
        )
    kps = list(keypoints)
    if not all(isinstance(k, cv2.KeyPoint) for k in kps):
        raise InputError("keypoints must be cv2.KeyPoint objects (for (N, 2) arrays use the estimator)")
    return kps


def _image_shape(image_shape) -> tuple[int, int] | None:
    if image_shape is None:
        return None
    if isinstance(image_shape, (str, bytes)) or not hasattr(image_shape, "__len__") or len(image_shape) < 2:
        raise InputError(f"image_shape must be (H, W), got {image_shape!r}")
    if not all(is_int_in(v, 1, integral_floats=True) for v in image_shape[:2]):
        raise InputError(f"image_shape must be (H, W), two whole numbers >= 1, got {image_shape!r}")
    return int(image_shape[0]), int(image_shape[1])


def to_cv2_keypoints(xy, scale, orientation, size_factor: float = CV2_SIZE_FACTOR) -> list[cv2.KeyPoint]:
    """``(N, 2)`` xy, ``(N,)`` log2 scale and radians (CCW) → ``cv2.KeyPoint`` (size = diameter px,
    angle = degrees clockwise in [0, 360))."""
    xy, scale, orientation = checks.poses(xy, scale, orientation)
    size_factor = checks.positive_number(size_factor, "size_factor")
    size, angle = to_cv2_size_angle(scale, orientation, size_factor)
    return [cv2.KeyPoint(float(x), float(y), float(s), float(a)) for (x, y), s, a in zip(xy, size, angle)]


def is_opencv_sift(keypoints) -> bool:
    """Whether ``cv2.KeyPoint``s come from OpenCV's SIFT: every ``octave`` field carries SIFT's packing
    (``octave + (layer << 8) + …``, with a layer from 1 up), which no other OpenCV detector (ORB, FAST, GFTT,
    MSER, …) nor ``cv2.KeyPoint(x, y, size)`` writes."""
    kps = check_cv2_keypoints(keypoints)
    return bool(kps) and all((k.octave >> 8) & 255 >= 1 for k in kps)


def opencv_orb_scale_factor(keypoints) -> float | None:
    """ORB's pyramid ``scale_factor`` if ``cv2.KeyPoint``s look like ``cv2.ORB_create()``'s and some lie above
    level 0, else None: every ``octave`` a level from 0 to 31 and every ``size`` exactly
    ``patch_size · scale_factor**octave`` for one ``patch_size`` and one ``scale_factor`` (which ORB writes, and
    no keypoint of SIFT, AKAZE, FAST, GFTT or ``cv2.KeyPoint(x, y, size)`` does). Keypoints of one level above
    0 alone are taken for ORB's only with its defaults (``patch_size`` 31, ``scale_factor`` 1.2)."""
    kps = check_cv2_keypoints(keypoints)
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
    kps = check_cv2_keypoints(keypoints)
    image_shape = _image_shape(image_shape)
    pt = np.array([k.pt for k in kps], np.float64).reshape(-1, 2)
    if not np.isfinite(pt).all():
        raise InputError("keypoints hold NaN or infinite positions (pt)")
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
    keypoints = check_cv2_keypoints(keypoints)
    size_factor = checks.positive_number(size_factor, "size_factor")
    xy = keypoint_xy(keypoints, xy_bias, image_shape)
    size = np.array([k.size for k in keypoints], np.float64)
    angle = np.array([k.angle for k in keypoints], np.float64)
    bad = ~(np.isfinite(size) & (size > 0) & np.isfinite(angle))
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        raise InputError(
            f"keypoint #{i} has size {size[i]:g} and angle {angle[i]:g}: a pose needs a finite size > 0 "
            "and a finite angle"
        )
    scale, ori = from_cv2_size_angle(size, angle, size_factor)
    return xy, np.atleast_1d(scale), np.atleast_1d(ori)


def to_laf(xy, scale, orientation, laf_factor: float = LAF_SCALE_FACTOR) -> torch.Tensor:
    """Poses → kornia LAFs ``(1, N, 2, 3)`` (float32)."""
    KF = require("kornia.feature", "kornia")

    xy, scale, orientation = checks.poses(xy, scale, orientation)
    laf_factor = checks.positive_number(laf_factor, "laf_factor")
    s, deg = to_laf_scale_ori(scale, orientation, laf_factor)
    xy = torch.as_tensor(xy.reshape(1, -1, 2), dtype=torch.float32)
    n = xy.shape[1]
    s = torch.as_tensor(np.broadcast_to(s, n).copy(), dtype=torch.float32).view(1, n, 1, 1)
    deg = torch.as_tensor(np.broadcast_to(deg, n).copy(), dtype=torch.float32).view(1, n, 1)
    return KF.laf_from_center_scale_ori(xy, s, deg)


def from_laf(
    laf: torch.Tensor, laf_factor: float = LAF_SCALE_FACTOR
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """kornia LAFs ``(1, N, 2, 3)`` → ``(xy, log2 scale, orientation radians)``."""
    KF = require("kornia.feature", "kornia")

    laf = check_laf(laf, batch=1)
    laf_factor = checks.positive_number(laf_factor, "laf_factor")
    xy = KF.get_laf_center(laf)[0].double().numpy()
    s = KF.get_laf_scale(laf)[0, :, 0, 0].double().numpy()
    deg = KF.get_laf_orientation(laf)[0, :, 0].double().numpy()
    scale, ori = from_laf_scale_ori(s, deg, laf_factor)
    return xy, scale, ori


def laf_padding(laf: torch.Tensor) -> torch.Tensor:
    """``(B, N)`` (bool) True where a LAF ``(B, N, 2, 3)`` is all zeros: the padding kornia's detectors append where an
    image has fewer features than asked for (their responses 0 there)."""
    return (laf.detach() == 0).flatten(2).all(2)


def check_laf(
    laf, batch: int | None = None, nondegenerate: bool = True, padding: bool = False
) -> torch.Tensor:
    """kornia LAFs: a float torch tensor ``(B, N, 2, 3)`` (``B = batch`` if given; N may be 0), finite, and
    with ``nondegenerate`` each with an affine part of determinant != 0 (a LAF of scale 0 has no scale to
    read), but with ``padding`` the all-zero LAFs of kornia's padding (:func:`laf_padding`), which the caller
    passes through; an :class:`InputError` otherwise."""
    if not isinstance(laf, torch.Tensor):
        raise InputError(f"laf must be a torch tensor (B, N, 2, 3), got {type(laf).__name__}")
    if laf.dim() != 4 or tuple(laf.shape[2:]) != (2, 3) or (batch is not None and laf.shape[0] != batch):
        want = f"({batch}, N, 2, 3)" if batch is not None else "(B, N, 2, 3)"
        raise InputError(f"laf must be {want}, got {tuple(laf.shape)}")
    if not laf.is_floating_point():
        raise InputError(f"laf must hold floats, got {laf.dtype}")
    if laf.is_meta:
        raise InputError("laf is a meta tensor: it holds no values to read")
    a = laf.detach().double()
    if not bool(torch.isfinite(a).all()):
        raise InputError("laf holds NaN or infinite values")
    det = a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    if nondegenerate and bool(((det.abs() < 1e-12) & ~(laf_padding(a) if padding else False)).any()):
        raise InputError(
            "laf holds degenerate frames (scale 0: the 2×2 affine part has determinant 0): leave them out"
        )
    return laf
