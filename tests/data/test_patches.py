"""Patch sampling geometry (equal to kornia's LAF sampling) and image validation."""

from __future__ import annotations

import math

import cv2
import kornia.feature as KF
import numpy as np
import pytest
import torch

from patchpose.conventions import REFERENCE_RADIUS, rotation_matrix, to_laf_scale_ori
from patchpose.data.patches import (
    Pyramid,
    check_image,
    extract_patches,
    grid_points,
    load_image,
    sampling_matrix,
    window_margin,
)
from patchpose.errors import InputError

XY = np.array([[60.3, 50.7], [100.0, 80.0], [130.5, 95.25], [75.8, 110.1]])


def _kornia_patches(img: np.ndarray, xy: np.ndarray, sigma: float, theta: np.ndarray, ps: int) -> np.ndarray:
    n = len(xy)
    sc, ori = to_laf_scale_ori(np.full(n, sigma), theta)
    laf = KF.laf_from_center_scale_ori(
        torch.tensor(xy, dtype=torch.float32)[None],
        torch.tensor(sc, dtype=torch.float32).view(1, n, 1, 1),
        torch.tensor(ori, dtype=torch.float32).view(1, n, 1),
    )
    return KF.extract_patches_simple(torch.from_numpy(img)[None, None], laf, ps)[0, :, 0].numpy()


@pytest.mark.parametrize("ps", [32, 31, 16])
def test_patches_equal_kornia_extract_patches_simple_at_scale_zero(smooth_image, ps):
    """extract_patches at σ = 0 samples what kornia.feature.extract_patches_simple does (θ radians vs degrees)."""
    theta = np.array([0.0, 0.7, 3.5, 5.9])
    radius = ps / 2.0  # one patch pixel per image pixel: no pyramid level is involved
    ours = extract_patches(Pyramid(smooth_image), XY, 0.0, theta, ps, radius=radius)
    n = len(XY)
    laf = KF.laf_from_center_scale_ori(
        torch.tensor(XY, dtype=torch.float32)[None],
        torch.full((1, n, 1, 1), radius),
        torch.tensor(np.degrees(theta), dtype=torch.float32).view(1, n, 1),
    )
    ref = KF.extract_patches_simple(torch.from_numpy(smooth_image)[None, None], laf, ps)[0, :, 0].numpy()
    assert ours.shape == (n, 1, ps, ps)
    assert np.abs(ours[:, 0] - ref).mean() < 1e-3


def test_patches_equal_kornia_with_reference_radius(smooth_image):
    """Default radius (REFERENCE_RADIUS · 2**σ, σ = 0) and PS 32 match kornia with to_laf_scale_ori."""
    theta = np.array([0.0, 1.0, 2.0, 4.0])
    ours = extract_patches(Pyramid(smooth_image), XY, 0.0, theta, 32)
    ref = _kornia_patches(smooth_image, XY, 0.0, theta, 32)
    assert np.abs(ours[:, 0] - ref).mean() < 1e-3
    # a wrong orientation sign would not match
    wrong = _kornia_patches(smooth_image, XY, 0.0, -theta, 32)
    assert np.abs(ours[1:, 0] - wrong[1:]).mean() > 1e-2


def test_patch_at_integer_keypoint_samples_pixel_values(smooth_image):
    """Pixel centres are at integers: a θ=0, σ=0 patch at integer (x, y) copies image pixels exactly."""
    ps = 31
    x, y = 70, 60
    p = extract_patches(Pyramid(smooth_image), np.array([[x, y]], float), 0.0, 0.0, ps, radius=ps / 2)[0, 0]
    np.testing.assert_allclose(p, smooth_image[y - 15 : y + 16, x - 15 : x + 16], atol=1e-6)


@pytest.mark.parametrize("ps", [31, 32])
@pytest.mark.parametrize("theta", [0.0, 0.6, math.pi / 2, 4.0])
def test_grid_points_centre_is_keypoint(ps, theta):
    """The centre of the cell grid is the keypoint: the middle cell (odd PS) or the mean of the 4 middle cells (even)."""
    xy = np.array([40.25, 33.5])
    g = grid_points(xy, 0.7, theta, ps)
    assert g.shape == (ps, ps, 2)
    if ps % 2:
        np.testing.assert_allclose(g[ps // 2, ps // 2], xy, atol=1e-9)
    else:
        m = ps // 2
        np.testing.assert_allclose(g[m - 1 : m + 1, m - 1 : m + 1].reshape(-1, 2).mean(0), xy, atol=1e-9)
    np.testing.assert_allclose(g.reshape(-1, 2).mean(0), xy, atol=1e-9)


def test_grid_points_layout_at_theta_zero():
    """θ = 0, σ = 0, PS 32: cell (i, j) sits at (x + j − 15.5, y + i − 15.5), one pixel apart."""
    g = grid_points(np.array([50.0, 40.0]), 0.0, 0.0, 32)
    jj, ii = np.meshgrid(np.arange(32), np.arange(32))
    np.testing.assert_allclose(g[..., 0], 50.0 + jj - 15.5, atol=1e-9)
    np.testing.assert_allclose(g[..., 1], 40.0 + ii - 15.5, atol=1e-9)


def test_grid_points_follow_frame_formula():
    """Cell (i, j) is at (x, y) + A·(u_j, u_i) with A = r·2**σ·R(θ) and u_k = (2k+1)/PS − 1."""
    xy, s, t, ps = np.array([12.0, -3.0]), 0.8, 2.2, 8
    g = grid_points(xy, s, t, ps)
    A = REFERENCE_RADIUS * 2**s * rotation_matrix(t)
    u = (2 * np.arange(ps) + 1) / ps - 1
    for i in (0, 3, 7):
        for j in (0, 5, 7):
            np.testing.assert_allclose(g[i, j], xy + A @ np.array([u[j], u[i]]), atol=1e-9)


def test_sampling_matrix_maps_patch_pixels_to_grid_points():
    """sampling_matrix maps (col, row) to the same points as grid_points."""
    xy, s, t, ps = np.array([30.0, 20.0]), -0.4, 1.3, 16
    M = sampling_matrix(xy, s, t, REFERENCE_RADIUS, ps)
    g = grid_points(xy, s, t, ps)
    for i, j in [(0, 0), (3, 11), (15, 15)]:
        np.testing.assert_allclose(M @ np.array([j, i, 1.0]), g[i, j], atol=1e-9)


@pytest.mark.parametrize(
    "sigma, tol_px", [(0.0, 0.01), (1.0, 0.01), (-1.0, 0.01), (2.0 / 3.0, 0.1), (1.5, 0.1)]
)
@pytest.mark.parametrize("theta", [0.0, 0.9])
def test_patch_of_linear_image_equals_image_at_grid_points(sigma, tol_px, theta):
    """On a linear image, every pyramid level samples the positions of grid_points (octave levels exactly;
    levels between octaves within 0.1 px, the jitter of cv2's non-integer INTER_AREA, with no bias)."""
    h, w = 300, 360
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    grad = np.array([0.0011, -0.0007])
    img = (grad[0] * xx + grad[1] * yy + 0.4).astype(np.float32)
    xy = np.array([[170.3, 150.6], [200.0, 140.0]])
    p = extract_patches(Pyramid(img), xy, sigma, theta, 32)
    for n in range(2):
        g = grid_points(xy[n], sigma, theta, 32)
        err_px = (p[n, 0] - (g @ grad + 0.4)) / np.linalg.norm(grad)  # position error along the gradient
        assert np.abs(err_px).max() < tol_px
        assert abs(err_px.mean()) < 0.01


def test_patch_at_theta_90_is_clockwise_rot90_of_upright_patch(smooth_image):
    """A patch cut at θ = π/2 shows the content rotated by −θ: np.rot90(P0, k=−1) (clockwise as displayed)."""
    pyr = Pyramid(smooth_image)
    p0 = extract_patches(pyr, XY, 0.0, 0.0, 32)[:, 0]
    p90 = extract_patches(pyr, XY, 0.0, math.pi / 2, 32)[:, 0]
    for n in range(len(XY)):
        np.testing.assert_allclose(p90[n], np.rot90(p0[n], k=-1), atol=1e-5)
        assert np.abs(p90[n] - np.rot90(p0[n], k=1)).mean() > 1e-2  # the other direction is wrong
    # and −π/2 rotates the content counter-clockwise
    pm90 = extract_patches(pyr, XY, 0.0, -math.pi / 2, 32)[:, 0]
    for n in range(len(XY)):
        np.testing.assert_allclose(pm90[n], np.rot90(p0[n], k=1), atol=1e-5)


def test_patch_at_theta_pi_is_rot180(smooth_image):
    """θ = π turns the patch upside down."""
    pyr = Pyramid(smooth_image)
    p0 = extract_patches(pyr, XY[:2], 0.0, 0.0, 31)[:, 0]
    p180 = extract_patches(pyr, XY[:2], 0.0, math.pi, 31)[:, 0]
    for n in range(2):
        np.testing.assert_allclose(p180[n], np.rot90(p0[n], k=2), atol=1e-5)


def test_scale_one_equals_patch_of_half_size_image():
    """σ = 1 equals the σ = 0 patch of the image shrunk ×2 with INTER_AREA, at ((x+0.5)/2 − 0.5, (y+0.5)/2 − 0.5)."""
    from conftest import make_smooth_image

    img = make_smooth_image(240, 320, seed=4, blur=1.0)
    xy = np.array([[160.0, 120.0], [150.3, 101.7], [201.5, 130.25]])
    p1 = extract_patches(Pyramid(img), xy, 1.0, 0.0, 32)[:, 0]
    half = cv2.resize(img, (160, 120), interpolation=cv2.INTER_AREA)
    xy_half = (xy + 0.5) / 2.0 - 0.5
    ref = extract_patches(Pyramid(half), xy_half, 0.0, 0.0, 32)[:, 0]
    assert np.abs(p1 - ref).mean() < 1e-3
    # and it is anti-aliased: not the same as point-sampling the full-resolution image
    aliased = _kornia_patches(img, xy, 1.0, np.zeros(3), 32)
    assert np.abs(p1 - aliased).mean() > 5 * np.abs(p1 - ref).mean()


def test_scale_uses_matching_pyramid_level_for_shrinking():
    """A patch at σ = 2 is (nearly) the σ = 0 patch of the image shrunk ×4."""
    from conftest import make_smooth_image

    img = make_smooth_image(256, 256, seed=5, blur=1.0)
    xy = np.array([[128.0, 128.0], [120.5, 140.25]])
    p2 = extract_patches(Pyramid(img), xy, 2.0, 0.0, 16)[:, 0]
    quarter = cv2.resize(img, (64, 64), interpolation=cv2.INTER_AREA)
    ref = extract_patches(Pyramid(quarter), (xy + 0.5) / 4 - 0.5, 0.0, 0.0, 16)[:, 0]
    assert np.abs(p2 - ref).mean() < 0.02


def test_multiple_windows_stack_channels(smooth_image):
    """windows=(1, 2) gives 2 channels: the second equals the σ+1 patch."""
    pyr = Pyramid(smooth_image)
    p = extract_patches(pyr, XY[:2], 0.0, 0.3, 32, windows=(1.0, 2.0))
    assert p.shape == (2, 2, 32, 32)
    np.testing.assert_allclose(p[:, 1], extract_patches(pyr, XY[:2], 1.0, 0.3, 32)[:, 0], atol=1e-6)


def test_rgb_patches_are_channels_first(smooth_image):
    """An H×W×3 image gives (N, 3, PS, PS) patches, channel c from image channel c."""
    rgb = np.stack([smooth_image, 1 - smooth_image, 0.5 * smooth_image], -1)
    p = extract_patches(Pyramid(rgb), XY[:2], 0.0, 0.4, 32)
    g = extract_patches(Pyramid(smooth_image), XY[:2], 0.0, 0.4, 32)[:, 0]
    assert p.shape == (2, 3, 32, 32)
    np.testing.assert_allclose(p[:, 0], g, atol=1e-6)
    np.testing.assert_allclose(p[:, 1], 1 - g, atol=1e-5)


def test_window_margin_is_rotated_half_diagonal():
    """window_margin = √2 · r · max(window) · 2**σ_max."""
    assert window_margin((1.0,)) == pytest.approx(math.sqrt(2) * 16)
    assert window_margin((1.0, 1.5), 1.0) == pytest.approx(math.sqrt(2) * 16 * 1.5 * 2)


# ----------------------------------------------------------------------------- image validation


def test_check_image_uint8_scaled_to_unit_range():
    """uint8 becomes float32 /255; H×W×1 becomes H×W; RGBA drops alpha."""
    img = np.full((20, 30), 255, np.uint8)
    out = check_image(img)
    assert out.dtype == np.float32 and out.shape == (20, 30) and float(out.max()) == 1.0
    assert check_image(img[..., None]).shape == (20, 30)
    assert check_image(np.zeros((20, 30, 4), np.uint8)).shape == (20, 30, 3)
    assert float(check_image(np.full((16, 16), 65535, np.uint16)).max()) == 1.0


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((10, 10), np.uint8),  # too small
        np.zeros((15, 100), np.float32),  # one side too small
        np.full((20, 20), np.nan, np.float32),  # NaN
        np.full((20, 20), np.inf, np.float64),  # inf
        np.zeros((20, 20, 2), np.uint8),  # 2 channels
        np.zeros((20, 20, 3, 1), np.uint8),  # 4-D
        np.full((20, 20), 2.0, np.float32),  # float outside [0, 1]
        np.full((20, 20), -0.5, np.float64),  # negative float
        np.zeros((20, 20), np.int32),  # unsupported dtype
        [[0.0] * 20] * 20,  # not an array
        None,
    ],
    ids=[
        "10x10",
        "15x100",
        "nan",
        "inf",
        "HxWx2",
        "4d",
        "float>1",
        "float<0",
        "int32",
        "list",
        "none",
    ],
)
def test_check_image_rejects_bad_input(bad):
    """Bad images raise InputError (a ValueError) with a message; check_gray raises the same one."""
    from patchpose.data.patches import check_gray, gray_codes

    with pytest.raises(InputError) as info:
        check_image(bad)
    assert isinstance(info.value, ValueError)
    assert str(info.value)
    with pytest.raises(InputError) as gray:
        check_gray(bad)
    assert str(gray.value) == str(info.value)
    with pytest.raises(InputError) as codes:
        gray_codes(bad)
    assert str(codes.value) == str(info.value)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64])
@pytest.mark.parametrize("channels", [None, 1, 3, 4])
def test_check_gray_is_check_image_then_gray_in_strips(dtype, channels, monkeypatch):
    """check_gray equals to_gray(check_image(...)) bit for bit, in strips of a few rows (a last strip thinner
    than the smallest image side); a bad value in one strip gives the whole image's message."""
    import patchpose.data.patches as patches

    monkeypatch.setattr(patches, "_STRIP_PIXELS", 7 * 33)  # strips of 7 rows: 40 = 5 × 7 + 5
    rng = np.random.default_rng(0)
    top = {np.uint8: 255, np.uint16: 65535}.get(dtype, 1.0)
    shape = (40, 33) if channels is None else (40, 33, channels)
    img = (rng.random(shape) * top).astype(dtype)
    got = patches.check_gray(img)
    assert got.dtype == np.float32 and got.shape == (40, 33)
    np.testing.assert_array_equal(got, patches.to_gray(check_image(img)))
    if channels in (3, 4):  # a BGR view, and strips of one row (a width over the strip's pixels)
        np.testing.assert_array_equal(
            patches.check_gray(img[..., 2::-1]), patches.to_gray(check_image(img[..., 2::-1]))
        )
        monkeypatch.setattr(patches, "_STRIP_PIXELS", 20)
        np.testing.assert_array_equal(patches.check_gray(img), got)
    # the compact pyramid's codes of the same gray image, in the same strips: within half a step
    codes = patches.gray_codes(img)
    assert codes.dtype == np.uint16 and codes.shape == (40, 33)
    decoded = (codes.astype(np.float64) - patches.GRAY_ZERO) * patches.GRAY_STEP
    assert np.abs(decoded - got).max() <= 0.51 * patches.GRAY_STEP
    if dtype == np.uint8 and channels in (None, 1):  # 8-bit gray: every value is a code exactly
        np.testing.assert_array_equal(codes, 128 + 256 * img.reshape(40, 33).astype(np.uint16))
    if dtype in (np.float32, np.float64):
        img[30, 4] = 1.5
        with pytest.raises(InputError, match=r"values in \[.*, 1.5\]") as info:
            patches.check_gray(img)
        with pytest.raises(InputError) as whole:
            check_image(img)
        assert str(info.value) == str(whole.value)
        with pytest.raises(InputError) as coded:
            patches.gray_codes(img)
        assert str(coded.value) == str(whole.value)


def test_compact_pyramid_samples_what_the_float_one_does():
    """A compact pyramid (uint16 codes, half the memory) samples within a few code steps of the float pyramid of
    the same gray image (each level rounds once more), patches and log-polar rings alike;
    outside the image a constant border is exactly 0 and a reflected one the float pyramid's."""
    from patchpose.data.patches import GRAY_STEP, check_gray
    from patchpose.data.polar import PolarGrid, extract_polar

    rng = np.random.default_rng(3)
    img = cv2.GaussianBlur((rng.random((150, 170, 3)) * 255).astype(np.uint8), (0, 0), 1.0)
    ref, small = Pyramid(check_gray(img)), Pyramid.compact(img)
    assert [lv.dtype for lv in small.levels] == [np.dtype(np.uint16)] * len(ref.levels)
    assert sum(lv.nbytes for lv in small.levels) * 2 == sum(lv.nbytes for lv in ref.levels)
    assert np.abs(small.image() - ref.image()).max() <= 0.51 * GRAY_STEP
    xy = np.concatenate([rng.uniform(0, 170, (30, 1)), rng.uniform(0, 150, (30, 1))], 1)
    xy[0] = (-5000.0, -5000.0)  # every sample outside the image
    s, t = rng.uniform(-1.5, 2.5, 30), rng.uniform(0, 2 * math.pi, 30)
    grid = PolarGrid()
    for border in ("reflect", "constant"):
        a, b = (
            extract_patches(ref, xy, s, t, 24, border=border),
            extract_patches(small, xy, s, t, 24, border=border),
        )
        assert np.abs(a - b).max() <= 3 * GRAY_STEP
        a, b = extract_polar(ref, xy, s, t, grid, border), extract_polar(small, xy, s, t, grid, border)
        assert np.abs(a - b).max() <= 3 * GRAY_STEP
        if border == "constant":
            assert (b[0] == 0).all()
        else:
            assert (np.abs(b[0]) > 0).any()


def test_load_image_gives_rgb_swapped_in_strips(tmp_path, monkeypatch):
    """load_image returns the file's pixels as RGB (OpenCV decodes BGR), swapped in place strip by strip."""
    import patchpose.data.patches as patches

    rgb = (np.random.default_rng(0).random((37, 23, 3)) * 255).astype(np.uint8)
    cv2.imwrite(str(tmp_path / "a.png"), rgb[..., ::-1])
    monkeypatch.setattr(patches, "_STRIP_PIXELS", 5 * 23)  # strips of 5 rows: 37 = 7 × 5 + 2
    np.testing.assert_array_equal(load_image(tmp_path / "a.png"), rgb)


def test_load_image_rejects_non_image_file(tmp_path):
    """A file that is not an image, an empty file or a missing path raise InputError."""
    txt = tmp_path / "notes.png"
    txt.write_text("this is not an image\n")
    with pytest.raises(InputError):
        load_image(txt)
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    with pytest.raises(InputError):
        load_image(empty)
    with pytest.raises(InputError):
        load_image(tmp_path / "missing.png")
    with pytest.raises(InputError):
        load_image(tmp_path)  # a directory


def test_load_image_returns_rgb_uint8(tmp_path):
    """load_image returns H×W×3 uint8 in RGB order (cv2 writes BGR)."""
    bgr = np.zeros((20, 24, 3), np.uint8)
    bgr[..., 0] = 200  # blue in BGR
    path = tmp_path / "blue.png"
    assert cv2.imwrite(str(path), bgr)
    rgb = load_image(path)
    assert rgb.shape == (20, 24, 3) and rgb.dtype == np.uint8
    assert rgb[0, 0].tolist() == [0, 0, 200]


def test_one_channel_float_tiffs_are_read_and_other_floats_are_told_the_range(tmp_path, capfd):
    """OpenCV reads a gray float32 TIFF only as it is: it was "cannot decode" after an OpenCV [ERROR] line; a
    float file in [0, 255] is told that floats are read in [0, 1] (it was told to pass uint8 arrays)."""
    g = np.arange(256, dtype=np.float32)[None, :].repeat(40, 0)
    assert cv2.imwrite(str(tmp_path / "g.tif"), g / 255.0) and cv2.imwrite(str(tmp_path / "g255.tif"), g)
    img = load_image(tmp_path / "g.tif")
    assert img.shape == (40, 256, 3) and np.abs(img[:, :, 1].astype(int) - np.arange(256)).max() <= 1
    assert "ERROR" not in capfd.readouterr().err
    with pytest.raises(InputError, match=r"read as values in \[0, 1\].*holds values in \[0, 255\]"):
        load_image(tmp_path / "g255.tif")


def test_sixteen_bit_files_keep_the_contrast_of_their_bit_depth(tmp_path):
    """12-bit data in a 16-bit PNG reads like the same picture in 8 bits (not cut to 16 grey levels); full
    16-bit range too."""
    from patchpose.data.patches import load_image

    g = np.arange(256, dtype=np.uint16)[None, :].repeat(40, 0)
    cv2.imwrite(str(tmp_path / "g8.png"), g.astype(np.uint8))
    cv2.imwrite(str(tmp_path / "g12.png"), g * 16)  # values 0…4080: 12 bits
    cv2.imwrite(str(tmp_path / "g16.png"), g * 257)  # values 0…65535
    ref = load_image(tmp_path / "g8.png").astype(int)
    for name in ("g12.png", "g16.png"):
        img = load_image(tmp_path / name)
        assert img.dtype == np.uint8 and img.shape == (40, 256, 3)
        assert np.abs(img.astype(int) - ref).max() <= 1


def test_uint16_arrays_are_read_by_their_bit_depth_as_16_bit_files_are(tmp_path, monkeypatch):
    """A uint16 array was divided by 65535 (and cut to white past 1 by the detectors' 8-bit gray): 12-bit data
    read nearly black and gave almost no keypoints, where the same data saved as a 16-bit PNG read as its 8-bit
    picture. Arrays are now read by their bit depth, as files are (in strips, by the whole image's)."""
    import patchpose.data.patches as patches
    from patchpose.data.keypoints import as_uint8_gray, detect_sift
    from patchpose.data.patches import check_gray, load_image, uint16_white

    g = cv2.GaussianBlur((np.random.default_rng(0).random((64, 64)) * 255).astype(np.uint8), (3, 3), 1.0)
    g12 = g.astype(np.uint16) * 16  # 12-bit data: 0…4080
    cv2.imwrite(str(tmp_path / "g12.png"), g12)
    from_file = load_image(tmp_path / "g12.png")[:, :, 0]
    assert uint16_white(g12) == 4095 and uint16_white(g.astype(np.uint16)) == 255
    assert uint16_white(np.full((4, 4), 65535, np.uint16)) == 65535
    assert np.abs(as_uint8_gray(g12).astype(int) - from_file).max() <= 1
    assert np.abs(as_uint8_gray(np.dstack([g12] * 3)).astype(int) - from_file).max() <= 1
    np.testing.assert_allclose(check_image(g12), check_image(from_file), atol=1.0 / 255)
    np.testing.assert_array_equal(check_image(g.astype(np.uint16)), check_image(g))  # 8-bit values: as uint8
    monkeypatch.setattr(patches, "_STRIP_PIXELS", 64 * 5)  # strips of 5 rows: each its own largest value
    dim = np.dstack([g12] * 3)
    dim[:32] //= 16  # the top half darker: its strips alone would read as 8-bit data
    np.testing.assert_array_equal(check_gray(dim), patches.to_gray(check_image(dim)))
    assert len(detect_sift(g12, 100)[0]) == len(detect_sift(from_file, 100)[0]) > 10


def _image_files(tmp_path) -> list:
    """Files of each kind load_image reads: 8-bit colour, gray and RGBA PNGs, 12- and 16-bit PNGs, an 8-bit and a
    one-channel float TIFF, a JPEG with EXIF orientation 6; and files it refuses: not an image, empty, a float TIFF
    in [0, 255]."""
    rng = np.random.default_rng(3)
    g = (rng.random((40, 56)) * 255).astype(np.uint8)
    files = {
        "rgb.png": np.dstack([g, g[::-1], 255 - g]),
        "gray.png": g,
        "rgba.png": np.dstack([g, g, 255 - g, g // 2]),
        "g12.png": g.astype(np.uint16) * 16,
        "g16.png": g.astype(np.uint16) * 257,
        "rgb.tif": np.dstack([g, 255 - g, g]),
        "f.tif": g.astype(np.float32) / 255.0,
        "f255.tif": g.astype(np.float32),
    }
    for name, a in files.items():
        assert cv2.imwrite(str(tmp_path / name), a)
    Image = pytest.importorskip("PIL.Image")
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(np.dstack([g] * 3)).save(tmp_path / "turned.jpg", exif=exif.tobytes(), quality=95)
    (tmp_path / "text.png").write_text("this is not an image\n")
    (tmp_path / "empty.jpg").write_bytes(b"")
    return sorted(tmp_path.iterdir())


def test_bytes_read_already_are_decoded_as_the_file_is(tmp_path, monkeypatch):
    """``load_image(path, data=[bytes])`` (``patchpose extract``: the bytes hashed, then decoded) gives the file's
    pixels bit for bit, or its error word for word, for every kind of file and either EXIF setting, the header's
    pixel limit too; the list is emptied (the bytes let go once decoded)."""
    from patchpose.data.image_header import MAX_PIXELS_ENV

    def read(path, exif, data=None):
        try:
            return load_image(path, exif, data=data)
        except InputError as e:
            return str(e)

    for path in _image_files(tmp_path):
        for exif in (True, False):
            data = [path.read_bytes()]
            want, got = read(path, exif), read(path, exif, data)
            assert data == []
            if isinstance(want, str):
                assert got == want, path.name
            else:
                assert got.dtype == want.dtype == np.uint8 and got.shape == want.shape, path.name
                np.testing.assert_array_equal(got, want, err_msg=path.name)
    viewed = load_image(tmp_path / "turned.jpg", data=[(tmp_path / "turned.jpg").read_bytes()])
    assert viewed.shape == (56, 40, 3)  # turned as EXIF says
    assert isinstance(read(tmp_path / "f255.tif", True), str) and isinstance(
        read(tmp_path / "text.png", True), str
    )
    monkeypatch.setenv(MAX_PIXELS_ENV, "2000")  # 40 × 56 = 2,240 pixels: over the limit, from the header
    monkeypatch.setattr(cv2, "imdecode", None)  # refused before anything is decoded
    for name in ("rgb.png", "turned.jpg", "rgb.tif"):
        with pytest.raises(InputError, match="2,000"):
            load_image(tmp_path / name, data=[(tmp_path / name).read_bytes()])


def test_load_image_turns_by_exif_orientation_unless_asked_for_the_stored_pixels(tmp_path):
    """A JPEG stored 60 wide, 40 high with EXIF orientation 6 (turn 90° clockwise to view) reads 40 wide as photo
    viewers show it; with ``exif_orientation=False`` as stored, as COLMAP reads it (``patchpose colmap``)."""
    Image = pytest.importorskip("PIL.Image")
    from patchpose.data.patches import load_image

    stored = np.zeros((40, 60, 3), np.uint8)
    stored[:, :30] = 255  # the left half white
    exif = Image.Exif()
    exif[0x0112] = 6
    path = tmp_path / "portrait.jpg"
    Image.fromarray(stored).save(path, exif=exif.tobytes(), quality=95)
    viewed, raw = load_image(path), load_image(path, exif_orientation=False)
    assert raw.shape == (40, 60, 3) and raw[:, :30].mean() > 200 and raw[:, 30:].mean() < 50
    # turned 90° clockwise: the stored left half is now the top
    assert viewed.shape == (60, 40, 3) and viewed[:30].mean() > 200 and viewed[30:].mean() < 50
