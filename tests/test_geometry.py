"""Homographies and the local pose change they make (patchpose.geometry)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from patchpose.conventions import rotation_matrix, similarity_about
from patchpose.geometry import apply_homography, homography_jacobian, inside, pose_change

PTS = np.array([[10.0, 20.0], [200.0, 50.0], [123.4, 300.2]])


@pytest.mark.parametrize("s,t", [(0.0, 0.0), (0.7, 0.3), (-1.2, 2.5), (0.25, 5.9)])
def test_similarity_gives_its_own_pose_change_everywhere(s, t):
    H = similarity_about((100.0, 80.0), s, t)
    ds, dt, ok = pose_change(H, PTS)
    assert ok.all()
    np.testing.assert_allclose(ds, s, atol=1e-12)
    np.testing.assert_allclose(np.exp(1j * dt), np.exp(1j * t), atol=1e-12)


def test_orientation_sign_is_ccw_as_displayed():
    # content turned CCW on screen by 90°: the x axis (1, 0) goes to (0, −1) (up, since y points down)
    H = np.eye(3)
    H[:2, :2] = rotation_matrix(math.pi / 2)
    np.testing.assert_allclose(H[:2, :2] @ [1, 0], [0, -1], atol=1e-12)
    _, dt, _ = pose_change(H, [[0.0, 0.0]])
    assert dt[0] == pytest.approx(math.pi / 2)


def test_jacobian_matches_finite_differences():
    H = np.array([[0.9, -0.2, 30.0], [0.15, 1.1, -12.0], [4e-4, -2e-4, 1.0]])
    J = homography_jacobian(H, PTS)
    eps = 1e-4
    for i, p in enumerate(PTS):
        for j in range(2):
            d = np.zeros(2)
            d[j] = eps
            num = (apply_homography(H, p + d) - apply_homography(H, p - d))[0] / (2 * eps)
            np.testing.assert_allclose(J[i, :, j], num, rtol=1e-6, atol=1e-8)


def test_local_affine_differs_from_global_top_left_block_under_perspective():
    """The official code reads the top-left 2×2 of H; with perspective the local pose change differs."""
    H = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1e-3, 0.0, 1.0]])
    ds, _, ok = pose_change(H, [[0.0, 0.0], [300.0, 0.0]])
    assert ok.all()
    assert ds[0] == pytest.approx(0.0, abs=1e-12)  # at the origin the map is the identity
    # at x = 300 the plane is shrunk: det = 1 / w^3 with w = 1.3
    assert ds[1] == pytest.approx(0.5 * math.log2(1.3**-3), rel=1e-9)


def test_pose_change_inverts_with_the_inverse_homography():
    H = np.array([[0.8, -0.3, 200.0], [0.33, 1.0, -70.0], [3e-4, -1e-5, 1.0]])
    x2 = apply_homography(H, PTS)
    ds, dt, _ = pose_change(H, PTS)
    ds_i, dt_i, _ = pose_change(np.linalg.inv(H), x2)
    np.testing.assert_allclose(ds_i, -ds, atol=1e-9)
    np.testing.assert_allclose(np.exp(1j * dt_i), np.exp(-1j * dt), atol=1e-9)


def test_mirror_and_horizon_are_flagged_not_silently_wrong():
    mirror = np.diag([-1.0, 1.0, 1.0])
    _, _, ok = pose_change(mirror, [[5.0, 5.0]])
    assert not ok[0]
    behind = np.array([[1.0, 0, 0], [0, 1.0, 0], [-1e-2, 0, 1.0]])  # w = 0 at x = 100, < 0 beyond
    ds, dt, ok = pose_change(behind, [[50.0, 0.0], [150.0, 0.0]])
    assert ok.tolist() == [True, False]
    assert np.isnan(ds[1]) and np.isnan(dt[1])
    with pytest.raises(ValueError):
        pose_change(np.eye(2), PTS)


def test_inside_uses_integer_pixel_centres():
    shape = (10, 20)
    m = inside([[-0.5, 0.0], [-0.51, 0.0], [19.5, 9.5], [19.6, 9.0], [np.nan, 1.0]], shape)
    assert m.tolist() == [True, False, True, False, False]
    assert inside([[2.0, 2.0]], shape, margin=2.6).tolist() == [False]


@pytest.mark.parametrize("factor", [-1.0, 2.5, -0.01])
def test_pose_change_is_the_same_for_any_multiple_of_h(factor):
    """H and c·H are one map (apply_homography agrees); pose_change must agree too, including H[2, 2] < 0 as
    an SVD-based estimate may write it (it used to call every point behind the horizon then)."""
    H = np.array([[0.39176, -0.48622, 421.69], [0.48543, 0.39488, -0.097812], [2.3979e-06, -3.3236e-06, 1.0]])
    np.testing.assert_allclose(apply_homography(factor * H, PTS), apply_homography(H, PTS), rtol=1e-12)
    ds, dt, ok = pose_change(H, PTS)
    ds_c, dt_c, ok_c = pose_change(factor * H, PTS)
    assert ok.all() and ok_c.all()
    np.testing.assert_allclose(ds_c, ds, atol=1e-12)
    np.testing.assert_allclose(dt_c, dt, atol=1e-12)


def test_points_behind_the_horizon_stay_rejected_whatever_the_sign_of_h():
    H = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-1e-2, 0.0, 1.0]])  # the horizon is the line x = 100
    pts = [[50.0, 0.0], [150.0, 0.0]]
    for c in (1.0, -1.0):
        _, _, ok = pose_change(c * H, pts)
        assert ok.tolist() == [True, False]


def test_a_homography_is_one_up_to_scale_even_at_huge_or_tiny_entries():
    """#62: entries of 1e300 overflowed (numpy warnings, every error inf); a homography times any factor is the same
    map, so huge or tiny ones are rescaled first; all zeros is no map."""
    import warnings

    from patchpose.errors import InputError
    from patchpose.geometry import check_homography, reprojection_errors

    H = np.array([[1.0, 0.0, 5.0], [0.0, 1.0, -2.0], [0.0, 0.0, 1.0]])
    xy = np.array([[1.0, 2.0], [30.0, 40.0]])
    want = reprojection_errors(H, xy, xy + [5.0, -2.0])
    for factor in (1e300, 1e-300):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_allclose(reprojection_errors(H * factor, xy, xy + [5.0, -2.0]), want, atol=1e-9)
    with pytest.raises(InputError, match="not invertible"):
        check_homography(np.zeros((3, 3)))
    # one entry of 1e300 among ones: invertible on paper, not in float64; the reason says why (it said "determinant 0")
    with pytest.raises(InputError, match=r"not invertible in float64 .*condition number 1e\+300"):
        check_homography(np.diag([1e300, 1.0, 1.0]))
