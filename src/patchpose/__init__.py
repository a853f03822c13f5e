"""patchpose: self-supervised keypoint scale and orientation (Lee, Jeong, Cho, BMVC 2021, and beyond).

>>> import patchpose
>>> est = patchpose.PatchPoseEstimator.from_pretrained()  # bundled weights, CPU, no network
>>> # poses = est.estimate(image, keypoints); poses.orientation, poses.scale

Conventions (angles, scales, pixel centres, bins) are stated in :mod:`patchpose.conventions`.
"""

import logging

from .errors import InputError, PatchPoseError, WeightsError
from .estimator import PatchPoseEstimator
from .reading import Poses, ReadPlan


def assign(image, keypoints, estimator=None, **kwargs):
    """``cv2.KeyPoint``s with our size and angle (:func:`patchpose.integrations.opencv.assign`)."""
    from .integrations.opencv import assign as _assign

    return _assign(image, keypoints, estimator, **kwargs)


def resolve_orientations(image, keypoints, estimator=None, **kwargs):
    """One ``cv2.KeyPoint`` per location, the detector's angle nearest ours
    (:func:`patchpose.integrations.opencv.resolve_orientations`)."""
    from .integrations.opencv import resolve_orientations as _resolve

    return _resolve(image, keypoints, estimator, **kwargs)


def kornia_angle_detector(estimator=None):
    """An angle detector for ``kornia.feature.LAFOrienter`` (:mod:`patchpose.integrations.kornia`)."""
    from .integrations.kornia import kornia_angle_detector as _k

    return _k(estimator)


__version__ = "0.1.0"
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "PatchPoseEstimator",
    "Poses",
    "ReadPlan",
    "assign",
    "resolve_orientations",
    "kornia_angle_detector",
    "PatchPoseError",
    "InputError",
    "WeightsError",
    "__version__",
]
