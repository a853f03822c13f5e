"""Self-supervised pair synthesis: a patch and its rescaled/rotated counterpart about the same keypoint.

Both patches are cut from the same photo at the same keypoint with frames ``(σ_a, θ_a)`` and
``(σ_b, θ_b) = (σ_a − Δs, θ_a − Δo)``. By :mod:`patchpose.conventions`, patch ``b`` then shows the
content of patch ``a`` enlarged by ``2**Δs`` and rotated counter-clockwise by ``Δo``, so the true pose
difference from a to b is ``(Δs, Δo)``: exact by construction, whatever the photo. ``σ_a`` is drawn so
that both frames stay in ``[sigma_min, sigma_max]``; with ``sigma_min < 0`` the zoomed-in views are
upsampled (blurred), as in the paper's PatchPose where the whole image is resized.

Pairs stream on the fly (nothing is precomputed). The batch of training step ``s`` is drawn from a generator
seeded with ``(seed, rank, s)`` alone, whichever worker makes it, so the stream is a function of the step:
a run resumed at step ``s`` draws exactly the batches the uninterrupted run drew from ``s`` on, with any
number of workers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..conventions import REFERENCE_RADIUS, TWO_PI
from ..errors import InputError
from ..geometry import apply_homography, pose_change
from .inputs import extract_inputs
from .keypoints import detect_gftt, detect_sift
from .patches import Pyramid, load_image, resize_long_side, to_gray
from .polar import PolarGrid, render_view_polar
from .warps import ViewpointConfig, random_viewpoint_homography, warp_image

log = logging.getLogger(__name__)


@dataclass
class Redetections:
    """Keypoints of one photo found again in a warped copy of it: ``xy_a`` in the photo, ``xy_b`` where the
    same detector found each again in the copy, and the homography's local pose change at ``xy_a``."""

    pyramid: Pyramid  # the warped copy's
    xy_a: np.ndarray
    xy_b: np.ndarray
    d_scale: np.ndarray
    d_theta: np.ndarray


def _seed_of(name: str) -> int:
    """The seed of a photo's warped copies: a function of its file name alone, so every worker draws the same."""
    return int.from_bytes(name.encode()[-8:].rjust(8, b"\0"), "little") ^ len(name)


def find_again(
    image: np.ndarray, name: str, warps: int, max_px: float, max_keypoints: int, margin: float
) -> list[Redetections]:
    """``warps`` warped copies of ``image`` (random viewpoint homographies of ``generate hpatches`` steps 1 to
    5, drawn from ``name``), each with the SIFT keypoints and Shi-Tomasi corners of ``image`` that the same
    detector finds again in it within ``max_px`` pixels of the true position."""
    rng = np.random.default_rng(_seed_of(name))
    gen = ViewpointConfig()
    detectors = (
        lambda im: detect_sift(im, max_keypoints, margin)[0],
        lambda im: detect_gftt(im, max_keypoints, margin),
    )
    found_a = [d(image) for d in detectors]
    out = []
    for _ in range(warps):
        H = random_viewpoint_homography(rng, image.shape, int(rng.integers(1, 6)), gen)
        warped = warp_image(image, H)
        xa_all, xb_all = [], []
        for det, xa in zip(detectors, found_a):
            xb = det(warped)
            if not len(xa) or not len(xb):
                continue
            p = apply_homography(H, xa)
            d2 = ((p[:, None, :] - xb[None, :, :]) ** 2).sum(-1)
            j = d2.argmin(1)
            ok = d2[np.arange(len(xa)), j] <= max_px**2
            xa_all.append(xa[ok])
            xb_all.append(xb[j[ok]])
        if not xa_all:
            continue
        xa, xb = np.concatenate(xa_all), np.concatenate(xb_all)
        ds, dt, ok = pose_change(H, xa)
        if ok.sum():
            out.append(Redetections(Pyramid(to_gray(warped)), xa[ok], xb[ok], ds[ok], dt[ok]))
    return out


@dataclass
class PairConfig:
    long_side: int = 1024  # photos larger than this (longer side, px) are shrunk to it; 0 = native
    max_keypoints: int = 1000  # SIFT keypoints per photo
    margin: float = 24.0  # keypoints at least this far from the border (reflect padding beyond)
    delta_scale: float = 2.0  # Δs ~ U[-delta_scale, delta_scale] (log2)
    sigma_min: float = -2.0  # frames' log2 scales stay in [sigma_min, sigma_max]
    sigma_max: float = 2.5
    mode_probs: list[float] = field(
        default_factory=lambda: [0.6, 0.2, 0.2]
    )  # joint, scale-only, rotation-only
    source_upright: float = 0.25  # probability that the reference patch is upright (θ_a = 0) and σ_a = 0
    noise: float = 0.02  # max std of additive Gaussian noise (0 = off)
    gamma: float = 0.25  # gamma ~ exp(U[-g, g]) (0 = off)
    # log-polar inputs only: probability that a view is rendered as a warped crop and then sampled
    # (data.polar.render_view_polar: a second interpolation, as in a real transformed image) instead of
    # being sampled straight from the photo at its frame
    resample: float = 0.0
    # training pairs only: the keypoint of each view moved by N(0, jitter_px²) photo pixels per axis, on its
    # own, as a detector finds it again in another image (labels unchanged: a pose should not depend on
    # where, within a pixel or so, the keypoint was found). Photo pixels whatever the view's scale: SIFT's
    # re-detection offsets are about constant in image pixels
    jitter_px: float = 0.0
    # log-polar inputs only: with probability ``context`` per view, what lies beyond a random line at
    # distance d ~ 2^U[log2 context_min, log2 context_max] *view* pixels from the keypoint (1 or 2 such
    # lines) is replaced by a constant (black half the time, else a random gray), each view on its own:
    # the far context of a real second image is not the first's (a warped canvas's black corners, the
    # frame's edge padded by reflection, the end of a plane, an occluder). Labels unchanged: a pose should
    # come from the keypoint's surroundings, not from content a few characteristic radii away
    context: float = 0.0
    context_min: float = 16.0
    context_max: float = 512.0
    # training pairs only: the share of pairs whose second view comes from a *second image* (the photo
    # warped by a random viewpoint homography: rotation, zoom and perspective, as ``generate hpatches``
    # makes them) at the keypoint the same detector finds there (SIFT or Shi-Tomasi corners, within
    # ``redetect_px`` of the true position): the real re-detection offsets and the real local distortion,
    # with labels from the homography's local pose change (``geometry.pose_change``)
    redetect: float = 0.0
    redetect_warps: int = 4  # second images per photo
    redetect_px: float = 3.0  # the farthest re-detection kept (pixels of the second image)

    def __post_init__(self) -> None:
        if not 0.0 <= self.redetect <= 1.0:
            raise InputError(f"data.redetect is a probability in [0, 1], got {self.redetect!r}")
        if self.redetect > 0 and (self.redetect_warps < 1 or self.redetect_px <= 0):
            raise InputError(
                "data.redetect_warps must be >= 1 and data.redetect_px > 0, got "
                f"{self.redetect_warps!r} and {self.redetect_px!r}"
            )
        if not 0.0 <= self.context <= 1.0:
            raise InputError(f"data.context is a probability in [0, 1], got {self.context!r}")
        if not 0.0 < self.context_min <= self.context_max:
            raise InputError(
                "data.context_min and data.context_max must satisfy 0 < min <= max (view pixels), got "
                f"{self.context_min!r} and {self.context_max!r}"
            )


class PhotoPool:
    """Photos resized to a common long side, their pyramids and keypoints."""

    def __init__(self, paths, cfg: PairConfig, color: str = "gray") -> None:
        self.cfg, self.color = cfg, color
        self.pyramids: list[Pyramid] = []
        self.keypoints: list[np.ndarray] = []
        self.names: list[str] = []
        self.redetections: list[list[Redetections]] = []
        for p in paths:
            img = load_image(p).astype(np.float32) / 255.0
            img, _ = resize_long_side(img, cfg.long_side)
            xy, _ = detect_sift(img, cfg.max_keypoints, cfg.margin)
            if len(xy) == 0:
                log.warning("no keypoints in %s; skipped", p)
                continue
            self.pyramids.append(Pyramid(to_gray(img) if color == "gray" else img))
            self.keypoints.append(xy)
            self.names.append(Path(p).name)
            if cfg.redetect > 0:
                if color != "gray":
                    raise InputError("data.redetect needs a gray model (model.color=gray)")
                self.redetections.append(
                    find_again(
                        img, Path(p).name, cfg.redetect_warps, cfg.redetect_px, cfg.max_keypoints, cfg.margin
                    )
                )
        if not self.pyramids:
            raise InputError("no usable photos (none readable with keypoints)")

    def __len__(self) -> int:
        return len(self.pyramids)


def sample_deltas(rng: np.random.Generator, n: int, cfg: PairConfig, mode: str | None = None):
    """Draw ``(Δs, Δo, σ_a, θ_a)`` for ``n`` pairs. ``mode``: None (mix), "joint", "scale", "rotation"."""
    modes = np.array(["joint", "scale", "rotation"])
    m = (
        np.full(n, mode)
        if mode
        else modes[rng.choice(3, size=n, p=np.asarray(cfg.mode_probs) / sum(cfg.mode_probs))]
    )
    ds = rng.uniform(-cfg.delta_scale, cfg.delta_scale, n) * (m != "rotation")
    do = rng.uniform(0.0, TWO_PI, n) * (m != "scale")
    lo = np.maximum(cfg.sigma_min, cfg.sigma_min + ds)
    hi = np.minimum(cfg.sigma_max, cfg.sigma_max + ds)
    sa = rng.uniform(lo, np.maximum(lo, hi))
    ta = rng.uniform(0.0, TWO_PI, n)
    upright = rng.random(n) < cfg.source_upright
    sa = np.where(upright & (lo <= 0) & (hi >= 0), 0.0, sa)
    ta = np.where(upright, 0.0, ta)
    return ds, do, sa, ta


def polar_context_loss(
    rng: np.random.Generator,
    p: np.ndarray,
    grid: PolarGrid,
    prob: float,
    d_min: float,
    d_max: float,
) -> np.ndarray:
    """Log-polar views ``(n, C, K, A)`` with, for a share ``prob`` of them, the samples beyond one or two
    random lines set to a constant (0 half the time, else U[0, 1]). A line lies at distance
    ``d ~ 2^U[log2 d_min, log2 d_max]`` view pixels from the keypoint (radius ``REFERENCE_RADIUS·2^ρ`` of ring
    ``ρ`` at scale 0, the unit the model reads a keypoint in) along a random direction (``PairConfig.context``)."""
    n = len(p)
    hit = np.flatnonzero(rng.random(n) < prob)
    if not len(hit):
        return p
    p = p.copy()
    r = REFERENCE_RADIUS * np.exp2(grid.log2_radii())  # (K,)
    ang = grid.angles_rad()  # (A,)
    lost = np.zeros((len(hit), len(r), len(ang)), bool)
    lines = 1 + (rng.random(len(hit)) < 0.5)
    for j in range(2):
        d = np.exp2(rng.uniform(np.log2(d_min), np.log2(d_max), len(hit)))
        phi = rng.uniform(0.0, TWO_PI, len(hit))
        beyond = r[None, :, None] * np.cos(ang[None, None, :] - phi[:, None, None]) > d[:, None, None]
        lost |= beyond & (j < lines)[:, None, None]
    fill = np.where(rng.random(len(hit)) < 0.5, 0.0, rng.random(len(hit))).astype(np.float32)
    view = p[hit]
    src = np.broadcast_to(fill[:, None, None, None], view.shape)
    m = np.broadcast_to(lost[:, None], view.shape)
    view[m] = src[m]
    p[hit] = view
    return p


def photometric(rng: np.random.Generator, p: np.ndarray, cfg: PairConfig) -> np.ndarray:
    """Independent gamma and noise per patch (brightness/contrast are removed by the model anyway)."""
    n = len(p)
    if cfg.gamma:
        g = np.exp(rng.uniform(-cfg.gamma, cfg.gamma, n)).astype(np.float32)
        p = np.clip(p, 0.0, 1.0) ** g[:, None, None, None]
    if cfg.noise:
        s = rng.uniform(0.0, cfg.noise, n).astype(np.float32)
        p = p + s[:, None, None, None] * rng.standard_normal(p.shape, dtype=np.float32)
    return p


def sample_pairs(
    rng: np.random.Generator,
    pool: PhotoPool,
    n: int,
    cfg: PairConfig,
    patch_size: int = 32,
    windows=(1.0,),
    mode: str | None = None,
    augment: bool = True,
    polar: PolarGrid | None = None,
) -> dict[str, np.ndarray]:
    """A batch of pairs: ``patch_a``, ``patch_b`` ``(n, C, PS, PS)`` (or ``(n, C, rings, angles)`` with a
    ``polar`` grid), ``d_scale`` (log2), ``d_ori`` (radians in [0, 2π)), plus the frames used."""
    ds, do, sa, ta = sample_deltas(rng, n, cfg, mode)
    img_idx = rng.integers(0, len(pool), n)
    xy = np.empty((n, 2))
    for i, k in enumerate(img_idx):
        kps = pool.keypoints[k]
        xy[i] = kps[rng.integers(0, len(kps))]
    sb, tb = sa - ds, ta - do
    xy_v = [xy, xy]
    if augment and cfg.jitter_px > 0:
        xy_v = [xy + cfg.jitter_px * rng.standard_normal((n, 2)) for _ in range(2)]
    resample = polar is not None and cfg.resample > 0
    pa = pb = None
    real = np.zeros(n, bool)
    if augment and cfg.redetect > 0:
        xy_v = [xy_v[0].copy(), xy_v[1].copy()]
        real, a, b = _redetected_pairs(
            rng, pool, cfg, ds, do, sa, ta, img_idx, patch_size, windows, polar, xy, xy_v
        )
        sb, tb = sa - ds, ta - do  # Δs moved where view b's frame was clipped
        if real.any():
            pa, pb = np.empty((n, *a.shape[1:]), np.float32), np.empty((n, *a.shape[1:]), np.float32)
            pa[real], pb[real] = a, b
    for k in np.unique(img_idx[~real]):
        sel = np.nonzero((img_idx == k) & ~real)[0]
        pyr, views = pool.pyramids[k], []
        for vi, (s_, t_) in enumerate(((sa[sel], ta[sel]), (sb[sel], tb[sel]))):
            # views drawn for re-rendering are rendered that way only, the others sampled directly
            m = rng.random(len(sel)) < cfg.resample if resample else np.zeros(len(sel), bool)
            d = ~m
            v = extract_inputs(pyr, xy_v[vi][sel][d], s_[d], t_[d], patch_size, windows, polar)
            if m.any():
                full = np.empty((len(sel), *v.shape[1:]), np.float32)
                full[d] = v
                full[m] = render_view_polar(pyr, xy_v[vi][sel][m], s_[m], t_[m], polar)
                v = full
            views.append(v)
        a, b = views
        if pa is None:
            pa, pb = np.empty((n, *a.shape[1:]), np.float32), np.empty((n, *a.shape[1:]), np.float32)
        pa[sel], pb[sel] = a, b
    if augment:
        if polar is not None and cfg.context > 0:
            pa, pb = (
                polar_context_loss(rng, v, polar, cfg.context, cfg.context_min, cfg.context_max)
                for v in (pa, pb)
            )
        pa, pb = photometric(rng, pa, cfg), photometric(rng, pb, cfg)
    return {
        "patch_a": pa,
        "patch_b": pb,
        "d_scale": ds.astype(np.float32),
        "d_ori": (do % TWO_PI).astype(np.float32),
        "sigma_a": sa,
        "theta_a": ta,
        "image": img_idx,
        "xy": xy,
        "xy_a": xy_v[0],
        "xy_b": xy_v[1],
    }


def _redetected_pairs(rng, pool, cfg, ds, do, sa, ta, img_idx, patch_size, windows, polar, xy, xy_v):
    """Draw a share ``cfg.redetect`` of a batch's pairs as pairs whose view ``b`` is cut from a warped copy
    of the photo at the keypoint found again there (:class:`Redetections`): their mask and views ``a``, ``b``.
    ``ds``, ``img_idx``, ``xy`` and ``xy_v`` are updated in place for them.

    View ``a`` keeps its frame ``(σ_a, θ_a)``; the same content seen in the copy has the frame
    ``(σ_a + Δσ_H, θ_a + Δθ_H)`` (the homography's local pose change), so view ``b`` is cut at
    ``(σ_a + Δσ_H − Δs, θ_a + Δθ_H − Δo)``, clipped to the frame range with ``Δs`` moved to match: the
    labels ``(Δs, Δo)`` keep their meaning."""
    n = len(ds)
    real = rng.random(n) < cfg.redetect
    usable = [k for k in range(len(pool)) if pool.redetections[k]]
    if not real.any() or not usable:
        return np.zeros(n, bool), None, None
    idx_all = np.flatnonzero(real)
    photo = np.asarray(usable)[rng.integers(0, len(usable), len(idx_all))]
    img_idx[idx_all] = photo
    va = vb = None
    for k in np.unique(photo):
        idx = idx_all[photo == k]
        found = pool.redetections[k]
        w = rng.integers(0, len(found), len(idx))
        for j in np.unique(w):
            sel = idx[w == j]
            r = found[j]
            m = rng.integers(0, len(r.xy_a), len(sel))
            sb = np.clip(sa[sel] + r.d_scale[m] - ds[sel], cfg.sigma_min, cfg.sigma_max)
            ds[sel] = sa[sel] + r.d_scale[m] - sb
            tb = ta[sel] + r.d_theta[m] - do[sel]
            a = extract_inputs(pool.pyramids[k], r.xy_a[m], sa[sel], ta[sel], patch_size, windows, polar)
            b = extract_inputs(r.pyramid, r.xy_b[m], sb, tb, patch_size, windows, polar)
            if va is None:
                va, vb = np.empty((n, *a.shape[1:]), np.float32), np.empty((n, *a.shape[1:]), np.float32)
            va[sel], vb[sel] = a, b
            xy[sel] = xy_v[0][sel] = r.xy_a[m]
            xy_v[1][sel] = r.xy_b[m]
    return real, va[real], vb[real]


class PairStream(torch.utils.data.IterableDataset):
    """Endless stream of pair batches for a DataLoader (``batch_size=None``).

    The photo pool is built lazily in each worker. The batch of step ``s`` (``start_step`` for the first)
    is drawn from ``np.random.default_rng([seed, rank, s])`` (:meth:`rng_for_step`) and nothing else
    random: ranks draw different pairs, and the stream from ``start_step`` on is the same whether it was
    started there or reached there, with 0 or any number of workers (a DataLoader takes an iterable
    dataset's batches from its workers in turn, so worker ``w`` of ``n`` makes steps ``start_step + w``,
    ``+ w + n``, …).
    """

    def __init__(
        self,
        paths,
        cfg: PairConfig,
        batch_size: int,
        patch_size: int,
        windows,
        color: str,
        seed: int = 0,
        rank: int = 0,
        start_step: int = 0,
        polar: PolarGrid | None = None,
    ) -> None:
        super().__init__()
        self.paths, self.cfg, self.batch_size = list(paths), cfg, batch_size
        self.patch_size, self.windows, self.color = patch_size, list(windows), color
        self.seed, self.rank, self.start_step = seed, rank, start_step
        self.polar = polar
        self._pool: PhotoPool | None = None

    def rng_for_step(self, step: int) -> np.random.Generator:
        """The generator that draws the batch of training step ``step``."""
        return np.random.default_rng([self.seed, self.rank, step])

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        if self._pool is None:
            self._pool = PhotoPool(self.paths, self.cfg, self.color)
        step = self.start_step + wid
        while True:
            rng = self.rng_for_step(step)
            step += nw
            b = sample_pairs(
                rng, self._pool, self.batch_size, self.cfg, self.patch_size, self.windows, polar=self.polar
            )
            yield {
                k: torch.from_numpy(np.ascontiguousarray(b[k]))
                for k in ("patch_a", "patch_b", "d_scale", "d_ori")
            }


__all__ = ["PairConfig", "PairStream", "PhotoPool", "sample_pairs", "sample_deltas"]
