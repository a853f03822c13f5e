"""Errors that patchpose raises on bad input; the CLI turns them into a message and exit code 2."""


class PatchPoseError(Exception):
    """Base class of patchpose's own errors."""


class InputError(PatchPoseError, ValueError):
    """An image, keypoint array or argument that cannot be used (the message says why)."""


class WeightsError(PatchPoseError):
    """A weights or checkpoint file that is missing, corrupt, or not a patchpose model."""
