"""Keypoint detection for pair synthesis and the CLI (OpenCV SIFT, optionally Harris or Shi-Tomasi corners)."""

from __future__ import annotations

import cv2
import numpy as np

from ..conventions import from_opencv_sift_xy
from ..errors import InputError, is_int_in
from .patches import uint16_white

#: the most keypoints a detector is asked for (OpenCV takes a C int; far more than any image holds)
MAX_KEYPOINTS = 10_000_000


def _check_budget(max_keypoints) -> None:
    if not is_int_in(max_keypoints, 0, MAX_KEYPOINTS, integral_floats=True):
        raise InputError(
            f"max_keypoints must be an integer from 0 to {MAX_KEYPOINTS:,}, got {max_keypoints!r}"
        )


def as_uint8_gray(image: np.ndarray) -> np.ndarray:
    """The 8-bit gray image OpenCV's detectors and ``cv2.SIFT.compute`` take (an RGB or gray image: uint8; uint16,
    read by its bit depth as 16-bit files are, :func:`~patchpose.data.patches.uint16_white`; or float in [0, 1])."""
    g = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    if g.dtype == np.uint16:  # by its bit depth (it was taken as [0, 1]: every value past 1 cut to white)
        g = g.astype(np.float32) / np.float32(uint16_white(image))
    if g.dtype != np.uint8:
        if g.dtype.kind == "f" and not np.isfinite(g).all():  # the cast would warn and give garbage
            raise InputError("image contains NaN or infinite values")
        g = np.clip(g * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return g


def detect_sift(
    image: np.ndarray,
    max_keypoints: int = 1024,
    margin: float = 0.0,
    candidates: bool = False,
    mask: np.ndarray | None = None,
) -> tuple:
    """SIFT keypoints ``(N, 2)`` xy (strongest first, one per location) at least ``margin`` px inside the
    border (and where the ``uint8`` ``mask`` of the image's size is not 0, if given: the ``max_keypoints``
    strongest there, where OpenCV's own budget would keep the strongest of the whole image and then drop those
    outside the mask), and the matching ``cv2.KeyPoint`` list.

    The xy are pixel-centre positions (OpenCV's ``pt`` moved by
    :data:`~patchpose.conventions.OPENCV_SIFT_XY_BIAS`: :func:`~patchpose.conventions.from_opencv_sift_xy`);
    the ``cv2.KeyPoint``s keep OpenCV's ``pt``, which its SIFT ``compute`` expects.

    With ``candidates``, a third item: for each keypoint, the ``cv2.KeyPoint.angle`` of every orientation
    SIFT found at its location and size (degrees, its own first), as an array."""
    _check_budget(max_keypoints)
    g = as_uint8_gray(image)
    if mask is None:
        kps = cv2.SIFT_create(nfeatures=int(max_keypoints)).detect(g, None)
    else:  # OpenCV keeps its strongest nfeatures before the mask: the budget is spent inside the mask here
        kps = cv2.SIFT_create(nfeatures=0).detect(g, mask)
    kps = sorted(kps, key=lambda k: -k.response)[: int(max_keypoints)]
    h, w = g.shape
    xy = from_opencv_sift_xy(np.array([k.pt for k in kps], dtype=np.float64).reshape(-1, 2))
    inside = (xy >= margin).all(1) & (xy[:, 0] <= w - 1 - margin) & (xy[:, 1] <= h - 1 - margin)
    keep = [k for k, ok in zip(kps, inside) if ok]
    xy = xy[inside]
    # SIFT reports the same location several times (one per orientation): keep the first
    _, first = np.unique(np.round(xy, 2), axis=0, return_index=True)
    first = np.sort(first)
    kept = [keep[i] for i in first]
    if not candidates:
        return xy[first], kept
    found: dict = {}
    for k in keep:
        found.setdefault((round(k.pt[0], 2), round(k.pt[1], 2), k.size), []).append(k.angle)
    cands = [np.array(found[(round(k.pt[0], 2), round(k.pt[1], 2), k.size)]) for k in kept]
    return xy[first], kept, cands


def detect_harris(image: np.ndarray, max_keypoints: int = 512, margin: float = 0.0) -> np.ndarray:
    """Harris corners (OpenCV ``goodFeaturesToTrack`` with the Harris score), ``(N, 2)`` xy."""
    return _corners(image, max_keypoints, margin, harris=True)


def detect_gftt(image: np.ndarray, max_keypoints: int = 512, margin: float = 0.0) -> np.ndarray:
    """Shi-Tomasi corners (OpenCV ``goodFeaturesToTrack`` with its own minimum-eigenvalue score, the
    Harris settings otherwise), ``(N, 2)`` xy, strongest first."""
    return _corners(image, max_keypoints, margin, harris=False)


def _corners(image: np.ndarray, max_keypoints: int, margin: float, harris: bool) -> np.ndarray:
    _check_budget(max_keypoints)
    g = as_uint8_gray(image)
    if int(max_keypoints) == 0:  # none asked (OpenCV reads 0 as "all")
        return np.zeros((0, 2))
    pts = cv2.goodFeaturesToTrack(g, int(max_keypoints), 0.01, 5, useHarrisDetector=harris, k=0.04)
    if pts is None:
        return np.zeros((0, 2))
    xy = pts.reshape(-1, 2).astype(np.float64)
    h, w = g.shape
    ok = (
        (xy[:, 0] >= margin)
        & (xy[:, 0] <= w - 1 - margin)
        & (xy[:, 1] >= margin)
        & (xy[:, 1] <= h - 1 - margin)
    )
    return xy[ok]
