"""How every benchmark writes what it measured: ``OUT/results.json`` (the whole document, every number and the
settings it was measured with) and ``OUT/results.md`` (the tables a person reads), each written whole or not at
all (:func:`~patchpose.fileio.write_text_atomic`)."""

from __future__ import annotations

import json
from pathlib import Path

from ..fileio import write_text_atomic


def write_results(out_dir: str | Path, doc: dict, markdown: str | None = None) -> Path:
    """Write ``doc`` as ``OUT/results.json`` and, if given, ``markdown`` as ``OUT/results.md`` (the folder is
    made); returns the folder."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "results.json", json.dumps(doc, indent=1))
    if markdown is not None:
        write_text_atomic(out / "results.md", markdown)
    return out


__all__ = ["write_results"]
