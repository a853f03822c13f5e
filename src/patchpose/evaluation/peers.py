"""Published peers of patchpose, loaded from a folder of their pretrained weights (evaluation only).

The detectors, pose estimators and descriptors that users pick instead of, or beside, patchpose: Key.Net
and ALIKED (keypoints), OriNet (an orientation), AffNet (an affine shape), TFeat and HardTFeat (descriptors). Their
weights are never bundled and the library never needs them: a comparison names the folder that holds them
(``--peers DIR``; the layout and the sources of the files are in that folder's ``README.md``):

============================ ================================================================================
``orinet.pth``               kornia's ``OriNet``, used as kornia does: ``LAFOrienter(32, angle_detector=...)``
``affnet.pth``               kornia's ``LAFAffNetShapeEstimator``
``keynet.pth``               kornia's ``KeyNetDetector`` (its ``.model``, a ``KeyNet``)
``tfeat-liberty.params``     kornia's ``TFeat``
``hardtfeat.pth``            :class:`HardTFeat` (TFeat's layers trained with the HardNet loss; not in kornia)
``aliked-n16.pth``           kornia's ``ALIKED("aliked-n16")`` (its keypoints only)
============================ ================================================================================

Every file is read with ``torch.load(weights_only=True)`` (tensors and plain containers only) and, when the
folder has a ``SHA256SUMS`` file (``sha256sum`` format), checked against it first. A missing folder is an
:class:`~patchpose.errors.InputError`; a missing, altered or unloadable file a one-line
:class:`~patchpose.errors.WeightsError`. kornia is an optional extra, imported only when a peer is built.

Pose conventions are patchpose's (:mod:`patchpose.conventions`): angles in radians, counter-clockwise as
displayed, which is also the sign of kornia's LAF orientation; a kornia LAF's ``2×2`` part maps the patch's
``[-1, 1]²`` to image pixels, as the ``shape`` frames of :func:`~patchpose.data.patches.extract_patches` do.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..errors import InputError, WeightsError, require
from ..integrations.kornia import ALIKED_THRESHOLD
from ..weights import load_state_into, sha256_of

#: peer name -> file name inside the peers folder
PEER_FILES = {
    "orinet": "orinet.pth",
    "affnet": "affnet.pth",
    "keynet": "keynet.pth",
    "tfeat": "tfeat-liberty.params",
    "hardtfeat": "hardtfeat.pth",
    "aliked": "aliked-n16.pth",
}
#: side of the patches OriNet, AffNet, TFeat and HardTFeat take
PEER_PATCH = 32
#: frames per call of kornia's LAF modules (each call samples its own image pyramid): on CPU the networks run
#: about twice as fast on 128 patches at a time as on thousands (their activations stay in cache)
LAF_BATCH = 128


class HardTFeat(nn.Module):
    """TFeat's layers trained with the HardNet loss (``hardtfeat.pth`` of the AffNet repository).

    ``(B, 1, 32, 32)`` patches → ``(B, 128)`` unit-length descriptors. Each patch is first standardised
    (zero mean, unit standard deviation), then: conv 1→32 7×7, tanh, max-pool 2, conv 32→64 6×6, tanh,
    conv 64→128 8×8, tanh, flatten, L2-normalise. The layer indices are those of the weights file
    (``classifier.0`` holds no weights: a dropout during training)."""

    patch_size = PEER_PATCH

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=7),
            nn.Tanh(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(32, 64, kernel_size=6),
            nn.Tanh(),
        )
        self.classifier = nn.Sequential(nn.Identity(), nn.Conv2d(64, 128, kernel_size=8), nn.Tanh())

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        if patches.dim() != 4 or tuple(patches.shape[1:]) != (1, PEER_PATCH, PEER_PATCH):
            raise InputError(f"HardTFeat takes (B, 1, 32, 32) patches, got {tuple(patches.shape)}")
        flat = patches.flatten(1)
        mean = flat.mean(1).view(-1, 1, 1, 1)
        std = flat.std(1).view(-1, 1, 1, 1) + 1e-7
        conv1, _, _, conv2, _ = self.features
        # tanh is increasing, so max-pooling before it gives the same values on a quarter of the elements; the
        # 2×2 pooling as the maximum of four strided views (the same values, several times faster than
        # max_pool2d on CPU)
        y = conv1((patches - mean) / std)
        y = torch.maximum(
            torch.maximum(y[:, :, 0::2, 0::2], y[:, :, 0::2, 1::2]),
            torch.maximum(y[:, :, 1::2, 0::2], y[:, :, 1::2, 1::2]),
        )
        x = torch.tanh(conv2(torch.tanh(y)))
        return nn.functional.normalize(self.classifier(x).flatten(1), dim=1)


def read_sums(path: Path) -> dict[str, str]:
    """``{file name: sha256}`` from a ``sha256sum`` listing (``HASH  NAME`` or ``HASH *NAME`` per line)."""
    sums = {}
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.fullmatch(r"([0-9a-fA-F]{64}) [ *](.+)", line.strip())
        if m is None:
            raise WeightsError(f"{path}: line {n} is not 'SHA256  NAME'")
        sums[m.group(2).strip()] = m.group(1).lower()
    return sums


class Peers:
    """The peers in a folder; each network is loaded, checked and put in eval mode on its first call, then
    kept (``orinet()``, ``affnet()``, ``tfeat()``, ``hardtfeat()``, ``keynet(n)``, ``aliked()``)."""

    def __init__(self, folder: str | Path) -> None:
        if not isinstance(folder, (str, os.PathLike)):
            raise InputError(f"the peers folder must be a path, got {type(folder).__name__}")
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise InputError(
                f"peers folder not found: {self.folder} (the folder of the peers' weights files)"
            )
        sums = self.folder / "SHA256SUMS"
        self.sums = read_sums(sums) if sums.is_file() else None
        self._nets: dict[str, nn.Module] = {}

    def path(self, name: str) -> Path:
        """The file of peer ``name`` (:data:`PEER_FILES`), checked against ``SHA256SUMS`` when there is one."""
        if name not in PEER_FILES:
            raise InputError(f"peer must be one of {tuple(PEER_FILES)}, got {name!r}")
        path = self.folder / PEER_FILES[name]
        if not path.is_file():
            raise WeightsError(f"{name} weights not found: {path}")
        if self.sums is not None:
            want = self.sums.get(PEER_FILES[name])
            if want is None:
                raise WeightsError(f"{path.name} is not listed in {self.folder / 'SHA256SUMS'}")
            if sha256_of(path) != want:
                raise WeightsError(f"{path} does not match its sha256 in {self.folder / 'SHA256SUMS'}")
        return path

    def fingerprint(self, names) -> dict[str, str]:
        """``{file name: sha256}`` of the named peers' files: what a cached result was computed with."""
        return {PEER_FILES[n]: sha256_of(self.path(n)) for n in names}

    def load_into(self, name: str, net: nn.Module, drop_prefix: str | None = None) -> nn.Module:
        """Load peer ``name``'s state dict (or ``{"state_dict": ...}``) into ``net`` (strict; keys starting
        with ``drop_prefix`` dropped first) and return it in eval mode; a bad file is a WeightsError."""
        return load_state_into(net, self.path(name), name, drop_prefix)

    # ------------------------------------------------------------------ the networks
    def _net(self, name: str) -> nn.Module:
        """Peer ``name``'s network with its weights, built on first use and kept."""
        if name not in self._nets:
            if name == "hardtfeat":  # not a kornia class; the file's unused SIFT.* tensors are dropped
                self._nets[name] = self.load_into(name, HardTFeat(), drop_prefix="SIFT.")
            elif name == "aliked":
                # the official file lacks kornia's coordinate-grid buffer: kornia's own is kept
                KF = require("kornia.feature", "kornia")
                net = KF.ALIKED("aliked-n16", max_num_keypoints=-1, detection_threshold=ALIKED_THRESHOLD)
                self._nets[name] = load_state_into(net, self.path(name), name, keep=("dkd.hw_grid",))
            else:
                KF = require("kornia.feature", "kornia")
                build = {
                    "orinet": KF.OriNet,
                    "affnet": KF.LAFAffNetShapeEstimator,
                    "keynet": KF.KeyNet,
                    "tfeat": KF.TFeat,
                }[name]
                self._nets[name] = self.load_into(name, build(pretrained=False))
        return self._nets[name]

    def orinet(self) -> nn.Module:
        """kornia's ``LAFOrienter(32, angle_detector=OriNet)``: turns LAFs by OriNet's angle on their patch."""
        KF = require("kornia.feature", "kornia")
        return KF.LAFOrienter(PEER_PATCH, angle_detector=self._net("orinet")).eval()

    def affnet(self) -> nn.Module:
        """kornia's ``LAFAffNetShapeEstimator``: AffNet's affine shape, the LAF's scale and angle kept."""
        return self._net("affnet")

    def tfeat(self) -> nn.Module:
        """kornia's ``TFeat`` (its tanh output; :class:`~patchpose.matching.describe.Describer` normalises)."""
        return self._net("tfeat")

    def hardtfeat(self) -> HardTFeat:
        """:class:`HardTFeat` with the folder's weights."""
        return self._net("hardtfeat")

    def keynet(self, num_features: int) -> nn.Module:
        """kornia's ``KeyNetDetector`` with the local Key.Net weights, ``num_features`` detections at most."""
        KF = require("kornia.feature", "kornia")
        det = KF.KeyNetDetector(pretrained=False, num_features=int(num_features))
        det.model = self._net("keynet")
        return det.eval()

    def aliked(self) -> nn.Module:
        """kornia's ``ALIKED("aliked-n16")`` with the folder's weights (threshold mode: its maxima above
        :data:`ALIKED_THRESHOLD`, kornia's default)."""
        return self._net("aliked")

    def descriptor(self, name: str) -> nn.Module:
        """The descriptor network ``"tfeat"`` or ``"hardtfeat"``."""
        if name not in ("tfeat", "hardtfeat"):
            raise InputError(f"peer descriptor must be 'tfeat' or 'hardtfeat', got {name!r}")
        return self._net(name)


# ---------------------------------------------------------------------- what the matching rows use
def _image_tensor(gray: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(gray, np.float32))[None, None]


#: the smallest side of an image that kornia's Key.Net reads (its smallest pyramid level must outsize its padding)
KEYNET_MIN_SIDE = 19


def _strongest(det: nn.Module, gray: np.ndarray, max_keypoints: int) -> tuple[np.ndarray, np.ndarray]:
    """A kornia detector's LAFs in ``gray``: xy and LAF scale of its detections, strongest first, one per location
    (the first of those at the same place to 0.01 px), at most ``max_keypoints``, clipped into the image."""
    KF = require("kornia.feature", "kornia")
    with torch.inference_mode():
        lafs, resp = det(_image_tensor(gray))
    resp = resp[0].double().numpy()
    xy = lafs[0, :, :, 2].double().numpy()
    radius = KF.get_laf_scale(lafs)[0, :, 0, 0].double().numpy()
    order = np.argsort(-resp, kind="stable")
    order = order[resp[order] > 0]  # unfilled slots hold a zero response
    xy, radius = xy[order], radius[order]
    _, first = np.unique(np.round(xy, 2), axis=0, return_index=True)
    keep = np.sort(first)[: int(max_keypoints)]
    h, w = gray.shape
    xy = np.stack([np.clip(xy[keep, 0], 0, w - 1), np.clip(xy[keep, 1], 0, h - 1)], 1).reshape(-1, 2)
    return xy, radius[keep]


def keynet_frames(peers: Peers, gray: np.ndarray, max_keypoints: int) -> tuple[np.ndarray, np.ndarray]:
    """Key.Net keypoints in a float gray image in ``[0, 1]``: ``(N, 2)`` xy (pixel centres at integers,
    strongest first, one per location, at most ``max_keypoints``) and ``(N,)`` the half-width in px of
    the region kornia describes about each (its LAF scale: the detection scale times kornia's
    ``mr_size``). Key.Net gives no orientation, and none of them in an image with a side under
    :data:`KEYNET_MIN_SIDE` px."""
    if max_keypoints <= 0 or min(gray.shape[:2]) < KEYNET_MIN_SIDE:
        return np.zeros((0, 2)), np.zeros(0)
    det = peers.keynet(2 * int(max_keypoints))  # levels can find one location twice: room to drop those
    return _strongest(det, gray, max_keypoints)


def scale_space_corners(gray: np.ndarray, max_keypoints: int) -> tuple[np.ndarray, np.ndarray]:
    """Shi-Tomasi corners found in a scale space, as kornia's ``GFTTAffNetHardNet`` finds them (its
    ``ScaleSpaceDetector``: the ``CornerGFTT`` response on a doubled image's pyramid of 3 levels per octave, its
    maxima only, ``mr_size=6``; no network, no weights): ``(N, 2)`` xy (pixel centres at integers, strongest first,
    one per location, at most ``max_keypoints``) and ``(N,)`` the half-width in px of each corner's region (its LAF
    scale). What a user of kornia's corner pipeline gets as a corner's scale, without AffNet's shape and OriNet's
    angle."""
    if max_keypoints <= 0 or min(gray.shape[:2]) < KEYNET_MIN_SIDE:
        return np.zeros((0, 2)), np.zeros(0)
    KF = require("kornia.feature", "kornia")
    from kornia.geometry.transform import ScalePyramid

    det = KF.ScaleSpaceDetector(
        2 * int(max_keypoints),  # levels can find one location twice: room to drop those
        resp_module=KF.CornerGFTT(),
        scale_pyr_module=ScalePyramid(3, 1.6, 32, double_image=True, extra_levels=2),
        ori_module=KF.PassLAF(),
        aff_module=KF.PassLAF(),
        scale_space_response=False,
        minima_are_also_good=False,
        mr_size=6.0,
    ).eval()
    return _strongest(det, gray, max_keypoints)


def aliked_keypoints(peers: Peers, image: np.ndarray, max_keypoints: int) -> np.ndarray:
    """ALIKED-n16's keypoints in an image (``(H, W)`` gray or ``(H, W, 3)`` RGB, float in ``[0, 1]``; a gray
    image is read as three equal channels): ``(N, 2)`` xy (pixel centres at integers, strongest first, at most
    ``max_keypoints``), as kornia's ``ALIKED`` finds them (its maxima above :data:`ALIKED_THRESHOLD`). ALIKED
    gives no scale and no orientation; none in an image with a side under :data:`KEYNET_MIN_SIDE` px."""
    if max_keypoints <= 0 or min(image.shape[:2]) < KEYNET_MIN_SIDE:
        return np.zeros((0, 2))
    rgb = np.repeat(image[:, :, None], 3, 2) if image.ndim == 2 else image
    x = torch.from_numpy(np.ascontiguousarray(rgb, np.float32)).permute(2, 0, 1)[None]
    with torch.inference_mode():
        f = peers.aliked()(x)[0]
    xy = f.keypoints.double().numpy().reshape(-1, 2)
    score = f.keypoint_scores.double().numpy().reshape(-1)
    order = np.argsort(-score, kind="stable")[: int(max_keypoints)]
    h, w = image.shape[:2]
    xy = xy[order]
    return np.stack([np.clip(xy[:, 0], 0, w - 1), np.clip(xy[:, 1], 0, h - 1)], 1).reshape(-1, 2)


def _lafs(xy: np.ndarray, radius) -> torch.Tensor:
    KF = require("kornia.feature", "kornia")
    n = len(xy)
    center = torch.from_numpy(np.asarray(xy, np.float32)).view(1, n, 2)
    r = torch.from_numpy(np.broadcast_to(np.asarray(radius, np.float32), (n,)).copy()).view(1, n, 1, 1)
    return KF.laf_from_center_scale_ori(center, r, torch.zeros(1, n, 1))


def _run_lafs(module: nn.Module, lafs: torch.Tensor, img: torch.Tensor) -> torch.Tensor:
    out = []
    with torch.inference_mode():
        for i in range(0, lafs.shape[1], LAF_BATCH):
            out.append(module(lafs[:, i : i + LAF_BATCH], img))
    return torch.cat(out, 1)


def orinet_orientations(peers: Peers, gray: np.ndarray, xy: np.ndarray, radius) -> np.ndarray:
    """OriNet's angle ``(N,)`` (radians in ``[0, 2π)``) at upright isotropic frames of half-width
    ``radius`` px (a scalar or one per keypoint), as kornia's ``LAFOrienter`` gives it."""
    KF = require("kornia.feature", "kornia")
    if len(xy) == 0:
        return np.zeros(0)
    laf = _run_lafs(peers.orinet(), _lafs(xy, radius), _image_tensor(gray))
    return np.mod(np.radians(KF.get_laf_orientation(laf)[0, :, 0].double().numpy()), 2 * math.pi)


def affnet_frames(peers: Peers, gray: np.ndarray, xy: np.ndarray, radius) -> np.ndarray:
    """AffNet's affine frames ``(N, 2, 2)`` (the patch's ``[-1, 1]²`` to image pixels) at the keypoints, as
    kornia's ``LAFAffNetShapeEstimator`` gives them from upright isotropic frames of half-width ``radius`` px
    (a scalar or one per keypoint): its shape, the frame's scale kept, upright (no orientation read)."""
    if len(xy) == 0:
        return np.zeros((0, 2, 2))
    laf = _run_lafs(peers.affnet(), _lafs(xy, radius), _image_tensor(gray))
    return laf[0, :, :, :2].double().numpy()


def orinet_in_frames(peers: Peers, gray: np.ndarray, xy: np.ndarray, frames) -> tuple[np.ndarray, np.ndarray]:
    """OriNet's angle read in given affine frames ``(N, 2, 2)`` at the keypoints (kornia's ``LAFOrienter``):
    the turned frames ``(N, 2, 2)`` and their orientations ``(N,)`` (radians in ``[0, 2π)``)."""
    KF = require("kornia.feature", "kornia")
    if len(xy) == 0:
        return np.zeros((0, 2, 2)), np.zeros(0)
    a = np.concatenate([np.asarray(frames, np.float32), np.asarray(xy, np.float32)[:, :, None]], 2)
    laf = _run_lafs(peers.orinet(), torch.from_numpy(a)[None], _image_tensor(gray))
    ori = np.mod(np.radians(KF.get_laf_orientation(laf)[0, :, 0].double().numpy()), 2 * math.pi)
    return laf[0, :, :, :2].double().numpy(), ori


__all__ = [
    "PEER_FILES",
    "HardTFeat",
    "Peers",
    "read_sums",
    "keynet_frames",
    "aliked_keypoints",
    "orinet_orientations",
    "affnet_frames",
    "orinet_in_frames",
]
