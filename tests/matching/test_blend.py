"""Blended descriptors: weights, the blend itself, and the candidates the pipeline blends."""

import math

import numpy as np
import pytest

from patchpose.baselines import dominant_gradient_candidates, dominant_gradient_orientation
from patchpose.conventions import angle_diff
from patchpose.errors import InputError
from patchpose.matching.blend import blend_descriptors, blend_weights


def test_blend_weights_are_peak_masses_to_the_power_gamma():
    c = np.array([[0.64, 0.16], [0.3, 0.3]])
    np.testing.assert_allclose(blend_weights(c, 0.5), [[2 / 3, 1 / 3], [0.5, 0.5]])
    np.testing.assert_allclose(blend_weights(c, 1.0), [[0.8, 0.2], [0.5, 0.5]])
    np.testing.assert_allclose(blend_weights(c, 0.0), [[0.5, 0.5], [0.5, 0.5]])


@pytest.mark.parametrize(
    "conf, gamma",
    [
        (np.ones(3), 0.5),
        (np.array([[0.5, -0.1]]), 0.5),
        (np.array([[0.5, np.nan]]), 0.5),
        (np.ones((2, 2)), -1.0),
    ],
)
def test_blend_weights_refuse_bad_input(conf, gamma):
    with pytest.raises(InputError):
        blend_weights(conf, gamma)


def test_blend_is_the_normalised_weighted_mean():
    d = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]]])
    out = blend_descriptors(d, np.array([[0.75, 0.25], [0.5, 0.5]]))
    np.testing.assert_allclose(out[0], np.array([3.0, 1.0]) / math.sqrt(10), rtol=1e-6)
    np.testing.assert_array_equal(out[1], [0.0, 0.0])  # a zero average stays zero
    assert out.dtype == np.float32


def test_blend_does_not_care_which_candidate_came_first():
    """The point of a blend: two images that rank the same candidates differently (an argmax flip between
    two near-equal peaks) give the same descriptor, where the argmax's descriptors differ completely."""
    rng = np.random.default_rng(0)
    d = rng.normal(size=(5, 3, 16))
    c = rng.uniform(0.1, 0.5, size=(5, 3))
    perm = [1, 0, 2]
    a = blend_descriptors(d, blend_weights(c))
    b = blend_descriptors(d[:, perm], blend_weights(c[:, perm]))
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert np.abs(d[:, 0] - d[:, perm][:, 0]).max() > 0.5


def test_blend_refuses_mismatched_shapes():
    with pytest.raises(InputError, match="weights"):
        blend_descriptors(np.zeros((2, 3, 4)), np.ones((2, 2)))
    with pytest.raises(InputError, match=r"\(N, k, D\)"):
        blend_descriptors(np.zeros((2, 4)), np.ones((2, 1)))


def _blobs(n: int, seed: int = 0) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(seed)
    return np.stack([gaussian_filter(rng.random((32, 32)), 2.0) for _ in range(n)])[:, None].astype(
        np.float32
    )


def test_gradient_candidates_start_with_kornias_angle_and_turn_with_the_patch():
    p = _blobs(40)
    ori, mass = dominant_gradient_candidates(p, 4)
    assert ori.shape == mass.shape == (40, 4)
    # the first candidate is kornia's own angle (the histogram is rebuilt from its layers)
    assert np.abs(angle_diff(ori[:, 0], dominant_gradient_orientation(p))).max() < 1e-4
    assert ((mass > 0) & (mass <= 1)).all()
    # a quarter turn of the patch (counter-clockwise as displayed) moves every peak by +90°, bins exactly
    turned, _ = dominant_gradient_candidates(np.ascontiguousarray(np.rot90(p, 1, axes=(2, 3))), 4)
    assert np.abs(angle_diff(turned[:, 0], ori[:, 0] + math.pi / 2)).max() < 1e-3
