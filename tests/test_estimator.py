"""The public estimator on each bundled model and on the layouts of models no longer bundled: shapes,
conventions on real photos, chunking, bad input."""

import os
import signal

import cv2
import numpy as np
import pytest
import skimage.data

import patchpose
from patchpose.conventions import angle_diff
from patchpose.data.keypoints import detect_sift
from patchpose.errors import InputError
from patchpose.estimator import PatchPoseEstimator

TRAINED = ["patchpose-fast-v1", "patchpose-v9", "patchpose-v10"]  # the bundled pose models
#: randomly initialised networks of the layouts only models no longer bundled had (conftest.LEGACY_LAYOUTS):
#: patchpose-v1's Cartesian CNN on 3 windows, patchpose-v2's log-polar network read at any sharpness
LAYOUTS = ["v1-layout", "v2-layout"]


@pytest.fixture(scope="module", params=TRAINED + LAYOUTS)
def est(request, legacy_weights):
    if request.param in LAYOUTS:
        return PatchPoseEstimator.load(legacy_weights[request.param.removesuffix("-layout")])
    return patchpose.PatchPoseEstimator.from_pretrained(request.param)


@pytest.fixture(scope="module", params=TRAINED + ["v2-layout"])
def equivariant(request, legacy_weights):
    """A model whose poses turn and scale with the photo: the bundled ones, and a log-polar network even
    untrained (by construction); v1's Cartesian CNN does so only once trained."""
    if request.param == "v2-layout":
        return PatchPoseEstimator.load(legacy_weights["v2"])
    return patchpose.PatchPoseEstimator.from_pretrained(request.param)


def test_the_default_is_fast_v1_with_v9s_plan_but_the_first_reads_scale(legacy_weights):
    est = patchpose.PatchPoseEstimator.from_pretrained()
    assert est.name == "patchpose-fast-v1"
    assert est.plan == patchpose.ReadPlan(
        passes=2, orientation_offset=-4 / 3, descriptor_region=2.25, reread_scale=False
    )
    assert patchpose.PatchPoseEstimator.from_pretrained("patchpose-v9").plan == est.plan.replace(
        reread_scale=True
    )
    assert patchpose.PatchPoseEstimator.from_pretrained("patchpose-v10").plan == est.plan.replace(
        reread_scale=True
    )
    # a file that names no plan, as the earlier defaults' did, reads once, with a window of one radius
    assert PatchPoseEstimator.load(legacy_weights["v2"]).plan == patchpose.ReadPlan()


def test_the_fingerprint_is_the_weights_not_the_name():
    """Same weights: one fingerprint (loaded twice, another read plan); one weight changed under the same name:
    another; the ONNX backend's is its file's."""
    import copy

    import torch

    a, b = PatchPoseEstimator.load("patchpose-v10"), PatchPoseEstimator.load("patchpose-v10")
    assert a.fingerprint == b.fingerprint == a.with_plan(passes=1).fingerprint and len(a.fingerprint) == 16
    other = copy.deepcopy(a.model)
    with torch.no_grad():
        next(other.parameters()).view(-1)[0] += 1e-6
    assert PatchPoseEstimator(other, a.meta).fingerprint != a.fingerprint
    assert PatchPoseEstimator.load("patchpose-fast-v1").fingerprint != a.fingerprint


@pytest.fixture(scope="module")
def photo():
    return skimage.data.astronaut()


@pytest.fixture(scope="module")
def kps(photo):
    xy, _ = detect_sift(photo, 400, margin=100)
    return xy


def test_output_shapes_and_ranges(est, photo, kps):
    """(N,) poses in range, (N, 36) and (N, B_s) probability histograms (13 over [−2, 2] for v1's layout, 25
    over [−4, 4] for the log-polar models), for one pass (more passes move the frame: next test)."""
    out = est.with_plan(passes=1).estimate(photo, kps)
    n = len(kps)
    lo, hi = est.cfg.scale_range
    bins = {
        "patchpose-fast-v1": 25,
        "patchpose-v9": 25,
        "patchpose-v10": 25,
        "patchpose-v1-layout": 13,
        "patchpose-v2-layout": 25,
    }[est.meta["name"]]
    assert out.orientation.shape == (n,) and out.scale.shape == (n,)
    assert out.orientation_hist.shape == (n, 36) and out.scale_hist.shape == (n, bins)
    assert np.all((out.orientation >= 0) & (out.orientation < 2 * np.pi))
    assert np.all((out.scale >= lo) & (out.scale <= hi))
    np.testing.assert_allclose(out.orientation_hist.sum(1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out.scale_hist.sum(1), 1.0, atol=1e-5)
    assert out.valid.all()


def test_top_k_candidates(est, photo, kps):
    """top_k gives (N, k) candidates whose first column is the single-pose answer."""
    one = est.estimate(photo, kps[:20])
    k4 = est.estimate(photo, kps[:20], top_k=4)
    assert k4.orientation.shape == (20, 4) and k4.scale.shape == (20, 4)
    np.testing.assert_allclose(k4.orientation[:, 0], one.orientation)
    np.testing.assert_allclose(k4.scale[:, 0], one.scale)


def test_confidence_is_the_histogram_mass_about_each_pose(est, photo, kps):
    """``confidence`` is the orientation histogram's mass in the bin nearest each orientation and its two
    neighbours (circular); ``scale_confidence`` the same for scale, in the last read's own bins."""
    one = est.with_plan(passes=1).estimate(photo, kps[:20], top_k=2)
    b = np.rint(one.orientation / (2 * np.pi / 36)).astype(int)
    want = sum(np.take_along_axis(one.orientation_hist, (b + d) % 36, 1) for d in (-1, 0, 1))
    np.testing.assert_allclose(one.confidence, want, atol=1e-6)
    assert np.all(one.confidence[:, 0] >= one.confidence[:, 1] - 0.2)  # the strongest first, roughly
    lo = est.cfg.scale_range[0]
    n = one.scale_hist.shape[1]
    j = np.rint((one.scale - lo) * est.cfg.scale_bins_per_octave).astype(int)
    want_s = sum(
        np.where(
            (j + d >= 0) & (j + d < n), np.take_along_axis(one.scale_hist, np.clip(j + d, 0, n - 1), 1), 0
        )
        for d in (-1, 0, 1)
    )
    np.testing.assert_allclose(one.scale_confidence, want_s, atol=1e-6)
    assert np.all((one.confidence > 0) & (one.confidence <= 1 + 1e-6))


def test_descriptor_radius_is_the_plan_window_in_pixels(est, photo, kps):
    out = est.estimate(photo, kps[:10])
    np.testing.assert_allclose(out.radius, 16.0 * np.exp2(out.scale))
    np.testing.assert_allclose(out.descriptor_radius, est.plan.descriptor_region * out.radius)
    wide = est.with_plan(descriptor_region=3.0).estimate(photo, kps[:10])
    np.testing.assert_allclose(wide.descriptor_radius, 3.0 * out.radius)
    np.testing.assert_array_equal(wide.orientation, out.orientation)  # the window changes no pose


def test_chunked_inference_matches(est, photo, kps):
    """Small chunks give the same answer as one big batch."""
    small = patchpose.PatchPoseEstimator(est.model, est.meta, batch_size=7)
    a, b = est.estimate(photo, kps[:50]), small.estimate(photo, kps[:50])
    np.testing.assert_allclose(a.orientation_hist, b.orientation_hist, atol=1e-5)


def test_rotating_the_image_ccw_adds_to_orientation(equivariant, photo, kps):
    """np.rot90 turns the content 90° CCW as displayed: orientations grow by π/2 (exact pixels, no resampling)."""
    h, w = photo.shape[:2]
    rot = np.ascontiguousarray(np.rot90(photo))
    xy_rot = np.stack([kps[:, 1], w - 1 - kps[:, 0]], 1)
    a, b = equivariant.estimate(photo, kps), equivariant.estimate(rot, xy_rot)
    err = np.degrees(np.abs(angle_diff(b.orientation - a.orientation, np.pi / 2)))
    assert np.median(err) < 6.0 and np.mean(err < 10) > 0.8


def test_shrinking_the_image_lowers_scale(equivariant, photo, kps):
    """Halving the image (anti-aliased) subtracts about 1 from log2 scale."""
    small = cv2.resize(photo, (photo.shape[1] // 2, photo.shape[0] // 2), interpolation=cv2.INTER_AREA)
    a = equivariant.estimate(photo, kps)
    b = equivariant.estimate(small, (kps + 0.5) / 2 - 0.5)
    d = b.scale - a.scale
    assert abs(np.median(d) + 1.0) < 0.3


def test_gray_and_float_inputs(est, photo, kps):
    gray = cv2.cvtColor(photo, cv2.COLOR_RGB2GRAY)
    a = est.estimate(photo, kps[:10])
    b = est.estimate(gray, kps[:10])
    c = est.estimate(gray.astype(np.float32) / 255.0, kps[:10])
    np.testing.assert_allclose(a.orientation_hist, b.orientation_hist, atol=0.05)  # uint8 gray rounding
    np.testing.assert_allclose(b.orientation_hist, c.orientation_hist, atol=1e-5)


@pytest.mark.parametrize(
    "image, keypoints, match",
    [
        (np.zeros((10, 10), np.uint8), np.array([[5.0, 5.0]]), "too small"),
        (np.full((64, 64), np.nan, np.float32), np.array([[30.0, 30.0]]), "NaN"),
        (np.zeros((64, 64, 2), np.uint8), np.array([[30.0, 30.0]]), "shape"),
        (np.zeros((64, 64), np.uint8), np.array([1.0, 2.0]), r"\(N, 2\)"),
        (np.zeros((64, 64), np.uint8), np.array([[np.nan, 2.0]]), "NaN"),
        (np.zeros((64, 64), np.uint8), np.array([[70.0, 2.0]]), "outside"),
        ("not an array", np.array([[1.0, 2.0]]), "numpy array"),
    ],
)
def test_bad_input_is_a_clear_error(est, image, keypoints, match):
    with pytest.raises(InputError, match=match):
        est.estimate(image, keypoints)


@pytest.mark.parametrize("top_k", [None, 3])
@pytest.mark.parametrize("empty", ["(0, 2)", "[]", "np.array([])", "np.zeros(0, np.float32)", "torch"])
def test_no_keypoints_give_no_poses(est, top_k, empty):
    """An image without detections: empty poses shaped as for N keypoints, not an error, whether no keypoints
    come as a (0, 2) array or an empty list or 1-D array (``[]`` was once refused as "got shape (0,)")."""
    import torch

    keypoints = {
        "(0, 2)": np.zeros((0, 2)),
        "[]": [],
        "np.array([])": np.array([]),
        "np.zeros(0, np.float32)": np.zeros(0, np.float32),
        "torch": torch.zeros(0),
    }[empty]
    out = est.estimate(np.zeros((64, 64), np.uint8), keypoints, top_k=top_k)
    want = (0,) if top_k is None else (0, 3)
    assert out.orientation.shape == out.scale.shape == out.confidence.shape == want
    assert out.orientation_hist.shape == (0, 36) and out.scale_hist.shape == (0, est.cfg.num_scale_bins)
    assert len(out) == 0 and out.valid.dtype == bool


def test_torch_keypoints_are_read_like_numpy_ones(photo, kps):
    import torch

    est = PatchPoseEstimator.from_pretrained()
    want = est.estimate(photo, kps[:5])
    got = est.estimate(photo, torch.tensor(kps[:5], requires_grad=True))
    np.testing.assert_array_equal(got.orientation, want.orientation)


def test_outside_keypoint_message_prints_plain_numbers(est):
    with pytest.raises(InputError, match=r"#0 at \(70, 2\)"):
        est.estimate(np.zeros((64, 64), np.uint8), np.array([[70.0, 2.0]]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"device": "bogus"}, "device 'bogus'"),
        ({"device": "meta"}, "device 'meta' holds no weights"),  # a read once failed inside torch
        ({"batch_size": "a"}, "batch_size"),
        ({"batch_size": 0}, "batch_size"),
        ({"border": "wrap"}, "border"),
        ({"plan": {"passes": 2}}, "ReadPlan"),
    ],
)
def test_bad_estimator_options_are_clear_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        PatchPoseEstimator.load(**kwargs)


def test_an_unknown_device_names_the_devices_and_keeps_torchs_whole_message():
    """``device="gpu"`` said torch's list of device types cut at 120 characters ("..., meta, h)"): now it says
    which devices the estimator runs on and torch's message whole, on one line."""
    with pytest.raises(
        InputError, match=r"^device 'gpu' cannot be used here: the estimator runs on 'cpu' or 'cuda'"
    ) as e:
        PatchPoseEstimator.load(device="gpu")
    assert str(e.value).endswith("device string: gpu)") and "\n" not in str(e.value)


@pytest.fixture
def torch_threads():
    """``torch_threads(n)`` sets this thread's torch threads for the test; they are put back after it."""
    import torch

    threads = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(threads)


def test_reading_in_chunks_is_bit_identical_to_one_read(torch_threads):
    """Memory is bounded by the chunk; the answer does not depend on it (every field, every dtype)."""
    torch_threads(1)  # one chunk at a time
    one = PatchPoseEstimator.load(chunk_size=10**9)
    chunked = PatchPoseEstimator.load(chunk_size=500)
    assert chunked.chunk_size == 512 and chunked.with_plan(passes=1).chunk_size == 512  # whole batches
    image = skimage.data.astronaut()
    xy = np.random.default_rng(1).uniform(0, 511, (3000, 2))
    for kwargs in ({}, {"top_k": 3, "detector_scale": np.linspace(-1, 1, 3000)}):
        a, b = one.estimate(image, xy, **kwargs), chunked.estimate(image, xy, **kwargs)
        for name in patchpose.Poses.__dataclass_fields__:
            assert getattr(a, name).dtype == getattr(b, name).dtype, name
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.orientation_hist.dtype == a.scale_hist.dtype == np.float32


def test_chunks_read_side_by_side_give_the_serial_read(monkeypatch, torch_threads):
    """On two torch threads the keypoints are read as two chunks in two threads at once (the same two from
    call to call), and the answer is the one read on one torch thread, one chunk at a time, bit for bit and in
    the keypoints' order; threads started afterwards still begin with the caller's torch threads."""
    import threading

    import torch

    torch_threads(2)
    est = PatchPoseEstimator.load(batch_size=128)
    seen: list[tuple[str, int]] = []
    workers: list[set] = [set()]
    both = threading.Barrier(2, timeout=60)  # each chunk waits for the other: two threads at once
    inputs = est._inputs

    def spy(pyramid, kp, fs):
        seen.append((threading.current_thread().name, len(kp)))
        workers[-1].add(threading.current_thread())
        if threading.current_thread() is not threading.main_thread():
            both.wait()
        return inputs(pyramid, kp, fs)

    monkeypatch.setattr(est, "_inputs", spy)
    image = skimage.data.astronaut()
    xy = np.random.default_rng(2).uniform(0, 511, (1300, 2))
    side_by_side = est.estimate(image, xy, top_k=2)
    # 1,300 keypoints on two threads: chunks of 768 (650 rounded up to whole batches of 128) and 532
    assert sorted(n for _, n in seen) == [532, 768]
    assert len({name for name, _ in seen}) == 2 and all(n.startswith("patchpose-read") for n, _ in seen)
    assert torch.get_num_threads() == 2
    later: list[int] = []
    t = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
    t.start()
    t.join()
    assert later == [2]  # not the readers' one
    workers.append(set())
    # 600 keypoints: two chunks of 384 and 216, on the same two threads
    again = est.estimate(image, xy[:600])
    assert workers[-2] == workers[-1] and len(workers[-1]) == 2
    np.testing.assert_array_equal(again.orientation, side_by_side.orientation[:600, 0])
    seen.clear()
    torch_threads(1)  # one torch thread: one chunk at a time, on this thread
    alone = est.estimate(image, xy, top_k=2)
    assert seen == [(threading.current_thread().name, 1300)]
    for name in patchpose.Poses.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(side_by_side, name), getattr(alone, name), err_msg=name)


def test_copies_and_pickles_leave_the_reading_threads_behind(torch_threads):
    """copy, deepcopy and pickle take everything but the reading threads, and the copies read the same."""
    import copy
    import pickle

    torch_threads(2)
    est = PatchPoseEstimator.load(batch_size=128)
    image = skimage.data.astronaut()
    xy = np.random.default_rng(4).uniform(0, 511, (600, 2))
    want = est.estimate(image, xy).orientation
    assert "_pool" in est.__dict__
    for other in (copy.copy(est), copy.deepcopy(est), pickle.loads(pickle.dumps(est))):
        assert "_pool" not in other.__dict__
        np.testing.assert_array_equal(other.estimate(image, xy).orientation, want)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_process_reads_with_threads_of_its_own(torch_threads):
    """A process forked after a read has none of its parent's reading threads: it makes its own instead of
    waiting for them forever."""
    torch_threads(2)
    est = PatchPoseEstimator.load(batch_size=128)
    image = skimage.data.astronaut()
    xy = np.random.default_rng(3).uniform(0, 511, (600, 2))
    want = est.estimate(image, xy).orientation
    pid = os.fork()
    if pid == 0:  # the child: exit 0 if its read equals the parent's, 1 if not; killed if it hangs
        code = 1
        try:
            signal.alarm(60)
            code = 0 if np.array_equal(est.estimate(image, xy).orientation, want) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


@pytest.mark.parametrize("bad", [0, -1, 2.5, "a"])
def test_bad_chunk_size_is_a_clear_error(bad):
    with pytest.raises(InputError, match="chunk_size"):
        PatchPoseEstimator.load(chunk_size=bad)


@pytest.mark.parametrize("top_k", [0, 26, 40, 2.5, True])
def test_top_k_beyond_the_bins_is_a_clear_error(est, photo, kps, top_k):
    with pytest.raises(InputError, match="top_k"):
        est.estimate(photo, kps[:3], top_k=top_k)


def test_border_policy(est, photo):
    """Keypoints near the border: reflect (default) flags them invalid; 'error' refuses them."""
    xy = np.array([[3.0, 3.0], [256.0, 256.0]])
    out = est.estimate(photo, xy)
    assert out.valid.tolist() == [False, True]
    strict = patchpose.PatchPoseEstimator(est.model, est.meta, border="error")
    with pytest.raises(InputError, match="border"):
        strict.estimate(photo, xy)


def test_a_flat_patch_gives_a_pose_marked_invalid(equivariant, photo, kps):
    """A uniform image (gray, colour, float) and a flat square inside noise (trained models): the orientation
    histogram is uniform (no orientation to read), so the pose is marked invalid though its window lies inside the
    image; a keypoint in the noise beside it, and every keypoint of a real photo, stays valid."""
    from patchpose.reading import informative

    centre = [[150.0, 150.0]]
    for image in (
        np.full((300, 300), 77, np.uint8),
        np.full((300, 300, 3), (10, 200, 30), np.uint8),
        np.full((300, 300), 0.3, np.float32),
    ):
        out = equivariant.estimate(image, centre)
        assert not out.valid[0] and not informative(out.orientation_hist)[0]
    # a flat square inside noise (an untrained network's scale may take its window past the square)
    if equivariant.meta["name"] in TRAINED:
        noise = np.random.default_rng(1).integers(0, 256, (600, 600)).astype(np.uint8)
        noise[100:500, 100:500] = 90
        assert equivariant.estimate(noise, [[300.0, 300.0], [110.0, 300.0]]).valid.tolist() == [False, True]
    assert equivariant.estimate(photo, kps).valid.all()
    assert informative(np.array([[0.5, 0.5], [0.5, 0.5 + 1e-6], [0.4, 0.6], [0.0, 0.0]])).tolist() == [
        False,
        False,
        True,
        False,
    ]


def test_passes_read_again_in_the_frame_of_the_scale_found(photo, kps):
    """Read 2 is read 1's estimate at detector_scale = its scale rounded to whole bins: same poses, and the
    scale histogram moved back by those bins (both heads in the frame found: no orientation offset)."""
    from patchpose.reading import shift_bins

    est = PatchPoseEstimator.from_pretrained("patchpose-v9").with_plan(orientation_offset=0)
    one_read = est.with_plan(passes=1)
    one = one_read.estimate(photo, kps)
    k = np.round(one.scale * 3).astype(int)
    framed = one_read.estimate(photo, kps, detector_scale=k / 3)
    two = est.estimate(photo, kps)
    np.testing.assert_allclose(two.scale, framed.scale, atol=1e-5)
    np.testing.assert_allclose(two.orientation, framed.orientation, atol=1e-5)
    np.testing.assert_allclose(two.scale_hist, shift_bins(framed.scale_hist, k), atol=1e-6)
    assert np.any(k != 0) and not np.allclose(two.scale, one.scale)  # the frame did move
    # in the caller's frame: with a detector_scale, read 2 starts from it
    g = one_read.estimate(photo, kps[:20], detector_scale=1.0)
    k1 = np.round((g.scale - 1.0) * 3).astype(int)
    np.testing.assert_allclose(
        est.estimate(photo, kps[:20], detector_scale=1.0).scale,
        one_read.estimate(photo, kps[:20], detector_scale=1.0 + k1 / 3).scale,
        atol=1e-5,
    )


def test_orientation_offset_moves_only_the_last_orientation_read(photo, kps):
    """With ``orientation_offset`` o and 2 reads, the scale is the plain 2-read scale and the orientation is a
    1-read orientation at the frame found moved by o."""
    plain = PatchPoseEstimator.from_pretrained("patchpose-v9").with_plan(orientation_offset=0)
    est = plain.with_plan(orientation_offset=-1)
    assert est.plan.passes == 2 and "orientation_offset=-1" in repr(est)
    one_read = plain.with_plan(passes=1)
    k = np.round(one_read.estimate(photo, kps).scale * 3) / 3
    ref = plain.estimate(photo, kps, top_k=2)
    moved = est.estimate(photo, kps, top_k=2)
    at = one_read.estimate(photo, kps, top_k=2, detector_scale=k - 1.0)
    np.testing.assert_allclose(moved.scale, ref.scale, atol=1e-6)
    np.testing.assert_allclose(moved.scale_hist, ref.scale_hist, atol=1e-7)
    np.testing.assert_allclose(moved.orientation, at.orientation, atol=1e-6)
    np.testing.assert_allclose(moved.orientation_hist, at.orientation_hist, atol=1e-7)
    assert np.mean(np.abs(angle_diff(moved.orientation[:, 0], ref.orientation[:, 0])) > 0.1) > 0.05
    # a single read has no scale found yet: the offset does not apply
    np.testing.assert_allclose(
        est.with_plan(passes=1).estimate(photo, kps).orientation, one_read.estimate(photo, kps).orientation
    )


def test_without_rereading_the_scale_is_read_ones_and_the_orientation_is_read_in_the_frame_it_found(
    photo, kps
):
    """``reread_scale=False``: the scale (and its histogram) is the first read's, the orientation is the two-read
    plan's (read in the frame the first read found, moved by the offset), and the image is sampled twice
    instead of three times; a single read ignores the setting."""
    import patchpose.estimator as estimator_module

    est = PatchPoseEstimator.from_pretrained("patchpose-v9")  # two reads, orientation 4/3 octave lower
    once = est.with_plan(passes=1)
    lean = est.with_plan(reread_scale=False)
    ref, first, got = est.estimate(photo, kps), once.estimate(photo, kps), lean.estimate(photo, kps)
    for field in ("scale", "scale_hist", "scale_confidence"):
        np.testing.assert_array_equal(getattr(got, field), getattr(first, field), err_msg=field)
    for field in ("orientation", "orientation_hist", "confidence"):
        np.testing.assert_array_equal(getattr(got, field), getattr(ref, field), err_msg=field)
    assert not np.allclose(ref.scale, first.scale)  # the second read's scale differs: it was not read
    frames = []
    inputs = estimator_module.PatchPoseEstimator._inputs

    def counting(self, *args, **kwargs):
        sample = inputs(self, *args, **kwargs)
        return lambda f: frames.append(np.asarray(f).copy()) or sample(f)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(estimator_module.PatchPoseEstimator, "_inputs", counting)
        lean.estimate(photo, kps)
        assert len(frames) == 2
        est.estimate(photo, kps)
        assert len(frames) == 5
    np.testing.assert_array_equal(frames[1], frames[4])  # the orientation's frame: the one found, moved
    assert np.any(frames[1] != -4 / 3)
    single = once.with_plan(reread_scale=False).estimate(photo, kps)
    for field in ("scale", "orientation"):
        np.testing.assert_array_equal(getattr(single, field), getattr(first, field), err_msg=field)


def test_read_plan_round_trips_through_weights_metadata():
    plan = patchpose.ReadPlan(passes=3, orientation_offset=-4 / 3, descriptor_region=2.25)
    assert patchpose.ReadPlan.from_meta(plan.to_meta()) == plan
    lean = plan.replace(reread_scale=False)
    assert lean.to_meta()["reread_scale"] == "false" and patchpose.ReadPlan.from_meta(lean.to_meta()) == lean
    for bad in ("no", "", "2"):
        with pytest.raises(patchpose.WeightsError, match="reread_scale"):
            patchpose.ReadPlan.from_meta({"reread_scale": bad})
    assert patchpose.ReadPlan.from_meta({}) == patchpose.ReadPlan()
    assert patchpose.ReadPlan.from_meta({"passes": "2"}) == patchpose.ReadPlan(passes=2)
    with pytest.raises(patchpose.WeightsError, match="passes"):
        patchpose.ReadPlan.from_meta({"passes": "zero"})


def test_read_plan_overrides_parse_key_value_strings():
    base = PatchPoseEstimator.from_pretrained().plan
    got = base.override(["passes=1", "orientation-offset=0.5", "passes=3", "reread_scale=False"])
    assert got == patchpose.ReadPlan(
        passes=3, orientation_offset=0.5, descriptor_region=base.descriptor_region, reread_scale=False
    )
    assert base.override(["reread-scale=0", "reread_scale=true"]).reread_scale is True
    assert patchpose.ReadPlan.parse([]) == {}
    # a fraction as the docs' table writes the bundled offset (−4/3, its minus sign too) is that exact value
    for offset in ("-4/3", "\u22124/3", " -4 / 3 "):
        assert base.override(["passes=1", f"orientation_offset={offset}"]).orientation_offset == -4 / 3
    assert base.override(["descriptor_region=9/4"]).descriptor_region == 2.25


@pytest.mark.parametrize(
    "items, match",
    [
        (["passes"], "KEY=VALUE"),
        (["=2"], "KEY=VALUE"),
        (["turns=3"], "unknown read plan setting"),
        (["passes=two"], "'passes' must be an integer"),
        (["passes=0"], "passes"),
        (["passes=9"], "passes"),
        (["passes=1.5"], "'passes' must be an integer"),
        (["passes=1.0"], r"'passes' must be an integer \(e.g. 2\), got '1.0'"),  # it said "a number"
        (["orientation_offset=-4/"], "a decimal or a fraction such as -4/3"),
        # a fraction over zero said "must be a number" (or "an integer")
        (["orientation_offset=1/0"], r"^read plan setting 'orientation_offset' got '1/0': division by zero"),
        (["descriptor_region=2/0.0"], r"setting 'descriptor_region' got '2/0.0': division by zero"),
        (["passes=1/0"], r"^read plan setting 'passes' got '1/0': division by zero"),
        (["orientation_offset=abc/0"], r"must be a number \(a decimal or a fraction"),  # no division by zero
        (["orientation_offset=nan"], "orientation_offset"),
        (["orientation_offset=5"], "orientation_offset"),
        (["descriptor_region=0"], "descriptor_region"),
        (["descriptor_region=inf"], "descriptor_region"),
        (["reread_scale=no"], "reread_scale. must be true or false"),
        (["reread_scale="], "reread_scale. must be true or false"),
        ("passes=1", r"a list of KEY=VALUE strings, e.g. \['passes=1'\]"),  # was read letter by letter
    ],
)
def test_bad_read_plans_are_clear_errors(items, match):
    with pytest.raises(InputError, match=match) as e:
        patchpose.ReadPlan.parse(items)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match=match):
        patchpose.ReadPlan().override(items)


@pytest.mark.parametrize("bad", [0, 9, 1.5, "2", True, None])
def test_passes_must_be_a_small_positive_integer(bad):
    with pytest.raises(InputError, match="passes"):
        patchpose.ReadPlan(passes=bad)
    with pytest.raises(InputError, match="passes"):
        PatchPoseEstimator.from_pretrained().with_plan(passes=bad)


@pytest.mark.parametrize("bad", [0, 1, "false", None])
def test_reread_scale_must_be_true_or_false(bad):
    with pytest.raises(InputError, match="reread_scale"):
        patchpose.ReadPlan(reread_scale=bad)


def test_with_plan_shares_the_network_and_keeps_the_settings():
    est = PatchPoseEstimator.load(batch_size=9, border="constant")
    one = est.with_plan(passes=1)
    assert one.model is est.model and one.plan.passes == 1 and est.plan.passes == 2
    assert (one.batch_size, one.border, one.name) == (9, "constant", "patchpose-fast-v1")
    with pytest.raises(InputError, match="unknown read plan setting"):
        est.with_plan(turns=3)


def test_estimate_has_the_short_public_signature():
    import inspect

    sig = inspect.signature(PatchPoseEstimator.estimate)
    assert list(sig.parameters) == ["self", "image", "keypoints", "top_k", "detector_scale"]
    assert all(sig.parameters[n].kind is inspect.Parameter.KEYWORD_ONLY for n in ("top_k", "detector_scale"))
    assert sig.return_annotation in ("Poses", patchpose.Poses)
    sig = inspect.signature(PatchPoseEstimator.from_pretrained)
    assert list(sig.parameters) == ["name", "device"]


@pytest.mark.parametrize("bad", [np.nan, np.inf, 13.0, [0.0, 1.0, 2.0], "big", 1j])
def test_bad_detector_scale_is_a_clear_error(photo, kps, bad):
    with pytest.raises(InputError, match="detector_scale"):
        PatchPoseEstimator.from_pretrained().estimate(photo, kps[:2], detector_scale=bad)


def test_shift_bins_moves_rows_and_drops_what_leaves():
    from patchpose.reading import shift_bins

    h = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    np.testing.assert_array_equal(
        shift_bins(h, np.array([1, -2, 0])),
        [[0, 1, 2, 3], [7, 8, 0, 0], [9, 10, 11, 12]],
    )


def test_is_int_in_is_the_one_integer_check():
    from patchpose.errors import is_int_in

    assert is_int_in(3, 1) and is_int_in(np.int64(3), 1, 3) and not is_int_in(4, 1, 3)
    assert not is_int_in(True, 0) and not is_int_in("3", 1) and not is_int_in(None, 1)
    assert not is_int_in(3.0, 1) and is_int_in(3.0, 1, integral_floats=True)
    assert not is_int_in(2.5, 1, integral_floats=True) and not is_int_in(
        float("nan"), 1, integral_floats=True
    )


def test_strong_candidates_keep_the_peaks_sift_would_keep():
    """SIFT's rule on our histogram: the candidates that are peaks at least 80 % as high as the highest; a
    bin that only fills the list is never one; the first is always kept."""
    from patchpose.reading import Poses, strong_candidates

    b = 36
    h = np.full((3, b), 0.01)
    h[0, [3, 10, 20]] = [0.30, 0.25, 0.10]  # 0.25/0.30 = 0.83 kept, 0.10 not
    h[1, [5, 6]] = [0.50, 0.45]  # one broad mode: its shoulder (6) is no peak
    h[2, [0, 18]] = [0.2, 0.2]  # two equal peaks
    top = np.array([[3, 10, 20, 0], [5, 6, 7, 8], [0, 18, 1, 2]], float)
    ori = top * 2 * np.pi / b
    z = np.zeros((3, 4), np.float32)
    p = Poses(ori, z, z, z, z, h / h.sum(1, keepdims=True), np.zeros((3, 13)), np.ones(3, bool))
    keep = strong_candidates(p)
    np.testing.assert_array_equal(
        keep, [[True, True, False, False], [True, False, False, False], [True, True, False, False]]
    )
    np.testing.assert_array_equal(strong_candidates(p, 0.3)[0], [True, True, True, False])
    for bad in (0.0, 1.5, "a", float("nan")):
        with pytest.raises(InputError, match="ratio"):
            strong_candidates(p, bad)
    with pytest.raises(InputError, match="top_k"):
        strong_candidates(Poses(ori[:, 0], *([z[:, 0]] * 4), h, np.zeros((3, 13)), np.ones(3, bool)))


def test_a_gray_model_reads_a_compact_pyramid_with_a_float_pyramids_poses(photo, kps, monkeypatch):
    """The estimator of a gray model reads the photo as uint16 gray codes (half the memory): its poses are those
    the float32 pyramid of the same gray image gives, but for rounding: 99 % of the orientations within 0.01°
    and of the scales within 0.001 octave (a keypoint whose two strongest bins all but tie may flip)."""
    from patchpose.data.patches import Pyramid, check_gray

    est = patchpose.PatchPoseEstimator.from_pretrained()
    read = []
    pyramid = PatchPoseEstimator._pyramid
    monkeypatch.setattr(
        PatchPoseEstimator, "_pyramid", lambda self, img: read.append(pyramid(self, img)) or read[-1]
    )
    compact = est.estimate(photo, kps)
    assert read[-1].levels[0].dtype == np.uint16
    monkeypatch.setattr(PatchPoseEstimator, "_pyramid", lambda self, img: Pyramid(check_gray(photo)))
    ref = est.estimate(photo, kps)
    d_ori = np.degrees(np.abs(angle_diff(compact.orientation, ref.orientation)))
    d_scale = np.abs(compact.scale - ref.scale)
    assert np.quantile(d_ori, 0.99) < 0.01 and np.quantile(d_scale, 0.99) < 1e-3
    assert d_ori.max() > 0 or d_scale.max() > 0  # the two pyramids do differ
