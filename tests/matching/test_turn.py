"""The pair's turn voted by our angles (:func:`patchpose.matching.zoom.pair_turn`) and the ``pair_pose`` row that
describes every keypoint at one pose per photo: exact votes on hand-built angles, the wrap at 2π, clear errors,
and a photo turned and zoomed by a known amount."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from patchpose.errors import InputError
from patchpose.matching.zoom import MIN_VOTES, TURN_BAND, TURN_SIGNIFICANCE, PairTurn, pair_turn


def test_the_turn_is_the_winning_bin_moved_by_the_median_offset_of_its_votes():
    o1 = np.linspace(0.0, 6.0, 16)  # any angles: the votes are differences
    agree = np.radians(np.repeat([40.0, 41.0, 42.0, 44.0, 45.0, 52.0], 2))  # the 40°-50° bin, 52° in its band
    scattered = np.radians([100.0, 170.0, 260.0, 330.0])
    o2 = o1 + np.concatenate([agree, scattered])
    m = np.stack([np.arange(16), np.arange(16)], 1)
    t = pair_turn(o1, o2, m)
    # the bin's centre 45° plus the median offset of the 12 votes within 15° of it (−2.5°)
    assert t == PairTurn(pytest.approx(math.radians(43.0)), 12, 16)
    # the other way round: the opposite turn, modulo 2π
    back = pair_turn(o2, o1, m[:, ::-1])
    assert back.radians == pytest.approx(2 * math.pi - math.radians(43.0)) and back.votes == 12


def test_a_turn_across_zero_is_voted_on_the_circle_and_bad_votes_do_not_count():
    o1 = np.zeros(12)
    turn = np.radians([-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0])  # about 0, on both sides of 2π
    o2 = np.concatenate([np.mod(turn, 2 * math.pi), [np.nan, np.inf, np.radians(90.0), np.radians(200.0)]])
    t = pair_turn(o1, o2, np.stack([np.arange(12)] * 2, 1))
    assert t.votes == 8 and t.matches == 10  # NaN and inf dropped; 90° and 200° far from the winner
    # the 0°-10° bin wins (5 votes, 3 beside it): its centre 5° plus the median offset −4.5°
    assert math.degrees(math.remainder(t.radians, 2 * math.pi)) == pytest.approx(0.5)


def test_too_few_agreeing_votes_give_no_turn():
    n = MIN_VOTES - 1
    assert pair_turn(np.zeros(n), np.ones(n), np.stack([np.arange(n)] * 2, 1)) == PairTurn(0.0, n, n)
    assert pair_turn(np.zeros(3), np.zeros(3), np.zeros((0, 2), np.int64)) == PairTurn(0.0, 0, 0)
    spread = np.radians(np.arange(0.0, 360.0, 360.0 / 12))  # no two votes within one band of each other
    assert pair_turn(np.zeros(12), spread, np.stack([np.arange(12)] * 2, 1)).radians == 0.0
    assert TURN_BAND < math.radians(30.0)


def test_a_turn_is_found_only_where_its_votes_stand_out_of_evenly_spread_ones():
    """Of 120 votes spread evenly round the circle, 10 would fall within ±15° of any angle (sd 3.03): the winner
    needs 8 sd more, 34.2; a pile of 34 agreeing votes among 120 is no evidence of one turn, 35 are."""
    assert TURN_SIGNIFICANCE == 8.0 and TURN_BAND == pytest.approx(math.radians(15.0))
    assert not PairTurn(0.0, 34, 120).found and PairTurn(0.0, 35, 120).found
    # 6 agreeing votes of 6 are a turn (0.5 expected, sd 0.68); 5 of 5 are not (MIN_VOTES is 5, but 5 votes are
    # not 8 sd out of 0.42), and fewer than MIN_VOTES never are
    assert PairTurn(0.0, 6, 6).found and not PairTurn(0.0, MIN_VOTES, MIN_VOTES).found
    assert not PairTurn(0.0, MIN_VOTES - 1, 0).found
    # hand-built votes: 34 agree at 45°, 86 spread 360°/86 apart (a few of them within the band too)
    spread = np.radians(np.arange(86) * 360.0 / 86 + 100.0)
    o2 = np.concatenate([np.full(34, math.radians(45.0)), spread])
    t = pair_turn(np.zeros(120), o2, np.stack([np.arange(120)] * 2, 1))
    assert t.votes >= 34 and t.matches == 120 and t.found == (t.votes >= 35)
    assert t.radians == (pytest.approx(math.radians(45.0), abs=0.1) if t.found else 0.0)


@pytest.mark.parametrize(
    "o1, matches, message",
    [
        (np.zeros(3), np.array([[0, 5]]), "outside"),
        (np.zeros(3), np.array([0.0, 1.0]), r"\(L, 2\) integer"),
        (np.zeros((3, 1)), np.array([[0, 1]]), r"\(N,\) arrays"),
    ],
)
def test_bad_input_is_one_clear_error(o1, matches, message):
    with pytest.raises(InputError, match=message):
        pair_turn(o1, np.zeros(3), matches)


def test_a_photo_turned_and_zoomed_is_found_and_matched_at_one_pose_per_photo():
    """The photo turned by 120° (clockwise as displayed) and enlarged 1.5×, Harris corners: our angles and scales vote the turn within 2°
    and the zoom within 0.1 octave, and the ``pair_pose`` row describes the second photo at them: more correct
    matches than our one pose per keypoint."""
    pytest.importorskip("kornia")
    import patchpose
    from patchpose.data.patches import load_photo, to_gray
    from patchpose.data.photos import demo_photo
    from patchpose.geometry import pose_change
    from patchpose.matching.describe import Describer
    from patchpose.matching.features import detect
    from patchpose.matching.pairpose import OurVotes, pair_votes

    photo = to_gray(load_photo(demo_photo(), 480))
    h, w = photo.shape
    c, a = np.array([(w - 1) / 2, (h - 1) / 2]), math.radians(120.0)
    A = 1.5 * np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    M = np.concatenate([A, (c - A @ c)[:, None]], 1)
    img2, H = cv2.warpAffine(photo, M, (w, h), flags=cv2.INTER_LINEAR), np.vstack([M, [0, 0, 1]])
    est = patchpose.PatchPoseEstimator.from_pretrained("patchpose-v10")
    f1, f2 = detect(photo, 300, detector="harris"), detect(img2, 300, detector="harris")
    zoom, turn = pair_votes(f1, f2, OurVotes(Describer(), est))
    ds, dt, _ = pose_change(
        H, c[None]
    )  # what H does to a pose at the centre: (log2 1.5, −120°, CCW as displayed)
    assert ds[0] == pytest.approx(math.log2(1.5)) and math.degrees(dt[0]) == pytest.approx(240.0)
    assert abs(math.degrees(math.remainder(turn.radians - dt[0], 2 * math.pi))) < 2.0, turn
    assert zoom.log2 == pytest.approx(ds[0], abs=0.1), zoom
    correct = {}
    for recipe in ("pair-pose", "pose"):
        res = patchpose.match_pair(
            photo, img2, recipe=recipe, homography=H, detector="harris", max_keypoints=300
        )
        correct[recipe] = int(res.correct.sum())
        if recipe == "pair-pose":  # the pair's turn and zoom reported with the matches
            assert res.turn == pytest.approx(math.degrees(turn.radians)) and res.zoom == zoom.log2
            assert res.summary()["turn_deg"] == pytest.approx(res.turn, abs=0.01)
        else:
            assert res.turn is None and res.zoom is None and "turn_deg" not in res.summary()
    assert correct["pair-pose"] > correct["pose"] + 10, correct


def test_photos_that_show_no_one_turn_are_described_at_each_keypoints_own_poses():
    """A photo against noise: its tentative matches vote anywhere, no turn is found, and ``pair_pose`` describes
    each keypoint at its own poses (the candidates that voted) rather than upright at a turn nobody voted for;
    ``match_pair`` reports no turn."""
    pytest.importorskip("kornia")
    import patchpose
    from patchpose.data.patches import load_photo, to_gray
    from patchpose.data.photos import demo_photo
    from patchpose.matching.candidates import (
        gradient_blend_candidates,
        ours_blend_candidates,
        shape_blend_candidates,
        sift_all_descriptors,
    )
    from patchpose.matching.describe import Describer
    from patchpose.matching.features import detect
    from patchpose.matching.pairpose import OurVotes, SiftVotes, pair_fallback, pair_pose_candidates

    photo = to_gray(load_photo(demo_photo(), 320))
    noise = cv2.GaussianBlur(np.random.default_rng(0).integers(0, 256, photo.shape, np.uint8), (0, 0), 1.5)
    est, rec = patchpose.PatchPoseEstimator.from_pretrained("patchpose-v10"), Describer()
    f1, f2 = detect(photo, 200, detector="harris"), detect(noise, 200, detector="harris")
    c1, c2, _, turn = pair_pose_candidates(f1, f2, rec, est)
    assert turn.matches > 0 and not turn.found and turn.radians == 0.0, turn
    for c, f in ((c1, f1), (c2, f2)):
        own = ours_blend_candidates(f, rec, est)
        assert c[0].shape == (len(f), 4)  # our top-4 angles, not one pose at 3 sizes
        for a, b in zip(c, own):
            np.testing.assert_array_equal(a, b)
    res = patchpose.match_pair(photo, noise, detector="harris", max_keypoints=200)
    assert res.turn is None and res.summary()["turn_deg"] is None
    # SIFT's own detections: SIFT's votes (no network), and where they show no turn SIFT's own pose (the first
    # pass's descriptor at SIFT's first orientation)
    g1, g2 = detect(photo, 200), detect(noise, 200)
    d1, d2, _, t = pair_pose_candidates(g1, g2, rec, None)  # no estimator needed
    assert not t.found and SiftVotes(rec).reuses(g1, g2)  # nothing described again
    for c, f in ((d1, g1), (d2, g2)):
        want = (
            f.sift_scale[:, None],
            f.sift_ori[:, None],
            np.ones((len(f), 1)),
            sift_all_descriptors(f, rec)[:, :1],
        )
        for a, b in zip(c, want):
            np.testing.assert_array_equal(a, b)
    # keypoints with a size of their own (given): the gradient's votes too; with our votes (the benchmark's
    # pair_pose_ours) our affine shape at that size instead (a slant may be what hid the turn)
    h1, h2 = (
        detect(im, keypoints=g.xy, sizes=16.0 * np.exp2(g.frame)) for im, g in ((photo, g1), (noise, g2))
    )
    e1, e2, _, t = pair_pose_candidates(h1, h2, rec, None)
    assert not t.found
    for c, f in ((e1, h1), (e2, h2)):
        for a, b in zip(c, gradient_blend_candidates(f, rec)):
            np.testing.assert_array_equal(a, b)
    e1, e2, _, t = pair_pose_candidates(h1, h2, rec, None, votes=OurVotes(rec, est))
    assert not t.found and pair_fallback(h1, h2) == "shape"
    assert pair_fallback(f1, f2) == "ours" and pair_fallback(h1, f2) == "ours"
    for c, f in ((e1, h1), (e2, h2)):
        own = shape_blend_candidates(f, rec)
        for a, b in zip(c, own):
            np.testing.assert_allclose(a, b, atol=1e-6)


def test_keypoints_with_a_size_of_their_own_are_also_described_about_it():
    """``pair_pose`` at SIFT keypoints: each at 3 sizes about the fixed window (widened by the pair's zoom, here
    none) and at 3 about the detector's own size, the two halves weighed alike; keypoints without a size (the
    same keypoints, their size dropped): the fixed window's 3 alone."""
    from dataclasses import replace

    import patchpose
    from patchpose.data.patches import load_photo, to_gray
    from patchpose.data.photos import demo_photo
    from patchpose.matching.blend import POOL_OCTAVES, POOL_WEIGHTS
    from patchpose.matching.describe import Describer
    from patchpose.matching.features import detect
    from patchpose.matching.pairpose import pair_pose_candidates

    photo = to_gray(load_photo(demo_photo(), 320))
    turned = cv2.rotate(photo, cv2.ROTATE_90_COUNTERCLOCKWISE)
    est, rec = patchpose.PatchPoseEstimator.from_pretrained("patchpose-v10"), Describer()
    f1, f2 = detect(photo, 150), detect(turned, 150)
    c1, c2, zoom, turn = pair_pose_candidates(f1, f2, rec, est)
    assert turn.found and abs(math.degrees(math.remainder(turn.radians - math.pi / 2, 2 * math.pi))) < 2.0, (
        turn
    )
    assert zoom.frames == pytest.approx((0.0, 0.0), abs=1e-3)
    # the matches agree on an affine map that is the turn itself, no slant: photo 2 turned, not cut through it
    assert turn.affine is None
    d, frames = POOL_OCTAVES, zoom.frames
    for (s, o, w, desc), f, frame in zip((c1, c2), (f1, f2), frames):
        assert s.shape == o.shape == w.shape == (len(f), 6) and desc.shape == (len(f), 6, rec.dim)
        np.testing.assert_allclose(s[:, :3], np.tile([frame - d, frame, frame + d], (len(f), 1)))  # 16 px
        np.testing.assert_allclose(s[:, 3:], f.frame[:, None] + [-d, 0.0, d])  # SIFT's own size
        np.testing.assert_allclose(w, np.tile(np.asarray(POOL_WEIGHTS) / 2, (len(f), 2)))
    assert (c1[1] == 0.0).all() and np.allclose(c2[1], turn.radians)
    bare = [replace(f, detector_scale=None, memo={}) for f in (f1, f2)]
    b1, _, _, _ = pair_pose_candidates(*bare, rec, est)
    assert b1[0].shape == (len(f1), 3)
    np.testing.assert_allclose(b1[3], c1[3][:, :3], atol=1e-6)  # the same fixed-window descriptors


def test_the_opposite_turn_is_counted_and_tried_where_it_stands_out_too():
    """Votes at 40° and at 220° (a texture alike half a turn round): both counted, the turn ambiguous where both
    stand out of evenly spread votes; ``pair_pose`` then describes photo 2 at both and keeps the turn whose matches
    one homography explains more of. A photo turned by 90°, its votes faked to favour 270°: with the opposite turn standing out the 90° is
    kept (the votes swapped with it); without, 270° stays."""
    o2 = np.radians(np.concatenate([np.full(24, 40.0), np.full(20, 220.0), [100.0, 300.0]]))
    t = pair_turn(np.zeros(46), o2, np.stack([np.arange(46)] * 2, 1))
    assert (t.votes, t.opposite, t.matches) == (24, 20, 46) and t.found and t.ambiguous
    # of 46 votes 3.8 fall within ±15° of any angle evenly spread (sd 1.9): 18 do not stand out, 19 do
    assert PairTurn(1.0, 24, 46, 19).ambiguous and not PairTurn(1.0, 24, 46, 18).ambiguous
    assert not PairTurn(0.0, 18, 46, 24).ambiguous  # not found: no

    import patchpose
    import patchpose.matching.pairpose as pairpose
    from patchpose.data.patches import load_photo, to_gray
    from patchpose.data.photos import demo_photo
    from patchpose.matching.describe import Describer
    from patchpose.matching.features import detect
    from patchpose.matching.zoom import PairZoom

    photo = to_gray(load_photo(demo_photo(), 320))
    turned = cv2.rotate(photo, cv2.ROTATE_90_COUNTERCLOCKWISE)  # CCW as displayed: a turn of +90°
    est, rec = patchpose.PatchPoseEstimator.from_pretrained("patchpose-v10"), Describer()
    f1, f2 = detect(photo, 150, detector="harris"), detect(turned, 150, detector="harris")
    for opposite, kept in ((40, 90.0), (3, 270.0)):
        faked = PairTurn(math.radians(270.0), 50, 100, opposite)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(pairpose, "pair_votes", lambda *a, faked=faked, **k: (PairZoom(0.0, 50, 100), faked))
            _, c2, _, turn = pairpose.pair_pose_candidates(f1, f2, rec, est)
        assert math.degrees(turn.radians) == pytest.approx(kept) and np.allclose(c2[1], turn.radians)
        assert (turn.votes, turn.opposite) == ((opposite, 50) if kept == 90.0 else (50, opposite))


def test_homography_support_counts_the_matches_one_homography_explains():
    """Keypoints moved by a homography and matched one to one: all 30 supported; half of them shuffled: 15."""
    from patchpose.matching.pairpose import homography_support

    rng = np.random.default_rng(3)
    xy1 = rng.uniform(0, 400, (30, 2))
    H = np.array([[0.9, -0.3, 20.0], [0.3, 0.9, -10.0], [1e-4, 0.0, 1.0]])
    p = np.c_[xy1, np.ones(30)] @ H.T
    xy2 = p[:, :2] / p[:, 2:]
    d = np.eye(30, dtype=np.float32)  # keypoint i of each photo matches keypoint i of the other
    assert homography_support(xy1, xy2, d, d) == 30
    xy2[15:] = rng.uniform(0, 400, (15, 2))
    assert homography_support(xy1, xy2, d, d) == 15
    assert homography_support(xy1[:3], xy2[:3], d[:3, :3], d[:3, :3]) == 0  # fewer than 4 matches


def _affine_case(M, n_in=40, n_out=20, seed=0):
    """Keypoints of photo 1, their images under ``x → M·x + t`` in photo 2 (the first ``n_in``) and scattered
    points (the rest), matched one to one; every match votes the turn 0.3 rad, as our angles would."""
    rng = np.random.default_rng(seed)
    xy1 = rng.uniform(0, 400, (n_in + n_out, 2))
    xy2 = np.concatenate([xy1[:n_in] @ np.asarray(M).T + [30.0, -20.0], rng.uniform(0, 400, (n_out, 2))])
    o1 = rng.uniform(0, 2 * math.pi, n_in + n_out)
    m = np.stack([np.arange(n_in + n_out)] * 2, 1)
    return xy1, xy2, m, o1, o1 + 0.3


def test_the_pairs_affine_map_is_fitted_to_the_matches_that_agree_on_the_turn():
    from patchpose.matching.zoom import AFFINE_MIN_INLIERS, PairAffine, pair_affine

    M = np.array([[1.2, 0.3], [-0.1, 0.6]])  # a slant: singular values 1.26 and 0.59
    xy1, xy2, m, o1, o2 = _affine_case(M)
    o2[40:50] += 2.0  # ten wrong matches vote elsewhere: left out before the fit
    turn = pair_turn(o1, o2, m)
    a = pair_affine(xy1, xy2, m, turn.radians, o1, o2, 566.0)
    assert isinstance(a, PairAffine) and a.matches == 50 and a.inliers == 40
    np.testing.assert_allclose(a.matrix, M, atol=1e-6)
    assert a.anisotropy == pytest.approx(np.divide(*np.linalg.svd(M, compute_uv=False)))
    # a turn and a zoom alone: anisotropy 1
    R = 1.5 * np.array([[math.cos(0.3), math.sin(0.3)], [-math.sin(0.3), math.cos(0.3)]])
    xy1, xy2, m, o1, o2 = _affine_case(R)
    assert pair_affine(xy1, xy2, m, pair_turn(o1, o2, m).radians, o1, o2, 566.0).anisotropy == pytest.approx(
        1.0
    )
    # none: too few matches, a mirror image, a slant past MAX_ANISOTROPY (3.5: real pairs' maps past 3 were wrong)
    k = AFFINE_MIN_INLIERS - 1
    assert pair_affine(xy1[:k], xy2[:k], m[:k], turn.radians, o1[:k], o2[:k], 566.0) is None
    for bad in ([[1.0, 0.0], [0.0, -1.0]], [[3.0, 0.0], [0.0, 0.5]], [[1.75, 0.0], [0.0, 0.5]]):
        xy1, xy2, m, o1, o2 = _affine_case(bad)
        assert pair_affine(xy1, xy2, m, pair_turn(o1, o2, m).radians, o1, o2, 566.0) is None


def test_a_pose_through_a_turn_matrix_is_the_pose_at_that_angle():
    """``one_pose_candidates`` through the shape ``R(θ)`` at angle 0 cuts the patches it cuts at angle θ."""
    import skimage.data

    from patchpose.conventions import rotation_matrix
    from patchpose.matching.describe import Describer
    from patchpose.matching.features import detect
    from patchpose.matching.pairpose import one_pose_candidates

    f = detect(skimage.data.camera(), 200)
    d = Describer()
    turned = one_pose_candidates(f, d, 0.5, 0.7)
    through = one_pose_candidates(f, d, 0.5, 0.0, rotation_matrix(0.7))
    np.testing.assert_allclose(through[3], turned[3], atol=1e-5)
    np.testing.assert_array_equal(through[2], turned[2])


def test_a_slanted_photo_is_cut_through_the_pairs_affine_map():
    """The photo seen at a slant (an affine map with singular values 1.36 and 0.63): the matches that voted for
    the turn agree on the map, ``pair_pose`` cuts photo 2 through it and reports it, and matches far better
    than with the turn and zoom alone (the map set aside)."""
    import patchpose
    import patchpose.matching.pairpose as pairpose
    from patchpose.data.patches import load_photo, to_gray
    from patchpose.data.photos import demo_photo

    photo = to_gray(load_photo(demo_photo(), 480))
    h, w = photo.shape
    M = np.array([[1.3, 0.25], [0.1, 0.7]])
    c = np.array([(w - 1) / 2, (h - 1) / 2])
    A = np.concatenate([M, (c - M @ c)[:, None]], 1)
    slanted, H = (
        cv2.warpAffine(photo, A, (w, h), borderMode=cv2.BORDER_REFLECT_101),
        np.vstack([A, [0, 0, 1]]),
    )
    res = patchpose.match_pair(photo, slanted, recipe="pair-pose", homography=H)
    np.testing.assert_allclose(res.affine, M, atol=0.05)
    assert res.summary()["affine"] == np.round(res.affine, 4).tolist()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pairpose, "MIN_SLANT", math.inf)  # no map slants enough: the turn and zoom alone
        alone = patchpose.match_pair(photo, slanted, recipe="pair-pose", homography=H)
    assert alone.affine is None and alone.summary()["affine"] is None
    assert res.correct.sum() > 1.3 * alone.correct.sum(), (res.summary(), alone.summary())
