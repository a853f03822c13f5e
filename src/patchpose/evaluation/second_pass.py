"""The model-free second pass, a peer of ``pair-pose`` at SIFT's detections (#60): what a user without our network
would run to match two photos twice.

1. SIFT with all its orientations, matched by Lowe's ratio test with a cross check
   (:func:`~patchpose.matching.matcher.ratio_matches`);
2. one affine map from photo 1 to photo 2 fitted to those matches by RANSAC (OpenCV's ``estimateAffine2D``);
3. photo 2 warped through it into photo 1's frame (blurred first where the warp shrinks it), SIFT detected and
   described again there, and the new keypoints mapped back into photo 2.

The final matching (the run's matcher) is then of photo 1's descriptors with the warped photo's: photo 2's
keypoints are the warped photo's own, not the run's. Where no map is found (too few inliers, or one that folds or
zooms past :data:`MAX_ZOOM`), photo 2 is matched as it is: SIFT with all its orientations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from ..matching.candidates import sift_all_counts, sift_all_descriptors
from ..matching.describe import Describer
from ..matching.features import Features, sift_detected
from ..matching.matcher import ratio_matches

#: px: RANSAC's reprojection threshold for the affine map (OpenCV's default, 3 px)
AFFINE_PX = 3.0
#: the fewest matches the affine map must explain; fewer: no map
MIN_INLIERS = 8
#: the most the map may zoom or shrink either way (its singular values): beyond, no map
MAX_ZOOM = 8.0
#: how photo 2 is resampled into photo 1's frame (OpenCV's flag; chosen on val: Lanczos 302.0 → 343.8, 172.6 → 204.4,
#: 440.1 → 493.1, 389.3 → 456.5 correct matches per pair against bilinear, cubic within 9 of it)
INTERPOLATION = cv2.INTER_LANCZOS4
#: px: how far inside the warped photo's valid region the new detections must be (OpenCV SIFT's own border)
BORDER_PX = 5


@dataclass(frozen=True)
class SecondPass:
    """Both photos' descriptors ``(N, k, D)``, ``(M, k, D)`` for the final matching, photo 2's keypoints ``(M, 2)``
    they describe (the warped photo's detections mapped back, or photo 2's own where no map was found), the map
    ``(2, 3)`` from photo 1 to photo 2 (None: none), and the descriptors computed in all (both passes) and matched
    in the final one."""

    descriptors1: np.ndarray
    descriptors2: np.ndarray
    xy2: np.ndarray
    affine: np.ndarray | None
    computed: int
    matched: int


def fit_affine(xy1: np.ndarray, xy2: np.ndarray) -> np.ndarray | None:
    """The ``(2, 3)`` affine map ``xy2 ≈ A·[xy1, 1]`` of matched points by RANSAC (:data:`AFFINE_PX`); None where
    fewer than :data:`MIN_INLIERS` agree or the map folds, or zooms past :data:`MAX_ZOOM`."""
    if len(xy1) < MIN_INLIERS:
        return None
    A, inliers = cv2.estimateAffine2D(
        np.ascontiguousarray(xy1, np.float32),
        np.ascontiguousarray(xy2, np.float32),
        method=cv2.RANSAC,
        ransacReprojThreshold=AFFINE_PX,
    )
    if A is None or inliers is None or int(inliers.sum()) < MIN_INLIERS:
        return None
    sv = np.linalg.svd(A[:, :2], compute_uv=False)
    if np.linalg.det(A[:, :2]) <= 0 or sv.max() > MAX_ZOOM or sv.min() < 1.0 / MAX_ZOOM:
        return None
    return A.astype(np.float64)


def warp_into(image: np.ndarray, A: np.ndarray, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``image`` (photo 2) warped into a frame of ``shape`` (photo 1's ``(h, w)``) through ``A`` from that frame to
    the image (pixel centres at integers, both), blurred first by the Gaussian that keeps the warp from aliasing
    where it shrinks the image; and the ``uint8`` mask of the warped pixels at least :data:`BORDER_PX` inside it."""
    h, w = shape
    shrink = float(np.linalg.svd(A[:, :2], compute_uv=False).max())  # image px per warped px, at most
    src = np.ascontiguousarray(image, np.float32)
    if shrink > 1.0:
        sigma = 0.5 * math.sqrt(shrink**2 - 1.0)
        src = cv2.GaussianBlur(src, (0, 0), sigma)
    flags = INTERPOLATION | cv2.WARP_INVERSE_MAP
    warped = cv2.warpAffine(src, A, (w, h), flags=flags, borderMode=cv2.BORDER_REFLECT_101)
    valid = np.full(image.shape[:2], 255, np.uint8)
    mask = cv2.warpAffine(valid, A, (w, h), flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP, borderValue=0)
    mask = cv2.erode(mask, np.ones((2 * BORDER_PX + 1, 2 * BORDER_PX + 1), np.uint8))
    return np.clip(warped, 0.0, 1.0), mask


def second_pass(feats1: Features, feats2: Features, describer: Describer, max_keypoints: int) -> SecondPass:
    """The module's steps for SIFT's detections ``feats1``, ``feats2`` of two photos (with their orientations:
    :func:`~patchpose.matching.candidates.sift_all_descriptors`), photo 2 detected again with at most
    ``max_keypoints`` keypoints."""
    d1, d2 = sift_all_descriptors(feats1, describer), sift_all_descriptors(feats2, describer)
    own1 = int(sift_all_counts(feats1).sum())  # photo 1's descriptors: computed once, matched in both passes
    first = own1 + int(sift_all_counts(feats2).sum())
    m = ratio_matches(d1, d2)[0]
    A = fit_affine(feats1.xy[m[:, 0]], feats2.xy[m[:, 1]]) if len(m) else None
    if A is None:
        return SecondPass(d1, d2, feats2.xy, None, first, first)
    warped, mask = warp_into(feats2.image, A, feats1.image.shape[:2])
    again = sift_detected(warped, max_keypoints, mask)
    if len(again) == 0:
        return SecondPass(d1, np.zeros((0, 1, describer.dim), np.float32), again.xy, A, first, 0)
    more = int(sift_all_counts(again).sum())
    final = own1 + more
    xy2 = again.xy @ A[:, :2].T + A[:, 2]
    return SecondPass(d1, sift_all_descriptors(again, describer), xy2, A, first + more, final)


__all__ = [
    "AFFINE_PX",
    "BORDER_PX",
    "MAX_ZOOM",
    "MIN_INLIERS",
    "SecondPass",
    "fit_affine",
    "second_pass",
    "warp_into",
]
