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


def load_checkpoint(path: str | Path) -> dict:
    """Load a checkpoint written by :func:`save_checkpoint` (``weights_only=True``: no code is unpickled)."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"checkpoint not found: {path}")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # corrupt, truncated or foreign file
        raise WeightsError(f"cannot read checkpoint {path}: {type(e).__name__}: {str(e)[:200]}") from None
    if not isinstance(ckpt, dict) or "model" not in ckpt or "config" not in ckpt:
        raise WeightsError(f"{path} is not a patchpose training checkpoint")
    return ckpt
