"""kornia plug-ins: our poses inside kornia's own feature pipelines.

* :class:`LAFPoseAssigner` — ``forward(laf (B, N, 2, 3), img (B, C, H, W)) -> laf``: the interface of
  kornia's ``ori_module`` / ``aff_module`` (e.g. ``KF.KeyNetDetector(ori_module=..., aff_module=...)``,
  ``KF.MultiResolutionDetector``). It reads the model's full input (its log-polar grid reaches far past
  the LAF) from the image at each LAF centre, and writes our scale and/or orientation into the LAF, its
  affine shape kept (an ``aff_module``'s, kornia runs it first): the LAF's first axis points along our
  orientation and ``sqrt(det)`` is our scale (:func:`posed_affine`). ``laf_frame=True`` reads the
  model's input in each LAF's own frame (its scale) instead of at scale 0; which of the two suits a detector
  depends on how well its scales match the content, so measure it on your data.
* :class:`LAFAffineShape` — ``forward(laf, img) -> laf``, kornia's ``aff_module`` interface (as its
  ``LAFAffNetShapeEstimator``): each LAF gets the affine shape of our self-supervised shape network
  (:mod:`patchpose.shape`) read in the upright disc of the LAF's centre and scale; scale and orientation kept.
* :func:`kornia_angle_detector` — a module ``(B, 1, 32, 32) patches -> (B,)`` radians for
  ``KF.LAFOrienter(angle_detector=...)``, where kornia hands an orientation estimator only the patch it cut
  (as it does OriNet). The model's input is read from that patch alone, as a disc (:class:`PatchAngleDetector`);
  on turned photos it is more accurate than OriNet and the dominant gradient on the same patches
  (numbers in ``docs/integrations.md``). :class:`LAFPoseAssigner` reads the image itself and also sets scale.
* :func:`aliked_extractor` — kornia's ALIKED (a learned detector and descriptor, trained upright) with weights of
  your own as an extractor ``image -> (xy, descriptors)`` for :func:`patchpose.match_upright`, which runs it on a
  photo un-turned by the turn our network votes.
* :func:`describe_blended` — ``(img, laf, descriptor) -> (1, N, D)``: one **blended descriptor** per LAF
  (:mod:`patchpose.matching.blend`), a kornia ``LAFDescriptor`` run at the 4 strongest peaks of the gradient
  histogram read in each LAF's region, averaged by the peaks' masses (:mod:`patchpose.matching.blend`).

Units: a kornia LAF's scale is the half-width in px of the patch kornia's descriptors cut; the scale written
is :attr:`Poses.descriptor_radius <patchpose.Poses.descriptor_radius>`, the window the model was calibrated
with (its read plan's ``descriptor_region`` times its characteristic radius). Orientation in degrees,
counter-clockwise as displayed (the same sign as ours). The model runs in eval mode, without gradients.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import checks
from ..conventions import REFERENCE_RADIUS, TWO_PI
from ..errors import InputError, require
from ..estimator import EstimatorLike, as_estimator, check_keypoints
from ..interop import check_laf, laf_padding
from ..matching.blend import (
    BLEND_K,
    affine_parts,
    blend_descriptors,
    check_pool_octaves,
    gradient_peaks,
    pool_sizes,
)


def _image_batch(img, batch: int) -> torch.Tensor:
    """``img`` checked as kornia's images are: a ``(batch, 1 or 3, H, W)`` float tensor, finite, in [0, 1] (to
    1e-3, as :func:`~patchpose.data.patches.check_image` takes floats); a one-line :class:`InputError` else."""
    if (
        not isinstance(img, torch.Tensor)
        or img.dim() != 4
        or img.shape[0] != batch
        or img.shape[1] not in (1, 3)
    ):
        raise InputError(
            f"img must be a ({batch}, 1 or 3, H, W) torch tensor, got {tuple(getattr(img, 'shape', ())) or type(img).__name__}"
        )
    if not img.is_floating_point():
        raise InputError(f"img must hold floats in [0, 1] (as kornia's images), got {img.dtype}")
    if img.is_meta:
        raise InputError("img is a meta tensor: it holds no values to read")
    img = img.detach()
    if img.numel():
        if not bool(torch.isfinite(img).all()):
            raise InputError("img holds NaN or infinite values")
        lo, hi = float(img.min()), float(img.max())
        if lo < -1e-3 or hi > 1.0 + 1e-3:
            raise InputError(
                f"img must hold floats in [0, 1] (as kornia's images), got values in [{lo:.3g}, {hi:.3g}]"
            )
    return img


class LAFPoseAssigner(nn.Module):
    """Set the scale and/or orientation of kornia LAFs from our model (``(laf, img) -> laf``)."""

    def __init__(
        self,
        estimator: EstimatorLike = None,
        scale: bool = True,
        orientation: bool = True,
        laf_frame: bool = False,
    ) -> None:
        super().__init__()
        self.set_scale, self.set_orientation = (
            checks.flag(scale, "scale"),
            checks.flag(orientation, "orientation"),
        )
        # read the model's input in each LAF's own frame (its scale) instead of at scale 0
        self.laf_frame = checks.flag(laf_frame, "laf_frame")
        self.est = as_estimator(estimator)
        self.est.model.eval()

    def forward(self, laf: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
        KF = require("kornia.feature", "kornia")

        if not isinstance(laf, torch.Tensor) or not isinstance(img, torch.Tensor):
            raise InputError("laf and img must be torch tensors (B, N, 2, 3) and (B, 1 or 3, H, W)")
        # a LAF's scale is read only in its own frame (laf_frame) or kept (scale=False)
        check_laf(laf, nondegenerate=self.laf_frame or not self.set_scale, padding=True)
        _image_batch(img, laf.shape[0])
        est = self.est
        out = laf.detach().double().cpu().clone()
        h, w = img.shape[2:]
        for b in range(laf.shape[0]):
            # kornia's detectors pad with all-zero LAFs where an image has fewer features: passed through
            live = torch.nonzero(~laf_padding(laf[b : b + 1])[0]).flatten()
            if len(live) == 0:
                continue
            lb = out[b : b + 1, live]
            xy = lb[0, :, :, 2].numpy()
            im = img[b].detach().float().cpu().clamp(0, 1).numpy()
            im = im[0] if im.shape[0] == 1 else im.transpose(1, 2, 0)
            kp = check_keypoints(xy, (h, w), allow_empty=True)  # LAF centres inside the image
            frame = None
            if self.laf_frame:
                # the LAF's scale is a descriptor window: our radius is that over the plan's region
                r = KF.get_laf_scale(lb)[0, :, 0, 0].numpy() / (REFERENCE_RADIUS * est.plan.descriptor_region)
                frame = np.log2(np.clip(r, 2.0**-12, 2.0**12))
            # the LAF's own scale kept: read the angle in its frame only (one pass)
            keep = self.laf_frame and not self.set_scale
            res = (est.with_plan(passes=1) if keep else est).estimate(im, kp, detector_scale=frame)
            scale = torch.from_numpy(res.descriptor_radius).double() if self.set_scale else None
            theta = (
                torch.from_numpy(np.asarray(res.orientation, np.float64)) if self.set_orientation else None
            )
            out[b, live, :, :2] = posed_affine(lb[0, :, :, :2], scale, theta)
        return out.to(device=laf.device, dtype=laf.dtype)


def _padding_kept(laf: torch.Tensor, run) -> torch.Tensor:
    """``run`` on the LAFs ``(1, N, 2, 3)`` that are not kornia's all-zero padding (:func:`~patchpose.interop.laf_padding`),
    its ``(1, L, ...)`` result put back in their places and zeros in the padding's: ``(1, N, ...)``."""
    live = torch.nonzero(~laf_padding(laf)[0]).flatten()
    got = run(laf[:, live.to(laf.device)])
    out = torch.zeros((1, laf.shape[1], *got.shape[2:]), dtype=got.dtype, device=got.device)
    out[0, live.to(got.device)] = got[0]
    return out


def posed_affine(a: torch.Tensor, scale: torch.Tensor | None, theta: torch.Tensor | None) -> torch.Tensor:
    """LAFs' affine parts ``a`` ``(N, 2, 2)`` (double) given a new ``scale`` (``sqrt(det)``, px) and/or
    orientation ``theta`` (radians, CCW as displayed, in the image): their affine shape kept, as kornia's
    orientation modules keep it. With ``a = U·R(φ)`` (kornia's factorisation: ``U`` upright, ``R`` its
    rotation), ``φ`` is set so that the LAF's first axis ``a·e_x`` points along ``theta`` in the image (for an
    isotropic LAF, ``φ = theta``), and ``a`` is scaled by ``scale / sqrt(det a)``. A degenerate ``a`` (scale 0,
    no shape to keep) is made isotropic at ``scale`` and ``theta`` (0 where not given)."""
    det = a[:, 0, 0] * a[:, 1, 1] - a[:, 0, 1] * a[:, 1, 0]
    flat = det.abs() < 1e-12
    out = a.clone()
    if theta is not None:
        phi = torch.atan2(a[:, 0, 1], a[:, 0, 0])  # kornia's get_laf_orientation, in radians
        upright = a @ _rotation(phi).transpose(1, 2)  # U = a·R(φ)ᵀ
        d = torch.stack([torch.cos(theta), -torch.sin(theta)], 1)  # the direction in the image (y down)
        v = torch.linalg.solve(torch.where(flat[:, None, None], torch.eye(2, dtype=a.dtype), upright), d)
        out = upright @ _rotation(torch.atan2(-v[:, 1], v[:, 0]))
    if scale is not None:
        out = out * (scale / det.abs().clamp_min(1e-300).sqrt())[:, None, None]
    if bool(flat.any()):  # rebuilt isotropic (only where the scale is set: check_laf refuses them otherwise)
        s = scale[flat] if scale is not None else torch.zeros(int(flat.sum()), dtype=a.dtype)
        t = theta[flat] if theta is not None else torch.zeros(int(flat.sum()), dtype=a.dtype)
        out[flat] = s[:, None, None] * _rotation(t)
    return out


def _rotation(angle: torch.Tensor) -> torch.Tensor:
    """kornia's rotation matrices ``(N, 2, 2)`` ``[[cos, sin], [−sin, cos]]`` of ``angle`` (radians), as
    ``laf_from_center_scale_ori`` builds a LAF of orientation ``angle``."""
    c, s = torch.cos(angle), torch.sin(angle)
    return torch.stack([torch.stack([c, s], 1), torch.stack([-s, c], 1)], 1)


class LAFAffineShape(nn.Module):
    """Give kornia LAFs our affine shape (``(laf (B, N, 2, 3), img (B, 1 or 3, H, W)) -> laf``): kornia's
    ``aff_module`` interface, a drop-in for its ``LAFAffNetShapeEstimator`` (e.g. ``KF.KeyNetDetector(
    aff_module=LAFAffineShape())``). Each LAF's shape is read by the shape network in the upright disc of its
    centre and scale (:meth:`patchpose.shape.AffineShapeEstimator.frames`); its centre, scale (``sqrt(det)``)
    and orientation are kept, as AffNet's module keeps them by default.

    Args:
        shape: an :class:`~patchpose.shape.AffineShapeEstimator`, a bundled shape network's name or a
            ``patchpose train-shape`` file, or None (the bundled default).
    """

    def __init__(self, shape=None) -> None:
        super().__init__()
        from ..shape import AffineShapeEstimator

        self.shape = shape if isinstance(shape, AffineShapeEstimator) else AffineShapeEstimator.load(shape)

    def forward(self, laf: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
        KF = require("kornia.feature", "kornia")
        from ..data.patches import Pyramid, to_gray

        check_laf(laf, padding=True)
        _image_batch(img, laf.shape[0])
        out = []
        for b in range(laf.shape[0]):
            lb = laf[b : b + 1].detach().double().cpu()
            if bool(laf_padding(lb).any()):  # kornia's padding passed through, as zeros
                one = img[b : b + 1]
                out.append(_padding_kept(lb, lambda live, one=one: self.forward(live, one).double().cpu()))
                continue
            if lb.shape[1] == 0:
                out.append(lb)
                continue
            im = img[b].detach().float().cpu().clamp(0, 1).permute(1, 2, 0).numpy()
            gray = np.ascontiguousarray(to_gray(im) if im.shape[2] == 3 else im[:, :, 0])
            xy = KF.get_laf_center(lb)[0].numpy()
            h, w = gray.shape
            kp = check_keypoints(xy, (h, w), allow_empty=True)  # LAF centres inside the image
            radius = KF.get_laf_scale(lb)[0, :, 0, 0].numpy()
            frames = torch.from_numpy(self.shape.frames(Pyramid(gray), kp, radius))
            upright = torch.cat([frames, torch.from_numpy(xy)[:, :, None]], 2)[None]
            out.append(KF.set_laf_orientation(upright, KF.get_laf_orientation(lb)))
        return torch.cat(out).to(device=laf.device, dtype=laf.dtype)


#: log2 of the patch half-width in characteristic radii at scale 0 when a log-polar model reads a patch:
#: rings out to 16 · 2**-0.5 ≈ 11 px of the model's frame carry the patch, the rest are filled
PATCH_LOG2_HALF_WIDTH = -0.5
#: Gaussian blur (sigma) of the patch before it is read, in units of its half-width (1.5 px of a 32 px
#: patch), as the model reads images from smoothed pyramid levels
PATCH_BLUR = 1.5 / 16


def gaussian_blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """``x`` ``(B, C, H, W)`` blurred by a separable Gaussian of ``sigma`` px, borders replicated (so a
    quarter turn of the input turns the output exactly)."""
    r = max(1, int(np.ceil(3.0 * sigma)))
    t = torch.arange(-r, r + 1, dtype=torch.float64)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    k = (k / k.sum()).to(device=x.device, dtype=x.dtype)
    c = x.shape[1]
    x = F.pad(x, (r, r, r, r), mode="replicate")
    x = F.conv2d(x, k.view(1, 1, 1, -1).expand(c, 1, 1, -1), groups=c)
    return F.conv2d(x, k.view(1, 1, -1, 1).expand(c, 1, -1, 1), groups=c)


class PatchAngleDetector(nn.Module):
    """``(B, 1, PS, PS)`` patches (kornia's, covering ±LAF scale) → ``(B,)`` radians, CCW as displayed.

    A log-polar model's grid reaches far beyond any patch, and the square patch's corners do not turn with
    its content. So the patch is read as a disc: blurred by :data:`PATCH_BLUR`, its half-width put at
    ``16 · 2**PATCH_LOG2_HALF_WIDTH`` px of the model's frame, the rings inside the disc sampled from it
    and every ring beyond filled with the mean of those samples (which carries no direction). Only the
    orientation head runs, one read (the model's read plan, made for images, does not apply to a patch).
    Other models see the patch resized to their input.
    """

    def __init__(self, estimator: EstimatorLike = None) -> None:
        super().__init__()
        self.est = as_estimator(estimator)
        self.est.model.eval()
        cfg = self.est.cfg
        self.cfg = cfg
        if cfg.is_polar:
            g = cfg.polar_grid
            # ring radius in units of the patch half-width
            r = 2.0 ** (g.log2_radii() - PATCH_LOG2_HALF_WIDTH)
            a = g.angles_rad()
            # grid_sample coordinates: x right, y down, in [−1, 1] over the patch
            gx = r[:, None] * np.cos(a)[None, :]
            gy = -r[:, None] * np.sin(a)[None, :]
            grid = torch.from_numpy(np.stack([gx, gy], -1)).float()[None]
            self.register_buffer("grid", grid, persistent=False)
            self.register_buffer("inside", torch.from_numpy(r <= 1.0 + 1e-9), persistent=False)

    def _polar_input(self, x: torch.Tensor) -> torch.Tensor:
        """The model's log-polar input ``(B, 1, rings, angles)`` read from patches ``x`` ``(B, 1, PS, PS)``."""
        x = gaussian_blur(x, PATCH_BLUR * x.shape[-1] / 2.0)
        grid = self.grid.to(x.device).expand(len(x), -1, -1, -1)
        v = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
        inside = self.inside.to(x.device)
        fill = v[:, :, inside].mean((2, 3), keepdim=True)  # (B, 1, 1, 1)
        return torch.where(inside[None, None, :, None], v, fill)

    @torch.no_grad()
    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        from ..inference import decode_poses, output_arrays

        if not isinstance(patches, torch.Tensor):
            raise InputError(f"patches must be a torch.Tensor (B, 1, PS, PS), got {type(patches).__name__}")
        if patches.dim() != 4 or patches.shape[1] != 1 or patches.shape[2] != patches.shape[3]:
            raise InputError(f"patches must be (B, 1, PS, PS), got {tuple(patches.shape)}")
        if patches.shape[2] < 2:
            raise InputError(f"patches must be at least 2×2 pixels, got {tuple(patches.shape)}")
        if not patches.is_floating_point():
            raise InputError(f"patches must hold floats (kornia's patches, in [0, 1]), got {patches.dtype}")
        if patches.is_meta:
            raise InputError("patches is a meta tensor: it holds no values to read")
        out_dtype = patches.dtype
        if len(patches) == 0:
            return torch.empty(0, device=patches.device, dtype=out_dtype)
        if not bool(torch.isfinite(patches).all()):
            raise InputError("patches hold non-finite values (NaN or infinity)")
        x = patches.detach().to(device=self.est.device, dtype=torch.float32)
        if self.cfg.is_polar:
            x = self._polar_input(x)
        else:
            size = self.cfg.patch_size
            x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=True)
            # windows beyond the patch repeat the patch (only the first window is really seen)
            x = x.repeat(1, len(self.cfg.windows), 1, 1)
        if self.cfg.color == "rgb":
            x = x.repeat(1, 3, 1, 1)
        o = self.est.model(x, heads=("orientation",))  # the angle only
        theta = decode_poses(output_arrays(o, torch.float64), k=1)["orientation"][:, 0]
        return torch.from_numpy(np.mod(theta, TWO_PI)).to(device=patches.device, dtype=out_dtype)


def kornia_angle_detector(estimator: EstimatorLike = None) -> PatchAngleDetector:
    """The angle detector for ``kornia.feature.LAFOrienter(patch_size=32, angle_detector=...)``."""
    return PatchAngleDetector(estimator)


def describe_blended(
    img: torch.Tensor, laf: torch.Tensor, descriptor: nn.Module, pool_octaves: float = 0.0
) -> torch.Tensor:
    """One blended descriptor per LAF: ``descriptor(img, laf_j)`` (a kornia ``LAFDescriptor``, e.g.
    ``KF.LAFDescriptor(KF.HardNet(True))``) at each LAF turned to each of the 4 strongest peaks of the
    gradient-orientation histogram (kornia's dominant gradient's) read on the LAF's own region, averaged with
    weights from the peaks' masses, L2-normalised: ``(1, N, D)`` float32.

    Each LAF keeps its centre, scale and shape; only its orientation is set. The histogram is read on the
    LAF's region made upright (kornia's ``make_upright``): a disc for a similarity LAF (a detector's scale and
    angle), the affine-normalised patch for an affine one (AffNet's), whose peaks are then turned in that
    patch's own frame (kornia's ``rotate_laf``). The documented uses (docs/integrations.md): LAFs with a
    scale of their own (Key.Net's) as they are; AffNet's LAFs with ``pool_octaves=POOL_OCTAVES``
    (:data:`~patchpose.matching.blend.POOL_OCTAVES`: each peak also described on the LAF scaled by
    ``2**±pool_octaves``, domain-size pooling), in place of OriNet. Match with mutual nearest neighbours
    (AdaLAM, given each LAF's strongest peak, rejects the matches whose strongest peaks differ, which are
    those a blend wins).

    Args:
        img: ``(1, 1 or 3, H, W)`` float image in [0, 1], as ``descriptor`` takes it.
        laf: ``(1, N, 2, 3)`` kornia LAFs (pixel centres at integers, as kornia's); all-zero LAFs (the padding
            of kornia's detectors) get zero descriptors.
        descriptor: a module ``(img, laf) -> (1, N, D)`` float descriptors.
        pool_octaves: 0 (default: each peak at the LAF's own size) or a number in (0, 2], as
            :func:`~patchpose.integrations.opencv.compute_blended`'s.
    """
    KF = require("kornia.feature", "kornia")
    from ..data.patches import Pyramid, to_gray

    k = BLEND_K
    laf = check_laf(laf, batch=1, padding=True)
    _image_batch(img, 1)
    if not callable(descriptor):
        raise InputError("descriptor must be a module (img, laf) -> (1, N, D), e.g. kornia's LAFDescriptor")
    if pool_octaves != 0.0:
        check_pool_octaves(pool_octaves)
    n = laf.shape[1]
    if bool(laf_padding(laf).any()):  # kornia's padding: zero descriptors, the others as if it were not there
        return _padding_kept(laf, lambda live: describe_blended(img, live, descriptor, pool_octaves))
    if n == 0:
        return descriptor(img, laf).float()
    gray = img[0].detach().float().cpu().permute(1, 2, 0).numpy()
    gray = to_gray(gray) if gray.shape[2] == 3 else gray[:, :, 0]
    upright = KF.make_upright(laf.detach())
    xy = KF.get_laf_center(upright)[0].double().cpu().numpy()
    scale, shape = affine_parts(upright[0, :, :, :2].double().cpu().numpy())
    ori, w = gradient_peaks(Pyramid(np.ascontiguousarray(gray, np.float32)), xy, scale, k, shape=shape)
    size = np.zeros_like(ori)  # octaves from each LAF's own size
    if pool_octaves:
        size, ori, w = pool_sizes(size, ori, w, pool_octaves)
    m = ori.shape[1]
    lafs = upright.repeat_interleave(m, dim=1)
    lafs = KF.scale_laf(lafs, torch.as_tensor(np.exp2(size).reshape(1, n * m, 1, 1), dtype=lafs.dtype))
    angles = torch.as_tensor(np.degrees(ori).reshape(1, n * m, 1), dtype=lafs.dtype)
    lafs = KF.rotate_laf(lafs, angles).to(laf.device)
    with torch.inference_mode():
        try:
            d = descriptor(img, lafs)
        except TypeError as e:  # a patch descriptor (KF.SIFTDescriptor) given where one of LAFs is needed
            raise InputError(
                f"descriptor must take (img, laf), as kornia's LAFDescriptor does: wrap a patch descriptor in "
                f"KF.LAFDescriptor(...) ({e})"
            ) from None
    if not isinstance(d, torch.Tensor) or d.dim() != 3 or tuple(d.shape[:2]) != (1, n * m):
        raise InputError(
            f"descriptor must give a (1, {n * m}, D) tensor for {n * m} LAFs, got "
            f"{tuple(d.shape) if isinstance(d, torch.Tensor) else type(d).__name__}"
        )
    d = d.detach().float().cpu().numpy().reshape(n, m, -1)
    return torch.from_numpy(blend_descriptors(d, w))[None]


#: ALIKED's detection threshold (kornia's and the official code's default)
ALIKED_THRESHOLD = 0.2
#: the ALIKED models kornia builds (``kornia.feature.ALIKED(model_name)``)
ALIKED_MODELS = ("aliked-t16", "aliked-n16", "aliked-n16rot", "aliked-n32")


def _first(names: list[str]) -> str:
    """The first of ``names``, quoted, and how many more (a message's short form of torch's list)."""
    return f"{names[0]!r}" + (f" and {len(names) - 1} more" if len(names) > 1 else "")


def _aliked_mismatch(kf, weights, model: str, net, keep: tuple[str, ...]) -> str | None:
    """What ``aliked_extractor`` says where the state dict in ``weights`` does not load into ``net`` (kornia's
    ``ALIKED(model)``; the entries named in ``keep`` may be missing): another ALIKED's weights (its names, another
    model's shapes: which, for ``--aliked-model``), names with a ``module.`` prefix (a DataParallel's), torch's first
    missing and unexpected names, or the first shape no ALIKED has; None where the file is not a state dict or its
    tensors are ``net``'s (:func:`~patchpose.weights.load_state_into` says what else is wrong)."""
    import torch

    from ..errors import WeightsError
    from ..weights import load_torch_file

    try:
        state = load_torch_file(weights)
    except WeightsError:
        return None
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        return None

    def shapes(module) -> dict[str, tuple]:
        return {k: tuple(v.shape) for k, v in module.state_dict().items() if k not in keep}

    own = shapes(net)
    have = {str(k): tuple(v.shape) for k, v in state.items() if k not in keep}
    missing, unexpected = [k for k in own if k not in have], [k for k in have if k not in own]
    what = f"{weights} does not hold {model}'s weights (kornia's ALIKED)"
    if missing or unexpected:
        if have and all(k.startswith("module.") for k in have):
            return (
                f"{weights} does not hold {model}'s weights as kornia's ALIKED names them: its names begin with "
                "'module.' (a model saved from torch.nn.DataParallel): save net.module.state_dict(), or remove the "
                "prefix from every name"
            )
        if not set(have) & set(own):
            return (
                f"{what}: none of its {len(have)} tensors has an ALIKED name (e.g. {next(iter(have), '')!r})"
            )
        said = [f"missing {_first(missing)}"] if missing else []
        return f"{what}: " + "; ".join(said + ([f"unexpected {_first(unexpected)}"] if unexpected else []))
    differ = [k for k in own if have[k] != own[k]]
    if not differ:
        return None
    fits = [m for m in ALIKED_MODELS if m != model and shapes(kf.ALIKED(m, max_num_keypoints=-1)) == have]
    if fits:
        whose = " or ".join(f"{m}'s" for m in fits) + " weights"
        whose += " (the same shapes)" if len(fits) > 1 else ""
        return (
            f"{weights} holds {whose}, not {model}'s (kornia's ALIKED): pass --aliked-model {' or '.join(fits)} "
            "(aliked_extractor's model)"
        )
    k = differ[0]
    more = f" (and {len(differ) - 1} more differ)" if len(differ) > 1 else ""
    return f"{what}, nor another ALIKED's: {k} is {have[k]} where {model}'s is {own[k]}{more}"


def aliked_extractor(
    weights, model: str = "aliked-n16", max_keypoints: int = 2000
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """kornia's ``ALIKED(model)`` with the state dict in ``weights`` (a ``.pth`` file of the official release, as
    ``torch.load(weights_only=True)`` reads it; nothing is downloaded) as an extractor for
    :func:`patchpose.match_upright`: ``image`` (``H×W×3`` uint8 RGB, or ``H×W`` gray read as three equal channels)
    → ``(xy (N, 2), descriptors (N, D))``, its maxima above kornia's default threshold (0.2), the
    ``max_keypoints`` strongest first. The network runs on this process's torch threads, without gradients. Its
    ``name`` says the model, the weights' SHA-256 and ``max_keypoints`` (a reconstruction's settings record it)."""
    from ..data.keypoints import MAX_KEYPOINTS
    from ..errors import is_int_in
    from ..weights import load_state_into

    kf = require("kornia.feature", "kornia")
    if not isinstance(weights, (str, os.PathLike)):
        raise InputError(
            f"weights must be the path of ALIKED's .pth file, got {type(weights).__name__} (an extractor is "
            "aliked_extractor(PATH), not aliked_extractor itself)"
        )
    if model not in ALIKED_MODELS:
        raise InputError(f"model must be one of {list(ALIKED_MODELS)}, got {model!r}")
    if not is_int_in(max_keypoints, 1, MAX_KEYPOINTS):
        raise InputError(
            f"max_keypoints must be an integer from 1 to {MAX_KEYPOINTS:,}, got {max_keypoints!r}"
        )
    net = kf.ALIKED(model, max_num_keypoints=-1, detection_threshold=ALIKED_THRESHOLD)
    # the official files lack kornia's coordinate-grid buffer: kornia's own is kept; tensors that are not the model's
    # are one line saying how they differ (_aliked_mismatch, read only then), not torch's list of every one
    keep = ("dkd.hw_grid",)
    net = load_state_into(
        net, weights, model, keep=keep, mismatch=lambda: _aliked_mismatch(kf, weights, model, net, keep)
    )

    def extract(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        img = np.asarray(image)
        if img.dtype != np.uint8 or img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] != 3):
            raise InputError(
                f"ALIKED takes an H×W×3 uint8 RGB or H×W gray image, got {img.dtype} {img.shape}"
            )
        rgb = np.repeat(img[:, :, None], 3, 2) if img.ndim == 2 else img
        x = torch.from_numpy(np.ascontiguousarray(rgb, np.float32) / 255.0).permute(2, 0, 1)[None]
        with torch.inference_mode():
            f = net(x)[0]
        xy = f.keypoints.double().numpy().reshape(-1, 2)
        score = f.keypoint_scores.double().numpy().reshape(-1)
        order = np.argsort(-score, kind="stable")[: int(max_keypoints)]
        return xy[order], f.descriptors.float().numpy().reshape(len(score), -1)[order]

    digest = hashlib.sha256(Path(weights).read_bytes()).hexdigest()[:16]
    extract.name = (
        f"kornia {model} sha256:{digest} max_keypoints={int(max_keypoints)}"  # what it is, in settings
    )
    return extract


__all__ = [
    "ALIKED_MODELS",
    "ALIKED_THRESHOLD",
    "aliked_extractor",
    "LAFPoseAssigner",
    "LAFAffineShape",
    "PatchAngleDetector",
    "describe_blended",
    "kornia_angle_detector",
]
