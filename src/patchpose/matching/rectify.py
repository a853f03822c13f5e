"""The two-photo recipe ``rectify`` at SIFT's own detections: one photo brought into the other's frame, detected
again there, and both described upright.

1. **The map.** SIFT with all its orientations matched by Lowe's ratio test with a cross check
   (:func:`~.matcher.ratio_matches`), and one affine map from photo 1 to photo 2 fitted to those matches by RANSAC
   (OpenCV's ``estimateAffine2D``, :func:`fit_affine`): the pair's turn, zoom and slant together.
2. **The photo, not the patches.** The photo whose structures look smaller (:data:`WARP`; photo 2 where the map
   does not enlarge) warped through the map into the other's frame, enlarged (blurred first wherever the warp
   shrinks it, :func:`warp_into`), and SIFT detected there again (:func:`~.features.sift_detected`): keypoints
   found in the view the other photo has, where a patch cut through the map at a photo's own keypoints would read
   a keypoint its detector found in another view.
3. **One pose.** Both photos' keypoints described upright (the map took the turn) at 3 sizes about a fixed 16 px
   window (the map took the zoom), blended into one descriptor (:func:`upright_descriptors`), then matched once
   (mutual nearest neighbours); the warped photo's keypoints are mapped back into it.

Where no map is found (under :data:`MIN_INLIERS` matches agree, or one that folds or zooms past :data:`MAX_ZOOM`:
photos that hardly overlap), or the warped view holds fewer than :data:`MIN_INLIERS` keypoints, each photo is matched
as SIFT with all its orientations (the first pass's own descriptors). No network is read: chosen on the val photos
over ``pair-pose`` (CHANGELOG.md, 1.0.0).

**One map is assumed**: a plane, a distant scene, or nearby viewpoints. Where parts of the scene turn or move
differently (two walls at an angle seen from far apart, an object that moved), the keypoints the map does not
explain are described upright in a view that is not theirs, and SIFT with all its orientations can match more of
them there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from ..data.patches import check_warp_size, to_gray
from ..errors import InputError
from .blend import blend_descriptors, pool_sizes
from .candidates import sift_all_counts, sift_all_descriptors, sift_detections
from .describe import Describer
from .features import Features, sift_detected
from .matcher import ratio_matches

#: px: RANSAC's reprojection threshold for the affine map (OpenCV's default; 10 px tied on val)
AFFINE_PX = 3.0
#: the fewest matches the affine map must explain; fewer: no map
MIN_INLIERS = 8
#: the most the map may zoom or shrink either way (its singular values): beyond, no map
MAX_ZOOM = 8.0
#: how a photo is resampled into the other's frame (OpenCV's flag; chosen on val for the second pass that warps photo
#: 2 and describes it at SIFT's orientations, not rechecked for this recipe: Lanczos against bilinear 302.0 → 343.8,
#: 172.6 → 204.4, 440.1 → 493.1, 389.3 → 456.5 correct matches per pair, cubic within 9 of it; AFFINE_PX likewise)
INTERPOLATION = cv2.INTER_LANCZOS4
#: px: how far inside the warped photo's valid region the new detections must be (OpenCV SIFT's own border)
BORDER_PX = 5


@dataclass(frozen=True)
class Rectified:
    """What :func:`rectified_pair` gives: both photos' descriptors ``(N, k, D)`` and ``(M, k, D)`` for the final
    matching, the keypoints ``(N, 2)`` and ``(M, 2)`` that they describe (the warped photo's detections mapped back
    into it, the other photo's own), the map ``(2, 3)`` from photo 1 to photo 2 (pixels, y down; None: none), the
    descriptor computations of both passes, and which photo was warped and detected again (1 or 2; 0: none)."""

    descriptors1: np.ndarray
    descriptors2: np.ndarray
    xy1: np.ndarray
    xy2: np.ndarray
    affine: np.ndarray | None
    computed: int
    warped: int = 0


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
    check_warp_size(image.shape)
    check_warp_size(shape)
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


def first_pass_affine(
    feats1: Features, feats2: Features, describer: Describer
) -> tuple[np.ndarray | None, int]:
    """Step 1: the map from photo 1 to photo 2 (:func:`fit_affine`; None: none) that the ratio-test matches of SIFT
    with all its orientations agree on, and the descriptors that computed (both photos')."""
    d1, d2 = sift_all_descriptors(feats1, describer), sift_all_descriptors(feats2, describer)
    computed = int(sift_all_counts(feats1).sum() + sift_all_counts(feats2).sum())
    m = ratio_matches(d1, d2)[0]
    return (fit_affine(feats1.xy[m[:, 0]], feats2.xy[m[:, 1]]) if len(m) else None), computed


def upright_descriptors(feats: Features, describer: Describer) -> tuple[np.ndarray, int]:
    """Step 3: ``(N, 1, D)``: each keypoint described upright at 3 sizes about the fixed 16 px window
    (:func:`~.blend.pool_sizes`), blended, and the descriptors that computed. After the warp both photos show
    things at one scale: SIFT's own sizes added nothing on val (CHANGELOG.md, 1.0.0)."""
    n = len(feats)
    s, o, w = pool_sizes(np.zeros((n, 1)), np.zeros((n, 1)), np.ones((n, 1)))
    k = s.shape[1]
    d = describer.describe(feats.pyramid, np.repeat(feats.xy, k, 0), s.reshape(-1), o.reshape(-1))
    return blend_descriptors(d.reshape(n, k, describer.dim), w)[:, None], n * k


def warped_view(
    feats1: Features, feats2: Features, A: np.ndarray, max_keypoints: int
) -> tuple[Features, np.ndarray, int] | None:
    """Step 2: SIFT's detections (at most ``max_keypoints``) in the photo whose structures look smaller, warped
    through the map ``A`` (photo 1 → photo 2) into the other's frame, and enlarged there: photo 1 where the map
    enlarges (its determinant above 1), else photo 2 (:func:`warp_into`, the gray image). Returns those
    detections, the ``(2, 3)`` map from the warped frame to the warped photo's pixels, and which photo was warped
    (1 or 2); None where fewer than :data:`MIN_INLIERS` keypoints are found there."""
    first = bool(np.linalg.det(A[:, :2]) > 1.0)
    M = np.linalg.inv(np.vstack([A, [0.0, 0.0, 1.0]]))[:2] if first else A  # warped frame → warped photo
    moved, kept = (feats1, feats2) if first else (feats2, feats1)
    warped, mask = warp_into(to_gray(moved.image), M, kept.image.shape[:2])
    again = sift_detected(warped, max_keypoints, mask)
    return None if len(again) < MIN_INLIERS else (again, M, 1 if first else 2)


def rectified_pair(feats1: Features, feats2: Features, describer: Describer, max_keypoints: int) -> Rectified:
    """The module's steps for SIFT's own detections ``feats1``, ``feats2`` of two photos
    (:func:`~.features.sift_detected`; the warped photo detected again with at most ``max_keypoints``
    keypoints); a one-line :class:`~patchpose.errors.InputError` for other keypoints."""
    if not (sift_detections(feats1) and sift_detections(feats2)):
        raise InputError("rectify needs SIFT's own detections of both photos (it detects them again)")
    A, computed = first_pass_affine(feats1, feats2, describer)
    view = None if A is None else warped_view(feats1, feats2, A, max_keypoints)
    if view is None:  # no map, or nothing found in the warped view: the first pass's own descriptors
        d1, d2 = sift_all_descriptors(feats1, describer), sift_all_descriptors(feats2, describer)
        return Rectified(d1, d2, feats1.xy, feats2.xy, None, computed)
    again, M, warped = view
    kept = feats2 if warped == 1 else feats1
    (e, c), (ek, ck) = (upright_descriptors(f, describer) for f in (again, kept))
    xy = again.xy @ M[:, :2].T + M[:, 2]
    if warped == 1:
        return Rectified(e, ek, xy, feats2.xy, A, computed + c + ck, warped=1)
    return Rectified(ek, e, feats1.xy, xy, A, computed + c + ck, warped=2)


__all__ = [
    "AFFINE_PX",
    "BORDER_PX",
    "INTERPOLATION",
    "MAX_ZOOM",
    "MIN_INLIERS",
    "Rectified",
    "fit_affine",
    "first_pass_affine",
    "rectified_pair",
    "upright_descriptors",
    "warp_into",
    "warped_view",
]
