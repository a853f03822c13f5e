"""The snippets of docs/integrations.md run as written (top to bottom, one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"


def test_integration_snippets_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 6  # setup, OpenCV, kornia ×2, LightGlue, hloc, COLMAP
    ns: dict = {}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{DOC.name}[block {i}]", "exec"), ns)
        except Exception as e:  # noqa: BLE001 - report which block broke
            raise AssertionError(f"block {i} of {DOC.name} failed: {type(e).__name__}: {e}\n{code}") from e
    out = capsys.readouterr().out
    assert "128" in out and "keypoints" in out
