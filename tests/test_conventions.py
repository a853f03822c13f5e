"""Pins every line of the conventions docstring in ``patchpose.conventions``."""

from __future__ import annotations

import math

import cv2
import kornia.feature as KF
import numpy as np
import pytest
import torch

from patchpose import conventions as C

# ----------------------------------------------------------------------------- constants and bins


def test_histogram_constants_match_the_paper():
    """36 orientation bins, 13 scale bins over [-2, 2], reference radius 16 px."""
    assert C.NUM_ORI_BINS == 36
    assert C.NUM_SCALE_BINS == 13
    assert C.SCALE_RANGE == (-2.0, 2.0)
    assert C.REFERENCE_RADIUS == 16.0


def test_orientation_bin_centres_are_2pi_i_over_36():
    """Orientation bin i is centred at 2πi/36 (10° per bin, bin 0 at 0)."""
    centres = C.ori_bin_centers()
    assert centres.shape == (36,)
    np.testing.assert_allclose(centres, 2 * np.pi * np.arange(36) / 36, atol=1e-12)
    assert C.ori_bin_width() == pytest.approx(math.radians(10.0))


def test_scale_bin_centres_are_minus2_plus_i_over_3():
    """Scale bin i is centred at −2 + i/3 (−2, −5/3, …, 2)."""
    centres = C.scale_bin_centers()
    assert centres.shape == (13,)
    np.testing.assert_allclose(centres, -2.0 + np.arange(13) / 3.0, atol=1e-12)
    assert centres[0] == pytest.approx(-2.0) and centres[-1] == pytest.approx(2.0)
    assert centres[6] == pytest.approx(0.0)
    assert C.scale_bin_width() == pytest.approx(1.0 / 3.0)


def test_ori_bin_value_round_trip():
    """bin_to_ori(ori_to_bin(θ)) == θ for θ in [0, 2π) and bin centres map to integers."""
    theta = np.linspace(0.0, 2 * np.pi, 97, endpoint=False)
    np.testing.assert_allclose(C.bin_to_ori(C.ori_to_bin(theta)), theta, atol=1e-12)
    np.testing.assert_allclose(C.ori_to_bin(C.ori_bin_centers()), np.arange(36), atol=1e-9)
    b = np.array([0.0, 0.5, 17.25, 35.9])
    np.testing.assert_allclose(C.ori_to_bin(C.bin_to_ori(b)), b, atol=1e-9)


def test_ori_to_bin_wraps_negative_and_large_angles():
    """ori_to_bin wraps: −10° is bin 35, 370° is bin 1, values lie in [0, 36)."""
    assert C.ori_to_bin(math.radians(-10.0)) == pytest.approx(35.0)
    assert C.ori_to_bin(math.radians(370.0)) == pytest.approx(1.0)
    b = C.ori_to_bin(np.linspace(-20, 20, 101))
    assert np.all((b >= 0) & (b < 36))


def test_scale_bin_value_round_trip_unclipped():
    """scale_to_bin/bin_to_scale invert each other, bin centres map to integers, nothing is clipped."""
    s = np.linspace(-3.0, 3.0, 61)
    np.testing.assert_allclose(C.bin_to_scale(C.scale_to_bin(s)), s, atol=1e-12)
    np.testing.assert_allclose(C.scale_to_bin(C.scale_bin_centers()), np.arange(13), atol=1e-9)
    assert C.scale_to_bin(0.0) == pytest.approx(6.0)
    assert C.scale_to_bin(-3.0) == pytest.approx(-3.0)  # outside the range: not clipped
    assert C.scale_to_bin(3.0) == pytest.approx(15.0)


def test_pose_difference_moves_histogram_towards_higher_bins():
    """A pose difference Δ moves a histogram by Δ/bin_width bins towards higher indices."""
    assert C.ori_delta_to_bins(math.radians(30.0)) == pytest.approx(3.0)
    assert C.ori_delta_to_bins(math.radians(-25.0)) == pytest.approx(-2.5)  # not wrapped
    assert C.scale_delta_to_bins(1.0) == pytest.approx(3.0)
    assert C.scale_delta_to_bins(-0.5) == pytest.approx(-1.5)
    theta, delta = 0.4, math.radians(20.0)
    assert C.ori_to_bin(theta + delta) - C.ori_to_bin(theta) == pytest.approx(C.ori_delta_to_bins(delta))
    s, ds = -0.7, 0.9
    assert C.scale_to_bin(s + ds) - C.scale_to_bin(s) == pytest.approx(C.scale_delta_to_bins(ds))


# ----------------------------------------------------------------------------- angles


@pytest.mark.parametrize(
    "theta, expected",
    [(0.0, 0.0), (-math.pi / 2, 1.5 * math.pi), (2 * math.pi, 0.0), (5 * math.pi, math.pi), (-1e-20, 0.0)],
)
def test_wrap_angle_float_into_0_2pi(theta, expected):
    """wrap_angle maps floats into [0, 2π), including tiny negatives that would round to 2π."""
    out = C.wrap_angle(theta)
    assert 0.0 <= out < 2 * math.pi
    assert out == pytest.approx(expected, abs=1e-12)


def test_wrap_angle_numpy_and_torch_into_0_2pi():
    """wrap_angle works on numpy arrays and torch tensors and stays in [0, 2π)."""
    x = np.array([-1e-20, -7.0, 0.0, 3.0, 6.3, 100.0])
    out = C.wrap_angle(x)
    assert np.all((out >= 0) & (out < 2 * np.pi))
    np.testing.assert_allclose(np.sin(out), np.sin(x), atol=1e-9)
    np.testing.assert_allclose(np.cos(out), np.cos(x), atol=1e-9)
    t = torch.tensor([-1e-9, -7.0, 0.0, 3.0, 6.3, 100.0], dtype=torch.float32)
    ot = C.wrap_angle(t)
    assert isinstance(ot, torch.Tensor)
    assert bool(((ot >= 0) & (ot < 2 * math.pi)).all())


def test_angle_diff_is_signed_smallest_difference_in_minus_pi_pi():
    """angle_diff(a, b) is a − b wrapped into [−π, π)."""
    assert C.angle_diff(0.1, 2 * math.pi - 0.1) == pytest.approx(0.2)
    assert C.angle_diff(2 * math.pi - 0.1, 0.1) == pytest.approx(-0.2)
    assert C.angle_diff(math.pi, 0.0) == pytest.approx(-math.pi)  # π itself maps to −π
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-20, 20, 1000), rng.uniform(-20, 20, 1000)
    d = C.angle_diff(a, b)
    assert np.all((d >= -np.pi) & (d < np.pi))
    np.testing.assert_allclose(np.cos(d), np.cos(a - b), atol=1e-9)
    np.testing.assert_allclose(np.sin(d), np.sin(a - b), atol=1e-9)


# ----------------------------------------------------------------------------- rotation / frames


@pytest.mark.parametrize("theta", [0.0, 0.3, math.pi / 2, 2.0, -1.1])
def test_rotation_matrix_maps_x_axis_to_cos_minus_sin(theta):
    """R(θ)·(1,0) = (cos θ, −sin θ): positive θ turns the x axis up on screen (y down)."""
    R = C.rotation_matrix(theta)
    np.testing.assert_allclose(R @ np.array([1.0, 0.0]), [math.cos(theta), -math.sin(theta)], atol=1e-12)
    np.testing.assert_allclose(R, [[math.cos(theta), math.sin(theta)], [-math.sin(theta), math.cos(theta)]])
    np.testing.assert_allclose(R @ R.T, np.eye(2), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)


def test_rotation_by_90_turns_x_axis_up_on_screen():
    """R(π/2)·(1,0) = (0, −1): pointing up in an image with y down."""
    np.testing.assert_allclose(C.rotation_matrix(math.pi / 2) @ [1.0, 0.0], [0.0, -1.0], atol=1e-12)


@pytest.mark.parametrize("deg", [30.0, -45.0, 90.0])
def test_similarity_about_matches_cv2_rotation_matrix(deg):
    """similarity_about(c, log2 s, θ) equals cv2.getRotationMatrix2D(c, degrees θ, s) (CCW as displayed)."""
    c = (37.0, 11.5)
    for log2s in (0.0, 0.5, -1.0):
        M = C.similarity_about(c, log2s, math.radians(deg))
        M_cv = cv2.getRotationMatrix2D(c, deg, 2.0**log2s)
        np.testing.assert_allclose(M[:2], M_cv, atol=1e-9)
        np.testing.assert_allclose(M[2], [0, 0, 1])
        np.testing.assert_allclose(M @ [c[0], c[1], 1.0], [c[0], c[1], 1.0], atol=1e-9)  # fixes the centre


def test_frame_matrix_is_r_times_2_pow_sigma_times_R():
    """frame_matrix(σ, θ) = r·2**σ·R(θ) with r = REFERENCE_RADIUS by default."""
    np.testing.assert_allclose(C.frame_matrix(1.5, 0.7), 16.0 * 2**1.5 * C.rotation_matrix(0.7))
    np.testing.assert_allclose(C.frame_matrix(0.0, 0.0, radius=5.0), 5.0 * np.eye(2))


def test_frame_matrix_equals_kornia_laf_affine_part():
    """Our frame A equals the A of kornia's laf_from_center_scale_ori with to_laf_scale_ori."""
    for s, t in [(0.0, 0.0), (1.0, 0.5), (-1.3, 4.0), (0.4, -2.0)]:
        sc, ori = C.to_laf_scale_ori(s, t)
        laf = KF.laf_from_center_scale_ori(
            torch.tensor([[[3.0, 4.0]]], dtype=torch.float64),
            torch.full((1, 1, 1, 1), float(sc), dtype=torch.float64),
            torch.full((1, 1, 1), float(ori), dtype=torch.float64),
        )
        np.testing.assert_allclose(laf[0, 0, :, :2].numpy(), C.frame_matrix(s, t), atol=1e-9)


@pytest.mark.parametrize("ps, expected", [(1, [0.0]), (2, [-0.5, 0.5]), (4, [-0.75, -0.25, 0.25, 0.75])])
def test_patch_grid_is_2k_plus_1_over_ps_minus_1(ps, expected):
    """u_k = (2k+1)/PS − 1: cell centres, symmetric about 0, never reaching ±1."""
    np.testing.assert_allclose(C.patch_grid(ps), expected)


def test_patch_grid_covers_plus_minus_radius():
    """Cells of width 2/PS centred at u_k tile [−1, 1] exactly (patch covers ±r·2**σ)."""
    u = C.patch_grid(32)
    assert u[0] - 1.0 / 32 == pytest.approx(-1.0)
    assert u[-1] + 1.0 / 32 == pytest.approx(1.0)
    np.testing.assert_allclose(np.diff(u), 2.0 / 32)
    np.testing.assert_allclose(u, -u[::-1])


# ----------------------------------------------------------------------------- OpenCV keypoints


def test_cv2_size_is_diameter_and_angle_clockwise_degrees():
    """size = 2·r·2**σ (diameter) and our θ = +90° (CCW) is cv2 angle 270 (CW)."""
    size, angle = C.to_cv2_size_angle(0.0, math.pi / 2)
    assert size == pytest.approx(32.0)
    assert angle == pytest.approx(270.0)
    size, angle = C.to_cv2_size_angle(1.0, math.radians(30.0))
    assert size == pytest.approx(64.0)
    assert angle == pytest.approx(330.0)
    size, angle = C.to_cv2_size_angle(-1.0, math.radians(-30.0))
    assert size == pytest.approx(16.0)
    assert angle == pytest.approx(30.0)
    size, _ = C.to_cv2_size_angle(0.0, 0.0, size_factor=2.5)
    assert size == pytest.approx(80.0)


def test_cv2_angle_stays_below_360():
    """cv2 angle is in [0, 360) even for θ = 0, tiny positive θ and θ = 2π."""
    _, angle = C.to_cv2_size_angle(np.zeros(4), np.array([0.0, 1e-17, 2 * math.pi, -0.0]))
    assert np.all((angle >= 0.0) & (angle < 360.0))
    np.testing.assert_allclose(angle, 0.0, atol=1e-9)


def test_cv2_round_trip():
    """from_cv2_size_angle(to_cv2_size_angle(σ, θ)) == (σ, θ wrapped)."""
    rng = np.random.default_rng(1)
    s = rng.uniform(-3, 3, 200)
    t = rng.uniform(-10, 10, 200)
    for factor in (1.0, 1.7):
        size, angle = C.to_cv2_size_angle(s, t, size_factor=factor)
        s2, t2 = C.from_cv2_size_angle(size, angle, size_factor=factor)
        np.testing.assert_allclose(s2, s, atol=1e-9)
        np.testing.assert_allclose(np.abs(C.angle_diff(t2, t)), 0.0, atol=1e-9)
        assert np.all((t2 >= 0) & (t2 < 2 * np.pi))


def test_cv2_keypoint_object_round_trip():
    """A real cv2.KeyPoint built from our pose reads back the same pose."""
    size, angle = C.to_cv2_size_angle(0.75, 1.2)
    kp = cv2.KeyPoint(10.0, 20.0, float(size), float(angle))
    s, t = C.from_cv2_size_angle(kp.size, kp.angle)
    assert float(s) == pytest.approx(0.75, abs=1e-5)
    assert float(t) == pytest.approx(1.2, abs=1e-5)


def test_cv2_no_angle_maps_to_zero():
    """cv2 angle −1 (no orientation) maps to θ = 0."""
    _, t = C.from_cv2_size_angle(32.0, -1.0)
    assert float(t) == 0.0
    # any other negative angle is an angle (it became 0 too): −30° is 330°, as OpenCV's SIFT describes it
    _, t = C.from_cv2_size_angle([32.0, 32.0, 32.0], [-30.0, 330.0, -1.5])
    np.testing.assert_allclose(t, [np.radians(30.0), np.radians(30.0), np.radians(1.5)], atol=1e-12)


def _sift_positions_under_half_turn(precise: bool) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV SIFT keypoints of a textured image and of the same image turned by 180° (exactly: ``rot90``
    twice), the second mapped back into the first; the pairs of each keypoint found again."""
    from conftest import make_textured_image

    img = (make_textured_image(240, seed=3) * 255).astype(np.uint8)
    sift = cv2.SIFT_create(enable_precise_upscale=precise)
    p0 = np.array([k.pt for k in sift.detect(img, None)], np.float64)
    p1 = np.array([k.pt for k in sift.detect(np.ascontiguousarray(img[::-1, ::-1]), None)], np.float64)
    back = 239.0 - p1  # (x, y) ↦ (W − 1 − x, H − 1 − y): the half turn about the image centre
    dist = np.linalg.norm(p0[:, None] - back[None], axis=2)
    j = dist.argmin(1)
    found = dist[np.arange(len(p0)), j] < 1.0
    return p0[found], back[j[found]]


def test_opencv_sift_reports_keypoints_a_quarter_pixel_off():
    """``cv2.SIFT_create()`` puts every keypoint +0.25 px right of and below what it found: under a half turn
    that shift turns into −0.25, so a keypoint found again lands 0.5 px up-left of itself; moved by
    ``from_opencv_sift_xy`` (both images), it lands on itself. ``enable_precise_upscale=True`` has no shift."""
    p0, back = _sift_positions_under_half_turn(precise=False)
    assert len(p0) > 30
    np.testing.assert_allclose(np.median(back - p0, axis=0), [-2 * C.OPENCV_SIFT_XY_BIAS] * 2, atol=0.02)
    # the same positions in pixel centres: the second image's keypoint turned back is 239 − (pt − 0.25)
    fixed = np.median((239.0 - C.from_opencv_sift_xy(239.0 - back)) - C.from_opencv_sift_xy(p0), axis=0)
    np.testing.assert_allclose(fixed, [0.0, 0.0], atol=0.02)
    p0, back = _sift_positions_under_half_turn(precise=True)
    assert len(p0) > 30
    np.testing.assert_allclose(np.median(back - p0, axis=0), [0.0, 0.0], atol=0.02)


def test_opencv_orb_positions_are_their_level_pixels():
    """``cv2.ORB_create()`` reports level pixel ``u`` at ``u·s``; ``from_opencv_orb_xy`` puts it at the pixel's
    centre, ``(u + 0.5)·W/W_L − 0.5``. Under an exact half turn a keypoint found again then lands on itself at
    every level, where OpenCV's ``pt`` is off (an image of odd, non-square size, so that levels round)."""
    from conftest import make_textured_image

    img = (make_textured_image(320, seed=6)[:301, :263] * 255).astype(np.uint8)
    h, w = img.shape
    orb = cv2.ORB_create(nfeatures=3000)
    k0 = orb.detect(img, None)
    k1 = orb.detect(np.ascontiguousarray(img[::-1, ::-1]), None)
    checked = 0
    for level in range(1, 8):
        a = [k for k in k0 if k.octave == level]
        b = [k for k in k1 if k.octave == level]
        if len(a) < 10 or len(b) < 10:
            continue
        offsets = {}
        for name, (p0, p1) in {
            "pt": (np.array([k.pt for k in a]), np.array([k.pt for k in b])),
            "centre": (
                C.from_opencv_orb_xy([k.pt for k in a], level, img.shape, 1.2),
                C.from_opencv_orb_xy([k.pt for k in b], level, img.shape, 1.2),
            ),
        }.items():
            back = np.stack([w - 1 - p1[:, 0], h - 1 - p1[:, 1]], 1)
            d = np.linalg.norm(p0[:, None] - back[None], axis=2).min(1)
            offsets[name] = d[d < 8.0]
            assert len(offsets[name]) >= 5
        assert np.median(offsets["pt"]) > 0.3, level
        assert np.median(offsets["centre"]) < 1e-3 and np.mean(offsets["centre"] < 1e-3) > 0.9, level
        checked += 1
    assert checked >= 3


def test_opencv_orb_xy_helpers_round_trip():
    xy = np.array([[10.0, 20.0], [100.5, 0.0], [3.0, 4.0]])
    lev = [0, 3, 7]
    np.testing.assert_allclose(C.from_opencv_orb_xy(xy[:1], 0, (480, 640)), xy[:1])  # level 0 is exact
    back = C.to_opencv_orb_xy(C.from_opencv_orb_xy(xy, lev, (301, 263), 1.2), lev, (301, 263), 1.2)
    np.testing.assert_allclose(back, xy, atol=1e-9)
    # level 1 of a 640-wide image is 533 wide: pixel u = 10 (pt 12) has its centre at 10.5 · 640/533 − 0.5
    np.testing.assert_allclose(
        C.from_opencv_orb_xy([[12.0, 0.0]], 1, (480, 640))[0, 0], 10.5 * 640 / 533 - 0.5
    )


def test_opencv_sift_xy_helpers_round_trip():
    xy = np.array([[10.0, 20.0], [0.25, 0.25]])
    np.testing.assert_allclose(C.from_opencv_sift_xy(xy), xy - 0.25)
    np.testing.assert_allclose(C.to_opencv_sift_xy(C.from_opencv_sift_xy(xy)), xy)
    assert C.OPENCV_SIFT_XY_BIAS == 0.25


def _textured_image(n: int = 321, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.random((n, n)), (0, 0), 3)
    return (img - img.min()) / (img.max() - img.min())


def _sift(img: np.ndarray):
    kps = cv2.SIFT_create().detect(np.clip(img * 255 + 0.5, 0, 255).astype(np.uint8), None)
    return kps, np.array([k.pt for k in kps]).reshape(-1, 2)


def _matched_sift_keypoints(img, M, radius=80.0):
    """SIFT keypoints near the centre of img and of img warped by M, matched by the warped location.

    Only keypoints with a single orientation in both images (no ambiguity) are kept."""
    n = img.shape[0]
    c = (n - 1) / 2
    warped = cv2.warpAffine(img, M, (n, n), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT)
    k0, p0 = _sift(img)
    k1, p1 = _sift(warped)
    pairs = []
    for i, kp in enumerate(k0):
        if np.hypot(*(p0[i] - c)) > radius or np.sum(np.hypot(*(p0 - p0[i]).T) < 0.01) != 1:
            continue
        q = M @ np.array([kp.pt[0], kp.pt[1], 1.0])
        d = np.hypot(*(p1 - q).T)
        j = int(np.argmin(d))
        if d[j] > 1.0 or np.sum(d < 1.0) != 1:
            continue
        pairs.append((kp, k1[j]))
    return pairs


@pytest.mark.parametrize("deg", [30.0, -30.0])
def test_opencv_sift_rotation_ccw_adds_to_our_orientation(deg):
    """Rotating an image CCW (cv2.getRotationMatrix2D, +angle) by t changes SIFT's angle by −t and our θ by +t."""
    img = _textured_image()
    c = (img.shape[0] - 1) / 2
    M = cv2.getRotationMatrix2D((c, c), deg, 1.0)
    pairs = [(a, b) for a, b in _matched_sift_keypoints(img, M) if abs(b.size / a.size - 1) < 0.1]
    assert len(pairs) >= 20
    cv_change = np.array([(b.angle - a.angle) % 360.0 for a, b in pairs])
    cv_err = (cv_change - (-deg) % 360.0 + 180.0) % 360.0 - 180.0
    assert abs(np.median(cv_err)) < 2.0
    _, ta = C.from_cv2_size_angle([a.size for a, _ in pairs], [a.angle for a, _ in pairs])
    _, tb = C.from_cv2_size_angle([b.size for _, b in pairs], [b.angle for _, b in pairs])
    our_err = np.degrees(C.angle_diff(tb - ta, math.radians(deg)))
    assert abs(np.median(our_err)) < 2.0
    assert np.mean(np.abs(our_err) < 5.0) > 0.8


def test_opencv_sift_enlarging_adds_log2_s_to_our_scale():
    """Enlarging the image content by s about the centre adds log2(s) to the scale read from SIFT sizes."""
    img = _textured_image()
    c = (img.shape[0] - 1) / 2
    s = 2.0**0.5
    M = C.similarity_about((c, c), 0.5, 0.0)[:2]
    pairs = _matched_sift_keypoints(img, M, radius=60.0)
    pairs = [(a, b) for a, b in pairs if abs(b.size / a.size / s - 1) < 0.25]
    assert len(pairs) >= 10
    sa, _ = C.from_cv2_size_angle([a.size for a, _ in pairs], [a.angle for a, _ in pairs])
    sb, _ = C.from_cv2_size_angle([b.size for _, b in pairs], [b.angle for _, b in pairs])
    assert np.median(sb - sa) == pytest.approx(0.5, abs=0.05)


# ----------------------------------------------------------------------------- kornia LAFs


def test_kornia_laf_round_trip():
    """laf_from_center_scale_ori(to_laf_scale_ori(σ, θ)) reads back σ and θ via get_laf_scale/orientation."""
    rng = np.random.default_rng(2)
    s = rng.uniform(-2, 2.5, 50)
    t = rng.uniform(0, 2 * np.pi, 50)
    for factor in (1.0, 0.5):
        sc, ori = C.to_laf_scale_ori(s, t, laf_factor=factor)
        np.testing.assert_allclose(sc, 16.0 * 2.0**s * factor)
        np.testing.assert_allclose(ori, np.degrees(t))
        laf = KF.laf_from_center_scale_ori(
            torch.zeros(1, 50, 2, dtype=torch.float64),
            torch.as_tensor(sc, dtype=torch.float64).view(1, 50, 1, 1),
            torch.as_tensor(ori, dtype=torch.float64).view(1, 50, 1),
        )
        laf_scale = KF.get_laf_scale(laf).view(-1).numpy()
        laf_ori = KF.get_laf_orientation(laf).view(-1).numpy()
        np.testing.assert_allclose(laf_scale, sc, rtol=1e-9)
        s2, t2 = C.from_laf_scale_ori(laf_scale, laf_ori, laf_factor=factor)
        np.testing.assert_allclose(s2, s, atol=1e-9)
        np.testing.assert_allclose(np.abs(C.angle_diff(t2, t)), 0.0, atol=1e-9)
        assert np.all((t2 >= 0) & (t2 < 2 * np.pi))


def test_kornia_orientation_degrees_same_sign_as_ours():
    """kornia's LAF orientation is in degrees with our sign: θ = π/2 reads back +90."""
    sc, ori = C.to_laf_scale_ori(0.0, math.pi / 2)
    assert sc == pytest.approx(16.0)
    assert ori == pytest.approx(90.0)
    laf = KF.laf_from_center_scale_ori(
        torch.zeros(1, 1, 2), torch.full((1, 1, 1, 1), float(sc)), torch.full((1, 1, 1), float(ori))
    )
    assert KF.get_laf_orientation(laf).item() == pytest.approx(90.0, abs=1e-4)
    # x axis of the patch points up on screen (y down): first column of A is (0, −r)
    np.testing.assert_allclose(laf[0, 0, :, 0].numpy(), [0.0, -16.0], atol=1e-5)


def test_kornia_negative_orientation_reads_back_wrapped():
    """kornia returns −90° for θ = 3π/2; from_laf_scale_ori wraps it back to 3π/2."""
    _, t = C.from_laf_scale_ori(16.0, -90.0)
    assert float(t) == pytest.approx(1.5 * math.pi)
    s, _ = C.from_laf_scale_ori(64.0, 0.0)
    assert float(s) == pytest.approx(2.0)


# ----------------------------------------------------------------------------- pixel centres


def test_colmap_centre_shift_is_half_pixel():
    """Our top-left pixel centre (0, 0) is COLMAP's (0.5, 0.5), and the conversions invert each other."""
    np.testing.assert_allclose(C.to_colmap_xy([0.0, 0.0]), [0.5, 0.5])
    np.testing.assert_allclose(C.from_colmap_xy([0.5, 0.5]), [0.0, 0.0])
    xy = np.random.default_rng(3).uniform(-5, 500, (20, 2))
    np.testing.assert_allclose(C.from_colmap_xy(C.to_colmap_xy(xy)), xy, atol=1e-12)
    np.testing.assert_allclose(C.to_colmap_xy(xy) - xy, 0.5)


def test_rotation_matrix_takes_arrays_of_angles():
    """An array of angles gives the stacked matrices of each angle (what patch cutting and the blends use)."""
    from patchpose.conventions import rotation_matrix

    t = np.array([[0.0, 0.5], [2.0, -1.0]])
    R = rotation_matrix(t)
    assert R.shape == (2, 2, 2, 2)
    for idx in np.ndindex(t.shape):
        assert np.array_equal(R[idx], rotation_matrix(float(t[idx])))
    assert np.allclose(rotation_matrix(np.pi / 2) @ [1.0, 0.0], [0.0, -1.0])  # x turns up on screen


def test_opencv_sift_octave_is_the_one_opencv_packs_and_compute_reads():
    """``opencv_sift_octave`` gives each of OpenCV SIFT's detections the octave field SIFT wrote (octave and layer),
    so that ``compute`` at another detector's keypoints reads the pyramid level SIFT would; with a bare keypoint's
    octave 0 the descriptors differ."""
    from conftest import make_textured_image
    from patchpose.conventions import opencv_sift_octave

    img = (make_textured_image(300, seed=4) * 255).astype(np.uint8)
    sift = cv2.SIFT_create()
    kps, own = sift.detectAndCompute(img, None)
    assert len(kps) > 100
    packed = opencv_sift_octave([k.size for k in kps])
    np.testing.assert_array_equal(packed, [k.octave & 0xFFFF for k in kps])
    again = [cv2.KeyPoint(*k.pt, k.size, k.angle, k.response, int(o)) for k, o in zip(kps, packed)]
    np.testing.assert_array_equal(sift.compute(img, again)[1], own)
    bare = [cv2.KeyPoint(*k.pt, k.size, k.angle) for k in kps]
    assert np.abs(sift.compute(img, bare)[1] - own).max() > 10
