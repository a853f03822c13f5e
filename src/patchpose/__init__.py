"""patchpose: self-supervised keypoint scale and orientation (Lee, Jeong, Cho, BMVC 2021, and beyond).

>>> import patchpose
>>> est = patchpose.PatchPoseEstimator.from_pretrained()  # bundled weights, CPU, no network
>>> # poses = est.estimate(image, keypoints); poses.orientation, poses.scale

Conventions (angles, scales, pixel centres, bins) are stated in :mod:`patchpose.conventions`.
"""

import logging

from .errors import InputError, PatchPoseError, WeightsError
from .estimator import PatchPoseEstimator
from .integrations.kornia import kornia_angle_detector
from .integrations.opencv import assign, compute_blended, resolve_orientations
from .matching.collection import CollectionTurns, upright_collection
from .matching.pair import PairMatches, match_pair
from .matching.upright import UprightMatches, UprightTurn, match_upright, upright_pair
from .reading import Poses, ReadPlan
from .shape import AffineShapeEstimator

__version__ = "1.0.0"
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "PatchPoseEstimator",
    "Poses",
    "ReadPlan",
    "AffineShapeEstimator",
    "assign",
    "compute_blended",
    "resolve_orientations",
    "kornia_angle_detector",
    "match_pair",
    "PairMatches",
    "upright_pair",
    "match_upright",
    "UprightTurn",
    "UprightMatches",
    "upright_collection",
    "CollectionTurns",
    "PatchPoseError",
    "InputError",
    "WeightsError",
    "__version__",
]
