"""patchpose: self-supervised keypoint scale and orientation (Lee, Jeong, Cho, BMVC 2021, and beyond).

>>> import patchpose
>>> est = patchpose.PatchPoseEstimator.from_pretrained()  # bundled weights, CPU, no network
>>> # out = est.estimate(image, keypoints); out["orientation"], out["scale"]

Conventions (angles, scales, pixel centres, bins) are stated in :mod:`patchpose.conventions`.
"""

import logging

from .errors import InputError, PatchPoseError, WeightsError
from .estimator import PatchPoseEstimator

__version__ = "0.1.0"
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["PatchPoseEstimator", "PatchPoseError", "InputError", "WeightsError", "__version__"]
