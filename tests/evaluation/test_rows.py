"""The benchmarks' registry of matching rows (``patchpose.evaluation.rows``): each row's pose moves with the
image, the rows at our scale cut the estimator's descriptor window, and the registry lists what a run allows."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import make_textured_image
from patchpose.conventions import similarity_about
from patchpose.errors import InputError
from patchpose.evaluation.rows import Image, MatchConfig, Run, describe_rows, detect, get_row
from patchpose.geometry import apply_homography


def keypoint_poses(name, feats, ours=None, H=None, est=None, peers=None):
    """A poses row's ``(scale, orientation)`` ``(N, k)`` at ``feats`` (the registry's ``Row.poses``)."""
    return get_row(name).poses(Run(None, est, peers=peers), Image(feats, ours, H))


def test_upper_row_takes_the_pose_that_h_makes():
    img = make_textured_image(240)
    H = similarity_about((120, 120), 0.5, 1.0)
    feats = detect(img, 100)
    s, t = keypoint_poses("upper", feats, H=H)
    np.testing.assert_allclose(s, 0.5, atol=1e-9)
    np.testing.assert_allclose(np.exp(1j * t), np.exp(1j * 1.0), atol=1e-9)
    s1, t1 = keypoint_poses("upper", feats)  # image 1 itself: upright at the reference size
    assert (s1 == 0).all() and (t1 == 0).all()
    with pytest.raises(InputError, match="unknown row 'bogus'"):
        get_row("bogus")
    assert get_row("ours_top7").name == "ours_top7" and get_row("ours_top7").count is not None
    for bad in ("ours_top1", "ours_topx", "ours_top"):
        with pytest.raises(InputError, match="unknown row"):
            get_row(bad)


def test_the_registry_lists_the_rows_a_run_allows_in_report_order():
    """``pose_rows``: SIFT's rows only at SIFT detections, Key.Net's only at Key.Net's, the pooled blend (our
    shape blend with the network replaced) at every detector, the peers' only with peers, the hand-crafted ones on request; the
    default rows leave out the ablations; every row has a label of its own."""
    from patchpose.evaluation.rows import ROWS, default_rows, label, pair_rows, pose_rows

    sift = pose_rows(4, sift=True, peers=False)
    assert sift[:6] == ("lower", "sift", "sift_all", "ours", "ours_top4", "ours_adaptive")
    assert "keynet" not in sift and "orinet" not in sift and "dominant_gradient_pooled_blend" in sift
    corners = pose_rows(6, sift=False, peers=True)
    assert "sift" not in corners and "sift_resolved_by_ours" not in corners and "ours_top6" in corners
    assert {"orinet", "affnet+orinet", "affnet_pooled_blend", "dominant_gradient_pooled_blend"} <= set(
        corners
    )
    keynet = pose_rows(4, sift=False, keynet=True)
    assert "keynet" in keynet and "dominant_gradient_pooled_blend" in keynet
    assert "dominant_gradient" not in pose_rows(4, handcrafted=False)
    assert default_rows(pose_rows(4, peers=True)) == (
        "lower", "sift", "sift_all", "ours", "ours_top4", "dominant_gradient", "pair_pose", "pair_pose_gradient",
        "second_pass", "rectify", "orinet", "affnet+orinet", "upper",
    )  # fmt: skip
    assert "pair_pose_ours" in pose_rows(4, sift=False) and "pair_pose_gradient" in pose_rows(4, sift=False)
    # they detect SIFT's keypoints again
    assert "second_pass" not in pose_rows(4, sift=False) and "rectify" not in pose_rows(4, sift=False)
    assert pair_rows(ROWS) == (
        "shape_zoom_blend", "pair_pose", "pair_pose_ours", "pair_pose_gradient", "second_pass", "rectify"
    )  # fmt: skip
    labels = [label(r) for r in ROWS]
    assert len(set(labels)) == len(labels) and label("ours_top3") == "ours (top-3)"


def test_the_upper_row_needs_h():
    from patchpose.evaluation.rows import match_images
    from patchpose.matching.describe import Describer

    img = make_textured_image(120)
    xy = np.random.default_rng(0).uniform(40, 80, (10, 2))
    with pytest.raises(InputError, match="homography"):
        match_images(img, img, Run(Describer("sift")), rows=("upper",), keypoints1=xy, keypoints2=xy)


def test_sift_row_follows_the_image_rotation():
    """SIFT's own angle, converted to our convention, turns with the image (sign pinned)."""
    img = (make_textured_image(300) * 255).astype(np.uint8)
    H = similarity_about((149.5, 149.5), 0.0, math.radians(40))
    f1 = detect(img, 300)
    f2 = detect(cv2.warpPerspective(img, H, (300, 300)), 300)
    p = apply_homography(H, f1.xy)
    d = np.linalg.norm(p[:, None] - f2.xy[None], axis=2)
    i = np.nonzero(d.min(1) < 0.5)[0]
    j = d[i].argmin(1)
    assert len(i) >= 10
    diff = np.degrees(np.angle(np.exp(1j * (f2.sift_ori[j] - f1.sift_ori[i]))))
    assert np.median(np.abs(diff - 40.0)) < 3.0


def test_sift_candidates_and_the_resolved_row():
    """detect() keeps every orientation SIFT found at a location (its own first, in our convention), and the
    resolved row takes the candidate nearest our angle, circularly."""
    from patchpose.evaluation.rows import nearest_candidates

    img = (make_textured_image(300, seed=3) * 255).astype(np.uint8)
    f = detect(img, 400)
    assert len(f.sift_ori_candidates) == len(f)
    own = np.array([c[0] for c in f.sift_ori_candidates])
    np.testing.assert_allclose(own, f.sift_ori)
    assert any(len(c) > 1 for c in f.sift_ori_candidates)  # SIFT finds several orientations somewhere
    raw = cv2.SIFT_create(nfeatures=400).detect(img, None)
    assert sum(len(c) for c in f.sift_ori_candidates) == len(raw)  # every detection is a candidate
    cands = [np.array([0.1, 3.0]), np.array([0.05, 3.0]), np.array([1.0])]
    np.testing.assert_allclose(nearest_candidates(cands, np.array([2.9, 6.25, 4.0])), [3.0, 0.05, 1.0])
    given = detect(img, keypoints=f.xy[:5])
    assert given.sift_ori_candidates is None


def test_the_handcrafted_row_follows_a_turn():
    """The hand-crafted pose (the detector's patch, 16 px for given keypoints, and the dominant gradient's
    orientation) turns with the image: +40° (CCW as displayed) at the keypoints' images under H."""
    from patchpose.evaluation.rows import handcrafted_poses

    img = make_textured_image(320, seed=3)
    xy = detect(img, 60).xy
    xy = xy[np.all((xy > 90) & (xy < 230), axis=1)]
    H = similarity_about((159.5, 159.5), 0.0, math.radians(40))
    warped = cv2.warpPerspective(img, H, (320, 320), flags=cv2.INTER_LINEAR)
    s1, o1 = handcrafted_poses(detect(img, keypoints=xy))
    s2, o2 = handcrafted_poses(detect(warped, keypoints=apply_homography(H, xy)))
    assert len(xy) >= 10 and s1.shape == o1.shape == (len(xy),)
    np.testing.assert_array_equal(s1, s2)  # the detector's size: 16 px for keypoints given without one
    turn = np.degrees(np.angle(np.exp(1j * (o2 - o1))))
    assert abs(np.median(turn) - 40.0) < 3.0


def test_our_scale_with_the_gradients_angle_reads_the_gradient_on_the_descriptor_window():
    """``ours_scale_gradient``: our scale as the ``ours`` row has it, and kornia's dominant gradient read on the
    window the descriptor is cut on (our scale widened by the estimator's descriptor region), which turns with the
    image (+40° under a turn)."""
    from patchpose import PatchPoseEstimator
    from patchpose.data.patches import extract_patches
    from patchpose.evaluation.baselines import dominant_gradient_orientation
    from patchpose.matching.gradient import ORI_PATCH

    est = PatchPoseEstimator.load("patchpose-v10")
    img = make_textured_image(320, seed=3)
    xy = detect(img, 200).xy
    xy = xy[np.all((xy > 105) & (xy < 215), axis=1)]  # inside the image under the turn below
    f = detect(img, keypoints=xy)
    ours = est.estimate(f.image, f.xy, top_k=4)
    s, o = keypoint_poses("ours_scale_gradient", f, ours, est=est)
    s_ours, _ = keypoint_poses("ours", f, ours, est=est)
    np.testing.assert_array_equal(s, s_ours)
    window = s[:, 0] + math.log2(est.plan.descriptor_region)
    want = dominant_gradient_orientation(
        extract_patches(f.pyramid, f.xy, window, np.zeros(len(f)), ORI_PATCH, [1.0])
    )
    np.testing.assert_allclose(o[:, 0], want)
    assert get_row("ours_scale_gradient").widen and get_row("ours_scale_gradient").reads_model

    H = similarity_about((159.5, 159.5), 1.0, math.radians(40))
    warped = cv2.warpPerspective(img, H, (320, 320), flags=cv2.INTER_LINEAR)
    f2 = detect(warped, keypoints=apply_homography(H, xy))
    _, o2 = keypoint_poses("ours_scale_gradient", f2, est.estimate(f2.image, f2.xy, top_k=4), est=est)
    turn = np.degrees(np.angle(np.exp(1j * (o2[:, 0] - o[:, 0]))))
    near = np.abs(turn - 40.0) < 10  # (a peak of the histogram can win in one photo and not the other)
    assert len(xy) >= 10 and near.mean() > 0.6 and abs(np.median(turn[near]) - 40.0) < 3.0


class _Recorder:
    """A describer that records the frames it is asked to describe (one row per call)."""

    dim = 3

    def __init__(self):
        self.calls = []

    def describe(self, pyramid, xy, log2_scale, theta, region=1.0, shape=None):
        s = np.asarray(log2_scale, np.float64).reshape(-1)
        self.calls.append((s.copy(), np.asarray(theta, np.float64).reshape(-1).copy(), region))
        return np.stack([s, np.asarray(theta, np.float64).reshape(-1), np.zeros_like(s)], 1).astype(
            np.float32
        )


def test_rows_at_our_scale_cut_the_estimators_descriptor_window():
    """The rows cut at our scale (``ours``, ``ours_topK``) widen their window by the estimator's
    ``descriptor_region`` (log2 added to our scale), every other row keeps its own window, and the poses
    themselves do not change (what AdaLAM reads); the two-view chain does the same for ``describe_pose="ours"``."""
    from patchpose import PatchPoseEstimator
    from patchpose.evaluation.twoview import TwoViewConfig, frame_poses, match_two_views

    img = (make_textured_image(240, seed=5) * 255).astype(np.uint8)
    f = detect(img, 60)
    rows = ("lower", "sift", "ours", "ours_top2", "ours_angle")
    cfg = MatchConfig(top_k=2)
    out = {}
    for region in (1.0, 2.0):
        est = PatchPoseEstimator.load("patchpose-v10").with_plan(descriptor_region=region)
        ours = est.estimate(f.image, f.xy, top_k=2)
        rec = _Recorder()
        run = Run(rec, est, cfg)
        describe_rows(rows, run, Image(f, ours))
        out[region] = dict(zip(rows, rec.calls))
        np.testing.assert_allclose(out[region]["ours"][0], ours.scale[:, 0] + math.log2(region))
        np.testing.assert_allclose(out[region]["ours"][1], ours.orientation[:, 0])
        np.testing.assert_allclose(
            out[region]["ours_top2"][0], np.repeat(ours.scale[:, 0], 2) + math.log2(region)
        )
        assert get_row("ours").widen and get_row("ours_top2").widen and not get_row("ours_angle").widen
        np.testing.assert_allclose(frame_poses(run, Image(f, ours), "ours")[0], ours.scale[:, 0])
    # our angle in SIFT's frame: SIFT's scale kept, untouched by the setting as the other rows
    np.testing.assert_allclose(out[1.0]["ours_angle"][0], f.sift_scale)
    for row in ("lower", "sift", "ours_angle"):  # untouched by the setting
        for a, b in zip(out[1.0][row][:2], out[2.0][row][:2]):
            np.testing.assert_array_equal(a, b)

    rec = _Recorder()
    ours = PatchPoseEstimator.load("patchpose-v10").estimate(f.image, f.xy, top_k=1)
    match_two_views(
        f, f, rec, TwoViewConfig(describe_pose="ours", matcher="mnn", descriptor_region=4.0), ours, ours
    )
    np.testing.assert_allclose(rec.calls[0][0], ours.scale[:, 0] + 2.0)
    rec = _Recorder()
    match_two_views(
        f, f, rec, TwoViewConfig(describe_pose="sift", matcher="mnn", descriptor_region=4.0), ours, ours
    )
    np.testing.assert_allclose(rec.calls[0][0], f.sift_scale)
    for bad in (0.0, -1.0, float("nan"), 17.0):
        with pytest.raises(InputError, match="descriptor_region must be a number in"):
            TwoViewConfig(descriptor_region=bad).validate()


def test_rows_with_several_orientations_per_keypoint_count_their_descriptors():
    """``sift_all`` describes each keypoint at every orientation SIFT found there, ``ours_adaptive`` at our
    strong candidates; both repeat the first where a keypoint has fewer, and say how many they made."""
    from patchpose import PatchPoseEstimator
    from patchpose.evaluation.rows import candidate_counts
    from patchpose.reading import strong_candidates

    img = (make_textured_image(240, seed=5) * 255).astype(np.uint8)
    f = detect(img, 80)
    n = len(f)
    run = Run(None)
    counts = candidate_counts("sift_all", run, Image(f))
    np.testing.assert_array_equal(counts, [len(c) for c in f.sift_ori_candidates])
    assert counts.max() > 1  # some locations have several orientations
    s, o = keypoint_poses("sift_all", f)
    assert s.shape == o.shape == (n, counts.max())
    for i in range(n):
        assert set(np.round(o[i], 9)) == set(np.round(f.sift_ori_candidates[i], 9))
    np.testing.assert_array_equal(s[:, 0], f.sift_scale)
    ours = PatchPoseEstimator.from_pretrained().estimate(f.image, f.xy, top_k=4)
    keep = strong_candidates(ours)
    np.testing.assert_array_equal(candidate_counts("ours_adaptive", run, Image(f, ours)), keep.sum(1))
    s, o = keypoint_poses("ours_adaptive", f, ours)
    np.testing.assert_allclose(o[keep], ours.orientation[keep])
    np.testing.assert_allclose(o[~keep], np.broadcast_to(ours.orientation[:, :1], o.shape)[~keep])
    np.testing.assert_array_equal(candidate_counts("ours_top4", run, Image(f)), np.full(n, 4))
    np.testing.assert_array_equal(candidate_counts("ours", run, Image(f)), np.ones(n))
    with pytest.raises(InputError, match="SIFT detections"):
        candidate_counts("sift_all", run, Image(detect(img, keypoints=f.xy)))
    # described once per real orientation (as SIFT computes them), the same descriptors as every slot described
    from patchpose.matching.candidates import sift_all_descriptors
    from patchpose.matching.describe import Describer

    calls = []

    class Counting(Describer):
        def describe(self, pyramid, xy, scale, ori):
            calls.append(len(xy))
            return super().describe(pyramid, xy, scale, ori)

    d = sift_all_descriptors(f, Counting())
    assert calls == [counts.sum()] and d.shape == (n, counts.max(), 128)
    s, o = keypoint_poses("sift_all", f)
    every = Describer().describe(f.pyramid, np.repeat(f.xy, o.shape[1], 0), s.ravel(), o.ravel())
    np.testing.assert_array_equal(d, every.reshape(d.shape))


def candidates(name, feats, ours=None, est=None, describer=None, cfg=None):
    """A blend row's candidates ``(s, o, w)`` (the registry's ``Row.candidates``, without the descriptors)."""
    run = Run(describer or _Recorder(), est, cfg or MatchConfig())
    return get_row(name).candidates(run, Image(feats, ours))[:3]


def test_blend_rows_describe_each_candidate_and_keep_one_descriptor_per_keypoint():
    """``ours_blend`` cuts at our scale's window and our top-k angles, ``ours_scale_gradient_blend`` at the same
    window and the gradient histogram's peaks there, ``dominant_gradient_blend`` at the detector's scale;
    each returns one unit descriptor per keypoint, the weighted mean of its candidates' descriptors."""
    from patchpose import PatchPoseEstimator
    from patchpose.conventions import angle_diff
    from patchpose.matching.blend import BLEND_K, blend_descriptors, blend_weights
    from patchpose.matching.candidates import ours_window

    img = (make_textured_image(240, seed=5) * 255).astype(np.uint8)
    f = detect(img, 50)
    n = len(f)
    est = PatchPoseEstimator.from_pretrained()
    ours = est.estimate(f.image, f.xy, top_k=BLEND_K)
    rows = ("ours_blend", "ours_scale_gradient_blend", "dominant_gradient_blend")
    rec = _Recorder()
    out = describe_rows(rows, Run(rec, est, MatchConfig(top_k=BLEND_K)), Image(f, ours))
    window = ours.scale[:, 0] + ours_window(est.plan.descriptor_region)
    for row, (s, o, _) in zip(rows, rec.calls):
        assert out[row].shape == (n, 1, rec.dim)
        np.testing.assert_allclose(np.linalg.norm(out[row][:, 0], axis=1), 1.0, rtol=1e-5)
        cs, co, w = candidates(row, f, ours, est)
        np.testing.assert_allclose(s, cs.reshape(-1))
        np.testing.assert_allclose(o, co.reshape(-1))
        # the blend of what the describer returned for those candidates
        d = np.stack([s, o, np.zeros_like(s)], 1).reshape(n, BLEND_K, 3)
        np.testing.assert_allclose(out[row][:, 0], blend_descriptors(d, w), rtol=1e-5, atol=1e-6)
    s, o, w = candidates("ours_blend", f, ours, est)
    np.testing.assert_allclose(s, np.repeat(window[:, None], BLEND_K, 1))
    np.testing.assert_allclose(o, ours.orientation)
    np.testing.assert_allclose(w, blend_weights(ours.confidence))
    s, o, _ = candidates("ours_scale_gradient_blend", f, ours, est)
    np.testing.assert_allclose(s[:, 0], window)
    s, o, _ = candidates("dominant_gradient_blend", f)
    np.testing.assert_allclose(s[:, 0], f.frame)
    # its first candidate is the dominant_gradient row's angle
    _, dom = keypoint_poses("dominant_gradient", f)
    assert np.abs(angle_diff(o[:, 0], dom[:, 0])).max() < 1e-4
    with pytest.raises(InputError, match="top-4"):
        candidates("ours_blend", detect(img, 20), est.estimate(f.image, f.xy), est)
    # pooled: the same candidates at the window and 2^±0.5 times it, weights 1/4, 1/2, 1/4 of theirs
    ps, po, pw = candidates("dominant_gradient_pooled_blend", f)
    s, o, w = candidates("dominant_gradient_blend", f)
    np.testing.assert_allclose(ps, np.concatenate([s - 0.5, s, s + 0.5], 1))
    np.testing.assert_allclose(po, np.tile(o, (1, 3)))
    np.testing.assert_allclose(pw, np.concatenate([0.25 * w, 0.5 * w, 0.25 * w], 1))
    d = describe_rows(("dominant_gradient_pooled_blend",), Run(_Recorder(), est), Image(f, ours))
    assert d["dominant_gradient_pooled_blend"].shape == (n, 1, _Recorder().dim)


def test_shape_row_cuts_through_our_shape_network_frames(tmp_path):
    """``shape_pooled_blend``: the gradient's peaks read on the shape network's affine-normalised patch at the
    detector's scale, each at 3 sizes, described through the frame turned to it. An untrained network (discs)
    gives exactly the isotropic pooled blend's candidates; the bundled one gives shapes; ``shape_weights``
    picks the network."""
    from patchpose.errors import WeightsError
    from patchpose.matching.blend import affine_parts, gradient_peaks, pool_sizes
    from patchpose.models.shapenet import ShapeNet
    from patchpose.shape import shape_estimator
    from patchpose.weights import save_shape_weights

    img = (make_textured_image(240, seed=5) * 255).astype(np.uint8)
    f = detect(img, 40, detector="gftt")
    disc = save_shape_weights(ShapeNet(), tmp_path / "disc.safetensors")
    s, o, w = candidates("shape_pooled_blend", f, cfg=MatchConfig(shape_weights=str(disc)))
    ps, po, pw = candidates("dominant_gradient_pooled_blend", f)
    np.testing.assert_allclose(s, ps, atol=1e-9)
    assert np.abs(np.angle(np.exp(1j * (o - po)))).max() < 1e-6
    np.testing.assert_allclose(w, pw, atol=1e-6)
    # the bundled network: its frames at the detector's (fixed) scale, the peaks read in them
    frames = shape_estimator(None).frames(f.pyramid, f.xy, 16.0)
    scale, shape = affine_parts(frames)
    assert np.abs(shape - np.eye(2)).max() > 0.1
    s, o, w = candidates("shape_pooled_blend", f)
    es, eo, ew = pool_sizes(
        np.repeat(scale[:, None], 4, 1), *gradient_peaks(f.pyramid, f.xy, scale, shape=shape)
    )
    np.testing.assert_allclose(s, es, atol=1e-9)
    np.testing.assert_allclose(o, eo, atol=1e-9)
    np.testing.assert_allclose(w, ew, atol=1e-9)
    rec = _Recorder()
    d = describe_rows(("shape_pooled_blend",), Run(rec, cfg=MatchConfig(shape_weights=str(disc))), Image(f))
    assert d["shape_pooled_blend"].shape == (len(f), 1, rec.dim)
    with pytest.raises(WeightsError, match="weights file not found"):
        candidates(
            "shape_pooled_blend",
            detect(img, 5, detector="gftt"),
            cfg=MatchConfig(shape_weights=str(tmp_path / "no")),
        )


def _turned(photo: np.ndarray, degrees: float, zoom: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    h, w = photo.shape[:2]
    c = np.array([(w - 1) / 2, (h - 1) / 2])
    a = np.radians(degrees)
    A = zoom * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    M = np.concatenate([A, (c - A @ c)[:, None]], 1)
    return cv2.warpAffine(photo, M, (w, h), flags=cv2.INTER_LINEAR), np.vstack([M, [0, 0, 1]])


@pytest.fixture(scope="module")
def photo():
    from patchpose.data.patches import load_photo, to_gray
    from patchpose.data.photos import demo_photo

    return to_gray(load_photo(demo_photo(), 480))


def _correct(res: dict, row: str, px: float = 3.0) -> int:
    return int((res["rows"][row]["error_px"] <= px).sum())


def test_sift_all_describes_every_orientation_and_matches_each_location_once(photo):
    """``sift_all``: SIFT's keypoints (one per location) described at every orientation SIFT found there, a
    pair's distance that of its closest descriptors: on the photo turned by 90° more correct matches than SIFT's
    first orientation alone (measured: 218 against 188), each location in at most one match."""
    from patchpose.evaluation.rows import match_images
    from patchpose.matching.describe import Describer

    img2, H = _turned(photo, 90)
    res = match_images(
        photo, img2, Run(Describer(), cfg=MatchConfig(max_keypoints=300)), ("sift_all", "sift"), H
    )
    assert len(np.unique(res["xy1"], axis=0)) == len(res["xy1"])  # one keypoint per location
    for m in (res["rows"][r]["matches"] for r in ("sift_all", "sift")):
        assert len(np.unique(m[:, 0])) == len(m) and len(np.unique(m[:, 1])) == len(m)
    assert _correct(res, "sift_all") > _correct(res, "sift") + 10
    with pytest.raises(InputError, match="SIFT detections"):
        match_images(photo, img2, Run(Describer(), cfg=MatchConfig(detector="harris")), ("sift_all",), H)


#: peer weights beside the repository (``../shared/peers``); a user's clone has none
PEERS = (Path(__file__).resolve().parents[2] / ".." / "shared" / "peers").resolve()
needs_peers = pytest.mark.skipif(
    not PEERS.is_dir(), reason=f"the peers' weights are not here ({PEERS}); a user's clone has none"
)


def test_key_net_needs_the_peers_folder_in_one_line(photo):
    with pytest.raises(InputError, match="needs the peers' weights folder"):
        detect(photo, 100, detector="keynet")


@needs_peers
def test_key_net_keypoints_are_described_about_their_own_size_too(photo):
    """Key.Net detections (the peers' weights) carry a size: ``pair_pose`` votes with the gradient's peaks at it (no
    network), describes each at the pair's turn both at the fixed window and about that size, and matches a photo
    turned by 50° and enlarged 1.3×: the turn voted within 2° and the zoom (Key.Net's scales vote it) within 0.15
    octave, more correct matches than the dominant gradient at Key.Net's size."""
    from patchpose import PatchPoseEstimator
    from patchpose.evaluation.peers import Peers
    from patchpose.evaluation.rows import match_images
    from patchpose.matching.describe import Describer

    img2, H = _turned(photo, 50.0, 1.3)
    run = Run(
        Describer(), PatchPoseEstimator.load("patchpose-v10"), MatchConfig(max_keypoints=300, detector="keynet"),
        Peers(PEERS),
    )  # fmt: skip
    res = match_images(photo, img2, run, ("pair_pose", "dominant_gradient"), H)
    turn, zoom = res["rows"]["pair_pose"]["turn"], res["rows"]["pair_pose"]["zoom"]
    assert abs((math.degrees(turn.radians) - (360.0 - 50.0) + 180.0) % 360.0 - 180.0) < 2.0
    assert zoom.log2 == pytest.approx(np.log2(1.3), abs=0.15)
    assert _correct(res, "pair_pose") > _correct(res, "dominant_gradient")


@needs_peers
def test_key_net_finds_nothing_in_an_image_too_small_for_it(photo):
    """kornia's Key.Net cannot read an image with a side under 19 px (its smallest level is smaller than its
    padding): such an image has no Key.Net keypoints, and one just large enough is read."""
    from patchpose.evaluation.peers import KEYNET_MIN_SIDE, Peers

    peers = Peers(PEERS)
    for shape in [(16, 16), (18, 300), (300, 18)]:
        assert len(detect(photo[: shape[0], : shape[1]].copy(), 100, detector="keynet", peers=peers)) == 0
    assert KEYNET_MIN_SIDE == 19
    detect(photo[:19, :300].copy(), 100, detector="keynet", peers=peers)


@pytest.mark.parametrize("detector", ["sift", "gftt"])
def test_the_library_recipes_are_the_benchmark_rows(photo, detector):
    """Each recipe of :func:`patchpose.match_pair` gives exactly the matches of the benchmark row that says it is
    that recipe (``Row.recipe``), read with the model the recipe reads: what the benchmarks measure is what users
    call."""
    import patchpose
    from patchpose import PatchPoseEstimator
    from patchpose.evaluation.rows import ROWS, match_images
    from patchpose.matching.describe import Describer
    from patchpose.recipes import RECIPES

    img2, H = _turned(photo, 35.0, 1.2)
    rows = {r.recipe: name for name, r in ROWS.items() if r.recipe}
    assert set(rows) == set(RECIPES)
    for recipe, name in rows.items():
        if ROWS[name].sift and detector != "sift":  # rectify detects SIFT's keypoints again
            continue
        model = RECIPES[recipe].model
        run = Run(Describer(), model and PatchPoseEstimator.load(model), MatchConfig(200, detector=detector))
        bench = match_images(photo, img2, run, (name,), H)
        lib = patchpose.match_pair(
            photo, img2, recipe=recipe, detector=detector, max_keypoints=200, homography=H
        )
        np.testing.assert_array_equal(lib.xy1, bench["rows"][name].get("xy1", bench["xy1"]))
        np.testing.assert_array_equal(lib.xy2, bench["rows"][name].get("xy2", bench["xy2"]))
        np.testing.assert_array_equal(lib.matches, bench["rows"][name]["matches"])
        np.testing.assert_allclose(lib.error_px, bench["rows"][name]["error_px"])
        assert len(lib.matches) > 20
