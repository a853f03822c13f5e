"""The benchmarks' two-view relative pose (:mod:`patchpose.evaluation.twoview`) and its pieces."""

from __future__ import annotations

import math
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from conftest import make_textured_image
from patchpose.errors import InputError
from patchpose.evaluation.datasets.posed_pairs import rotation_from_angles
from patchpose.evaluation.pose_eval import pose_error_deg, rotation_error_deg
from patchpose.evaluation.twoview import relative_pose


def test_relative_pose_recovers_a_synthetic_two_view_geometry():
    rng = np.random.default_rng(0)
    K = np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]])
    X = np.c_[rng.uniform(-2, 2, 300), rng.uniform(-1.5, 1.5, 300), rng.uniform(4, 9, 300)]
    R = rotation_from_angles(math.radians(20), math.radians(8), math.radians(3))
    t = np.array([-1.0, 0.1, 0.05])
    x0 = (K @ X.T).T
    X1 = (R @ X.T).T + t
    x1 = (K @ X1.T).T
    x0, x1 = x0[:, :2] / x0[:, 2:], x1[:, :2] / x1[:, 2:]
    x1[:30] = rng.uniform(0, 640, (30, 2))  # 10 % outliers
    fit = relative_pose(x0, x1, K, K)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    assert fit["model"] == "essential" and fit["inliers"] >= 250
    assert pose_error_deg(T, fit["R"], fit["t"]) < 1.0
    # a pure rotation: the homography branch, rotation error only
    x1r = (K @ R @ np.linalg.inv(K) @ np.c_[x0, np.ones(len(x0))].T).T
    x1r = x1r[:, :2] / x1r[:, 2:]
    x1r[:30] = rng.uniform(0, 640, (30, 2))
    fit = relative_pose(x0, x1r, K, K)
    assert fit["model"] == "rotation" and rotation_error_deg(R, fit["R"]) < 0.1
    assert np.all(fit["t"] == 0) and fit["inliers"] >= 260
    assert relative_pose(x0[:3], x1[:3], K, K)["R"] is None  # too few matches: a failure, not a crash


def test_relative_pose_does_not_take_a_plane_for_a_rotation():
    """Every point on one plane, seen from two places: a homography explains every match (the rule before
    this one then returned t = 0), but a camera rotation does not, so the essential matrix is kept."""
    rng = np.random.default_rng(0)
    K = np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]])
    X = np.c_[rng.uniform(-2, 2, 300), rng.uniform(-1.5, 1.5, 300), np.zeros(300)]
    X[:, 2] = 6 + 0.3 * X[:, 0] - 0.2 * X[:, 1]
    R = rotation_from_angles(math.radians(20), math.radians(8), math.radians(3))
    t = np.array([-1.0, 0.1, 0.05])
    x0, x1 = (K @ X.T).T, (K @ ((R @ X.T).T + t).T).T
    x0, x1 = x0[:, :2] / x0[:, 2:], x1[:, :2] / x1[:, 2:]
    x0, x1 = x0 + rng.normal(0, 0.1, x0.shape), x1 + rng.normal(0, 0.1, x1.shape)
    H, mask = cv2.findHomography(x0, x1, cv2.RANSAC, 2.0)
    assert mask.sum() >= 290  # a homography explains the matches
    fit = relative_pose(x0, x1, K, K)
    assert fit["model"] == "essential" and np.linalg.norm(fit["t"]) == pytest.approx(1.0)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    assert pose_error_deg(T, fit["R"], fit["t"]) < 1.0


@pytest.mark.parametrize("zoom", [1.0, 2.0])
def test_relative_pose_takes_a_noisy_rotation_over_an_essential_matrix_with_nothing_in_front(zoom):
    """A camera that only turns (and zooms), with 0.7 px of noise: the essential matrix *fits* more matches
    (its Sampson distance is one-dimensional) than the rotation explains, but almost none of them lie in front
    of both cameras. The rotation must win (before: "essential" with 8 inliers, or no pose at all)."""
    rng = np.random.default_rng(0)
    K0 = np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]])
    K1 = K0.copy()
    K1[0, 0] = K1[1, 1] = 600.0 * zoom  # the second camera zooms about the same centre
    R = rotation_from_angles(math.radians(30), math.radians(3), 0.0)
    x0 = np.c_[rng.uniform(0, 640, 400), rng.uniform(0, 480, 400)]
    p = (K1 @ R @ np.linalg.inv(K0) @ np.c_[x0, np.ones(400)].T).T
    x1 = p[:, :2] / p[:, 2:] + rng.normal(0, 0.7, (400, 2))
    x1[:40] = rng.uniform(0, 640, (40, 2))
    fit = relative_pose(x0, x1, K0, K1)
    assert fit["model"] == "rotation" and fit["inliers"] >= 200
    assert rotation_error_deg(R, fit["R"]) < 0.2


def test_resolved_pose_source_keeps_sift_where_unambiguous_and_needs_our_poses():
    """The 'resolved' pose: SIFT's scale, and SIFT's orientation nearest ours (read in SIFT's frame) among SIFT's
    candidates; without our estimator it is a clear error."""
    from patchpose.evaluation.rows import Image, Run, detect
    from patchpose.evaluation.twoview import TwoViewConfig, frame_poses

    img = (make_textured_image(300, seed=3) * 255).astype(np.uint8)
    f = detect(img, 300)
    n = len(f)
    last = np.array([c[-1] for c in f.sift_ori_candidates])[:, None]  # (N, 1), as top_k=1
    flipped = SimpleNamespace(orientation=last, scale=np.zeros_like(last))

    class Reads:  # an estimator whose every read in SIFT's frame gives each keypoint SIFT's last candidate
        def with_plan(self, **kw):
            return self

        def estimate(self, image, xy, detector_scale=None):
            return flipped

    s, o = frame_poses(Run(None, Reads()), Image(f), "sift_resolved_by_ours")
    np.testing.assert_array_equal(s, f.sift_scale)
    multi = np.array([len(c) > 1 for c in f.sift_ori_candidates])
    assert multi.any() and (~multi).any()
    np.testing.assert_allclose(o, flipped.orientation[:, 0])  # every candidate is its own nearest
    np.testing.assert_allclose(o[~multi], f.sift_ori[~multi])
    assert not np.allclose(o[multi], f.sift_ori[multi])  # where SIFT was ambiguous, ours chose the other
    with pytest.raises(InputError, match="needs our estimator"):
        frame_poses(Run(None), Image(detect(img, 300)), "sift_resolved_by_ours")
    with pytest.raises(InputError, match="describe_pose must be one of"):
        TwoViewConfig(describe_pose="bogus").validate()
    with pytest.raises(InputError, match="describe_pose must be one of"):  # only adalam_pose may be None
        TwoViewConfig(describe_pose=None).validate()
    TwoViewConfig(adalam_pose=None).validate()
    assert n > 10


def test_the_dominant_gradient_pose_source_keeps_sifts_scale():
    """The peer's pose source in two-view matching: SIFT's scale, kornia's dominant gradient read in SIFT's
    window (what ``eval pose``'s ``dominant gradient@K`` rows describe and give AdaLAM)."""
    from patchpose.evaluation.rows import Image, Run, detect, handcrafted_poses
    from patchpose.evaluation.twoview import TwoViewConfig, frame_poses

    img = (make_textured_image(240, seed=4) * 255).astype(np.uint8)
    f = detect(img, 60)
    s, o = frame_poses(Run(None), Image(f), "dominant_gradient")
    np.testing.assert_array_equal(s, f.sift_scale)
    np.testing.assert_array_equal(o, handcrafted_poses(f)[1])
    assert not np.allclose(o, f.sift_ori)  # its own angle, not SIFT's
    TwoViewConfig(describe_pose="dominant_gradient").validate()


def test_adalam_on_blends_keeps_the_matches_whose_strongest_peaks_flipped():
    """Image 1 is image 0 turned by 30°. Every keypoint has 4 candidate orientations (descriptor per
    candidate); in image 1 a quarter of the keypoints list their two strongest candidates the other way round
    (their strongest peak flipped), with weights to match, so the blends still match. AdaLAM given each keypoint's
    strongest peak sees those matches turn by 30° + the gap between the peaks and rejects them; given each
    match's closest candidate pair (adalam_blend_matches) it sees 30° everywhere and keeps them."""
    pytest.importorskip("kornia.feature.adalam")
    from patchpose.evaluation.twoview import adalam_blend_matches, adalam_matches, to_lafs

    rng = np.random.default_rng(0)
    n, k, hw = 400, 4, (480, 640)
    xy0 = rng.uniform([20, 20], [620, 460], (n, 2))
    turn = math.radians(30.0)
    c, s = math.cos(turn), math.sin(turn)
    centre = np.array([319.5, 239.5])
    xy1 = (xy0 - centre) @ np.array([[c, s], [-s, c]]) + centre  # counter-clockwise as displayed
    # the two strongest peaks 60° to 180° apart either way, differently at every keypoint
    ori0 = rng.uniform(0, 2 * np.pi, (n, k))
    ori0[:, 1] = ori0[:, 0] + rng.choice([-1, 1], n) * rng.uniform(np.pi / 3, np.pi, n)
    cand0 = rng.normal(size=(n, k, 32)).astype(np.float32)
    cand0 /= np.linalg.norm(cand0, axis=2, keepdims=True)
    w0 = np.tile([0.36, 0.34, 0.2, 0.1], (n, 1))
    flip = rng.random(n) < 0.25
    order = np.where(flip[:, None], [1, 0, 2, 3], [0, 1, 2, 3])  # image 1's candidate m is image 0's order[m]
    rows = np.arange(n)[:, None]
    cand1 = cand0[rows, order] + rng.normal(scale=0.02, size=(n, k, 32)).astype(np.float32)
    ori1, w1 = ori0[rows, order] + turn, w0[rows, order]
    scale = np.zeros(n)
    m = adalam_blend_matches(cand0, cand1, w0, w1, xy0, xy1, ori0, ori1, scale, scale, hw, hw)
    right = m[:, 0] == m[:, 1]
    assert right.all() and np.mean(flip[m[:, 0]]) > 0.2 and len(m) > 0.9 * n
    # the same blended descriptors, with AdaLAM given each keypoint's strongest peak: the flipped ones go
    from patchpose.matching.blend import blend_descriptors

    d0, d1 = blend_descriptors(cand0, w0), blend_descriptors(cand1, w1)
    m_argmax = adalam_matches(
        d0, d1, to_lafs(xy0, scale, ori0[:, 0]), to_lafs(xy1, scale, ori1[:, 0]), hw, hw
    )
    kept = np.isin(np.flatnonzero(flip), m_argmax[:, 0]).mean()
    assert kept < 0.2 and np.isin(np.flatnonzero(~flip), m_argmax[:, 0]).mean() > 0.9


def test_one_to_one_keeps_each_image1_keypoint_once_with_its_nearest_match():
    from patchpose.evaluation.twoview import one_to_one

    d0 = np.array([[1.0, 0], [0.9, 0.1], [0, 1.0], [0.5, 0.5]])
    d1 = np.array([[1.0, 0], [0, 1.0]])
    m = np.array([[0, 0], [1, 0], [2, 1], [3, 1], [3, 0]])
    # image-1 keypoint 0: matched by 0 (distance 0), 1 and 3; keypoint 1: by 2 (distance 0) and 3
    np.testing.assert_array_equal(one_to_one(m, d0, d1), [[0, 0], [2, 1]])
    np.testing.assert_array_equal(one_to_one(m[[1, 4]], d0, d1), [[1, 0]])  # the nearer of two
    assert one_to_one(np.zeros((0, 2), int), d0, d1).shape == (0, 2)
