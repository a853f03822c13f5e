"""The model-free second pass, a peer of ``pair-pose`` at SIFT's detections (#60): what a user without our network
would run to match two photos twice.

1. SIFT with all its orientations, matched by Lowe's ratio test with a cross check
   (:func:`~patchpose.matching.matcher.ratio_matches`);
2. one affine map from photo 1 to photo 2 fitted to those matches by RANSAC (OpenCV's ``estimateAffine2D``);
3. the photo whose structures look smaller warped through it into the other's frame, enlarged (blurred first where
   the warp shrinks it; photo 2 where the map does not enlarge), SIFT detected and described again there, and the
   new keypoints mapped back into it.

The final matching (the run's matcher) is then of the other photo's descriptors with the warped photo's: its
keypoints are the warped view's own, not the run's. Where no map is found (too few inliers, or one that folds or
zooms past :data:`~patchpose.matching.rectify.MAX_ZOOM`, or too few keypoints in the warped view), both photos are
matched as they are: SIFT with all its orientations. Steps 1 to 3 are the recipe ``rectify``'s
(:mod:`patchpose.matching.rectify`: the same map, the same warped view, :func:`~patchpose.matching.rectify.warped_view`);
it then describes both photos upright at 16 px instead of at SIFT's own orientations: beside it, this row shows what
that description adds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..matching.candidates import sift_all_counts, sift_all_descriptors
from ..matching.describe import Describer
from ..matching.features import Features
from ..matching.rectify import first_pass_affine, warped_view


@dataclass(frozen=True)
class SecondPass:
    """Both photos' descriptors ``(N, k, D)``, ``(M, k, D)`` for the final matching, the keypoints ``(N, 2)``,
    ``(M, 2)`` they describe (the warped photo's detections mapped back, the other's own; both photos' own where no
    map was found), the map ``(2, 3)`` from photo 1 to photo 2 (None: none), and the descriptors computed in all
    (both passes) and matched in the final one."""

    descriptors1: np.ndarray
    descriptors2: np.ndarray
    xy1: np.ndarray
    xy2: np.ndarray
    affine: np.ndarray | None
    computed: int
    matched: int


def second_pass(feats1: Features, feats2: Features, describer: Describer, max_keypoints: int) -> SecondPass:
    """The module's steps for SIFT's detections ``feats1``, ``feats2`` of two photos (with their orientations:
    :func:`~patchpose.matching.candidates.sift_all_descriptors`), the warped photo detected again with at most
    ``max_keypoints`` keypoints."""
    A, first = first_pass_affine(feats1, feats2, describer)
    d1, d2 = (
        sift_all_descriptors(feats1, describer),
        sift_all_descriptors(feats2, describer),
    )  # its own (memo)
    n1 = int(sift_all_counts(feats1).sum())
    n2 = first - n1
    view = None if A is None else warped_view(feats1, feats2, A, max_keypoints)
    if view is None:
        return SecondPass(d1, d2, feats1.xy, feats2.xy, None, n1 + n2, n1 + n2)
    again, M, warped = view
    more = int(sift_all_counts(again).sum())
    e = sift_all_descriptors(again, describer)
    xy = again.xy @ M[:, :2].T + M[:, 2]
    if warped == 1:  # photo 2's descriptors: computed once, matched in both passes
        return SecondPass(e, d2, xy, feats2.xy, A, n1 + n2 + more, more + n2)
    return SecondPass(d1, e, feats1.xy, xy, A, n1 + n2 + more, n1 + more)


__all__ = ["SecondPass", "second_pass"]
