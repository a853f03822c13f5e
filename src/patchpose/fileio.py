"""Small file helpers: atomic text writes (a temporary sibling, then a rename) and reading keypoint files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .errors import InputError


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through ``path.tmp`` and an atomic rename."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def read_keypoints(path: str | Path) -> np.ndarray:
    """Keypoints ``(N, 2)`` x, y from a ``.npy`` array ``(N, ≥2)`` or a text/CSV file, whose first two
    columns are x, y (further columns, e.g. a score, are ignored; header lines before the first keypoint
    are skipped; separators: spaces, tabs, commas or semicolons)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"keypoints file not found: {path}")
    if path.suffix == ".npy":
        try:
            raw = np.load(path, allow_pickle=False)
            if np.iscomplexobj(raw):
                raise ValueError(f"complex values ({raw.dtype})")
            kp = np.asarray(raw, dtype=np.float64)
        except (ValueError, OSError, EOFError) as e:
            raise InputError(f"{path}: not a readable .npy array of keypoints ({e})") from None
        if kp.ndim != 2 or kp.shape[1] < 2:
            raise InputError(f"{path}: keypoints must be an (N, 2) array of x, y, got shape {kp.shape}")
        kp = kp[:, :2]
    else:
        rows = []
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            raise InputError(f"{path}: not a text file of x, y keypoints (nor a .npy array)") from None
        for n, line in enumerate(text.splitlines(), start=1):
            parts = line.replace(",", " ").replace(";", " ").replace("\t", " ").split()
            if not parts:
                continue
            try:
                if len(parts) < 2:
                    raise ValueError
                rows.append([float(parts[0]), float(parts[1])])
            except ValueError:
                if rows:  # non-numeric lines are a header only before the first keypoint
                    raise InputError(f"{path}, line {n}: cannot parse {line.strip()!r} as x, y") from None
        if not rows and text.strip():
            raise InputError(f"{path}: no line of x, y numbers (separators: space, tab, comma or semicolon)")
        kp = np.array(rows, dtype=np.float64).reshape(-1, 2)
    return kp


__all__ = ["read_keypoints", "write_text_atomic"]
