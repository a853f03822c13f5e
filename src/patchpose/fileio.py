"""Writing files so that a reader never sees half of one: write a temporary sibling, then rename."""

from __future__ import annotations

import os
from pathlib import Path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through ``path.tmp`` and an atomic rename."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


__all__ = ["write_text_atomic"]
