"""Hand-crafted baselines on toy inputs with known answers."""

import math

import numpy as np
import pytest

from patchpose.conventions import REFERENCE_RADIUS, angle_diff
from patchpose.data.patches import Pyramid, extract_patches
from patchpose.evaluation.baselines import (
    LOG_PATCH,
    LOG_SIGMA,
    LOG_WINDOWS,
    dominant_gradient_orientation,
    intensity_centroid_orientation,
    log_scale_selection,
)


def ramp(theta, ps=32):
    """A patch whose intensity grows along direction θ (CCW as displayed, y down)."""
    c = (ps - 1) / 2
    y, x = np.mgrid[0:ps, 0:ps] - c
    return (0.5 + 0.01 * (x * math.cos(theta) - y * math.sin(theta)))[None, None].astype(np.float32)


@pytest.mark.parametrize("theta", [0.0, 0.5, math.pi / 2, 2.0, 4.0])
def test_orientation_baselines_point_up_the_gradient(theta):
    p = ramp(theta)
    assert abs(angle_diff(dominant_gradient_orientation(p)[0], theta)) < math.radians(3)
    assert abs(angle_diff(intensity_centroid_orientation(p)[0], theta)) < math.radians(1)


@pytest.mark.parametrize("sigma", [3.0, 8.0, 20.0])
def test_log_selects_the_blob_sigma(sigma):
    """A Gaussian blob of std σ px is selected at σ (scale-normalised LoG), within 1/4 octave."""
    size = 801
    y, x = np.mgrid[0:size, 0:size] - 400
    img = (0.2 + 0.6 * np.exp(-(x**2 + y**2) / (2 * sigma**2))).astype(np.float32)
    stack = extract_patches(Pyramid(img), np.array([[400.0, 400.0]]), 0.0, 0.0, LOG_PATCH, list(LOG_WINDOWS))
    w = 2.0 ** log_scale_selection(stack)[0]
    selected = LOG_SIGMA * 2 * REFERENCE_RADIUS * w / LOG_PATCH
    assert abs(math.log2(selected / sigma)) < 0.25
