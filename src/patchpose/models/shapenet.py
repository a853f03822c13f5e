"""The affine shape network: one upright shape of determinant 1 per patch, learned without labels.

A keypoint's region seen at a slant is an ellipse, not a disc. :class:`ShapeNet` reads a ``(N, 1, P, P)`` patch
cut through an upright isotropic frame and gives the shape ``S`` (``(N, 2, 2)``) of the region in that patch's
coordinates: the keypoint's affine frame is then ``r·S`` for the patch's half-width ``r`` in pixels. ``S`` is
upright (lower triangular, as kornia's ``make_upright`` leaves a LAF) and of determinant 1 (the frame keeps the
detector's scale)::

    S = [[exp(a), 0], [b, exp(-a)]],   a = max_log_stretch · tanh(o0),   b = max_shear · tanh(o1)

Training (:mod:`patchpose.training.shape`) asks only that two views of one keypoint, related by a known affine
map ``B``, give covariant shapes (:func:`patchpose.losses.shape_alignment_loss`): the paper's idea (predictions
aligned under a known warp, no labels) applied to the affine shape.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch
from torch import nn

from ..errors import is_int_in


@dataclass
class ShapeNetConfig:
    """Everything needed to rebuild a :class:`ShapeNet` (stored in its weights file)."""

    patch_size: int = 32  #: side of the input patch in pixels (a multiple of 4)
    channels: tuple[int, int, int] = (16, 32, 64)  #: conv widths of the three stages (two 3×3 convs each)
    max_log_stretch: float = 1.2  #: bound of ``a`` (natural log): up to e^2.4 ≈ 11× anisotropy without shear
    max_shear: float = 2.0  #: bound of ``b``

    def validate(self) -> None:
        if not is_int_in(self.patch_size, 8, 256) or self.patch_size % 4:
            raise ValueError(f"patch_size must be a multiple of 4 from 8 to 256, got {self.patch_size!r}")
        if (
            not isinstance(self.channels, (tuple, list))
            or len(self.channels) != 3
            or not all(is_int_in(c, 1, 1024) for c in self.channels)
        ):
            raise ValueError(f"channels must be three widths from 1 to 1024, got {self.channels!r}")
        for name in ("max_log_stretch", "max_shear"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 10:
                raise ValueError(f"{name} must be a number in (0, 10], got {v!r}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["channels"] = list(self.channels)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ShapeNetConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown shape network settings {unknown}; known: {sorted(known)}")
        d = dict(d)
        if isinstance(d.get("channels"), list):
            d["channels"] = tuple(d["channels"])
        cfg = cls(**d)
        cfg.validate()
        return cfg


def _block(cin: int, cout: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


class ShapeNet(nn.Module):
    """Patches ``(N, 1, P, P)`` → upright shapes of determinant 1 ``(N, 2, 2)`` (module docstring).

    Each patch is standardised (zero mean, unit deviation) first, so brightness and contrast do not matter.
    The last layer starts at zero: an untrained network gives the identity (a disc) everywhere."""

    def __init__(self, cfg: ShapeNetConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or ShapeNetConfig()
        self.cfg.validate()
        c1, c2, c3 = self.cfg.channels
        self.features = nn.Sequential(
            *_block(1, c1),
            *_block(c1, c1),
            *_block(c1, c2, 2),
            *_block(c2, c2),
            *_block(c2, c3, 2),
            *_block(c3, c3),
            nn.Conv2d(c3, 2, self.cfg.patch_size // 4),
        )
        nn.init.zeros_(self.features[-1].weight)
        nn.init.zeros_(self.features[-1].bias)

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        p = self.cfg.patch_size
        if patches.ndim != 4 or tuple(patches.shape[1:]) != (1, p, p):
            raise ValueError(f"ShapeNet takes (N, 1, {p}, {p}) patches, got {tuple(patches.shape)}")
        f = patches.flatten(1)
        x = ((f - f.mean(1, keepdim=True)) / (f.std(1, keepdim=True) + 1e-3)).view_as(patches)
        o = self.features(x).flatten(1)
        return upright_shape(
            self.cfg.max_log_stretch * torch.tanh(o[:, 0]), self.cfg.max_shear * torch.tanh(o[:, 1])
        )


def upright_shape(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``[[exp(a), 0], [b, exp(-a)]]`` for ``(N,)`` ``a`` and ``b``: ``(N, 2, 2)``."""
    z = torch.zeros_like(a)
    return torch.stack([torch.stack([torch.exp(a), z], -1), torch.stack([b, torch.exp(-a)], -1)], -2)


def upright_inverse(S: torch.Tensor) -> torch.Tensor:
    """The inverse of upright shapes of determinant 1 ``(N, 2, 2)``: ``[[d, 0], [-c, a]]`` for ``[[a, 0], [c, d]]``."""
    z = torch.zeros_like(S[:, 0, 0])
    return torch.stack([torch.stack([S[:, 1, 1], z], -1), torch.stack([-S[:, 1, 0], S[:, 0, 0]], -1)], -2)


__all__ = ["ShapeNetConfig", "ShapeNet", "upright_shape", "upright_inverse"]
