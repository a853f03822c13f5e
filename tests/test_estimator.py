"""The public estimator on each bundled model: shapes, conventions on real photos, chunking, bad input."""

import cv2
import numpy as np
import pytest
import skimage.data

import patchpose
from patchpose.conventions import angle_diff
from patchpose.data.keypoints import detect_sift
from patchpose.errors import InputError
from patchpose.estimator import PatchPoseEstimator


@pytest.fixture(
    scope="module",
    params=["patchpose-v1", "patchpose-v2", "patchpose-v6", "patchpose-v7", "patchpose-v8", "patchpose-v9"],
)
def est(request):
    return patchpose.PatchPoseEstimator.from_pretrained(request.param)


def test_the_default_is_v9_read_twice_with_its_descriptor_window():
    est = patchpose.PatchPoseEstimator.from_pretrained()
    assert est.meta["name"] == "patchpose-v9" and est.passes == 2 and est.descriptor_region == 2.25
    # the earlier defaults read once unless told otherwise
    assert patchpose.PatchPoseEstimator.from_pretrained("patchpose-v8").passes == 1


@pytest.fixture(scope="module")
def photo():
    return skimage.data.astronaut()


@pytest.fixture(scope="module")
def kps(photo):
    xy, _ = detect_sift(photo, 400, margin=100)
    return xy


def test_output_shapes_and_ranges(est, photo, kps):
    """(N,) poses in range, (N, 36) and (N, B_s) probability histograms (13 over [−2, 2] for v1, 25 over
    [−4, 4] for v2 and v6), for one pass (more passes move the frame: next test)."""
    out = est.estimate(photo, kps, passes=1)
    n = len(kps)
    lo, hi = est.cfg.scale_range
    bins = {
        "patchpose-v1": 13,
        "patchpose-v2": 25,
        "patchpose-v6": 25,
        "patchpose-v7": 25,
        "patchpose-v8": 25,
        "patchpose-v9": 25,
    }[est.meta["name"]]
    assert out["orientation"].shape == (n,) and out["scale"].shape == (n,)
    assert out["orientation_hist"].shape == (n, 36) and out["scale_hist"].shape == (n, bins)
    assert np.all((out["orientation"] >= 0) & (out["orientation"] < 2 * np.pi))
    assert np.all((out["scale"] >= lo) & (out["scale"] <= hi))
    np.testing.assert_allclose(out["orientation_hist"].sum(1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out["scale_hist"].sum(1), 1.0, atol=1e-5)
    assert out["valid"].all()


def test_top_k_candidates(est, photo, kps):
    """top_k gives (N, k) candidates whose first column is the single-pose answer."""
    one = est.estimate(photo, kps[:20])
    k4 = est.estimate(photo, kps[:20], top_k=4)
    assert k4["orientation"].shape == (20, 4) and k4["scale"].shape == (20, 4)
    np.testing.assert_allclose(k4["orientation"][:, 0], one["orientation"])
    np.testing.assert_allclose(k4["scale"][:, 0], one["scale"])


def test_argmax_without_refinement_is_a_bin_centre(est, photo, kps):
    out = est.estimate(photo, kps[:20], refine=False)
    np.testing.assert_allclose(
        out["orientation"] / (2 * np.pi / 36), np.round(out["orientation"] / (2 * np.pi / 36)), atol=1e-9
    )
    lo = est.cfg.scale_range[0]
    assert est.cfg.scale_bins_per_octave == 3.0
    np.testing.assert_allclose((out["scale"] - lo) * 3, np.round((out["scale"] - lo) * 3), atol=1e-9)


def test_chunked_inference_matches(est, photo, kps):
    """Small chunks give the same answer as one big batch."""
    small = patchpose.PatchPoseEstimator(
        est.model, batch_size=7, passes=est.passes, orientation_offset=est.orientation_offset
    )
    a, b = est.estimate(photo, kps[:50]), small.estimate(photo, kps[:50])
    np.testing.assert_allclose(a["orientation_hist"], b["orientation_hist"], atol=1e-5)


def test_rotating_the_image_ccw_adds_to_orientation(est, photo, kps):
    """np.rot90 turns the content 90° CCW as displayed: orientations grow by π/2 (exact pixels, no resampling)."""
    h, w = photo.shape[:2]
    rot = np.ascontiguousarray(np.rot90(photo))
    xy_rot = np.stack([kps[:, 1], w - 1 - kps[:, 0]], 1)
    a, b = est.estimate(photo, kps), est.estimate(rot, xy_rot)
    err = np.degrees(np.abs(angle_diff(b["orientation"] - a["orientation"], np.pi / 2)))
    assert np.median(err) < 6.0 and np.mean(err < 10) > 0.8


def test_shrinking_the_image_lowers_scale(est, photo, kps):
    """Halving the image (anti-aliased) subtracts about 1 from log2 scale."""
    small = cv2.resize(photo, (photo.shape[1] // 2, photo.shape[0] // 2), interpolation=cv2.INTER_AREA)
    a = est.estimate(photo, kps)
    b = est.estimate(small, (kps + 0.5) / 2 - 0.5)
    d = b["scale"] - a["scale"]
    assert abs(np.median(d) + 1.0) < 0.3


def test_gray_and_float_inputs(est, photo, kps):
    gray = cv2.cvtColor(photo, cv2.COLOR_RGB2GRAY)
    a = est.estimate(photo, kps[:10])
    b = est.estimate(gray, kps[:10])
    c = est.estimate(gray.astype(np.float32) / 255.0, kps[:10])
    np.testing.assert_allclose(a["orientation_hist"], b["orientation_hist"], atol=0.05)  # uint8 gray rounding
    np.testing.assert_allclose(b["orientation_hist"], c["orientation_hist"], atol=1e-5)


@pytest.mark.parametrize(
    "image, keypoints, match",
    [
        (np.zeros((10, 10), np.uint8), np.array([[5.0, 5.0]]), "too small"),
        (np.full((64, 64), np.nan, np.float32), np.array([[30.0, 30.0]]), "NaN"),
        (np.zeros((64, 64, 2), np.uint8), np.array([[30.0, 30.0]]), "shape"),
        (np.zeros((64, 64), np.uint8), np.zeros((0, 2)), "empty"),
        (np.zeros((64, 64), np.uint8), np.array([1.0, 2.0]), r"\(N, 2\)"),
        (np.zeros((64, 64), np.uint8), np.array([[np.nan, 2.0]]), "NaN"),
        (np.zeros((64, 64), np.uint8), np.array([[70.0, 2.0]]), "outside"),
        ("not an array", np.array([[1.0, 2.0]]), "numpy array"),
    ],
)
def test_bad_input_is_a_clear_error(est, image, keypoints, match):
    with pytest.raises(InputError, match=match):
        est.estimate(image, keypoints)


def test_outside_keypoint_message_prints_plain_numbers(est):
    with pytest.raises(InputError, match=r"#0 at \(70, 2\)"):
        est.estimate(np.zeros((64, 64), np.uint8), np.array([[70.0, 2.0]]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"device": "bogus"}, "device 'bogus'"),
        ({"batch_size": "a"}, "batch_size"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_estimator_options_are_clear_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        PatchPoseEstimator.from_pretrained(**kwargs)


@pytest.mark.parametrize("top_k", [0, 26, 40, 2.5, True])
def test_top_k_beyond_the_bins_is_a_clear_error(est, photo, kps, top_k):
    with pytest.raises(InputError, match="top_k"):
        est.estimate(photo, kps[:3], top_k=top_k)


def test_border_policy(est, photo):
    """Keypoints near the border: reflect (default) flags them invalid; 'error' refuses them."""
    xy = np.array([[3.0, 3.0], [256.0, 256.0]])
    out = est.estimate(photo, xy)
    assert out["valid"].tolist() == [False, True]
    strict = patchpose.PatchPoseEstimator(est.model, border="error")
    with pytest.raises(InputError, match="border"):
        strict.estimate(photo, xy)
    with pytest.raises(InputError):
        est.estimate(photo, xy, top_k=0)


def test_rotation_tta_is_exactly_equivariant(est, photo, kps):
    """With 4 quarter turns averaged, turning the patches by 90° CCW shifts the histogram by exactly 9 bins
    (Cartesian patches; a log-polar model is equivariant without it, tests/test_polar.py)."""
    from patchpose.inference import predict_histograms

    if est.cfg.is_polar:
        pytest.skip("quarter turns of a log-polar grid are rolls, pinned in tests/test_polar.py")
    patches, _ = est.extract(photo, kps[:30])
    h = predict_histograms(est.model, patches, rotations=4)
    h_rot = predict_histograms(
        est.model, np.ascontiguousarray(np.rot90(patches, 1, axes=(2, 3))), rotations=4
    )
    np.testing.assert_allclose(
        h_rot["orientation_hist"], np.roll(h["orientation_hist"], 9, axis=1), atol=1e-5
    )
    np.testing.assert_allclose(h_rot["scale_hist"], h["scale_hist"], atol=1e-5)


def test_rotation_tta_option(est, photo, kps):
    tta = patchpose.PatchPoseEstimator(est.model, rotations=4)
    out = tta.estimate(photo, kps[:10])
    assert out["orientation"].shape == (10,)
    with pytest.raises(InputError, match="rotations"):
        patchpose.PatchPoseEstimator(est.model, rotations=3)


def test_passes_read_again_in_the_frame_of_the_scale_found(photo, kps):
    """Pass 2 is pass 1's estimate at frame_scale = its scale rounded to whole bins: same poses, and the
    scale histogram moved back by those bins into the caller's frame."""
    from patchpose.estimator import shift_bins

    est = PatchPoseEstimator.from_pretrained(passes=2, orientation_offset=0)  # both heads in the frame found
    assert PatchPoseEstimator.from_pretrained("patchpose-v8").passes == 1 and est.passes == 2
    one = est.estimate(photo, kps, passes=1)
    k = np.round(one["scale"] * 3).astype(int)
    framed = est.estimate(photo, kps, frame_scale=k / 3, passes=1)
    two = est.estimate(photo, kps)
    np.testing.assert_allclose(two["scale"], framed["scale"], atol=1e-5)
    np.testing.assert_allclose(two["orientation"], framed["orientation"], atol=1e-5)
    np.testing.assert_allclose(two["scale_hist"], shift_bins(framed["scale_hist"], k), atol=1e-6)
    assert np.any(k != 0) and not np.allclose(two["scale"], one["scale"])  # the frame did move
    # the argmax of the returned histogram is the bin of the returned scale (when it lies in the histogram)
    lo, hi = est.cfg.scale_range
    inside = (two["scale"] > lo + 0.2) & (two["scale"] < hi - 0.2)
    top = lo + two["scale_hist"].argmax(1) / 3
    assert inside.mean() > 0.9 and np.all(np.abs(top - two["scale"])[inside] <= 0.5 / 3 + 1e-6)
    # in the caller's frame: with a frame_scale, pass 2 starts from it
    f = est.estimate(photo, kps[:20], frame_scale=1.0)
    g = est.estimate(photo, kps[:20], frame_scale=1.0, passes=1)
    k1 = np.round((g["scale"] - 1.0) * 3).astype(int)
    np.testing.assert_allclose(
        f["scale"], est.estimate(photo, kps[:20], frame_scale=1.0 + k1 / 3, passes=1)["scale"]
    )


def test_orientation_offset_moves_only_the_last_orientation_read(photo, kps):
    """With ``orientation_offset`` o and 2 passes, the scale is the plain 2-pass scale and the orientation is a
    single read at the second pass's frame (pass 1's scale in whole bins) moved by o; one read ignores o."""
    plain = PatchPoseEstimator.from_pretrained(orientation_offset=0)
    est = PatchPoseEstimator.from_pretrained(orientation_offset=-1)
    assert est.passes == 2 and est.orientation_offset == -1.0 and "orientation_offset=-1" in repr(est)
    k = np.round(plain.estimate(photo, kps, passes=1)["scale"] * 3) / 3
    moved = est.estimate(photo, kps, top_k=2)
    ref = plain.estimate(photo, kps, top_k=2)
    at = plain.estimate(photo, kps, top_k=2, frame_scale=k - 1.0, passes=1)
    np.testing.assert_allclose(moved["scale"], ref["scale"], atol=1e-6)
    np.testing.assert_allclose(moved["scale_hist"], ref["scale_hist"], atol=1e-7)
    np.testing.assert_allclose(moved["orientation"], at["orientation"], atol=1e-6)
    np.testing.assert_allclose(moved["orientation_hist"], at["orientation_hist"], atol=1e-7)
    assert np.mean(np.abs(angle_diff(moved["orientation"][:, 0], ref["orientation"][:, 0])) > 0.1) > 0.05
    one = est.estimate(photo, kps, passes=1)
    np.testing.assert_allclose(one["orientation"], plain.estimate(photo, kps, passes=1)["orientation"])
    # turn averaging reads its turned copies in the moved frame too
    turned = est.estimate(photo, kps[:30], turns=3)["orientation_hist"]
    want = plain.estimate(photo, kps[:30], turns=3, frame_scale=k[:30] - 1.0, passes=1)["orientation_hist"]
    np.testing.assert_allclose(turned, want, atol=1e-6)


@pytest.mark.parametrize("bad", [5, -4.5, float("nan"), float("inf"), "1", True])
def test_orientation_offset_must_be_a_finite_number_of_octaves(bad):
    with pytest.raises(InputError, match="orientation_offset"):
        PatchPoseEstimator.from_pretrained(orientation_offset=bad)


def test_shift_bins_moves_rows_and_drops_what_leaves():
    from patchpose.estimator import shift_bins

    h = np.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    np.testing.assert_allclose(
        shift_bins(h, np.array([1, -2, 0])),
        [[0.0, 0.1, 0.2, 0.3], [0.3, 0.4, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]],
    )


@pytest.mark.parametrize("bad", [0, 9, 1.5, "2", True])
def test_passes_must_be_a_small_positive_integer(bad, photo, kps):
    with pytest.raises(InputError, match="passes"):
        PatchPoseEstimator.from_pretrained(passes=bad)
    with pytest.raises(InputError, match="passes"):
        PatchPoseEstimator.from_pretrained().estimate(photo, kps[:2], passes=bad)


def test_is_int_in_is_the_one_integer_check():
    from patchpose.errors import is_int_in

    assert is_int_in(3, 1) and is_int_in(np.int64(3), 1, 3) and not is_int_in(4, 1, 3)
    assert not is_int_in(True, 0) and not is_int_in("3", 1) and not is_int_in(None, 1)
    assert not is_int_in(3.0, 1) and is_int_in(3.0, 1, integral_floats=True)
    assert not is_int_in(2.5, 1, integral_floats=True) and not is_int_in(
        float("nan"), 1, integral_floats=True
    )


def test_turn_bins_spread_whole_bins_over_a_quarter_turn():
    from patchpose.inference import turn_bins

    assert turn_bins(1, 36).tolist() == [0]
    assert turn_bins(3, 36).tolist() == [0, 3, 6]  # 0°, 30°, 60°
    assert turn_bins(9, 36).tolist() == list(range(9))  # 9: every bin of a quarter turn
    assert turn_bins(2, 8).tolist() == [0, 1]
    for bad in (0, 10, 1.5, "3", True):
        with pytest.raises(InputError, match="turns"):
            turn_bins(bad, 36)
    with pytest.raises(ValueError, match="multiple of 4"):
        turn_bins(1, 30)


def test_unturn_rolls_the_orientation_back_and_keeps_the_scale():
    from patchpose.inference import unturn

    o = np.zeros((2, 36), np.float32)
    o[0, 5], o[1, 0] = 1.0, 1.0
    s = np.random.default_rng(0).random((2, 25)).astype(np.float32)
    v = np.array([[np.cos(0.5), np.sin(0.5)], [1.0, 0.0]], np.float32)  # angles 0.5 rad and 0
    out = unturn({"orientation_hist": o, "scale_hist": s, "orientation_vector": v}, 3)  # turned by 30°
    assert out["orientation_hist"][0].argmax() == 2 and out["orientation_hist"][1].argmax() == 33
    np.testing.assert_array_equal(out["scale_hist"], s)
    np.testing.assert_allclose(np.arctan2(out["orientation_vector"][:, 1], out["orientation_vector"][:, 0]),
                               [0.5 - np.pi / 6, -np.pi / 6], atol=1e-6)  # fmt: skip
    assert o[0, 5] == 1.0  # the input is not changed


@pytest.mark.parametrize("deg", [90, 30, -45])
def test_turn_image_turns_counter_clockwise_and_maps_keypoints(deg):
    """A bright pixel right of the centre goes up under a quarter turn counter-clockwise as displayed, and
    the returned map sends every point to where its pixel went (pixel centres at integers)."""
    from patchpose.estimator import turn_image

    img = np.zeros((41, 61), np.float32)
    pts = np.array([[45.0, 20.0], [10.0, 5.0], [30.0, 33.0]])
    for x, y in pts.astype(int):
        img[y - 1 : y + 2, x - 1 : x + 2] = 1.0  # 3×3 blobs: their centre of mass survives interpolation
    turned, m = turn_image(img, np.radians(deg))
    a = np.radians(deg)
    assert turned.shape == (  # (height, width) of the turned image's bounding box
        int(np.ceil(abs(61 * np.sin(a)) + abs(41 * np.cos(a)) - 1e-9)),
        int(np.ceil(abs(61 * np.cos(a)) + abs(41 * np.sin(a)) - 1e-9)),
    )
    mapped = pts @ m[:, :2].T + m[:, 2]
    for u, v in mapped:
        yy, xx = np.mgrid[-3:4, -3:4]
        win = turned[int(round(v)) - 3 : int(round(v)) + 4, int(round(u)) - 3 : int(round(u)) + 4]
        assert win.sum() > 5  # the blob is there
        cx, cy = (win * xx).sum() / win.sum() + round(u), (win * yy).sum() / win.sum() + round(v)
        assert abs(cx - u) < 0.2 and abs(cy - v) < 0.2
    if deg == 90:  # (45, 20) lies 15 px right of the centre (30, 20): it ends 15 px above the new centre
        c = (np.array(turned.shape[::-1]) - 1) / 2
        np.testing.assert_allclose(mapped[0], [c[0], c[1] - 15], atol=1e-9)


def test_turns_average_the_reads_of_the_turned_image(photo, kps):
    """``turns=2``: the orientation histogram is the mean of the upright read's and of the read of the image
    turned by 2π·b/36 (b the second turn's bins) at the mapped keypoints, rolled back by b; the scale is the
    upright read's; with two passes only the last pass's orientation is averaged."""
    from patchpose.estimator import turn_image
    from patchpose.inference import turn_bins

    est = PatchPoseEstimator.from_pretrained(passes=1)
    b = int(turn_bins(2, 36)[1])
    one = est.estimate(photo, kps)
    turned, m = turn_image(photo.astype(np.float32) / 255.0, 2 * np.pi * b / 36)
    other = est.estimate(turned, kps @ m[:, :2].T + m[:, 2])
    two = PatchPoseEstimator.from_pretrained(turns=2, passes=1).estimate(photo, kps)
    np.testing.assert_allclose(
        two["orientation_hist"],
        (one["orientation_hist"] + np.roll(other["orientation_hist"], -b, 1)) / 2,
        atol=1e-5,
    )
    np.testing.assert_array_equal(two["scale_hist"], one["scale_hist"])
    np.testing.assert_array_equal(two["scale"], one["scale"])
    p2 = PatchPoseEstimator.from_pretrained(passes=2)
    a, b2 = p2.estimate(photo, kps), p2.estimate(photo, kps, turns=2)
    np.testing.assert_array_equal(b2["scale"], a["scale"])
    assert 0 < np.mean(np.abs(angle_diff(b2["orientation"], a["orientation"])) > 1e-4) < 1
    # the turned read on its own agrees with the upright one, turned: the sign of the roll is right
    d = np.abs(angle_diff(other["orientation"] - 2 * np.pi * b / 36, one["orientation"]))
    assert np.median(d) < np.radians(3)
    assert np.median(np.abs(angle_diff(two["orientation"], one["orientation"]))) < np.radians(2)
    assert est.estimate(photo, kps[:5], turns=2)["orientation"].shape == (5,)
    assert np.array_equal(two["valid"], one["valid"])


@pytest.mark.parametrize("bad", [0, 10, 2.5])
def test_turns_must_be_one_to_nine(bad, photo, kps):
    with pytest.raises(InputError, match="turns"):
        PatchPoseEstimator.from_pretrained(turns=bad)
    with pytest.raises(InputError, match="turns"):
        PatchPoseEstimator.from_pretrained().estimate(photo, kps[:2], turns=bad)
