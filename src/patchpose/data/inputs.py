"""One entry point for a model's input at keypoint frames: Cartesian windows or a log-polar grid."""

from __future__ import annotations

import numpy as np

from .patches import Pyramid, extract_patches
from .polar import PolarGrid, extract_polar


def extract_inputs(
    pyramid: Pyramid,
    xy: np.ndarray,
    log2_scale,
    theta,
    patch_size: int,
    windows,
    polar: PolarGrid | None = None,
    border: str = "reflect",
    shape: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`~patchpose.data.polar.extract_polar` when ``polar`` is given, else
    :func:`~patchpose.data.patches.extract_patches` with ``patch_size`` and ``windows``. ``shape``:
    optional ``(N, 2, 2)`` affine shapes of the frames (see those functions)."""
    if polar is not None:
        return extract_polar(pyramid, xy, log2_scale, theta, polar, border=border, shape=shape)
    return extract_patches(
        pyramid, xy, log2_scale, theta, patch_size, list(windows), border=border, shape=shape
    )


__all__ = ["extract_inputs"]
