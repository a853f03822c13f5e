"""Self-contained checkpoints, written atomically (temporary name, then rename)."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from ..errors import WeightsError

CHECKPOINT_VERSION = 1


def atomic_save(obj, path: str | Path) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def save_checkpoint(
    path,
    model,
    optimizer,
    scheduler,
    config: dict,
    step: int,
    metrics: dict,
    best: float,
    ema=None,
) -> None:
    """``model`` is the network being trained. With ``ema`` (a moving average of it), ``"model"`` holds the
    averaged weights, the ones validated, exported and fine-tuned from, and ``"train_model"`` the raw ones
    that a resumed run continues from."""
    extra = {"train_model": model.state_dict()} if ema is not None else {}
    atomic_save(
        {
            "version": CHECKPOINT_VERSION,
            "model": (ema if ema is not None else model).state_dict(),
            **extra,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "config": config,
            "step": step,
            "metrics": metrics,
            "best": best,
        },
        path,
    )


#: what :func:`save_checkpoint` always writes (``"train_model"``, ``"metrics"``, ``"best"`` are optional)
REQUIRED_KEYS = ("model", "config", "step", "optimizer", "scheduler")


def load_checkpoint(path: str | Path) -> dict:
    """Load a checkpoint written by :func:`save_checkpoint` (``weights_only=True``: no code is unpickled).

    The structure is checked (its keys, a valid model config, weights that fit that config and are finite):
    anything else is a one-line :class:`WeightsError`, so callers may index the checkpoint freely."""
    from ..weights import load_torch_file

    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"checkpoint not found: {path}")
    try:
        ckpt = load_torch_file(path)
    except WeightsError as e:  # corrupt, truncated or foreign file
        raise WeightsError(f"cannot read checkpoint: {e}") from None
    _validate_checkpoint(ckpt, path)
    return ckpt


def _not_a_checkpoint(path: Path, why: str) -> WeightsError:
    return WeightsError(f"{path} is not a patchpose training checkpoint: {why}")


def _validate_checkpoint(ckpt: object, path: Path) -> None:
    """Raise :class:`WeightsError` unless ``ckpt`` has the structure :func:`save_checkpoint` writes."""
    from ..models import ModelConfig, PoseNet
    from ..weights import check_finite, check_float_dtypes, one_line

    if not isinstance(ckpt, dict):
        raise _not_a_checkpoint(path, f"it holds a {type(ckpt).__name__}, not a dict")
    missing = [k for k in REQUIRED_KEYS if k not in ckpt]
    if missing:
        raise _not_a_checkpoint(path, f"missing {', '.join(map(repr, missing))}")
    config = ckpt["config"]
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise _not_a_checkpoint(path, "its config has no 'model' section")
    step = ckpt["step"]
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise _not_a_checkpoint(path, f"'step' must be a whole number >= 0, got {step!r}")
    best = ckpt.get("best", -1.0)
    if not isinstance(best, (int, float)) or isinstance(best, bool):
        raise _not_a_checkpoint(path, f"'best' must be a number, got {type(best).__name__}")
    for key in ("optimizer", "scheduler"):
        if not isinstance(ckpt[key], dict):
            raise _not_a_checkpoint(path, f"{key!r} is a {type(ckpt[key]).__name__}, not a state dict")
    states = [k for k in ("model", "train_model") if k in ckpt]
    for key in states:
        state = ckpt[key]
        if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
        ):
            raise _not_a_checkpoint(path, f"{key!r} is not a state dict of named tensors")
    try:
        net = PoseNet(ModelConfig.from_dict(config["model"]))
    except (ValueError, TypeError, KeyError, AttributeError, RuntimeError, ArithmeticError) as e:
        raise _not_a_checkpoint(path, f"invalid model config ({one_line(e, 200)})") from None
    for key in states:
        try:
            net.load_state_dict(ckpt[key], strict=True)
        except RuntimeError as e:
            raise WeightsError(
                f"{path}: the {key!r} weights do not fit the checkpoint's model config ({one_line(e)})"
            ) from None
        check_finite(ckpt[key], f"{path} ({key!r})")
        check_float_dtypes(ckpt[key], net.state_dict(), f"{path} ({key!r})")
