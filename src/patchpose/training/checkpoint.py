"""Self-contained checkpoints, written atomically (temporary name, then rename).

Reading one back (:func:`load_checkpoint`, validated) lives in :mod:`patchpose.weights`, beside the other
readers of model files, so that exporting a checkpoint needs nothing from the training package."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

from ..weights import load_checkpoint

#: 2: checkpoints carry the random states (``"rng"``) and the running loss averages (``"running"``) that
#: make a resumed run the uninterrupted one
CHECKPOINT_VERSION = 2


def random_states() -> dict:
    """Every global random state a training step can draw from, as plain types and tensors (so that
    ``torch.load(weights_only=True)`` reads them back): torch's CPU generator (and CUDA's, when there is
    one), numpy's legacy global generator and Python's ``random``. The training pairs come from their own
    per-step generator (:class:`~patchpose.data.pairs.PairStream`), which needs no state beyond the step."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss = random.getstate()
    out = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(np.asarray(keys, np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "python": {"version": int(version), "state": list(internal), "gauss": gauss},
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda"] = torch.cuda.get_rng_state_all()
    return out


def set_random_states(states: dict) -> None:
    """Restore what :func:`random_states` captured (CUDA's only where it was captured and CUDA is here)."""
    torch.set_rng_state(states["torch"])
    n = states["numpy"]
    np.random.set_state(
        (n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"])
    )
    p = states["python"]
    random.setstate((p["version"], tuple(p["state"]), p["gauss"]))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


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
    running: dict | None = None,
) -> None:
    """``"model"`` holds the weights of ``model``, the network being trained, ``"rng"`` :func:`random_states`
    at the time of writing and ``"running"`` the running loss averages that ``metrics.jsonl`` logs
    (``running``). (Checkpoints of git tag ``options-before-cleanup-2026-12-01`` trained with ``optim.ema`` also
    hold ``"train_model"``, the raw weights, and the average in ``"model"``.)"""
    atomic_save(
        {
            "version": CHECKPOINT_VERSION,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "config": config,
            "step": step,
            "metrics": metrics,
            "best": best,
            "rng": random_states(),
            "running": {k: float(v) for k, v in (running or {}).items()},
        },
        path,
    )


__all__ = [
    "CHECKPOINT_VERSION",
    "atomic_save",
    "save_checkpoint",
    "load_checkpoint",
    "random_states",
    "set_random_states",
]
