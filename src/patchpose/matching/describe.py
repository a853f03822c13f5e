"""Descriptors of patches cut at keypoint poses.

The patch of a keypoint with pose ``(σ, θ)`` covers ``±region · REFERENCE_RADIUS · 2**σ`` pixels, turned
by ``θ`` (:mod:`patchpose.conventions`), and is sampled through the same anti-aliased pyramid as the model's
inputs (:func:`~patchpose.data.patches.extract_patches`, which samples kornia's LAF points). Descriptors:

* ``sift`` (default): kornia's ``SIFTDescriptor`` (RootSIFT) on 32×32 patches; nothing to download.
* ``hardnet`` / ``sosnet``: kornia's architectures with a weights file the user has on disk (pretrained
  weights are downloaded by kornia, which cannot happen here).
* ``tfeat`` / ``hardtfeat``: TFeat (kornia's) and HardTFeat (:class:`~patchpose.matching.peers.HardTFeat`)
  with the weights of a peers folder (:class:`~patchpose.matching.peers.Peers`), for comparisons.

A patch may also be cut through an affine frame (``shape``: kornia's LAF matrices, as AffNet gives them).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..data.patches import Pyramid, extract_patches
from ..errors import InputError, require
from ..weights import load_state_into
from .peers import Peers

DESCRIPTORS = ("sift", "hardnet", "sosnet", "tfeat", "hardtfeat")
#: the descriptors whose weights come from a peers folder
PEER_DESCRIPTORS = ("tfeat", "hardtfeat")
PATCH_SIZE = 32


class Describer:
    """``describe(pyramid, xy, log2_scale, theta) -> (N, D)`` L2-normalised float32 descriptors.

    ``peers``: the peers folder (or its :class:`~patchpose.matching.peers.Peers`) that ``tfeat`` and
    ``hardtfeat`` take their weights from. ``batch``: patches per call of the network (on CPU these small
    networks run about twice as fast on 128 at a time as on 1,024: their activations stay in cache)."""

    def __init__(
        self,
        name: str = "sift",
        weights: str | Path | None = None,
        batch: int = 128,
        peers: Peers | str | Path | None = None,
    ) -> None:
        KF = require("kornia.feature", "kornia")

        if name not in DESCRIPTORS:
            raise InputError(f"descriptor must be one of {DESCRIPTORS}, got {name!r}")
        self.name, self.batch = name, batch
        if name == "sift":
            self.net = KF.SIFTDescriptor(PATCH_SIZE, rootsift=True)
        elif name in PEER_DESCRIPTORS:
            if peers is None:
                raise InputError(f"the {name} descriptor needs the peers' weights folder (--peers DIR)")
            self.net = (peers if isinstance(peers, Peers) else Peers(peers)).descriptor(name)
        else:
            if not weights:
                raise InputError(
                    f"the {name} descriptor needs a local weights file (--descriptor-weights); "
                    "pretrained weights cannot be downloaded here"
                )
            self.net = KF.HardNet(pretrained=False) if name == "hardnet" else KF.SOSNet(pretrained=False)
            self._load_weights(weights)
        self.net.eval()

    def _load_weights(self, weights: str | Path) -> None:
        """Load a local state dict (or ``{"state_dict": ...}``) into the network; one-line WeightsErrors."""
        load_state_into(self.net, weights, self.name)

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


__all__ = ["DESCRIPTORS", "PEER_DESCRIPTORS", "Describer"]
