"""The ``pose`` recipe's poses: the detector's scale where it gives one (ours where it gives none) and the dominant
gradient's angle on the descriptor window at that scale."""

import math

import cv2
import numpy as np
import pytest

from conftest import make_textured_image
from patchpose.conventions import angle_diff
from patchpose.data.patches import extract_patches
from patchpose.errors import InputError
from patchpose.evaluation.baselines import dominant_gradient_orientation
from patchpose.matching.candidates import gradient_angles, pose_needs_network, recipe_poses
from patchpose.matching.features import detect, features_at
from patchpose.matching.gradient import ORI_PATCH


@pytest.fixture(scope="module")
def est():
    from patchpose import PatchPoseEstimator

    return PatchPoseEstimator.load("patchpose-v10")


def test_without_a_detectors_scale_the_recipe_keeps_our_scale_and_takes_kornias_angle_on_the_window(est):
    img = make_textured_image(320, seed=5)
    f = detect(img, keypoints=detect(img, 150).xy)  # SIFT's positions, no size: our scale
    assert pose_needs_network(f)
    ours = est.estimate(f.image, f.xy, top_k=4)
    p = recipe_poses(f, ours)
    np.testing.assert_array_equal(p.scale, ours.scale[:, 0])
    np.testing.assert_array_equal(p.descriptor_radius, ours.descriptor_radius[:, 0])
    window = np.log2(p.descriptor_radius / 16.0)
    want = dominant_gradient_orientation(
        extract_patches(f.pyramid, f.xy, window, np.zeros(len(f)), ORI_PATCH, [1.0])
    )
    np.testing.assert_array_equal(p.orientation, want)  # kornia's own angle
    # not the network's angle (which the recipe leaves aside)
    assert np.mean(np.abs(angle_diff(p.orientation, ours.orientation[:, 0])) > math.radians(5)) > 0.3
    # the histogram it comes from: probabilities, bin j at 2πj/36, peaking within a bin of the angle
    assert p.orientation_hist.shape == (len(f), 36)
    np.testing.assert_allclose(p.orientation_hist.sum(1), 1.0, atol=1e-9)
    peak = 2 * math.pi * p.orientation_hist.argmax(1) / 36
    assert np.all(np.abs(angle_diff(peak, p.orientation)) <= math.radians(10) + 1e-9)
    assert np.all((p.confidence > 0) & (p.confidence <= 1))


def test_recipe_poses_turn_with_the_image(est):
    img = make_textured_image(320, seed=3)
    xy = detect(img, 200).xy
    xy = xy[np.all((xy > 105) & (xy < 215), axis=1)]
    M = cv2.getRotationMatrix2D((159.5, 159.5), 40.0, 1.0)  # CCW as displayed
    turned = cv2.warpAffine(img, M, (320, 320), flags=cv2.INTER_LINEAR)
    xy2 = xy @ M[:, :2].T + M[:, 2]
    p1 = recipe_poses(features_at(img, xy), est.estimate(img, xy))
    p2 = recipe_poses(features_at(turned, xy2), est.estimate(turned, xy2))
    turn = np.degrees(angle_diff(p2.orientation, p1.orientation))
    near = np.abs(turn - 40.0) < 10  # (a peak of the histogram can win in one photo and not the other)
    assert len(xy) >= 10 and near.mean() > 0.6 and abs(np.median(turn[near]) - 40.0) < 3.0


def test_recipe_poses_of_no_keypoints(est):
    img = make_textured_image(64, seed=1)
    f = features_at(img, np.zeros((0, 2)))
    p = recipe_poses(f, est.estimate(img, np.zeros((0, 2))))
    assert len(p) == 0 and p.orientation.shape == (0,) and p.orientation_hist.shape == (0, 36)
    p = recipe_poses(features_at(img, np.zeros((0, 2)), np.zeros(0)))
    assert len(p) == 0 and p.orientation.shape == (0,) and p.orientation_hist.shape == (0, 36)


def test_gradient_angles_are_memoised_per_window():
    img = make_textured_image(128, seed=2)
    f = features_at(img, np.array([[60.0, 60.0], [70.0, 50.0]]))
    a = gradient_angles(f, 0.0)
    assert gradient_angles(f, 0.0) is a
    assert gradient_angles(f, 1.0) is not a


def test_at_sifts_keypoints_the_recipe_takes_sifts_scale_and_the_gradients_angle_without_the_network():
    img = make_textured_image(320, seed=5)
    f = detect(img, 150)
    assert not pose_needs_network(f)
    p = recipe_poses(f)  # no estimator needed
    np.testing.assert_allclose(p.descriptor_radius, 16.0 * np.exp2(f.sift_scale))  # SIFT's window
    # the scale is SIFT's radius, half its size (the window is SIFT_REGION sizes)
    np.testing.assert_allclose(16.0 * np.exp2(p.scale) * 2 * 5.3, p.descriptor_radius)
    np.testing.assert_array_equal(p.orientation, gradient_angles(f, f.sift_scale))
    assert np.mean(np.abs(angle_diff(p.orientation, f.sift_ori)) > math.radians(5)) > 0.1  # not SIFT's angle
    # sizes given with your keypoints: the window is the size
    sizes = np.full(len(f), 12.0)
    g = detect(img, keypoints=f.xy, sizes=sizes)
    q = recipe_poses(g)
    np.testing.assert_allclose(q.descriptor_radius, sizes)
    np.testing.assert_allclose(16.0 * np.exp2(q.scale), sizes)
    # the window inside the image
    h, w = img.shape[:2]
    inside = (g.xy >= 11.5).all(1) & (g.xy[:, 0] <= w - 12.5) & (g.xy[:, 1] <= h - 12.5)
    np.testing.assert_array_equal(q.valid, inside)


def test_recipe_poses_without_a_scale_need_ours_at_the_same_keypoints(est):
    img = make_textured_image(128, seed=2)
    xy = np.array([[60.0, 60.0], [70.0, 50.0]])
    ours = est.estimate(img, xy)
    with pytest.raises(InputError, match="give our poses"):
        recipe_poses(features_at(img, xy))
    with pytest.raises(InputError, match="of 2 keypoints, the features of 1"):
        recipe_poses(features_at(img, xy[:1]), ours)


def test_match_pair_pose_reads_the_network_only_for_keypoints_without_a_size(est, monkeypatch):
    """``match_pair(recipe="pose")``: your keypoints without sizes take our scale (the model read); SIFT's own
    detections and your keypoints with sizes take the detector's (no model loaded); both the gradient's angle."""
    import patchpose
    import patchpose.matching.pair as pair
    from patchpose.matching.candidates import pose_descriptors
    from patchpose.matching.describe import Describer
    from patchpose.matching.matcher import mutual_nn

    img = make_textured_image(240, seed=7)
    M = cv2.getRotationMatrix2D((119.5, 119.5), 25.0, 1.1)
    img2 = cv2.warpAffine(img, M, (240, 240), flags=cv2.INTER_LINEAR)
    xy1, xy2 = detect(img, 150).xy, detect(img2, 150).xy
    got = patchpose.match_pair(img, img2, recipe="pose", keypoints=(xy1, xy2))
    f1, f2 = detect(img, keypoints=xy1), detect(img2, keypoints=xy2)
    d1, d2 = (pose_descriptors(f, Describer(), est) for f in (f1, f2))
    np.testing.assert_array_equal(mutual_nn(d1, d2)[0], got.matches)
    loads = []
    real = pair.PatchPoseEstimator.load
    monkeypatch.setattr(pair.PatchPoseEstimator, "load", lambda *a, **k: loads.append(a) or real(*a, **k))
    sift = patchpose.match_pair(img, img2, recipe="pose", max_keypoints=150)
    g1, g2 = detect(img, 150), detect(img2, 150)
    e1, e2 = (pose_descriptors(g, Describer()) for g in (g1, g2))
    np.testing.assert_array_equal(mutual_nn(e1, e2)[0], sift.matches)
    r = (np.full(len(xy1), 10.0), np.full(len(xy2), 11.0))
    patchpose.match_pair(img, img2, recipe="pose", keypoints=(xy1, xy2), sizes=r)
    assert loads == []
    patchpose.match_pair(img, img2, recipe="pose", keypoints=(xy1, xy2))
    assert len(loads) == 1
    # sizes for one photo only: the other takes our scale
    patchpose.match_pair(img, img2, recipe="pose", keypoints=(xy1, xy2), sizes=(r[0], None))
    assert len(loads) == 2
