"""Descriptors of patches cut at keypoint poses.

The patch of a keypoint with pose ``(σ, θ)`` covers ``±region · REFERENCE_RADIUS · 2**σ`` pixels, turned
by ``θ`` (:mod:`patchpose.conventions`), and is sampled through the same anti-aliased pyramid as the model's
inputs (:func:`~patchpose.data.patches.extract_patches`, which samples kornia's LAF points). Descriptors:

* ``sift`` (default): kornia's ``SIFTDescriptor`` (RootSIFT) on 32×32 patches, computed by :class:`RootSIFT` (the same
  numbers, faster); nothing to download;
* any patch descriptor network (``net``: 32×32 gray patches to 128-D descriptors, e.g. kornia's HardNet with
  weights of one's own); the benchmarks build TFeat and HardTFeat this way (:mod:`patchpose.evaluation.descriptors`).

A patch may also be cut through an affine frame (``shape``: kornia's LAF matrices, as AffNet gives them).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..data.patches import Pyramid, extract_patches
from ..errors import InputError, require

PATCH_SIZE = 32


class RootSIFT(torch.nn.Module):
    """kornia's ``SIFTDescriptor(patch_size, rootsift=True)``, the same numbers bit for bit (a test pins them),
    computed about twice as fast on CPU: the central differences by slicing instead of a 3×3 convolution, and the 8
    orientation maps voted in one scatter and pooled in one convolution instead of one per bin. ``(B, 1, P, P)``
    patches → ``(B, 128)``. It reads kornia's own per-pixel and normalisation steps; a kornia without them (before
    0.8) gets kornia's ``SIFTDescriptor`` itself."""

    def __init__(self, patch_size: int = PATCH_SIZE) -> None:
        super().__init__()
        kf = require("kornia.feature", "kornia")
        self.kornia = kf.SIFTDescriptor(patch_size, rootsift=True)
        try:
            from kornia.feature.orientation import _gradient_magnitude_orientation
            from kornia.feature.siftdesc import _l2_normalize, _rootsift
        except ImportError:  # an older kornia: its own module, as fast as it is
            self._steps = None
        else:
            self._steps = (_gradient_magnitude_orientation, _l2_normalize, _rootsift)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kornia
        if x.ndim != 4 or x.shape[1] != 1 or x.shape[2] != k.patch_size or x.shape[3] != k.patch_size:
            raise InputError(f"patches must be (B, 1, {k.patch_size}, {k.patch_size}), got {tuple(x.shape)}")
        if self._steps is None or len(x) == 0:
            return k(x)
        magnitude_orientation, l2_normalize, rootsift = self._steps
        p = F.pad(x, (1, 1, 1, 1), mode="replicate")  # kornia's "diff" gradient
        gx = 0.5 * p[:, :, 1:-1, 2:] - 0.5 * p[:, :, 1:-1, :-2]
        gy = 0.5 * p[:, :, 2:, 1:-1] - 0.5 * p[:, :, :-2, 1:-1]
        mag, ori = magnitude_orientation(gx, gy, k.eps)
        mag = mag * k.gk.expand_as(mag).type_as(mag).to(mag.device)
        bins = k.num_ang_bins
        o = float(bins) * ori / (2.0 * math.pi)
        b0 = torch.floor(o)
        w1 = o - b0
        b0 = b0 % bins
        b1 = (b0 + 1) % bins
        n, _, h, w = x.shape
        maps = torch.zeros(n, bins, h, w, dtype=mag.dtype, device=x.device)
        maps.scatter_(1, b0.long(), (1.0 - w1) * mag)
        maps.scatter_add_(1, b1.long(), w1 * mag)
        pk = k.pk
        weight = pk.weight.to(maps.dtype).to(x.device)
        d = F.conv2d(maps.reshape(n * bins, 1, h, w), weight, None, pk.stride, pk.padding).reshape(n, -1)
        d = torch.clamp(l2_normalize(d, dim=1), 0.0, float(k.clipval))
        return rootsift(l2_normalize(d, dim=1), k.eps)


class Describer:
    """``describe(pyramid, xy, log2_scale, theta) -> (N, D)`` L2-normalised float32 descriptors.

    ``name``: ``"sift"`` (RootSIFT, kornia's ``SIFTDescriptor``), or the name of ``net``, a module that takes
    ``(B, 1, 32, 32)`` patches to ``(B, 128)`` descriptors. ``batch``: patches per call of the network (None: 256
    for RootSIFT, 128 for a network; on CPU these small networks run about twice as fast on 128 at a time as on
    1,024, their activations staying in cache, and RootSIFT a third faster on 256 than on 128)."""

    def __init__(
        self, name: str = "sift", net: torch.nn.Module | None = None, batch: int | None = None
    ) -> None:
        if net is None:
            if name != "sift":
                raise InputError(f"the {name!r} descriptor needs its network (net=...); without one: 'sift'")
            net = RootSIFT(PATCH_SIZE)
        if batch is None:
            batch = 256 if isinstance(net, RootSIFT) else 128
        self.name, self.batch, self.net = name, batch, net
        self.net.eval()

    @property
    def dim(self) -> int:
        return 128

    def describe(
        self, pyramid: Pyramid, xy, log2_scale, theta, region: float = 1.0, shape: np.ndarray | None = None
    ) -> np.ndarray:
        """Descriptors of the patches at frames ``(xy, log2_scale, theta)`` (``region`` widens them); with
        ``shape`` ``(N, 2, 2)``, each frame is ``r·R(θ)·shape`` (:func:`~patchpose.data.patches.extract_patches`)."""
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        if len(xy) == 0:
            return np.zeros((0, self.dim), np.float32)
        patches = extract_patches(pyramid, xy, log2_scale, theta, PATCH_SIZE, [region], shape=shape)
        out = []
        with torch.inference_mode():
            for i in range(0, len(patches), self.batch):
                d = self.net(torch.from_numpy(patches[i : i + self.batch]))
                out.append(torch.nn.functional.normalize(d.float(), dim=1))
        return torch.cat(out).numpy()


__all__ = ["PATCH_SIZE", "Describer", "RootSIFT"]
