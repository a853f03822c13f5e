"""The model-free second pass, a peer of ``pair-pose`` at SIFT's detections (#60): what a user without our network
would run to match two photos twice.

1. SIFT with all its orientations, matched by Lowe's ratio test with a cross check
   (:func:`~patchpose.matching.matcher.ratio_matches`);
2. one affine map from photo 1 to photo 2 fitted to those matches by RANSAC (OpenCV's ``estimateAffine2D``);
3. photo 2 warped through it into photo 1's frame (blurred first where the warp shrinks it), SIFT detected and
   described again there, and the new keypoints mapped back into photo 2.

The final matching (the run's matcher) is then of photo 1's descriptors with the warped photo's: photo 2's
keypoints are the warped photo's own, not the run's. Where no map is found (too few inliers, or one that folds or
zooms past :data:`~patchpose.matching.rectify.MAX_ZOOM`), photo 2 is matched as it is: SIFT with all its
orientations. Steps 1 and 2 are the recipe ``rectify``'s (:mod:`patchpose.matching.rectify`); it then describes both
photos upright instead of at SIFT's own orientations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..matching.candidates import sift_all_counts, sift_all_descriptors
from ..matching.describe import Describer
from ..matching.features import Features, sift_detected
from ..matching.matcher import ratio_matches
from ..matching.rectify import fit_affine, warp_into


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


__all__ = ["SecondPass", "second_pass"]
