"""Descriptors of patches cut at keypoint poses.

The patch of a keypoint with pose ``(σ, θ)`` covers ``±region · REFERENCE_RADIUS · 2**σ`` pixels, turned
by ``θ`` (:mod:`patchpose.conventions`), and is sampled through the same anti-aliased pyramid as the model's
inputs (:func:`~patchpose.data.patches.extract_patches`, which samples kornia's LAF points). Descriptors:

* ``sift`` (default): kornia's ``SIFTDescriptor`` (RootSIFT) on 32×32 patches; nothing to download;
* any patch descriptor network (``net``: 32×32 gray patches to 128-D descriptors, e.g. kornia's HardNet with
  weights of one's own); the benchmarks build HardNet, SOSNet, TFeat and HardTFeat this way
  (:mod:`patchpose.evaluation.descriptors`).

A patch may also be cut through an affine frame (``shape``: kornia's LAF matrices, as AffNet gives them).
"""

from __future__ import annotations

import numpy as np
import torch

from ..data.patches import Pyramid, extract_patches
from ..errors import InputError, require

PATCH_SIZE = 32


class Describer:
    """``describe(pyramid, xy, log2_scale, theta) -> (N, D)`` L2-normalised float32 descriptors.

    ``name``: ``"sift"`` (RootSIFT, kornia's ``SIFTDescriptor``), or the name of ``net``, a module that takes
    ``(B, 1, 32, 32)`` patches to ``(B, 128)`` descriptors. ``batch``: patches per call of the network (on CPU
    these small networks run about twice as fast on 128 at a time as on 1,024: their activations stay in
    cache)."""

    def __init__(self, name: str = "sift", net: torch.nn.Module | None = None, batch: int = 128) -> None:
        if net is None:
            if name != "sift":
                raise InputError(f"the {name!r} descriptor needs its network (net=...); without one: 'sift'")
            net = require("kornia.feature", "kornia").SIFTDescriptor(PATCH_SIZE, rootsift=True)
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


__all__ = ["PATCH_SIZE", "Describer"]
