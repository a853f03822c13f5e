"""The pose network: a trunk and histogram heads for scale and/or orientation on one trunk."""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, field

import torch
from torch import nn

from ..conventions import NUM_ORI_BINS, NUM_SCALE_BINS, SCALE_RANGE, scale_bin_width
from .backbones import ResNet18, SmallCNN
from .heads import make_head, select_heads
from .polar import PolarNet

#: the git tag whose code still has the model settings of :data:`REMOVED_SETTINGS`
REMOVED_SETTINGS_TAG = "lab-2026-11-25"

#: model settings that this code does not build, each with the value at which it is off. A stored config may
#: name them at that value (the bundled log-polar weights files do): that is the network built here. Any other
#: value describes a network that only git tag :data:`REMOVED_SETTINGS_TAG` builds.
REMOVED_SETTINGS: dict[str, bool | int] = {
    "polar_blur": 0,
    "polar_ori_min_ring": 0,
    "polar_ori_rings_below_scale": -1,
    "polar_ori_window": -1,
    "polar_grad_hist": False,
    "polar_ori_vector": False,
}


def drop_removed_settings(d: dict) -> dict:
    """``d`` without the :data:`REMOVED_SETTINGS` it names at their "off" value (of the same type: ``0``
    is not ``False``); ``ValueError`` for one set to anything else, naming it and the tag that keeps it."""
    for key, off in REMOVED_SETTINGS.items():
        if key in d and not (type(d[key]) is type(off) and d[key] == off):
            raise ValueError(
                f"model config {key}={d[key]!r}: this setting was removed; git tag {REMOVED_SETTINGS_TAG} "
                "of patchpose builds and trains such models"
            )
    return {k: v for k, v in d.items() if k not in REMOVED_SETTINGS}


@dataclass
class ModelConfig:
    """Everything needed to rebuild a network (stored in checkpoints and in bundled weights)."""

    arch: str = "small-cnn"  # trunk: "small-cnn" | "resnet18" | "polar-cnn"
    patch_size: int = 32  # side of each input window, in pixels (Cartesian archs)
    windows: list[float] = field(default_factory=lambda: [1.0])  # window radii in REFERENCE_RADIUS units
    color: str = "gray"  # "gray" (1 channel per window) | "rgb" (3)
    heads: list[str] = field(default_factory=lambda: ["scale", "orientation"])
    head: str = "linear"  # "linear" | "mlp" (the paper's 4-layer MLP)
    num_scale_bins: int = NUM_SCALE_BINS
    num_ori_bins: int = NUM_ORI_BINS
    scale_range: list[float] = field(default_factory=lambda: list(SCALE_RANGE))  # log2 of the first/last bin
    width: float = 1.0  # channel multiplier of the trunk
    embed_dim: int = 256  # small-cnn feature size
    standardize: bool = True  # per-patch zero mean / unit std of each input channel
    # polar-cnn only: log-polar input grid (rings 1/3 octave apart for 13 scale bins) and conv widths
    polar_rings: int = 25
    polar_angles: int = 36
    polar_channels: list[int] = field(default_factory=list)  # widths of an optional 3×3 conv stem
    polar_head_width: int = 64
    polar_harmonics: int = 4  # angular Fourier magnitudes per ring fed to the scale head
    polar_ori_dilations: list[int] = field(default_factory=lambda: [1, 1])  # hidden orientation convs
    # dilations of the scale head's hidden convolutions along the rings (kernel 3 each, then a last one of
    # kernel 3): [1, 1] sees ±3 rings (one octave) about each scale bin; [1, 2, 4] sees ±8
    polar_scale_dilations: list[int] = field(default_factory=lambda: [1, 1])
    polar_ori_kernel: int = 3  # taps of the last orientation conv (up to polar_angles: the whole circle)
    # rings read no sharper than this many view pixels (data/polar.py, PolarGrid.view_min_step); 0 = off
    polar_view_min_step: float = 0.0

    @property
    def is_polar(self) -> bool:
        return self.arch == "polar-cnn"

    @property
    def polar_grid(self):
        """The :class:`~patchpose.data.polar.PolarGrid` of a polar-cnn, else None."""
        if not self.is_polar:
            return None
        from ..data.polar import PolarGrid

        return PolarGrid(
            self.polar_rings,
            self.polar_angles,
            round(self.scale_bins_per_octave),
            view_min_step=float(self.polar_view_min_step),
        )

    @property
    def output_sizes(self) -> dict[str, int]:
        """The network's outputs and their sizes per sample: ``scale_logits`` and ``ori_logits`` for the
        heads it has (what inference and the ONNX graph carry)."""
        return self.outputs_of()

    def outputs_of(self, heads=None) -> dict[str, int]:
        """:attr:`output_sizes` of a read that runs only ``heads`` (None: all; see :func:`select_heads`)."""
        want = select_heads(self.heads, heads)
        sizes = {}
        if "scale" in want:
            sizes["scale_logits"] = self.num_scale_bins
        if "orientation" in want:
            sizes["ori_logits"] = self.num_ori_bins
        return sizes

    @property
    def scale_bins_per_octave(self) -> float:
        """Scale bins per octave (3 for the paper's 13 bins over [−2, 2])."""
        return 1.0 / scale_bin_width(self.num_scale_bins, tuple(self.scale_range))

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of one model input."""
        if self.is_polar:
            return (self.in_channels, self.polar_rings, self.polar_angles)
        return (self.in_channels, self.patch_size, self.patch_size)

    @property
    def in_channels(self) -> int:
        return (3 if self.color == "rgb" else 1) * len(self.windows)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        """The config of ``d`` (settings missing take their defaults); ``ValueError`` for an unknown key or
        a removed setting in use (:func:`drop_removed_settings`), ``TypeError`` for a value of the wrong
        type."""
        d = drop_removed_settings(d)
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        unknown = set(d) - set(known)
        if unknown:
            raise ValueError(f"unknown model config keys: {sorted(unknown)}")
        for k, v in known.items():
            _check_field_type(k, v, cls.__dataclass_fields__[k])
        cfg = cls(**known)
        cfg.windows, cfg.heads = [float(w) for w in cfg.windows], [str(h) for h in cfg.heads]
        cfg.polar_channels = [int(c) for c in cfg.polar_channels]
        cfg.scale_range = [float(v) for v in cfg.scale_range]
        cfg.polar_ori_dilations = [int(d) for d in cfg.polar_ori_dilations]
        cfg.polar_scale_dilations = [int(d) for d in cfg.polar_scale_dilations]
        return cfg

    def validate(self) -> None:
        if self.arch not in ("small-cnn", "resnet18", "polar-cnn"):
            raise ValueError(f"unknown arch {self.arch!r}")
        if self.num_scale_bins < 2 or self.num_ori_bins < 4:
            raise ValueError(
                f"need at least 2 scale and 4 orientation bins, got {self.num_scale_bins} and {self.num_ori_bins}"
            )
        if not (math.isfinite(self.width) and 0 < self.width <= 64):
            raise ValueError(f"width must be a channel multiplier in (0, 64], got {self.width}")
        for name in ("embed_dim", "polar_rings", "polar_angles", "polar_head_width", "polar_ori_kernel"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.polar_harmonics < 0:
            raise ValueError(f"polar_harmonics must be at least 0, got {self.polar_harmonics}")
        if any(c < 1 for c in [*self.polar_channels, *self.polar_ori_dilations, *self.polar_scale_dilations]):
            raise ValueError("polar_channels and the dilations must be positive integers")
        if len(self.scale_range) != 2 or not self.scale_range[0] < 0 < self.scale_range[1]:
            raise ValueError(f"scale_range must be [lo, hi] with lo < 0 < hi, got {self.scale_range}")
        if self.is_polar:
            rpo = self.scale_bins_per_octave
            if abs(rpo - round(rpo)) > 1e-9:
                raise ValueError("polar-cnn needs scale bins a whole fraction of an octave apart")
            if self.polar_rings < self.num_scale_bins or (self.polar_rings - self.num_scale_bins) % 2:
                raise ValueError(
                    f"polar_rings ({self.polar_rings}) must be num_scale_bins ({self.num_scale_bins}) "
                    "plus an even number of context rings"
                )
            if abs(self.scale_range[0] + self.scale_range[1]) > 1e-9:
                raise ValueError("polar-cnn needs a scale_range centred on 0 (its centre ring is scale 0)")
            if self.polar_angles % self.num_ori_bins:
                raise ValueError("polar_angles must be a multiple of num_ori_bins")
            if self.windows != [1.0]:
                raise ValueError("polar-cnn takes one log-polar grid; leave windows at [1.0]")
        if self.color not in ("gray", "rgb"):
            raise ValueError(f"color must be 'gray' or 'rgb', got {self.color!r}")
        if not self.heads or set(self.heads) - {"scale", "orientation"}:
            raise ValueError(
                f"heads must be a non-empty subset of ['scale', 'orientation'], got {self.heads}"
            )
        if not self.windows or not all(0 < w <= 64 for w in self.windows):
            raise ValueError(f"windows must be radius multipliers in (0, 64], got {self.windows}")
        if not self.is_polar and not 8 <= self.patch_size <= 512:
            raise ValueError(f"patch_size must be from 8 to 512 px, got {self.patch_size}")


def _check_field_type(name: str, value, f) -> None:
    """TypeError unless ``value`` has the type of the field's default (a config read from a file: ``true``
    for an integer, ``null``, ``2.5`` rings or a string of digits would fail later, deep in the network)."""
    default = f.default if f.default is not MISSING else f.default_factory()
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif isinstance(default, str):
        ok = isinstance(value, str)
    elif isinstance(default, list):
        ok = isinstance(value, list) and all(
            isinstance(v, str) if name == "heads" else isinstance(v, (int, float)) and not isinstance(v, bool)
            for v in value
        )
    else:
        ok = True
    if not ok:
        raise TypeError(f"model config {name} must be {type(default).__name__}, got {value!r}")


class PoseNet(nn.Module):
    """``forward(patches (N, C, PS, PS) in [0, 1]) -> {"scale_logits": (N, Bs), "ori_logits": (N, Bo)}``."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        c = cfg.in_channels
        if cfg.is_polar:
            self.polar = PolarNet(
                c,
                cfg.polar_rings,
                cfg.polar_angles,
                cfg.num_scale_bins,
                cfg.num_ori_bins,
                cfg.heads,
                tuple(max(4, int(round(ch * cfg.width))) for ch in cfg.polar_channels),
                max(4, int(round(cfg.polar_head_width * cfg.width))),
                cfg.polar_harmonics,
                tuple(cfg.polar_ori_dilations),
                cfg.polar_ori_kernel,
                tuple(cfg.polar_scale_dilations),
            )
            return
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

    def forward(self, x: torch.Tensor, heads=None) -> dict[str, torch.Tensor]:
        """``heads``: None for every head of the model, or the subset to compute (e.g. ``("scale",)``)."""
        want = select_heads(self.cfg.heads, heads)
        if x.dim() != 4 or tuple(x.shape[1:]) != self.cfg.input_shape:
            raise ValueError(
                f"expected inputs (N, {', '.join(map(str, self.cfg.input_shape))}), got {tuple(x.shape)}"
            )
        if self.cfg.standardize:
            # WARNING: statistics are per patch and per channel, so brightness/contrast changes are no cue.
            # (two passes written out: the same as x.std(dim=(2, 3)) to float rounding, in less time, which
            # counts for the small log-polar networks)
            f = x.flatten(2)
            d = f - f.mean(2, keepdim=True)
            std = torch.linalg.vector_norm(d, dim=2, keepdim=True) / math.sqrt(f.shape[2] - 1)
            x = (d / (std + 1e-3)).view_as(x)
        if self.cfg.is_polar:
            return self.polar(x, want)
        f = self.trunk(x)
        out = {}
        if "scale" in want:
            out["scale_logits"] = self.heads["scale"](f)
        if "orientation" in want:
            out["ori_logits"] = self.heads["orientation"](f)
        return out

    def extra_repr(self) -> str:
        c = self.cfg
        return f"arch={c.arch}, windows={c.windows}, color={c.color}, heads={c.heads}, bins=({c.num_scale_bins}, {c.num_ori_bins})"
