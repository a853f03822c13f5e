"""Log-polar sampling (``patchpose.data.polar``): the grid's geometry, the direction of the shifts, rendered
views and later reads of a view."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import make_textured_image
from patchpose.conventions import REFERENCE_RADIUS
from patchpose.data.patches import Pyramid
from patchpose.data.polar import PolarGrid, extract_polar, polar_margin, render_view_polar
from patchpose.models import create_model

GRID = PolarGrid()  # 25 rings, 36 angles, 3 rings per octave
NET_GRID = create_model("polar-cnn").cfg.polar_grid  # 31 rings
XY = np.array([[200.0, 200.0]])


@pytest.fixture(scope="module")
def pyr():
    return Pyramid(make_textured_image(400))


def test_grid_radii_and_angles():
    r = GRID.log2_radii()
    assert len(r) == 25 and r[12] == 0.0 and np.allclose(np.diff(r), 1 / 3)
    assert GRID.max_radius() == pytest.approx(REFERENCE_RADIUS * 16)
    assert GRID.angles_rad()[9] == pytest.approx(math.pi / 2)
    assert polar_margin(GRID) == pytest.approx(REFERENCE_RADIUS * 4)
    with pytest.raises(ValueError):
        PolarGrid(rings=0)


@pytest.mark.parametrize(
    "offset, ring, angle",
    [((32.0, 0.0), 15, 0), ((0.0, -32.0), 15, 9), ((-16.0, 0.0), 12, 18), ((0.0, 64.0), 18, 27)],
)
def test_a_dot_lands_on_its_ring_and_angle(offset, ring, angle):
    """Ring k has radius 16·2^((k−12)/3) px; angle j points at 10°·j counter-clockwise as displayed."""
    img = np.zeros((300, 300), np.float32)
    x, y = 150 + offset[0], 150 + offset[1]
    yy, xx = np.mgrid[0:300, 0:300]
    img += np.exp(-((xx - x) ** 2 + (yy - y) ** 2) / (2 * 1.5**2)).astype(np.float32)
    p = extract_polar(Pyramid(img), np.array([[150.0, 150.0]]), 0.0, 0.0, GRID)[0, 0]
    k, j = np.unravel_index(np.argmax(p), p.shape)
    assert (k, j) == (ring, angle)


def test_ring_levels():
    """Rings read the level whose spacing is the largest not above their angular spacing."""
    step = np.array([0.5, 1.0, 2.0 ** (1 / 3), 2.0, 1e6])
    assert GRID.ring_levels(step, 30).tolist() == [0, 0, 1, 3, 29]


def test_view_min_step_smooths_only_the_rings_finer_than_a_view_pixel():
    """view_min_step = 1 at a frame of scale 1 (a view pixel is 2 image pixels): rings whose angular spacing is
    under one view pixel are read from a coarser level (smoother); the others are sampled exactly as before."""
    noise = Pyramid(np.random.default_rng(1).random((300, 300)).astype(np.float32))
    grid = PolarGrid(rings=31, angles=36)
    xy = np.array([[150.0, 150.0]])
    plain = extract_polar(noise, xy, 1.0, 0.0, grid)[0, 0]
    smooth = extract_polar(noise, xy, 1.0, 0.0, PolarGrid(rings=31, angles=36, view_min_step=1.0))[0, 0]
    view_step = REFERENCE_RADIUS * np.exp2(grid.log2_radii()) * 2 * math.pi / 36  # view pixels
    fine = view_step < 1.0 - 1e-9
    # rings at least a view pixel apart: untouched; finer ones from a coarser level, unless already there
    np.testing.assert_array_equal(smooth[~fine], plain[~fine])
    image_step = view_step * 2.0
    moved = fine & (np.floor(3 * np.log2(image_step) + 1e-6) < 3)
    assert moved.any() and np.all(np.any(smooth[moved] != plain[moved], axis=1))
    assert smooth[moved].std() < plain[moved].std()
    with pytest.raises(ValueError, match="invalid polar grid"):
        PolarGrid(view_min_step=-1.0)


def test_pose_shifts_are_exact_ring_and_angle_shifts(pyr):
    """A frame smaller by 1/3 octave and turned by −10° shows the content enlarged and turned CCW: the
    samples move one ring outwards and one angle step up, exactly (same pyramid level, same points)."""
    xy = np.array([[180.0, 210.0], [230.5, 190.25]])
    a = extract_polar(pyr, xy, 0.4, 0.3, GRID)
    b = extract_polar(pyr, xy, 0.4 - 1 / 3, 0.3 - math.pi / 18, GRID)
    assert a.shape == (2, 1, 25, 36)
    np.testing.assert_array_equal(b[:, :, 1:], np.roll(a, 1, axis=3)[:, :, :-1])
    assert not np.array_equal(a, b)


def test_color_channels_and_empty_input():
    img = np.random.default_rng(0).random((120, 120, 3)).astype(np.float32)
    p = extract_polar(Pyramid(img), np.array([[60.0, 60.0]]), 0.0, 0.0, GRID)
    assert p.shape == (1, 3, 25, 36)
    # the innermost ring (radius 1 px) of channel c reads channel c of the image
    assert np.allclose(p[0, :, 0].mean(1), img[59:62, 59:62].reshape(-1, 3).mean(0), atol=0.15)
    assert extract_polar(Pyramid(img), np.zeros((0, 2)), 0.0, 0.0, GRID).shape == (0, 3, 25, 36)


class OnePhoto:
    """A photo pool of one photo (``pyr``) and two keypoints, for :func:`sample_pairs`."""

    color = "gray"

    def __init__(self, pyr):
        self.pyramids, self.keypoints = [pyr], [np.array([[200.0, 200.0], [190.0, 215.0]])]

    def __len__(self):
        return 1


def one_photo_pairs(pyr, seed: int, n: int, cfg, **kw):
    """:func:`sample_pairs` of ``n`` pairs on :class:`OnePhoto` with a fresh generator of ``seed``, 32 px
    views at one window."""
    from patchpose.data.pairs import sample_pairs

    return sample_pairs(np.random.default_rng(seed), OnePhoto(pyr), n, cfg, 32, [1.0], **kw)


def test_resampled_training_views(pyr):
    """data.resample renders that share of the views as warped crops: close to, not equal to, the direct
    samples; 0 leaves every view direct."""
    from patchpose.data.pairs import PairConfig

    kw = dict(mode="rotation", augment=False, polar=NET_GRID)
    direct = one_photo_pairs(pyr, 3, 8, PairConfig(), **kw)
    again = one_photo_pairs(pyr, 3, 8, PairConfig(resample=0.0), **kw)
    warped = one_photo_pairs(pyr, 3, 8, PairConfig(resample=1.0), **kw)
    np.testing.assert_array_equal(direct["patch_b"], again["patch_b"])
    np.testing.assert_array_equal(direct["d_ori"], warped["d_ori"])
    assert not np.allclose(direct["patch_b"], warped["patch_b"], atol=1e-3)
    assert np.corrcoef(direct["patch_b"].ravel(), warped["patch_b"].ravel())[0, 1] > 0.95


def test_rendered_views_are_not_grid_aligned(pyr):
    """The benchmark's two-stage rendering looks like the direct samples, but a view turned by a whole
    angle step is not an exact roll of the reference (interpolation happens in the warped image)."""
    g = PolarGrid(rings=19)
    xy = np.array([[200.0, 200.0]])
    direct = extract_polar(pyr, xy, 0.0, 0.0, g)
    ref = render_view_polar(pyr, xy, 0.0, 0.0, g)
    turned = render_view_polar(pyr, xy, 0.0, -math.pi / 18, g)
    assert np.corrcoef(direct.ravel(), ref.ravel())[0, 1] > 0.98
    assert np.corrcoef(np.roll(ref, 1, 3).ravel(), turned.ravel())[0, 1] > 0.97
    assert not np.allclose(np.roll(ref, 1, 3), turned, atol=1e-3)


def test_extract_polar_with_an_affine_shape_samples_the_stretched_points():
    """shape=P reads ring k, direction α at xy + r_k·R(θ)·P·(cos α, −sin α); P = I changes nothing."""
    from patchpose.data.patches import Pyramid
    from patchpose.data.polar import PolarGrid, extract_polar

    xg, yg = np.meshgrid(np.arange(400, dtype=np.float32), np.arange(300, dtype=np.float32))
    img = (xg / 400.0).astype(np.float32)  # intensity = x / 400: a sample reads its own x
    pyr = Pyramid(img)
    grid = PolarGrid(7, 12, 3)
    xy = np.array([[200.0, 150.0]])
    plain = extract_polar(pyr, xy, -1.0, 0.4, grid)
    np.testing.assert_allclose(
        extract_polar(pyr, xy, -1.0, 0.4, grid, shape=np.eye(2)[None]), plain, atol=1e-6
    )
    P = np.array([[[1.5, 0.0], [0.0, 1 / 1.5]]])
    got = extract_polar(pyr, xy, -1.0, 0.4, grid, shape=P)[0, 0]
    r = 16.0 * 2.0 ** (grid.log2_radii() - 1.0)
    a = grid.angles_rad()
    c, s = np.cos(0.4), np.sin(0.4)
    off = np.array([[c, s], [-s, c]]) @ P[0] @ np.stack([np.cos(a), -np.sin(a)])  # (2, A)
    want = (200.0 + r[:, None] * off[0][None]) / 400.0
    inner = r < 20  # level 0 (no pyramid smoothing of the ramp)
    np.testing.assert_allclose(got[inner], want[inner], atol=2e-4)


def _checkerboard(n: int = 400) -> np.ndarray:
    """A 1-pixel checkerboard: detail at the finest scale a photo has, none once it is halved."""
    yy, xx = np.mgrid[0:n, 0:n]
    return ((xx + yy) % 2).astype(np.float32)


def test_a_later_read_of_a_view_comes_from_the_view_not_the_photo():
    """``read_scale``/``read_theta``: the grid laid again on the *same* rendered view. A view rendered at half
    resolution (σ = +1) of a 1-px checkerboard is flat gray; read again one octave finer it stays flat (its
    blur, as in a real image), while the photo re-rendered at that pose would show the checkerboard.
    At pose (0, 0) the samples are exactly those of a first read."""
    pyr = Pyramid(_checkerboard())
    grid = PolarGrid(13, 36, 3, view_min_step=1.0)  # the inner rings sample finer than a pixel
    xy = np.array([[200.0, 200.0]])
    first = render_view_polar(pyr, xy, 1.0, 0.3, grid)
    np.testing.assert_array_equal(
        render_view_polar(pyr, xy, 1.0, 0.3, grid, read_scale=0.0, read_theta=0.0), first
    )
    again = render_view_polar(pyr, xy, 1.0, 0.3, grid, read_scale=-1.0)
    rerendered = render_view_polar(pyr, xy, 0.0, 0.3, grid)
    inner = slice(0, 3)  # rings finer than a view pixel after the move
    assert again[..., inner, :].std() < 0.01
    assert rerendered[..., inner, :].std() > 0.04


def test_a_later_read_turned_by_whole_steps_reads_the_same_points(pyr):
    """``read_theta`` of whole angle steps rolls the samples exactly (the same points of the view)."""
    grid = PolarGrid(13, 36, 3, view_min_step=1.0)
    xy = np.array([[200.0, 200.0], [150.0, 230.0]])
    up = render_view_polar(pyr, xy, [0.4, -0.7], [0.2, 1.9], grid)
    step = 2 * math.pi / 36
    read = render_view_polar(pyr, xy, [0.4, -0.7], [0.2, 1.9], grid, read_theta=-3 * step)
    np.testing.assert_allclose(read, np.roll(up, 3, 3), atol=1e-5)  # grid turned back = content forward


@pytest.mark.parametrize("border", ["reflect", "constant"])
@pytest.mark.parametrize("color", [False, True])
def test_polar_reads_equal_fresh_samples_and_sample_each_ring_once(border, color, monkeypatch):
    """A read plan's reads (whole rings apart, per keypoint, from detector frames; view_min_step makes a ring's
    level depend on the frame above scale 0) gather what earlier reads sampled: every read equals
    extract_polar exactly, and a ring read again at the same level is not sampled again."""
    import patchpose.data.polar as polar

    img = make_textured_image(300)
    pyr = Pyramid(np.dstack([img, img[::-1], img[:, ::-1]]) if color else img)
    grid = PolarGrid(rings=31, view_min_step=1.0)
    rng = np.random.default_rng(0)
    xy = rng.uniform(-10, 310, (40, 2))  # some beyond the border
    frame0 = rng.normal(0, 0.7, 40)
    shifts = rng.integers(-9, 10, 40) / 3
    plan = (0.0, 0.0, shifts, shifts - 4 / 3, 2.0)
    want = [extract_polar(pyr, xy, frame0 + f, 0.0, grid, border) for f in (*plan, 0.1)]
    calls = []
    sample = polar._sample_rows
    monkeypatch.setattr(polar, "_sample_rows", lambda *a: calls.append(len(a[2])) or sample(*a))
    reads = polar.PolarReads(pyr, xy, frame0, grid, border)
    for frames, w in zip(plan, want):
        got = reads(frames)
        assert got.shape == w.shape == (40, 3 if color else 1, 31, 36)
        np.testing.assert_array_equal(got, w)
    # the first read samples every ring, the same frames again none, later reads only the rings they add
    assert len(calls) == 4 and calls[0] == 40 * 31 and all(0 < c < 40 * 31 for c in calls[1:])
    # frames that are not whole rings apart are sampled afresh, and still equal
    np.testing.assert_array_equal(reads(0.1), want[-1])


@pytest.mark.parametrize("border", ["reflect", "constant"])
@pytest.mark.parametrize("color", [False, True])
@pytest.mark.parametrize("frame", [0.0, 1.7])
def test_keypoints_in_one_frame_are_sampled_as_every_ring_alone(border, color, frame, monkeypatch):
    """Every keypoint in one frame (a plan's first read without detector scales) takes a faster path, per
    pyramid level with one offset row for all keypoints; its samples equal the per-ring path's bit for bit,
    and a plan's later reads gather them as before."""
    import cv2

    import patchpose.data.polar as polar

    img = make_textured_image(300)
    pyr = Pyramid(np.dstack([img, img[::-1], img[:, ::-1]]) if color else img)
    grid = PolarGrid(rings=31, view_min_step=1.0)
    xy = np.random.default_rng(1).uniform(-10, 310, (50, 2))  # some beyond the border
    r, lev = polar._radii_levels(pyr, grid, np.full(50, frame))
    assert len(np.unique(lev[0])) > 3  # several pyramid levels
    mode = cv2.BORDER_REFLECT_101 if border == "reflect" else cv2.BORDER_CONSTANT
    a = grid.angles_rad()[None, :]
    cos_a, sin_a = np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)
    fast = polar._sample_one_frame(pyr, xy, r[0], lev[0], cos_a, sin_a, mode)
    kp = np.repeat(np.arange(50), 31)
    rows = polar._sample_rows(pyr, xy, kp, r.ravel(), lev.ravel(), cos_a, sin_a, mode)
    np.testing.assert_array_equal(fast, rows.reshape(fast.shape))
    # the dispatcher takes the block path here, and the per-ring path for a grid too wide for one remap row
    # per level (or keypoints in frames of their own): the same numbers
    blocks = []
    one_frame = polar._sample_one_frame
    monkeypatch.setattr(polar, "_sample_one_frame", lambda *a: blocks.append(1) or one_frame(*a))
    np.testing.assert_array_equal(polar._sample(pyr, xy, r, lev, cos_a, sin_a, mode), fast)
    assert blocks == [1]
    monkeypatch.setattr(polar, "_REMAP_ROWS", 30 * 36)
    np.testing.assert_array_equal(polar._sample(pyr, xy, r, lev, cos_a, sin_a, mode), fast)
    assert blocks == [1]
    monkeypatch.undo()
    # the estimator's reads: the first in one frame, then per keypoint, each equal to a fresh per-ring read
    calls = []
    sample = polar._sample_rows
    monkeypatch.setattr(polar, "_sample_rows", lambda *a: calls.append(len(a[2])) or sample(*a))
    reads = polar.PolarReads(pyr, xy, frame, grid, border)
    shifts = np.random.default_rng(2).integers(-6, 7, 50) / 3
    for f in (0.0, shifts, shifts - 4 / 3):
        want = polar._sample_rows(
            pyr, xy, kp, *(v.ravel() for v in polar._radii_levels(pyr, grid, frame + np.broadcast_to(f, 50))),
            cos_a, sin_a, mode,
        )  # fmt: skip
        np.testing.assert_array_equal(reads(f), want.reshape(50, 31, 36, -1).transpose(0, 3, 1, 2))
    assert len(calls) == 3 + 2  # the 3 reference reads, and the rings the later 2 reads had not sampled


def test_a_two_read_plan_never_widens_the_reads_table():
    """The table the reads share is laid out once, wide enough for a two-read plan's reads: frames up to 4
    octaves from the first (the scale range) and the orientation up to 4 more away (the largest offset), so no
    later read copies it into a wider one; a read beyond that still widens it, and equals a fresh sample."""
    import patchpose.data.polar as polar

    img = make_textured_image(300)
    pyr = Pyramid(img)
    grid = PolarGrid(rings=31, view_min_step=1.0)
    xy = np.random.default_rng(3).uniform(40, 260, (20, 2))
    reads = polar.PolarReads(pyr, xy, 0.0, grid)
    reads(0.0)
    table = reads._val
    for frames in (4.0, -4.0, np.r_[[4.0] * 10, [-4.0] * 10], 8.0, -8.0, -4 - 4 / 3):
        reads(frames)
        assert reads._val is table, frames
    np.testing.assert_array_equal(reads(-9.0), extract_polar(pyr, xy, -9.0, 0.0, grid, "reflect"))
    assert reads._val is not table
