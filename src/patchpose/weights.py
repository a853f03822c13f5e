"""Bundled and exported weights: safetensors files whose header carries the model config.

A weights file is a safetensors file with ``__metadata__`` = ``{"format": "patchpose", "name": ...,
"model_config": <json>, "notes": ...}``. Bundled files are listed in :data:`BUNDLED` with their sha256,
verified at load; nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from safetensors import SafetensorError
from safetensors.torch import load_file, safe_open, save_file

from .errors import WeightsError
from .models import ModelConfig, PoseNet

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
DEFAULT_MODEL = "patchpose-v2"
#: name -> (file inside patchpose/weights, sha256)
BUNDLED: dict[str, tuple[str, str]] = {}
_BUNDLED_JSON = WEIGHTS_DIR / "bundled.json"
if _BUNDLED_JSON.is_file():
    BUNDLED.update({k: (v["file"], v["sha256"]) for k, v in json.loads(_BUNDLED_JSON.read_text()).items()})


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_weights(model: PoseNet, path: str | Path, name: str = "custom", notes: str = "") -> Path:
    """Write ``model`` as a patchpose safetensors file (atomically)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "format": "patchpose",
        "name": name,
        "model_config": json.dumps(model.cfg.to_dict()),
        "notes": notes,
    }
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    os.replace(tmp, path)
    return path


def load_weights(path: str | Path, expected_sha256: str | None = None) -> tuple[PoseNet, dict]:
    """Rebuild a :class:`PoseNet` from a patchpose safetensors file (strict: every key must match).

    Raises :class:`WeightsError` with a clear message for a missing, corrupt, foreign or tampered file.
    """
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"weights file not found: {path}")
    if expected_sha256 and sha256_of(path) != expected_sha256:
        raise WeightsError(f"checksum mismatch for {path}: the file is corrupt or was modified")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        state = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as e:
        raise WeightsError(f"{path} is not a readable safetensors file ({e})") from None
    if meta.get("format") != "patchpose" or "model_config" not in meta:
        raise WeightsError(f"{path} is a safetensors file but not a patchpose model (no patchpose metadata)")
    try:
        cfg = ModelConfig.from_dict(json.loads(meta["model_config"]))
        model = PoseNet(cfg)
        model.load_state_dict(state, strict=True)
    except (ValueError, RuntimeError, KeyError, TypeError) as e:
        raise WeightsError(f"{path}: weights do not fit the stored model config ({str(e)[:300]})") from None
    model.eval()
    return model, meta


def load_bundled(name: str = DEFAULT_MODEL) -> tuple[PoseNet, dict]:
    if name not in BUNDLED:
        raise WeightsError(f"no bundled model {name!r}; bundled: {sorted(BUNDLED) or 'none'}")
    fname, sha = BUNDLED[name]
    return load_weights(WEIGHTS_DIR / fname, expected_sha256=sha)


def export_checkpoint(checkpoint: str | Path, out: str | Path, name: str = "custom", notes: str = "") -> Path:
    """Training checkpoint (``torch.load(weights_only=True)``) → safetensors weights file."""
    from .training.checkpoint import load_checkpoint

    ckpt = load_checkpoint(checkpoint)
    model = PoseNet(ModelConfig.from_dict(ckpt["config"]["model"]))
    model.load_state_dict(ckpt["model"])
    return save_weights(model, out, name=name, notes=notes or f"exported from step {ckpt['step']}")


def register_bundled(path: str | Path, name: str) -> None:
    """Record a file in ``patchpose/weights`` as a bundled model with its checksum (maintainers only)."""
    path = Path(path)
    d = json.loads(_BUNDLED_JSON.read_text()) if _BUNDLED_JSON.is_file() else {}
    d[name] = {"file": path.name, "sha256": sha256_of(path)}
    _BUNDLED_JSON.write_text(json.dumps(d, indent=1) + "\n")


__all__ = ["BUNDLED", "DEFAULT_MODEL", "load_bundled", "load_weights", "save_weights", "export_checkpoint"]
