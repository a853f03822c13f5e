"""The keypoints of one photo and what describing them needs: :func:`detect` (OpenCV SIFT, Harris or
Shi-Tomasi corners, or the caller's keypoints with their detector's sizes) returns :class:`Features`.

A keypoint's *frame* is the log2 scale of the region its detector gives it, in units of
:data:`~patchpose.conventions.REFERENCE_RADIUS` (16 px): SIFT's descriptor window (:data:`SIFT_REGION` · its
size), a given size, or none (corners, keypoints without sizes: 16 px).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .. import checks
from ..conventions import OPENCV_SIFT_WINDOW_PER_SIZE, REFERENCE_RADIUS
from ..data.keypoints import MAX_KEYPOINTS, detect_gftt, detect_harris, detect_sift
from ..data.patches import Pyramid, check_image, to_gray
from ..errors import InputError, is_int_in
from ..estimator import check_keypoints
from ..interop import from_cv2_keypoints
from ..reading import MAX_FRAME

#: SIFT's descriptor window per unit of keypoint size (:data:`~patchpose.conventions.OPENCV_SIFT_WINDOW_PER_SIZE`)
SIFT_REGION = OPENCV_SIFT_WINDOW_PER_SIZE
#: the detectors :func:`detect` runs: OpenCV SIFT (a size and an angle per keypoint), Harris corners and
#: Shi-Tomasi corners (``goodFeaturesToTrack``; neither gives a size or an angle)
DETECTORS = ("sift", "harris", "gftt")


@dataclass
class Features:
    """Keypoints of one image and what every description of them needs."""

    xy: np.ndarray  # (N, 2) pixel centres at integers
    sift_scale: np.ndarray  # (N,) log2 of SIFT's descriptor half-width / REFERENCE_RADIUS (NaN: none)
    sift_ori: np.ndarray  # (N,) radians CCW (NaN: none)
    pyramid: Pyramid
    image: np.ndarray  # float32 [0, 1], as given (gray or RGB)
    # per keypoint, every orientation SIFT found at its location (radians CCW, its own first); None: none
    sift_ori_candidates: list[np.ndarray] | None = None
    # (N,) log2 of the detector's own descriptor half-width / REFERENCE_RADIUS (SIFT's, a given size); None:
    # the detector gives no scale
    detector_scale: np.ndarray | None = None
    # what is computed once per image and reused by every description that needs it
    memo: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.xy)

    @property
    def frame(self) -> np.ndarray:
        """``(N,)`` the log2 scale of the detector's region (:attr:`detector_scale`), 0 (16 px) where it
        gives none."""
        if self.detector_scale is None:
            return np.zeros(len(self))
        return np.asarray(self.detector_scale, np.float64)

    def at_frame(self, frame: float) -> Features:
        """These keypoints as if their detector gave each the log2 scale ``frame`` (a scale of their own is set
        aside), with a memo of its own; one view per frame (kept in this memo), and the features themselves
        for frame 0 where they have no scale."""
        if self.detector_scale is None and frame == 0:
            return self
        key = ("at_frame", float(frame))
        if key not in self.memo:
            self.memo[key] = replace(self, detector_scale=np.full(len(self), float(frame)), memo={})
        return self.memo[key]


def check_detector(detector: str) -> None:
    """:class:`InputError` unless ``detector`` is one of :data:`DETECTORS`."""
    if detector not in DETECTORS:
        raise InputError(f"detector must be one of {DETECTORS}, got {detector!r}")


def check_sizes(sizes, n: int) -> np.ndarray:
    """``sizes`` as an ``(n,)`` float64 array of region half-widths in pixels; a one-line :class:`InputError`
    unless there is one real, finite size per keypoint within 16·2**±:data:`~patchpose.reading.MAX_FRAME` px
    (the scales a read reaches)."""
    a = checks.real_array(sizes, "sizes", "real numbers, one per keypoint")
    a = a.reshape(-1) if a.ndim > 1 and a.size == n else a
    if a.shape != (n,):
        raise InputError(f"sizes must hold one size per keypoint ({n}), got shape {a.shape}")
    lo, hi = REFERENCE_RADIUS * 2.0**-MAX_FRAME, REFERENCE_RADIUS * 2.0**MAX_FRAME
    if not (np.isfinite(a).all() and (a >= lo).all() and (a <= hi).all()):
        raise InputError(
            f"sizes must be finite region half-widths from {lo:.3g} to {hi:g} pixels (16·2**±{MAX_FRAME:g})"
        )
    return a


def check_max_keypoints(max_keypoints) -> int:
    """``max_keypoints`` as an int, or a one-line :class:`InputError` naming its range."""
    if not is_int_in(max_keypoints, 1, MAX_KEYPOINTS, integral_floats=True):
        raise InputError(
            f"max_keypoints must be an integer from 1 to {MAX_KEYPOINTS:,}, got {max_keypoints!r}"
        )
    return int(max_keypoints)


def detect(image, max_keypoints: int = 2000, keypoints=None, detector: str = "sift", sizes=None) -> Features:
    """OpenCV SIFT keypoints (strongest first, one per location: SIFT's extra detections for secondary
    orientations are kept as :attr:`Features.sift_ori_candidates`), Harris or Shi-Tomasi corners
    (``detector="harris"`` / ``"gftt"``, strongest first, no pose), or the given ``(N, 2)`` keypoints (no
    pose; ``max_keypoints`` does not apply: the caller chose them), with ``sizes`` ``(N,)`` their detector's
    sizes if it gives them: the half-width of each keypoint's region in pixels, as kornia's ``get_laf_scale``
    reads a LAF (what Key.Net's detections carry)."""
    img = check_image(image)
    gray = to_gray(img)
    if sizes is not None and keypoints is None:
        raise InputError("sizes are those of keypoints given with them: give the keypoints too")
    if keypoints is not None:
        xy = check_keypoints(keypoints, gray.shape)
        scale = None if sizes is None else np.log2(check_sizes(sizes, len(xy)) / REFERENCE_RADIUS)
        return _features(img, gray, xy, scale)
    check_detector(detector)
    n = check_max_keypoints(max_keypoints)
    if detector in ("harris", "gftt"):
        return _features(img, gray, (detect_harris if detector == "harris" else detect_gftt)(img, n))
    return sift_detected(img, n, gray=gray)


def sift_detected(image, max_keypoints: int = 2000, mask=None, gray=None) -> Features:
    """:func:`detect`'s SIFT detections of ``image`` (every orientation SIFT found at a location kept as
    :attr:`Features.sift_ori_candidates`), only where the ``uint8`` ``mask`` of the image's size is not 0 if given;
    ``gray``: ``image`` in gray, if made already."""
    img = check_image(image)
    n = check_max_keypoints(max_keypoints)
    xy, kps, cands = detect_sift(img, n, candidates=True, mask=mask)
    f = sift_features(img, xy, kps, gray)
    f.sift_ori_candidates = [np.mod(-np.radians(c), 2 * math.pi) for c in cands]
    return f


def sift_features(image, xy, keypoints, gray=None) -> Features:
    """:class:`Features` of OpenCV SIFT's ``keypoints`` (``cv2.KeyPoint``s at ``xy`` ``(N, 2)``): SIFT's window
    (:data:`SIFT_REGION` · its size) as their frame and SIFT's scale, SIFT's angle, no other orientation (those are
    :func:`detect`'s); ``gray``: ``image`` in gray, if made already."""
    img = check_image(image)
    _, s, o = from_cv2_keypoints(list(keypoints))
    # from_cv2_keypoints gives log2(size / (2·REFERENCE_RADIUS)); the window is SIFT_REGION·size
    s = np.asarray(s + math.log2(2.0 * SIFT_REGION), np.float64).reshape(-1)
    gray = to_gray(img) if gray is None else gray
    return Features(
        np.asarray(xy, np.float64).reshape(-1, 2), s, np.asarray(o, np.float64).reshape(-1), Pyramid(gray), img,
        detector_scale=s,
    )  # fmt: skip


def features_at(image, xy, detector_scale=None) -> Features:
    """:class:`Features` of the keypoints ``xy`` ``(N, 2)`` of ``image`` as they are (no pose of their own),
    with ``detector_scale`` ``(N,)`` the log2 scale of their detector's regions (None: none): for keypoints
    a caller's own detector found (the checks are the caller's)."""
    img = check_image(image)
    return _features(img, to_gray(img), xy, detector_scale)


def _features(img: np.ndarray, gray: np.ndarray, xy, detector_scale=None) -> Features:
    xy = np.asarray(xy, np.float64).reshape(-1, 2)
    nan = np.full(len(xy), np.nan)
    scale = None if detector_scale is None else np.asarray(detector_scale, np.float64)
    return Features(xy, nan, nan.copy(), Pyramid(gray), img, None, detector_scale=scale)


__all__ = [
    "DETECTORS",
    "SIFT_REGION",
    "Features",
    "check_detector",
    "check_max_keypoints",
    "check_sizes",
    "detect",
    "features_at",
    "sift_detected",
    "sift_features",
]
