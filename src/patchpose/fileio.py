"""Small file helpers: atomic text writes (a temporary sibling, then a rename) and reading keypoint files."""

from __future__ import annotations

import json
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


def check_resume_plan(
    out: Path, what: str, had_settings, settings: dict, had_sources: dict, sources: dict, exists
) -> None:
    """Refuse to resume into ``out``, a folder of generated ``what`` whose manifest recorded
    ``had_settings`` (None: no manifest) and ``had_sources`` (output name → what made it), unless this run's
    ``settings`` are the same and each output it would make is from the same source; an output on disk
    (``exists(name)``) that no manifest accounts for is refused too. Otherwise a resume would keep outputs
    made another way beside what the run records."""
    if had_settings is not None and had_settings != json.loads(json.dumps(settings)):
        raise InputError(f"{out} holds {what} generated with other settings; choose another --out")
    for name, src in sources.items():
        had = had_sources.get(name)
        if had is not None and had != src:
            raise InputError(
                f"{out}/{name} was made from {had}, this run would make it from {src}; choose another --out"
            )
        if had is None and exists(name):
            raise InputError(f"{out}/{name} exists but no manifest says what made it; choose another --out")


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


__all__ = ["check_resume_plan", "read_keypoints", "write_text_atomic"]
