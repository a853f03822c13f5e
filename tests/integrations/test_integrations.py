"""OpenCV, kornia, LightGlue, hloc and COLMAP adapters: units, signs and pixel centres, round trips."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import torch

import patchpose
from conftest import make_textured_image
from patchpose.conventions import similarity_about
from patchpose.errors import InputError
from patchpose.geometry import apply_homography
from patchpose.integrations import (
    read_colmap_keypoints,
    read_hloc_features,
    to_lightglue,
    write_colmap_keypoints,
    write_hloc_features,
)

XY = np.array([[10.0, 20.0], [0.0, 0.0], [99.5, 3.25]])
SCALE = np.array([0.0, 1.0, -2.5])
ORI = np.array([0.0, math.pi / 2, 5.0])


def test_lightglue_dict_uses_its_sift_extractor_units():
    desc = np.random.default_rng(0).random((3, 128)).astype(np.float32)
    d = to_lightglue(XY, SCALE, ORI, desc, scores=[1, 2, 3], image_size=(640, 480))
    assert d["keypoints"].shape == (1, 3, 2) and d["keypoints"].dtype == torch.float32
    assert d["descriptors"].shape == (1, 3, 128) and d["image_size"].tolist() == [[640.0, 480.0]]
    # scales: OpenCV size = diameter 32·2**σ; oris: radians of OpenCV's clockwise angle
    np.testing.assert_allclose(d["scales"][0].numpy(), 32.0 * 2.0**SCALE, rtol=1e-6)
    np.testing.assert_allclose(d["oris"][0, 1].item(), math.radians(270.0), rtol=1e-6)
    from patchpose.interop import to_cv2_keypoints

    kps = to_cv2_keypoints(XY, SCALE, ORI)
    np.testing.assert_allclose(d["oris"][0].numpy(), np.radians([k.angle for k in kps]), atol=1e-5)


def test_hloc_file_round_trips_and_stores_its_units(tmp_path):
    import h5py

    desc = np.random.default_rng(1).random((3, 8)).astype(np.float32)
    path = tmp_path / "feats.h5"
    write_hloc_features(path, "a/img.jpg", XY, SCALE, ORI, desc, scores=[0.1, 0.2, 0.3], image_size=(100, 50))
    write_hloc_features(path, "b.jpg", XY[:1], SCALE[:1], ORI[:1], desc[:1], image_size=(100, 50))
    # hloc's matchers read each image's size: a file without it broke them (KeyError 'image_size')
    with pytest.raises(InputError, match="image_size .* is needed"):
        write_hloc_features(path, "c.jpg", XY, SCALE, ORI, desc)
    with pytest.raises(InputError, match=r"outside image_size 20×100 .* is it \(height, width\)"):
        write_hloc_features(path, "c.jpg", XY, SCALE, ORI, desc, image_size=(20, 100))
    with pytest.raises(InputError, match="outside image_size"):
        to_lightglue(XY, SCALE, ORI, image_size=(20, 100))
    with h5py.File(path) as f:
        g = f["a/img.jpg"]
        assert g["keypoints"].shape == (3, 2) and g["descriptors"].shape == (8, 3)
        np.testing.assert_allclose(g["keypoints"][()], XY)  # hloc stores integer pixel centres, like us
        np.testing.assert_allclose(g["scales"][()], 16.0 * 2.0**SCALE, rtol=1e-6)
        np.testing.assert_allclose(g["oris"][1], 270.0)  # degrees, clockwise as displayed
    back = read_hloc_features(path, "a/img.jpg")
    np.testing.assert_allclose(back["xy"], XY, atol=1e-5)
    np.testing.assert_allclose(back["scale"], SCALE, atol=1e-6)
    np.testing.assert_allclose(np.exp(1j * back["ori"]), np.exp(1j * ORI), atol=1e-6)
    np.testing.assert_allclose(back["descriptors"], desc)
    with pytest.raises(InputError, match="no image"):
        read_hloc_features(path, "c.jpg")


def test_colmap_text_round_trips_with_half_pixel_centres(tmp_path):
    desc = np.arange(3 * 128).reshape(3, 128) % 256
    path = tmp_path / "img.jpg.txt"
    write_colmap_keypoints(path, XY, SCALE, ORI, desc)
    lines = path.read_text().splitlines()
    assert lines[0] == "3 128"
    x, y, s, a = (float(v) for v in lines[2].split()[:4])
    assert (x, y) == (0.5, 0.5)  # COLMAP: the top-left pixel's centre is (0.5, 0.5)
    assert s == pytest.approx(32.0) and a == pytest.approx(-math.pi / 2, abs=1e-6)  # clockwise radians
    back = read_colmap_keypoints(path)
    np.testing.assert_allclose(back["xy"], XY, atol=1e-4)
    np.testing.assert_allclose(back["scale"], SCALE, atol=1e-4)
    np.testing.assert_allclose(np.exp(1j * back["ori"]), np.exp(1j * ORI), atol=1e-5)
    np.testing.assert_array_equal(back["descriptors"], desc)
    (tmp_path / "bad.txt").write_text("x y\n")
    with pytest.raises(InputError):
        read_colmap_keypoints(tmp_path / "bad.txt")
    with pytest.raises(InputError, match="not found"):
        read_colmap_keypoints(tmp_path / "missing.txt")


def test_colmap_text_refuses_descriptors_colmap_would_refuse_or_misread(tmp_path):
    """COLMAP reads exactly 128 integers in [0, 255] per keypoint: float descriptors (all 0 once cast),
    negative or too large values and other widths are refused, with the conversion COLMAP itself uses."""
    path = tmp_path / "img.jpg.txt"
    unit = np.random.default_rng(0).random((3, 128)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    for bad, what in [(unit, "512"), (-np.ones((3, 128)), "512"), (np.full((3, 128), 256), "512")]:
        with pytest.raises(InputError, match=what):
            write_colmap_keypoints(path, XY, SCALE, ORI, bad)
    with pytest.raises(InputError, match="128"):
        write_colmap_keypoints(path, XY, SCALE, ORI, np.zeros((3, 64), np.uint8))
    assert not path.exists()  # nothing half-written
    # OpenCV SIFT's float32 descriptors are whole numbers in [0, 255]: taken as they are
    write_colmap_keypoints(path, XY, SCALE, ORI, np.clip(np.round(512 * unit), 0, 255))
    assert read_colmap_keypoints(path)["descriptors"].max() > 0
    # without descriptors COLMAP still needs 128 columns: zeros
    write_colmap_keypoints(path, XY, SCALE, ORI)
    lines = path.read_text().splitlines()
    assert lines[0] == "3 128" and lines[1].split()[4:] == ["0"] * 128


def test_hloc_file_of_a_detector_without_scales_or_oris_reads(tmp_path):
    """hloc writes scales/oris only for its DoG extractor; a SuperPoint-style group reads with them None."""
    import h5py

    path = tmp_path / "feats.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("sp.jpg")
        g["keypoints"] = XY.astype(np.float32)
        g["descriptors"] = np.ones((256, 3), np.float32)
        g["scores"] = np.ones(3, np.float32)
        g["image_size"] = np.array([100, 50])
        f.create_group("empty.jpg")
    back = read_hloc_features(path, "sp.jpg")
    assert back["scale"] is None and back["ori"] is None and back["descriptors"].shape == (3, 256)
    np.testing.assert_allclose(back["xy"], XY)
    with pytest.raises(InputError, match="keypoints"):
        read_hloc_features(path, "empty.jpg")


def test_exported_angles_stay_below_360_degrees_in_float32(tmp_path):
    """θ just above 0 maps to an OpenCV angle just below 360, which float32 (cv2.KeyPoint, hloc files,
    LightGlue tensors) would round to 360, outside [0, 360): it must come out as 0 instead."""
    import h5py

    theta = np.array([1e-9, 1e-7, 0.5])
    from patchpose.interop import to_cv2_keypoints

    kps = to_cv2_keypoints(np.zeros((3, 2)) + 5.0, np.zeros(3), theta)
    assert all(0.0 <= k.angle < 360.0 for k in kps) and kps[0].angle == 0.0
    write_hloc_features(
        tmp_path / "f.h5", "a", np.zeros((3, 2)), np.zeros(3), theta, np.ones((3, 4)), image_size=(8, 8)
    )
    with h5py.File(tmp_path / "f.h5") as f:
        assert (f["a/oris"][()] < 360.0).all()
    oris = to_lightglue(np.zeros((3, 2)), np.zeros(3), theta)["oris"]
    assert (oris < np.float32(2 * np.pi)).all()


@pytest.fixture(scope="module")
def rotated_pair():
    img = (make_textured_image(360, seed=3) * 255).astype(np.uint8)
    H = similarity_about((179.5, 179.5), 0.0, math.radians(60))
    return img, cv2.warpAffine(img, H[:2], (360, 360), flags=cv2.INTER_LINEAR), H


def test_assign_gives_opencv_keypoints_that_turn_with_the_image(rotated_pair):
    img, img2, H = rotated_pair
    xy = np.random.default_rng(0).uniform(140, 220, (40, 2))
    kps = [cv2.KeyPoint(float(x), float(y), 5.0, -1, 0.5, 2, 7) for x, y in xy]
    out = patchpose.assign(img, kps)
    est = patchpose.PatchPoseEstimator.from_pretrained()
    ref = est.estimate(img, xy)
    assert [k.pt for k in out] == [k.pt for k in kps] and out[0].class_id == 7 and out[0].octave == 2
    np.testing.assert_allclose([k.size for k in out], ref.descriptor_radius / 5.3, rtol=1e-5)
    np.testing.assert_allclose([k.angle for k in out], np.mod(-np.degrees(ref.orientation), 360.0), atol=1e-3)
    kps2 = [cv2.KeyPoint(float(x), float(y), 5.0) for x, y in apply_homography(H, xy)]
    out2 = patchpose.assign(img2, kps2)
    # OpenCV angles are clockwise: content turned 60° counter-clockwise lowers them by 60°
    d = (np.array([k.angle for k in out2]) - [k.angle for k in out] + 60.0 + 180.0) % 360.0 - 180.0
    assert np.median(np.abs(d)) < 3.0
    assert len(patchpose.assign(img, kps[:5], top_k=3)) == 15
    with pytest.raises(InputError, match="cv2.KeyPoint"):
        patchpose.assign(img, xy)


def test_kornia_pose_assigner_through_a_kornia_detector():
    """Our module as ``ori_module`` of kornia's ScaleSpaceDetector: the LAFs of the rotated image turn by
    the rotation, within a median of 5° where keypoints are detected again within 1 px.

    The turn, 63°, is off the 10° bin grid on purpose: at 60° a decoder that snaps angles to bin centres
    looks exact (the plain parabola through the probabilities: median 1.7°), while off the grid it shows
    its bias (6.4° at 63°); the Gaussian fit measures 3.4° here, and 3.0°–3.8° at 60°–65°."""
    import kornia.feature as KF

    from patchpose.integrations.kornia import LAFPoseAssigner

    img = (make_textured_image(360, seed=3) * 255).astype(np.uint8)
    H = similarity_about((179.5, 179.5), 0.0, math.radians(63))
    img2 = cv2.warpAffine(img, H[:2], (360, 360), flags=cv2.INTER_LINEAR)
    det = KF.ScaleSpaceDetector(200, ori_module=LAFPoseAssigner(scale=False), mr_size=6.0)
    t = [torch.from_numpy(im.astype(np.float32) / 255.0)[None, None] for im in (img, img2)]
    with torch.no_grad():
        (l1, _), (l2, _) = det(t[0]), det(t[1])
    c1 = KF.get_laf_center(l1)[0].numpy()
    c2 = KF.get_laf_center(l2)[0].numpy()
    d = np.linalg.norm(apply_homography(H, c1)[:, None] - c2[None], axis=2)
    i = np.nonzero(d.min(1) < 1.0)[0]
    j = d[i].argmin(1)
    assert len(i) >= 20
    o1 = KF.get_laf_orientation(l1)[0, i, 0].numpy()
    o2 = KF.get_laf_orientation(l2)[0, j, 0].numpy()
    err = (o2 - o1 - 63.0 + 180.0) % 360.0 - 180.0  # kornia degrees, counter-clockwise like ours
    assert np.median(np.abs(err)) < 5.0


def test_kornia_angle_detector_in_laf_orienter_turns_exactly_with_quarter_turns():
    import kornia.feature as KF

    img = make_textured_image(200, seed=5)
    xy = np.array([[100.0, 100.0], [80.0, 120.0], [130.0, 70.0]])
    lafs = KF.laf_from_center_scale_ori(
        torch.from_numpy(xy[None]).float(), torch.full((1, 3, 1, 1), 12.0), torch.zeros(1, 3, 1)
    )
    orienter = KF.LAFOrienter(32, angle_detector=patchpose.kornia_angle_detector())
    a = orienter(lafs, torch.from_numpy(img)[None, None])
    # the image turned a quarter counter-clockwise: pixel (x, y) moves to (y, W − 1 − x)
    xy_r = np.stack([xy[:, 1], 199.0 - xy[:, 0]], 1)
    lafs_r = KF.laf_from_center_scale_ori(
        torch.from_numpy(xy_r[None]).float(), torch.full((1, 3, 1, 1), 12.0), torch.zeros(1, 3, 1)
    )
    b = orienter(lafs_r, torch.from_numpy(np.ascontiguousarray(np.rot90(img)))[None, None])
    da = (
        KF.get_laf_orientation(b)[0, :, 0].detach().numpy()
        - KF.get_laf_orientation(a)[0, :, 0].detach().numpy()
    )
    np.testing.assert_allclose((da - 90.0 + 180.0) % 360.0 - 180.0, 0.0, atol=0.5)
    with pytest.raises(ValueError, match="patches"):
        patchpose.kornia_angle_detector()(torch.zeros(2, 3, 32, 32))


def test_detector_scale_reads_the_keypoint_in_the_detectors_frame(rotated_pair):
    from patchpose.data.inputs import extract_inputs
    from patchpose.data.patches import Pyramid
    from patchpose.inference import predict_histograms

    img, _, _ = rotated_pair
    est = patchpose.PatchPoseEstimator.from_pretrained()
    xy = np.random.default_rng(1).uniform(120, 240, (20, 2))
    fs = np.linspace(-1.5, 1.5, 20)
    one = est.with_plan(passes=1)
    out = one.estimate(img, xy, detector_scale=fs)
    x = extract_inputs(
        Pyramid.compact(img), xy, fs, 0.0, 32, [1.0], est.cfg.polar_grid
    )  # as the estimator reads
    h = predict_histograms(est.model, x, 256)
    np.testing.assert_allclose(out.orientation_hist, h["orientation_hist"], atol=1e-6)
    plain = one.estimate(img, xy)
    assert not np.allclose(out.orientation_hist, plain.orientation_hist)
    # the returned scale is absolute: the frame plus the model's correction
    base = est.estimate(img, xy, detector_scale=0.0)
    np.testing.assert_allclose(base.scale, est.estimate(img, xy).scale)
    for bad in ([1.0, 2.0], np.nan, 40.0):
        with pytest.raises(InputError, match="detector_scale"):
            est.estimate(img, xy, detector_scale=bad)
    kps = [cv2.KeyPoint(float(a), float(b), 3.0) for a, b in xy]
    kept = patchpose.assign(img, kps, est, keep_size=True)
    assert [k.size for k in kept] == [3.0] * 20


def test_resolve_orientations_keeps_the_detectors_angle_nearest_ours():
    """Keypoints sharing a position and size are one location: the one whose angle is nearest ours (read in
    its frame) is kept, as the very input object; single keypoints pass through without the model."""

    img = (make_textured_image(200, seed=5) * 255).astype(np.uint8)
    est = patchpose.PatchPoseEstimator.from_pretrained()
    pts = [(70.0, 80.0), (120.0, 100.0), (100.0, 130.0)]
    ours = [k.angle for k in patchpose.assign(img, [cv2.KeyPoint(*p, 8.0) for p in pts], est, keep_size=True)]
    near = [
        cv2.KeyPoint(*pts[0], 8.0, (ours[0] + 3.0) % 360, 0.5, 3),
        cv2.KeyPoint(*pts[1], 8.0, (ours[1] - 4.0) % 360),
    ]
    far = [
        cv2.KeyPoint(*pts[0], 8.0, (ours[0] + 150.0) % 360, 0.5, 3),
        cv2.KeyPoint(*pts[1], 8.0, (ours[1] + 90.0) % 360),
    ]
    single = cv2.KeyPoint(*pts[2], 8.0, 33.0)
    other_size = cv2.KeyPoint(*pts[0], 16.0, 200.0)  # same position, another scale: its own location
    kps = [far[0], single, near[0], other_size, near[1], far[1]]
    out = patchpose.resolve_orientations(img, kps, est)
    assert [id(k) for k in out] == [id(near[0]), id(single), id(other_size), id(near[1])]

    class NoModel:  # no location is ambiguous: the model is never read
        def __getattr__(self, name):
            raise AssertionError("the model was used")

    plain = [single, other_size]
    assert patchpose.resolve_orientations(img, plain, NoModel()) == plain
    assert patchpose.resolve_orientations(img, [], est) == []
    with pytest.raises(InputError, match="cv2.KeyPoint"):
        patchpose.resolve_orientations(img, [(1.0, 2.0)], est)


def test_assign_reads_opencv_sift_keypoints_at_their_pixel_centre_position():
    """OpenCV SIFT's keypoints (recognised by their packed octave) are read a quarter pixel up-left of ``pt``
    (conventions: OPENCV_SIFT_XY_BIAS), other keypoints at ``pt``; ``xy_bias`` overrides; the returned
    keypoints keep their ``pt`` either way. ``detect_sift``'s xy are the same pixel-centre positions."""
    from patchpose.data.keypoints import detect_sift
    from patchpose.integrations.opencv import is_opencv_sift
    from patchpose.interop import keypoint_xy

    img = (make_textured_image(200, seed=2) * 255).astype(np.uint8)
    sift = cv2.SIFT_create(nfeatures=40).detect(img, None)
    orb = cv2.ORB_create(nfeatures=40).detect(img, None)
    plain = [cv2.KeyPoint(*k.pt, k.size) for k in sift]
    assert is_opencv_sift(sift) and not is_opencv_sift(orb) and not is_opencv_sift(plain)
    assert not is_opencv_sift([]) and not is_opencv_sift([*sift, plain[0]])
    pts = np.array([k.pt for k in sift])
    np.testing.assert_allclose(keypoint_xy(sift), pts - 0.25)
    np.testing.assert_allclose(keypoint_xy(sift, 0), pts)
    np.testing.assert_allclose(keypoint_xy(plain), pts)
    est = patchpose.PatchPoseEstimator.from_pretrained()
    xy = np.array([k.pt for k in sift], np.float64)
    want = np.mod(-np.degrees(est.estimate(img, xy - 0.25).orientation), 360.0)
    out = patchpose.assign(img, sift, est)
    np.testing.assert_allclose([k.angle for k in out], want, atol=1e-3)
    assert [k.pt for k in out] == [k.pt for k in sift] and [k.octave for k in out] == [k.octave for k in sift]
    # the same keypoints without SIFT's octave are read where they say, as is SIFT's with xy_bias=0
    at_pt = np.mod(-np.degrees(est.estimate(img, xy).orientation), 360.0)
    np.testing.assert_allclose([k.angle for k in patchpose.assign(img, plain, est)], at_pt, atol=1e-3)
    np.testing.assert_allclose(
        [k.angle for k in patchpose.assign(img, sift, est, xy_bias=0)], at_pt, atol=1e-3
    )
    assert not np.allclose(want, at_pt, atol=1e-3)  # a quarter pixel matters
    for bad in ("0.25", np.nan, True):
        with pytest.raises(InputError, match="xy_bias"):
            patchpose.assign(img, sift, est, xy_bias=bad)
    xy_d, kps_d = detect_sift(img, 40)
    np.testing.assert_allclose(xy_d, np.array([k.pt for k in kps_d]) - 0.25)


def test_assign_turns_exactly_with_opencv_sift_keypoints_under_a_half_turn():
    """The reason for xy_bias: SIFT keypoints detected in an image and in the same image turned by exactly 180°
    get our angles 180° apart (to a fraction of a degree) only when read where SIFT found them; read at OpenCV's
    ``pt`` they sit half a pixel apart on the content, and our angle moves with that."""
    from patchpose.evaluation.rotation_eval import found_again

    img = (make_textured_image(240, seed=3) * 255).astype(np.uint8)
    img1 = np.ascontiguousarray(img[::-1, ::-1])  # the half turn about the centre, exact
    sift = cv2.SIFT_create(nfeatures=200)
    k0, k1 = sift.detect(img, None), sift.detect(img1, None)
    i, j, _ = found_again(k0, k1, similarity_about((119.5, 119.5), 0.0, math.pi))
    assert len(i) > 50
    est = patchpose.PatchPoseEstimator.from_pretrained()

    def errors(xy_bias):
        a0 = np.array([k.angle for k in patchpose.assign(img, k0, est, xy_bias=xy_bias)])[i]
        a1 = np.array([k.angle for k in patchpose.assign(img1, k1, est, xy_bias=xy_bias)])[j]
        return np.abs((a1 - a0 + 360.0) % 360.0 - 180.0)  # the half turn adds 180° either way

    fixed, at_pt = errors(None), errors(0.0)
    assert np.median(fixed) < 0.3 and np.mean(fixed < 1.0) > 0.9
    assert np.median(at_pt) > 3 * np.median(fixed) and np.mean(at_pt < 1.0) < 0.6


def test_assign_takes_a_model_name_and_checks_its_arguments():
    img = (make_textured_image(200, seed=1) * 255).astype(np.uint8)
    kps = [cv2.KeyPoint(100.0, 100.0, 8.0, 0.0), cv2.KeyPoint(80.0, 120.0, 6.0, 0.0)]
    by_name = patchpose.assign(img, kps, estimator="patchpose-v10")
    by_est = patchpose.assign(img, kps, estimator=patchpose.PatchPoseEstimator.load("patchpose-v10"))
    assert [(k.size, k.angle) for k in by_name] == [(k.size, k.angle) for k in by_est]
    by_default = [(k.size, k.angle) for k in patchpose.assign(img, kps)]
    assert [(k.size, k.angle) for k in by_name] != by_default  # the name was read, not the default
    with pytest.raises(InputError, match="cv2.KeyPoint"):
        patchpose.assign(img, None)
    with pytest.raises(InputError, match="estimator must be"):
        patchpose.assign(img, kps, estimator=3)
    with pytest.raises(InputError, match="size > 0"):
        patchpose.assign(img, [cv2.KeyPoint(100.0, 100.0, 0.0, 0.0)], keep_size=True)


def test_assign_sizes_make_sift_describe_the_models_descriptor_window():
    """assign's sizes make cv2.SIFT.compute's window (radius 5.3 · size) the pose's descriptor_radius: they
    grow with the read plan's descriptor_region and the angles stay the same."""
    from patchpose.integrations.opencv import SIFT_WINDOW_PER_SIZE

    img = (make_textured_image(200, seed=1) * 255).astype(np.uint8)
    kps = [cv2.KeyPoint(100.0, 100.0, 8.0, 0.0), cv2.KeyPoint(80.0, 120.0, 6.0, 0.0)]
    est = patchpose.PatchPoseEstimator.load("patchpose-v10")
    wide = est.with_plan(descriptor_region=2.5)
    poses = wide.estimate(img, np.array([k.pt for k in kps]))
    b = patchpose.assign(img, kps, wide)
    np.testing.assert_allclose([k.size * SIFT_WINDOW_PER_SIZE for k in b], poses.descriptor_radius, rtol=1e-5)
    a = patchpose.assign(img, kps, est.with_plan(descriptor_region=1.0))
    np.testing.assert_allclose([k.size for k in b], [2.5 * k.size for k in a], rtol=1e-5)
    assert [k.angle for k in a] == [k.angle for k in b]


def test_opencv_orb_keypoints_are_recognised_by_their_pyramid_fields():
    """ORB's keypoints: octave = level, size = patch_size · scale_factor**level, for one patch size and factor."""
    from patchpose.interop import opencv_orb_scale_factor

    img = (make_textured_image(240, seed=4) * 255).astype(np.uint8)
    orb = cv2.ORB_create(nfeatures=300).detect(img, None)
    assert len({k.octave for k in orb}) > 2
    assert opencv_orb_scale_factor(orb) == pytest.approx(1.2, rel=1e-6)
    wide = cv2.ORB_create(nfeatures=300, scaleFactor=1.5, patchSize=40, edgeThreshold=40).detect(img, None)
    assert opencv_orb_scale_factor(wide) == pytest.approx(1.5, rel=1e-6)
    one_level = [k for k in orb if k.octave == 2]
    assert one_level and opencv_orb_scale_factor(one_level) == pytest.approx(1.2, rel=1e-6)
    level0 = [k for k in orb if k.octave == 0]
    sift = cv2.SIFT_create(nfeatures=50).detect(img, None)
    plain = [cv2.KeyPoint(*k.pt, k.size) for k in orb]  # octave 0: read at pt
    moved = [
        cv2.KeyPoint(*k.pt, k.size * (1.01 if i == 5 else 1.0), k.angle, k.response, k.octave)
        for i, k in enumerate(orb)
    ]
    for other in (level0, sift, plain, moved, []):
        assert opencv_orb_scale_factor(other) is None


def test_assign_reads_opencv_orb_keypoints_at_their_level_pixel():
    """``assign`` reads ORB's keypoints above level 0 where ORB found them (conventions.from_opencv_orb_xy, which
    needs the image size), keeps their ``pt``; ``from_cv2_keypoints`` refuses them without ``image_shape``;
    ``xy_bias`` overrides, as a number or per keypoint."""
    from patchpose.conventions import from_opencv_orb_xy
    from patchpose.interop import from_cv2_keypoints

    img = (make_textured_image(200, seed=5)[:, :187] * 255).astype(np.uint8)
    inside = [
        k for k in cv2.ORB_create(nfeatures=200).detect(img, None) if 40 < min(k.pt) and max(k.pt) < 150
    ]
    kps = [k for level in range(4) for k in [k for k in inside if k.octave == level][:8]]
    assert len({k.octave for k in kps}) > 1
    pt = np.array([k.pt for k in kps])
    xy = from_opencv_orb_xy(pt, [k.octave for k in kps], img.shape, 1.2)
    assert np.abs(xy - pt).max() > 0.5
    est = patchpose.PatchPoseEstimator.from_pretrained()
    want = np.mod(-np.degrees(est.estimate(img, xy).orientation), 360.0)
    out = patchpose.assign(img, kps, est)
    np.testing.assert_allclose([k.angle for k in out], want, atol=1e-3)
    assert [k.pt for k in out] == [k.pt for k in kps]
    np.testing.assert_allclose(from_cv2_keypoints(kps, image_shape=img.shape)[0], xy)
    with pytest.raises(InputError, match="image_shape"):
        from_cv2_keypoints(kps)
    at_pt = np.mod(-np.degrees(est.estimate(img, pt).orientation), 360.0)
    assert not np.allclose(want, at_pt, atol=1e-3)  # where it reads matters
    np.testing.assert_allclose(
        [k.angle for k in patchpose.assign(img, kps, est, xy_bias=0)], at_pt, atol=1e-3
    )
    np.testing.assert_allclose(
        [k.angle for k in patchpose.assign(img, kps, est, xy_bias=pt - xy)], want, atol=1e-3
    )
    with pytest.raises(InputError, match="xy_bias"):
        patchpose.assign(img, kps, est, xy_bias=np.zeros((2, 2)))


def test_kornia_pose_assigner_writes_the_descriptor_window_as_laf_scale():
    """With scale=True the LAF scale is Poses.descriptor_radius (kornia's descriptors cut ±LAF scale), the
    angle ours in degrees; laf_frame reads such a LAF back in our own frame; no LAFs give no LAFs; bad
    input is an InputError."""
    import kornia.feature as KF

    from patchpose.integrations.kornia import LAFPoseAssigner

    img = (make_textured_image(200, seed=2) * 255).astype(np.uint8)
    xy = np.stack(np.meshgrid(np.linspace(70, 130, 5), np.linspace(70, 130, 5)), -1).reshape(-1, 2)
    est = patchpose.PatchPoseEstimator.from_pretrained()
    poses = est.estimate(img, xy)
    timg = torch.from_numpy(img.astype(np.float32) / 255.0)[None, None]
    laf = KF.laf_from_center_scale_ori(
        torch.from_numpy(xy).float()[None], torch.full((1, len(xy), 1, 1), 5.0)
    )
    with torch.no_grad():
        out = LAFPoseAssigner(est)(laf, timg)
    np.testing.assert_allclose(KF.get_laf_scale(out)[0, :, 0, 0].numpy(), poses.descriptor_radius, rtol=1e-4)
    got = KF.get_laf_orientation(out)[0, :, 0].numpy()
    np.testing.assert_allclose(np.exp(1j * np.radians(got)), np.exp(1j * poses.orientation), atol=1e-2)
    with torch.no_grad():  # read back in the LAF's own frame: about the same angle
        again = LAFPoseAssigner(est, scale=False, laf_frame=True)(out, timg)
    d = (KF.get_laf_orientation(again)[0, :, 0].numpy() - got + 180.0) % 360.0 - 180.0
    assert np.median(np.abs(d)) < 15.0 and np.mean(np.abs(d) < 15.0) > 0.6
    with torch.no_grad():
        assert LAFPoseAssigner(est)(torch.zeros(1, 0, 2, 3), timg).shape == (1, 0, 2, 3)
    with pytest.raises(InputError, match="laf must be"):
        LAFPoseAssigner(est)(torch.zeros(1, 3, 3, 3), timg)
    with pytest.raises(InputError, match="torch tensors"):
        LAFPoseAssigner(est)(laf.numpy(), timg)


def test_kornia_pose_assigner_keeps_an_affine_shape_and_passes_kornias_padding_through():
    """As kornia's ``ori_module`` after an ``aff_module`` (kornia runs the shape first): the shape is kept (it was
    replaced by an isotropic frame), the LAF's first axis points along our angle, its scale is ours; the all-zero
    LAFs kornia's detectors pad with where an image has fewer features stay zero (they were refused as
    degenerate), in ``LAFAffineShape`` and ``describe_blended`` too."""
    import kornia.feature as KF

    from patchpose.integrations.kornia import LAFAffineShape, LAFPoseAssigner, describe_blended

    img = (make_textured_image(200, seed=2) * 255).astype(np.uint8)
    xy = np.stack(np.meshgrid(np.linspace(70, 130, 4), np.linspace(70, 130, 4)), -1).reshape(-1, 2)
    est = patchpose.PatchPoseEstimator.from_pretrained()
    poses = est.estimate(img, xy)
    timg = torch.from_numpy(img.astype(np.float32) / 255.0)[None, None]
    rng = np.random.default_rng(0)
    a = rng.normal(size=(len(xy), 2, 2)) * 4.0
    a[np.linalg.det(a) < 0, :, 0] *= -1.0
    laf = torch.from_numpy(np.concatenate([a, xy[:, :, None]], 2)).float()[None]
    pad = torch.zeros(1, 3, 2, 3)
    with torch.no_grad():
        kept = LAFPoseAssigner(est, scale=False)(torch.cat([laf, pad], 1), timg)
        both = LAFPoseAssigner(est)(laf, timg)
    assert (kept[0, len(xy) :] == 0).all()

    def shape(m):  # A·Aᵀ over its determinant: the affine shape, whatever the scale and the turn
        g = m @ m.transpose(-1, -2)
        return g / torch.det(g).sqrt()[..., None, None]

    aff = laf[0, :, :, :2].double()
    for out in (kept[0, : len(xy)], both[0]):
        torch.testing.assert_close(shape(out[:, :, :2].double()), shape(aff), rtol=1e-4, atol=1e-4)
        axis = out[:, :, 0].double().numpy()
        np.testing.assert_allclose(
            np.arctan2(-axis[:, 1], axis[:, 0]) % (2 * np.pi), poses.orientation, atol=1e-3
        )
    torch.testing.assert_close(torch.det(kept[0, : len(xy), :, :2]).abs(), torch.det(laf[0, :, :, :2]).abs())
    np.testing.assert_allclose(
        torch.det(both[0, :, :, :2]).sqrt().numpy(), poses.descriptor_radius, rtol=1e-4
    )
    upright = KF.laf_from_center_scale_ori(
        torch.from_numpy(xy).float()[None], torch.full((1, len(xy), 1, 1), 8.0)
    )
    with torch.no_grad():
        shaped = LAFAffineShape()(torch.cat([upright, pad], 1), timg)
        d = describe_blended(
            timg, torch.cat([upright, pad], 1), KF.LAFDescriptor(KF.SIFTDescriptor(32), patch_size=32)
        )
        alone = describe_blended(timg, upright, KF.LAFDescriptor(KF.SIFTDescriptor(32), patch_size=32))
    assert (shaped[0, len(xy) :] == 0).all() and torch.isfinite(shaped).all()
    assert (d[0, len(xy) :] == 0).all()
    torch.testing.assert_close(d[0, : len(xy)], alone[0])
