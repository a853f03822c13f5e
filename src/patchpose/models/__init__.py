"""Model registry: named, documented configurations (no copy-pasted architecture specs).

>>> from patchpose.models import create_model, list_models
>>> sorted(list_models())[:2]
['paper-resnet18', 'small-cnn']
"""

from __future__ import annotations

from .posenet import ModelConfig, PoseNet

_REGISTRY: dict[str, ModelConfig] = {}


def register_model(name: str, cfg: ModelConfig) -> None:
    """Register a named configuration."""
    if name in _REGISTRY:
        raise KeyError(f"model {name!r} is already registered")
    cfg.validate()
    _REGISTRY[name] = cfg


def list_models() -> list[str]:
    return sorted(_REGISTRY)


def get_config(name: str) -> ModelConfig:
    if name not in _REGISTRY:
        raise KeyError(f"unknown model {name!r}; registered: {list_models()}")
    return ModelConfig.from_dict(_REGISTRY[name].to_dict())  # a copy


def create_model(name_or_cfg: str | ModelConfig | dict, **overrides) -> PoseNet:
    """Build a randomly initialised network from a registered name, a config or a dict."""
    if isinstance(name_or_cfg, str):
        cfg = get_config(name_or_cfg)
    elif isinstance(name_or_cfg, dict):
        cfg = ModelConfig.from_dict(name_or_cfg)
    else:
        cfg = ModelConfig.from_dict(name_or_cfg.to_dict())
    if overrides:
        cfg = ModelConfig.from_dict({**cfg.to_dict(), **overrides})
    return PoseNet(cfg)


# The paper's reference configuration: ResNet-18 trunk (ImageNet stem, global max pool), RGB 32×32
# window at 1:1, the official 4-layer MLP heads. The paper trains one network per head; here a
# network can carry both heads on one trunk (heads=["scale"] or ["orientation"] gives the paper's).
register_model("paper-resnet18", ModelConfig(arch="resnet18", color="rgb", head="mlp", windows=[1.0]))
# A 0.46 M-parameter CNN on one gray 32×32 window (the calibration network).
register_model("small-cnn", ModelConfig(arch="small-cnn", color="gray", windows=[1.0]))
# The same CNN on three stacked windows of radius 16, 32 and 64 px, each resampled to 32×32: more
# context for the scale head.
register_model("small-cnn-ms", ModelConfig(arch="small-cnn", color="gray", windows=[1.0, 2.0, 4.0]))
# A CNN on a gray log-polar grid (31 rings 1/3 octave apart, from 0.5 to 512 px at scale 0, × 36 angles),
# equivariant to rotations by 10° and rescalings by 1/3 octave by construction (models/polar.py). Its
# scale histogram spans [−4, 4] (25 bins of 1/3 octave): an equivariant network cannot pull the
# characteristic scales of different keypoints towards the middle, so it needs the room.
register_model(
    "polar-cnn",
    ModelConfig(arch="polar-cnn", color="gray", num_scale_bins=25, scale_range=[-4.0, 4.0], polar_rings=31),
)

__all__ = ["ModelConfig", "PoseNet", "create_model", "get_config", "list_models", "register_model"]
