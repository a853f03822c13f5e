"""Self-contained checkpoints, written atomically (temporary name, then rename).

Reading one back (:func:`load_checkpoint`, validated) lives in :mod:`patchpose.weights`, beside the other
readers of model files, so that exporting a checkpoint needs nothing from the training package."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from ..weights import load_checkpoint

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


__all__ = ["CHECKPOINT_VERSION", "atomic_save", "save_checkpoint", "load_checkpoint"]
