"""The pose network: a trunk and histogram heads for scale and/or orientation on one trunk."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from ..conventions import NUM_ORI_BINS, NUM_SCALE_BINS
from .backbones import ResNet18, SmallCNN
from .heads import make_head


@dataclass
class ModelConfig:
    """Everything needed to rebuild a network (stored in checkpoints and in bundled weights)."""

    arch: str = "small-cnn"  # trunk: "small-cnn" | "resnet18"
    patch_size: int = 32  # side of each input window, in pixels
    windows: list[float] = field(default_factory=lambda: [1.0])  # window radii in REFERENCE_RADIUS units
    color: str = "gray"  # "gray" (1 channel per window) | "rgb" (3)
    heads: list[str] = field(default_factory=lambda: ["scale", "orientation"])
    head: str = "linear"  # "linear" | "mlp" (the paper's 4-layer MLP)
    num_scale_bins: int = NUM_SCALE_BINS
    num_ori_bins: int = NUM_ORI_BINS
    width: float = 1.0  # channel multiplier of the trunk
    embed_dim: int = 256  # small-cnn feature size
    standardize: bool = True  # per-patch zero mean / unit std of each input channel

    @property
    def in_channels(self) -> int:
        return (3 if self.color == "rgb" else 1) * len(self.windows)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        unknown = set(d) - set(known)
        if unknown:
            raise ValueError(f"unknown model config keys: {sorted(unknown)}")
        cfg = cls(**known)
        cfg.windows, cfg.heads = [float(w) for w in cfg.windows], [str(h) for h in cfg.heads]
        return cfg

    def validate(self) -> None:
        if self.arch not in ("small-cnn", "resnet18"):
            raise ValueError(f"unknown arch {self.arch!r}")
        if self.color not in ("gray", "rgb"):
            raise ValueError(f"color must be 'gray' or 'rgb', got {self.color!r}")
        if not self.heads or set(self.heads) - {"scale", "orientation"}:
            raise ValueError(
                f"heads must be a non-empty subset of ['scale', 'orientation'], got {self.heads}"
            )
        if not self.windows or min(self.windows) <= 0:
            raise ValueError(f"windows must be positive radius multipliers, got {self.windows}")


class PoseNet(nn.Module):
    """``forward(patches (N, C, PS, PS) in [0, 1]) -> {"scale_logits": (N, Bs), "ori_logits": (N, Bo)}``."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        c = cfg.in_channels
        if cfg.arch == "small-cnn":
            chans = tuple(max(8, int(round(ch * cfg.width))) for ch in (32, 32, 64, 64, 128, 128))
            self.trunk = SmallCNN(c, cfg.patch_size, chans, embed_dim=cfg.embed_dim)
        else:
            self.trunk = ResNet18(c, width=max(8, int(round(64 * cfg.width))))
        self.heads = nn.ModuleDict()
        if "scale" in cfg.heads:
            self.heads["scale"] = make_head(self.trunk.out_dim, cfg.num_scale_bins, cfg.head)
        if "orientation" in cfg.heads:
            self.heads["orientation"] = make_head(self.trunk.out_dim, cfg.num_ori_bins, cfg.head)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        if x.dim() != 4 or x.shape[1] != self.cfg.in_channels:
            raise ValueError(
                f"expected patches (N, {self.cfg.in_channels}, {self.cfg.patch_size}, {self.cfg.patch_size}), "
                f"got {tuple(x.shape)}"
            )
        if self.cfg.standardize:
            # WARNING: statistics are per patch and per channel, so brightness/contrast changes are no cue.
            mean = x.mean(dim=(2, 3), keepdim=True)
            std = x.std(dim=(2, 3), keepdim=True)
            x = (x - mean) / (std + 1e-3)
        f = self.trunk(x)
        out = {}
        if "scale" in self.heads:
            out["scale_logits"] = self.heads["scale"](f)
        if "orientation" in self.heads:
            out["ori_logits"] = self.heads["orientation"](f)
        return out

    def extra_repr(self) -> str:
        c = self.cfg
        return f"arch={c.arch}, windows={c.windows}, color={c.color}, heads={c.heads}, bins=({c.num_scale_bins}, {c.num_ori_bins})"
