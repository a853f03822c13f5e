"""Blended descriptors: weights, the blend itself, and the candidates the pipeline blends."""

import math

import numpy as np
import pytest

from patchpose.conventions import angle_diff
from patchpose.errors import InputError
from patchpose.evaluation.baselines import dominant_gradient_orientation
from patchpose.evaluation.twoview import closest_candidates
from patchpose.matching.blend import (
    affine_parts,
    blend_descriptors,
    blend_weights,
    pool_sizes,
    turned_shapes,
)
from patchpose.matching.gradient import dominant_gradient_candidates


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


def test_an_argmax_flip_between_two_images_barely_moves_the_blend():
    """The point of a blend: image 1 finds peaks A, B with masses 0.51, 0.49 and image 2 the same peaks with
    0.48, 0.52 (its argmax is B): the argmax descriptors are unrelated, the blends nearly equal."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 50, 128))
    d1, d2 = np.stack([a, b], 1), np.stack([b, a], 1)  # each image's candidates, strongest first
    w1 = blend_weights(np.tile([0.51, 0.49], (50, 1)), 1.0)
    w2 = blend_weights(np.tile([0.52, 0.48], (50, 1)), 1.0)
    g1, g2 = blend_descriptors(d1, w1), blend_descriptors(d2, w2)
    unit = lambda v: v / np.linalg.norm(v, axis=1, keepdims=True)  # noqa: E731
    assert np.linalg.norm(g1 - g2, axis=1).max() < 0.1
    assert np.linalg.norm(unit(d1[:, 0]) - unit(d2[:, 0]), axis=1).min() > 1.0


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
    y, x = np.mgrid[0:32, 0:32].astype(np.float32)
    odd = np.stack([np.full((32, 32), 0.5), 0.5 + 1e-4 * x, np.where(x < 16, 0.5, 0.5 + 0.01 * y)])[:, None]
    ori, mass = dominant_gradient_candidates(np.concatenate([p, odd.astype(np.float32)]), 4)
    assert ori.shape == mass.shape == (43, 4)
    # the first candidate is kornia's own angle (the histogram is rebuilt from its layers), on flat, faint and
    # half-flat patches too
    kornia_angle = dominant_gradient_orientation(np.concatenate([p, odd.astype(np.float32)]))
    assert np.abs(angle_diff(ori[:, 0], kornia_angle)).max() < 1e-4
    assert ((mass[:40] > 0) & (mass[:40] <= 1)).all() and (mass[40] == 0).all()  # a flat patch votes nothing
    ori = ori[:40]
    # a quarter turn of the patch (counter-clockwise as displayed) moves every peak by +90°, bins exactly
    turned, _ = dominant_gradient_candidates(np.ascontiguousarray(np.rot90(p, 1, axes=(2, 3))), 4)
    assert np.abs(angle_diff(turned, ori + math.pi / 2)).max() < 1e-3


def test_closest_candidates_pick_the_pair_whose_descriptors_agree():
    """Keypoint 0 matches keypoint 1 of image 1, whose candidates are keypoint 0's in another order: the pair
    found is (candidate 0, candidate 2), the one pair with equal descriptors (keypoint 1 and keypoint 0 of
    image 1 alike); bad shapes and indices are refused."""
    e = np.eye(3, dtype=np.float32)
    c0 = np.stack([e, [e[2], -e[1], -e[0]]])  # (2 keypoints, 3 candidates, D=3)
    c1 = np.stack([e[[1, 0, 2]], [-e[2], -e[1], e[0]]])
    a, b = closest_candidates(c0, c1, [1, 0])
    np.testing.assert_array_equal(a, [0, 0])
    np.testing.assert_array_equal(
        b, [2, 2]
    )  # c0[0, 0] = e0 = c1[1, 2]; c0[1, 0] = e2 = c1[0, 2]; no other pair agrees
    with pytest.raises(InputError, match="matches"):
        closest_candidates(c0, c1, [0, 2])
    with pytest.raises(InputError, match=r"\(N0, k, D\)"):
        closest_candidates(c0, c1[:, :2], [0, 1])


def test_pool_sizes_adds_a_smaller_and_a_larger_window_per_candidate():
    s, o, w = np.array([[1.0, 1.0]]), np.array([[0.3, 2.0]]), np.array([[0.6, 0.4]])
    ps, po, pw = pool_sizes(s, o, w, 0.5)
    np.testing.assert_allclose(ps, [[0.5, 0.5, 1.0, 1.0, 1.5, 1.5]])
    np.testing.assert_allclose(po, [[0.3, 2.0] * 3])
    np.testing.assert_allclose(pw, [[0.15, 0.1, 0.3, 0.2, 0.15, 0.1]])
    assert pw.sum() == pytest.approx(1.0)
    for bad in (0.0, -1.0, 2.5, float("inf")):
        with pytest.raises(InputError, match="octaves"):
            pool_sizes(s, o, w, bad)
    with pytest.raises(InputError, match=r"\(N, k\)"):
        pool_sizes(s, o[:, :1], w, 0.5)


def test_affine_parts_split_scale_from_shape_and_refuse_bad_frames():
    a = np.array([[[32.0, 0.0], [0.0, 32.0]], [[24.0, 0.0], [8.0, 96.0]]])  # det 1024 and 2304
    s, p = affine_parts(a)
    np.testing.assert_allclose(s, [1.0, math.log2(48.0 / 16.0)])
    np.testing.assert_allclose(np.linalg.det(p), [1.0, 1.0])
    np.testing.assert_allclose(16.0 * np.exp2(s)[:, None, None] * p, a)
    for bad in (np.array([[[1.0, 0.0], [0.0, -1.0]]]), np.full((1, 2, 2), np.nan), np.eye(2)):
        with pytest.raises(InputError, match="affine frames"):
            affine_parts(bad)


def test_turned_shapes_turn_the_affine_normalised_patch_in_its_own_frame(textured_image):
    """With the identity shape, the turned shape cut at orientation 0 is the patch at that orientation; with
    an affine shape P, the content warped by P about the keypoint, read through P, gives back the patches and
    the gradient peaks of the unwarped image (so an orientation read in the normalised frame is the same
    whatever the slant)."""
    import cv2

    from patchpose.data.patches import Pyramid, extract_patches
    from patchpose.matching.blend import gradient_peaks

    pyr = Pyramid(textured_image)
    xy = np.array([[150.0, 170.0], [230.0, 210.0], [200.0, 240.0]])
    zero, theta = np.zeros(3), np.array([0.4, 2.0, 4.0])
    eye = np.repeat(np.eye(2)[None], 3, 0)
    turned = turned_shapes(eye, theta[:, None])[:, 0]
    np.testing.assert_allclose(
        extract_patches(pyr, xy, zero, zero, shape=turned), extract_patches(pyr, xy, zero, theta), atol=1e-5
    )
    P = np.array([[1.5, 0.0], [0.4, 1 / 1.5]])  # upright, det 1 (AffNet's form)
    c = np.array([200.0, 200.0])
    M = np.hstack([P, (c - P @ c)[:, None]])  # content warped by P about c
    warped = cv2.warpAffine(textured_image, M, textured_image.shape[::-1], flags=cv2.INTER_CUBIC)
    wxy = (xy - c) @ P.T + c
    shapes = np.repeat(P[None], 3, 0)
    ori0, _ = gradient_peaks(pyr, xy, zero)
    ori1, _ = gradient_peaks(Pyramid(warped), wxy, zero, shape=shapes)
    assert np.abs(np.degrees(angle_diff(ori1[:, 0], ori0[:, 0]))).max() < 2.0  # 27° off without the shape
    p0 = extract_patches(pyr, xy, zero, theta)
    p1 = extract_patches(Pyramid(warped), wxy, zero, zero, shape=turned_shapes(shapes, theta[:, None])[:, 0])
    assert np.corrcoef(p0.ravel(), p1.ravel())[0, 1] > 0.99  # 0.32 for R(θ)·P
