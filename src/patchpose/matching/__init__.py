"""Image matching with pose-normalised patches (paper, Section 4.4 and supplementary Section B).

``detect`` → ``poses`` (none, the detector's own, ours, ours top-k, or the ground truth from a
homography) → ``describe`` (a descriptor on the patch cut at each pose) → ``mutual_nn``.
:func:`~patchpose.matching.pipeline.match_images` runs the whole chain on two images under any of its rows, and
:func:`patchpose.match_pair` (:mod:`patchpose.matching.pair`) under the one a user picks by name, the recommended one
unless told; :func:`pair_zoom` is the zoom between two photos that our scales vote for (:mod:`patchpose.matching.zoom`).
"""

from .describe import Describer
from .matcher import mutual_nn
from .pipeline import Features, MatchConfig, detect, keypoint_poses, match_images, pair_descriptors, pose_rows
from .zoom import PairZoom, pair_zoom

__all__ = [
    "Describer",
    "mutual_nn",
    "pose_rows",
    "Features",
    "MatchConfig",
    "detect",
    "keypoint_poses",
    "match_images",
    "pair_descriptors",
    "PairZoom",
    "pair_zoom",
]
