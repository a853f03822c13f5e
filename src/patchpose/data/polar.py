"""Log-polar sampling about a keypoint frame: the input of the ``polar-cnn`` networks.

A :class:`PolarGrid` samples ``rings × angles`` points about a keypoint with pose ``(σ, θ)``:

* ring ``k`` has radius ``REFERENCE_RADIUS · 2**(σ + (k − c) / rings_per_octave)`` pixels, with ``c`` the
  centre ring (``(rings − 1) / 2``), so consecutive rings are ``1/rings_per_octave`` octave apart;
* angle ``j`` is the direction ``α_j + θ`` with ``α_j = 2π j / angles``, counter-clockwise as displayed:
  the point is ``(x, y) + radius · (cos(α_j + θ), −sin(α_j + θ))``.

This is the same frame as :mod:`patchpose.conventions` (``A = r·2**σ·R(θ)``): the sample at angle ``α`` is
the frame's patch point ``(cos α, −sin α)``. Hence, by construction,

* enlarging the content about the keypoint by ``2**Δs`` moves it ``Δs · rings_per_octave`` rings
  **outwards** (higher ring index), and
* rotating the content counter-clockwise by ``Δo`` moves it ``Δo / (2π/angles)`` samples towards
  **higher** angle indices (cyclically),

which is exactly how the scale and orientation histograms move (``tests/data/test_polar.py`` pins both).

Each ring is read from the pyramid level whose pixel spacing is the largest not above the ring's
angular sample spacing ``2π·radius/angles`` (anti-aliasing, as :func:`~patchpose.data.patches.extract_patches`
does for a whole patch), with bilinear interpolation by ``cv2.remap``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from ..conventions import REFERENCE_RADIUS, TWO_PI, rotation_matrix
from .patches import LEVELS_PER_OCTAVE, Pyramid, as_frames, check_warp_size

_REMAP_ROWS = 30000  # cv2.remap wants maps smaller than 32767 in each dimension


@dataclass(frozen=True)
class PolarGrid:
    rings: int = 25
    angles: int = 36
    rings_per_octave: int = 3
    # > 0: a ring's sample spacing counts as at least this many *view* pixels (2**σ image pixels) when its
    # level is chosen, so rings finer than that are as smooth as in a view rendered at its own resolution
    view_min_step: float = 0.0

    def __post_init__(self) -> None:
        if self.rings < 1 or self.angles < 4 or self.rings_per_octave < 1 or self.view_min_step < 0:
            raise ValueError(f"invalid polar grid {self}")

    def ring_levels(self, step: np.ndarray, num_levels: int) -> np.ndarray:
        """Pyramid level of rings whose angular sample spacing is ``step`` pixels: the coarsest level whose
        pixel spacing is not above it."""
        lev = np.floor(LEVELS_PER_OCTAVE * np.log2(np.maximum(step, 1e-9)) + 1e-6)
        return np.clip(lev, 0, num_levels - 1).astype(int)

    @property
    def center(self) -> float:
        return (self.rings - 1) / 2.0

    def log2_radii(self) -> np.ndarray:
        """``log2(radius / REFERENCE_RADIUS)`` of every ring at pose scale 0."""
        return (np.arange(self.rings) - self.center) / self.rings_per_octave

    def angles_rad(self) -> np.ndarray:
        return np.arange(self.angles) * (TWO_PI / self.angles)

    def max_radius(self, log2_scale: float = 0.0) -> float:
        """Radius in pixels of the outermost ring at a pose scale."""
        return REFERENCE_RADIUS * 2.0 ** (float(self.log2_radii()[-1]) + log2_scale)


def extract_polar(
    pyramid: Pyramid,
    xy: np.ndarray,
    log2_scale,
    theta,
    grid: PolarGrid,
    border: str = "reflect",
    shape: np.ndarray | None = None,
) -> np.ndarray:
    """Log-polar samples ``(N, C, rings, angles)`` float32 at frames ``(xy, log2_scale, theta)``.

    ``border``: ``"reflect"`` (OpenCV ``BORDER_REFLECT_101``) or ``"constant"`` (zeros) outside the image.
    ``shape``: optional ``(N, 2, 2)`` matrices ``P``: the sample of ring ``k`` and direction ``α`` is then
    ``xy + r_k·R(θ)·P·(cos α, −sin α)`` (an affine view; pyramid levels still follow ``r_k``).
    """
    xy, s, t = as_frames(xy, log2_scale, theta)
    n = len(xy)
    base = pyramid.levels[0]
    chans = 1 if base.ndim == 2 else base.shape[2]
    K, A = grid.rings, grid.angles
    if n == 0:
        return np.empty((0, chans, K, A), dtype=np.float32)
    mode = cv2.BORDER_REFLECT_101 if border == "reflect" else cv2.BORDER_CONSTANT
    r, lev = _radii_levels(pyramid, grid, s)  # (n, K) pixels, pyramid levels
    ang = grid.angles_rad()[None, :] + t[:, None]  # (n, A)
    # every keypoint turned by the same angle (what inference asks for) shares one row of directions
    same = shape is None and bool(np.all(t == t[0]))
    if same:
        ang = ang[:1]
    cos_a, sin_a = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    if shape is not None:  # unit offsets R(θ)·P·(cos α, −sin α), written as (cos_a, −sin_a)
        u = np.stack([np.cos(grid.angles_rad()), -np.sin(grid.angles_rad())], 0)  # (2, A)
        B = rotation_matrix(t) @ np.asarray(shape, np.float64)
        off = B @ u  # (n, 2, A)
        cos_a, sin_a = off[:, 0].astype(np.float32), (-off[:, 1]).astype(np.float32)
    rows = _sample(pyramid, xy, r, lev, cos_a, sin_a, mode)
    return np.ascontiguousarray(rows.transpose(0, 3, 1, 2))


def _radii_levels(pyramid: Pyramid, grid: PolarGrid, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Radii in pixels ``(n, K)`` of every ring of frames ``s`` (log2, ``(n,)``) and the pyramid level each
    ring is read from (its angular sample spacing, at least ``view_min_step`` view pixels)."""
    r = REFERENCE_RADIUS * np.exp2(grid.log2_radii()[None, :] + s[:, None])  # (n, K) pixels
    step = r * (TWO_PI / grid.angles)
    if grid.view_min_step > 0:  # no ring sharper than view_min_step view pixels (2**σ image pixels each)
        step = np.maximum(step, grid.view_min_step * np.exp2(s)[:, None])
    return r, grid.ring_levels(step, len(pyramid.levels))


def _sample(
    pyramid: Pyramid,
    xy: np.ndarray,
    r: np.ndarray,
    lev: np.ndarray,
    cos_a: np.ndarray,
    sin_a: np.ndarray,
    mode: int,
) -> np.ndarray:
    """Bilinear samples ``(n, K, A, C)`` float32 of every keypoint's rings: radii ``r`` ``(n, K)`` px at
    pyramid levels ``lev`` ``(n, K)``, in the directions ``(cos_a, −sin_a)`` (``(1, A)`` shared, or ``(n, A)``).
    Where every keypoint has the same rings and directions (one frame, upright: a plan's first read), each
    pyramid level is sampled as one block (:func:`_sample_one_frame`), else ring by ring (:func:`_sample_rows`);
    the numbers are the same either way."""
    check_warp_size(pyramid.levels[0].shape)  # OpenCV's remap takes sides under SHRT_MAX
    n, K = r.shape
    A = cos_a.shape[1]
    one_frame = len(cos_a) == 1 and K * A <= _REMAP_ROWS and bool(np.all(r == r[0]) and np.all(lev == lev[0]))
    if one_frame:
        return _sample_one_frame(pyramid, xy, r[0], lev[0], cos_a, sin_a, mode)
    rows = _sample_rows(pyramid, xy, np.repeat(np.arange(n), K), r.ravel(), lev.ravel(), cos_a, sin_a, mode)
    return rows.reshape(n, K, A, -1)


def _sample_one_frame(
    pyramid: Pyramid,
    xy: np.ndarray,
    r: np.ndarray,
    lev: np.ndarray,
    cos_a: np.ndarray,
    sin_a: np.ndarray,
    mode: int,
) -> np.ndarray:
    """Bilinear samples ``(n, K, A, C)`` float32 of every keypoint in one frame: rings of radii ``r`` ``(K,)``
    px read from pyramid levels ``lev`` ``(K,)`` in the directions ``(cos_a, −sin_a)`` ``(1, A)``. The same
    numbers as :func:`_sample_rows` on every (keypoint, ring) row, computed per level as one offset row shared
    by all keypoints (no sort, no gather: the first read of a plan, the costliest, is this case). A level's
    rings and directions must fit one remap row (``K · A ≤ _REMAP_ROWS``; :func:`_sample` sees to it)."""
    n, K, A = len(xy), len(r), cos_a.shape[1]
    base = pyramid.levels[0]
    chans = 1 if base.ndim == 2 else base.shape[2]
    out = np.empty((n, K, A, chans), np.float32)
    factors = np.asarray(pyramid.factors, np.float64)  # (L, 2)
    # a ring's level only grows with its radius: each level's rings are one contiguous block
    bounds = np.searchsorted(lev, np.arange(len(pyramid.levels) + 1))
    for level in range(len(pyramid.levels)):
        lo, hi = int(bounds[level]), int(bounds[level + 1])
        if lo == hi:
            continue
        fx, fy = factors[level]
        # products and sums in float32 in the order _sample_rows computes them, so the samples are equal
        ox = (cos_a * (r[lo:hi] * fx).astype(np.float32)[:, None]).ravel()  # (rings · A,)
        oy = (sin_a * (r[lo:hi] * fy).astype(np.float32)[:, None]).ravel()
        cx = ((xy[:, 0] + 0.5) * fx - 0.5).astype(np.float32)[:, None]
        cy = ((xy[:, 1] + 0.5) * fy - 0.5).astype(np.float32)[:, None]
        for i in range(0, n, _REMAP_ROWS):  # keypoints per remap call
            j = min(i + _REMAP_ROWS, n)
            v = cv2.remap(
                pyramid.levels[level],
                cx[i:j] + ox,
                cy[i:j] - oy,
                cv2.INTER_LINEAR,
                borderMode=mode,
                borderValue=pyramid.zero,
            )
            out[i:j, lo:hi] = v.reshape(j - i, hi - lo, A, chans)
    return pyramid.decode(out)


def _sample_rows(
    pyramid: Pyramid,
    xy: np.ndarray,
    kp: np.ndarray,
    r: np.ndarray,
    lev: np.ndarray,
    cos_a: np.ndarray,
    sin_a: np.ndarray,
    mode: int,
) -> np.ndarray:
    """Bilinear samples ``(m, A, C)`` float32 of ``m`` rings: ring ``i`` about keypoint ``xy[kp[i]]`` with
    radius ``r[i]`` px, read from pyramid level ``lev[i]`` in the directions ``(cos_a, −sin_a)`` (one row
    ``(1, A)`` for every keypoint, or ``(n, A)``, one per keypoint)."""
    A = cos_a.shape[1]
    base = pyramid.levels[0]
    chans = 1 if base.ndim == 2 else base.shape[2]
    # rows sorted by level once, so that each level's rows are one contiguous slice (no per-level search
    # and gather); level pixel coordinates (x + 0.5)·f − 0.5 of x = xy + r·(cos, −sin), in float32 (m, A)
    order = np.argsort(lev, kind="stable")
    lev_s = lev[order]
    kp_s = kp[order]
    factors = np.asarray(pyramid.factors, np.float64)  # (L, 2)
    fx, fy = factors[lev_s, 0], factors[lev_s, 1]
    rr = r[order]
    # written in place (no temporaries): m × A products, then the centres added
    shared = len(cos_a) == 1
    mx = (cos_a if shared else cos_a[kp_s]) * (rr * fx).astype(np.float32)[:, None]
    mx += ((xy[kp_s, 0] + 0.5) * fx - 0.5).astype(np.float32)[:, None]
    my = (sin_a if shared else sin_a[kp_s]) * (rr * fy).astype(np.float32)[:, None]
    np.subtract(((xy[kp_s, 1] + 0.5) * fy - 0.5).astype(np.float32)[:, None], my, out=my)
    vals = np.empty((len(order), A, chans), np.float32)
    bounds = np.searchsorted(lev_s, np.arange(len(pyramid.levels) + 1))
    for level in range(len(pyramid.levels)):
        lo, hi = int(bounds[level]), int(bounds[level + 1])
        for i in range(lo, hi, _REMAP_ROWS):
            j = min(i + _REMAP_ROWS, hi)
            v = cv2.remap(
                pyramid.levels[level],
                mx[i:j],
                my[i:j],
                cv2.INTER_LINEAR,
                borderMode=mode,
                borderValue=pyramid.zero,
            )
            vals[i:j] = v.reshape(j - i, A, chans)
    pyramid.decode(vals)
    # back to the callers' order: a gather by the inverse permutation (several times faster than a scatter)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    return np.take(vals, inv, axis=0)


class PolarReads:
    """Log-polar samples of fixed, upright keypoints read again and again in frames a whole number of rings
    apart, as a read plan reads them (:mod:`patchpose.reading`): each (keypoint, ring, pyramid level) is
    sampled once, and a later read gathers what an earlier one sampled instead of sampling it again.

    ``reads(frames)`` equals ``extract_polar(pyramid, xy, frame0 + frames, 0, grid, border)``: a ring read
    again is the same ring at the same level (its radius can differ from a fresh read's by float rounding only;
    the tests find the samples bit for bit equal). Frames that are not whole rings from ``frame0`` are sampled
    afresh, and nothing is kept of them. Memory: a table of ``(K + 48) × angles`` floats per keypoint, of which
    only the rings read are ever written (and so take memory).
    """

    def __init__(self, pyramid: Pyramid, xy, frame0, grid: PolarGrid, border: str = "reflect") -> None:
        self.pyramid, self.grid, self.border = pyramid, grid, border
        self.xy, self.frame0, _ = as_frames(xy, frame0, 0.0)
        n, A = len(self.xy), grid.angles
        self.chans = 1 if pyramid.levels[0].ndim == 2 else pyramid.levels[0].shape[2]
        self._lo = 0  # ring (whole rings from frame0, the centre ring of frame 0 is 0) of table column 0
        self._lev = np.full((n, 0), -1, np.int16)  # the level each (keypoint, ring) was sampled at; −1: none
        self._val = np.empty((n, 0, A, self.chans), np.float32)
        ang = grid.angles_rad()[None, :]
        self._cos, self._sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)

    def __call__(self, frames) -> np.ndarray:
        n, K, A, C = len(self.xy), self.grid.rings, self.grid.angles, self.chans
        frames = np.broadcast_to(np.asarray(frames, np.float64), (n,))
        shift = np.rint(frames * self.grid.rings_per_octave)
        if n == 0 or not np.allclose(shift, frames * self.grid.rings_per_octave, rtol=0, atol=1e-9):
            return extract_polar(self.pyramid, self.xy, self.frame0 + frames, 0.0, self.grid, self.border)
        ring = shift.astype(np.int64)[:, None] + (np.arange(K) - round(self.grid.center))[None, :]  # (n, K)
        if not self._lev.shape[1]:
            # room for reads 8 octaves either side (a read moves the frame by up to the 4 octaves of the scale
            # range, and the orientation is read up to 4 more away): a two-read plan never widens, i.e. copies,
            # the table (7 ms of a 2,048-keypoint read). np.empty: what is never written takes no memory
            reach = 8 * self.grid.rings_per_octave
            self._cover(int(ring.min()) - reach, int(ring.max()) + reach)
        self._cover(int(ring.min()), int(ring.max()))
        width = self._lev.shape[1]
        r, lev = _radii_levels(self.pyramid, self.grid, self.frame0 + frames)
        rows = np.arange(n)[:, None] * width + (ring - self._lo)  # (n, K) rows of the flattened table
        miss = np.take(self._lev, rows) != lev
        mode = cv2.BORDER_REFLECT_101 if self.border == "reflect" else cv2.BORDER_CONSTANT
        if miss.all():  # nothing to reuse (a first read): sampled in the output's order, then kept
            vals = _sample(self.pyramid, self.xy, r, lev, self._cos, self._sin, mode)
            if np.all(shift == shift[0]):  # every keypoint in the same frame: one block of the table
                c0 = int(ring[0, 0]) - self._lo
                self._val[:, c0 : c0 + K] = vals.reshape(n, K, A, C)
            else:
                self._val.reshape(-1, A, C)[rows.ravel()] = vals
            self._lev.reshape(-1)[rows.ravel()] = lev.ravel()
            return np.ascontiguousarray(vals.reshape(n, K, A, C).transpose(0, 3, 1, 2))
        if miss.any():
            new = rows[miss]
            kp = np.nonzero(miss)[0]
            self._val.reshape(-1, A, C)[new] = _sample_rows(
                self.pyramid, self.xy, kp, r[miss], lev[miss], self._cos, self._sin, mode
            )
            self._lev.reshape(-1)[new] = lev[miss]
        out = np.take(self._val.reshape(-1, A * C), rows.ravel(), axis=0)
        return np.ascontiguousarray(out.reshape(n, K, A, C).transpose(0, 3, 1, 2))

    def _cover(self, lo: int, hi: int) -> None:
        """Widen the table so that it holds rings ``lo`` to ``hi``."""
        have_hi = self._lo + self._lev.shape[1] - 1
        if self._lev.shape[1] and lo >= self._lo and hi <= have_hi:
            return
        new_lo = min(lo, self._lo) if self._lev.shape[1] else lo
        new_hi = max(hi, have_hi) if self._lev.shape[1] else hi
        n, width = len(self.xy), new_hi - new_lo + 1
        lev = np.full((n, width), -1, np.int16)
        val = np.empty((n, width, self.grid.angles, self.chans), np.float32)
        if self._lev.shape[1]:
            a = self._lo - new_lo
            lev[:, a : a + self._lev.shape[1]] = self._lev
            val[:, a : a + self._lev.shape[1]] = self._val
        self._lo, self._lev, self._val = new_lo, lev, val


def polar_margin(grid: PolarGrid) -> float:
    """Border distance (px) beyond which every ring up to radius ``REFERENCE_RADIUS · 4`` (scale +2, the
    top of the paper's scale range) lies inside the image: 64 px.

    ``valid=False`` flags a keypoint nearer the border than this (in the first read's frame). Larger rings are
    context for large structures: near the border they read padded pixels unflagged, and the pose depends on
    them (docs/usage.md, "The border policy", has the measurements)."""
    return REFERENCE_RADIUS * 2.0 ** min(2.0, float(grid.log2_radii()[-1]))


def render_view_polar(
    pyramid: Pyramid,
    xy,
    log2_scale,
    theta,
    grid: PolarGrid,
    shape: np.ndarray | None = None,
    read_scale=None,
    read_theta=None,
) -> np.ndarray:
    """Polar samples of *transformed views*, as if the image had been warped by the frame and the grid then
    laid at the transformed keypoint with pose ``(0, 0)`` (the paper's protocol: transform the image,
    then crop), or with pose ``(read_scale, read_theta)`` in the view's own pixels.

    The warped view is never built whole: for every pyramid level the rings read, the view's level is
    rendered as a small crop about the keypoint (its own pixel grid, anti-aliased from ``pyramid`` by
    :func:`~patchpose.data.patches.extract_patches`), and the rings are read from it bilinearly. Unlike
    :func:`extract_polar` at pose ``(σ, θ)``, views that differ by whole rings or angle steps then do not
    reuse the same photo samples, so a benchmark cannot be passed by the sampling grid alone.
    ``shape``: optional ``(N, 2, 2)`` affine shapes of the views (as :func:`extract_polar`).

    ``read_scale``, ``read_theta`` (``(N,)`` or scalars; None for 0): where a later read of the *same* view
    lays the grid, as :func:`extract_polar` lays it on an image at pose ``(σ, θ)``: rings
    ``2**read_scale`` times larger, directions turned by ``read_theta``, each ring read from the view's
    pyramid level for its sample spacing (at least ``view_min_step · 2**read_scale`` view pixels) and
    never finer than the view's own pixels. So a view rendered small stays small: a read at a finer
    pose sees its blur, as it would in a real image, instead of the photo re-rendered at that pose. At
    pose ``(0, 0)`` the samples are the same as without it.
    """
    from .patches import extract_patches

    xy, s, t = as_frames(xy, log2_scale, theta)
    _, rs, rt = as_frames(
        xy, 0.0 if read_scale is None else read_scale, 0.0 if read_theta is None else read_theta
    )
    n = len(xy)
    chans = 1 if pyramid.levels[0].ndim == 2 else pyramid.levels[0].shape[2]
    K, A = grid.rings, grid.angles
    out = np.empty((n, chans, K, A), np.float32)
    if n == 0:
        return out
    r = REFERENCE_RADIUS * np.exp2(grid.log2_radii()[None, :] + rs[:, None])  # (n, K) view pixels
    step = r * (TWO_PI / A)
    if grid.view_min_step > 0:  # as extract_polar: no ring sharper than view_min_step pixels of the read
        step = np.maximum(step, grid.view_min_step * np.exp2(rs)[:, None])
    lev = grid.ring_levels(step, 10**6)  # (n, K); level 0 is the view's own pixels
    ang = grid.angles_rad()[None, :] + rt[:, None]  # (n, A)
    cos_a, sin_a = np.cos(ang), np.sin(ang)
    for level in np.unique(lev):
        vi, ki = np.nonzero(lev == level)  # the (view, ring) pairs read from this level
        views, local = np.unique(vi, return_inverse=True)
        crop_step = 2.0 ** (level / LEVELS_PER_OCTAVE)  # view pixels per crop pixel
        rad = r[vi, ki] / crop_step  # (m,) ring radii in crop pixels
        half = int(math.ceil(rad.max() + 2.0))
        size = 2 * half
        w = half * crop_step / REFERENCE_RADIUS  # crop covers ±half·crop_step view pixels
        crops = extract_patches(
            pyramid, xy[views], s[views], t[views], size, [w], shape=None if shape is None else shape[views]
        )  # (v, C, size, size)
        # ring points in crop pixels; the keypoint sits at (half − 0.5, half − 0.5)
        px = (half - 0.5) + rad[:, None] * cos_a[vi]  # (m, A)
        py = (half - 0.5) - rad[:, None] * sin_a[vi]
        v = _bilinear(crops.transpose(0, 2, 3, 1), local[:, None], px, py)  # (m, A, C)
        out[vi, :, ki] = v.transpose(0, 2, 1)
    return out


def _bilinear(c: np.ndarray, li: np.ndarray, px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """Bilinear samples of crops ``c`` ``(v, size, size, C)``: crop ``li`` ``(m, 1)`` at crop pixel
    coordinates ``px``, ``py`` ``(m, P)`` (clamped inside), as ``(m, P, C)``."""
    size = c.shape[1]
    x0, y0 = np.floor(px).astype(int), np.floor(py).astype(int)
    fx, fy = (px - x0).astype(np.float32)[..., None], (py - y0).astype(np.float32)[..., None]
    x0, y0 = np.clip(x0, 0, size - 2), np.clip(y0, 0, size - 2)
    return (
        c[li, y0, x0] * (1 - fx) * (1 - fy)
        + c[li, y0, x0 + 1] * fx * (1 - fy)
        + c[li, y0 + 1, x0] * (1 - fx) * fy
        + c[li, y0 + 1, x0 + 1] * fx * fy
    )


__all__ = ["PolarGrid", "PolarReads", "extract_polar", "polar_margin", "render_view_polar"]
