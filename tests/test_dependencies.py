"""The core install (``pip install -e .``) is enough to read poses, and an optional dependency that is missing
is one line naming the extra that installs it (``pyproject.toml``; :func:`patchpose.errors.require`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from patchpose.errors import InputError, require

SRC = Path(__file__).resolve().parents[1] / "src"

#: import names of what the extras install (kornia, hloc, onnx, train, eval; PyYAML is ``yaml``), none of
#: which the core path may need
NOT_CORE = ("kornia", "h5py", "onnx", "onnxruntime", "omegaconf", "yaml", "tqdm", "sklearn", "matplotlib")

#: a meta-path finder that makes the given packages look uninstalled (ModuleNotFoundError, as Python raises)
BLOCKER = """
import importlib.abc, sys

class Uninstalled(importlib.abc.MetaPathFinder):
    def __init__(self, names):
        self.names = set(names)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Uninstalled(BLOCKED))
for name in list(sys.modules):
    assert name.split(".")[0] not in BLOCKED, name
"""


def run_without(blocked: tuple[str, ...], code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (this checkout's patchpose) where ``blocked`` are not installed."""
    script = f"BLOCKED = {list(blocked)!r}\n{BLOCKER}\n{textwrap.dedent(code)}"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def test_the_library_reads_poses_with_the_core_install_alone(tmp_path):
    r = run_without(
        NOT_CORE,
        """
        import cv2
        import numpy as np

        import patchpose

        rng = np.random.default_rng(0)
        img = cv2.GaussianBlur((rng.random((160, 200)) * 255).astype(np.uint8), (0, 0), 2.0)
        est = patchpose.PatchPoseEstimator.from_pretrained()
        out = est.estimate(img, np.array([[100.0, 80.0], [60.0, 50.0]]))
        assert out.orientation.shape == (2,) and np.isfinite(out.scale).all()
        keypoints = cv2.SIFT_create(50).detect(img)
        assert keypoints
        ours = patchpose.assign(img, keypoints, est)
        assert len(ours) == len(keypoints) and all(k.size > 0 for k in ours)
        assert 0 < len(patchpose.resolve_orientations(img, keypoints, est)) <= len(keypoints)
        loaded = sorted({m.split(".")[0] for m in sys.modules} & set(BLOCKED))
        assert not loaded, loaded
        print("ok")
        """,
        tmp_path,
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_the_demo_runs_with_the_core_install_alone(tmp_path):
    r = run_without(
        tuple(n for n in NOT_CORE if n != "matplotlib"),  # the demo draws its picture with matplotlib (core)
        """
        from patchpose.cli.main import main

        sys.exit(main(["demo", "--out", "out", "--max-keypoints", "30"]))
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "out" / "astronaut_poses.json").is_file()
    assert (tmp_path / "out" / "astronaut_poses.png").is_file()


def test_a_missing_extra_is_one_line_naming_it(tmp_path):
    """Training without its extra, and kornia's LAFs without kornia: an error that says what to install."""
    r = run_without(
        ("omegaconf", "kornia"),
        """
        import numpy as np

        from patchpose.cli.main import main
        from patchpose.errors import InputError
        from patchpose.interop import to_laf

        try:
            to_laf(np.zeros((1, 2)), np.zeros(1), np.zeros(1))
        except InputError as e:
            print("laf:", e)
        sys.exit(main(["train", "--config", "polar", "--out", "run"]))
        """,
        tmp_path,
    )
    assert r.returncode == 2, r.stderr[-3000:]
    assert "laf:" in r.stdout and "[kornia]" in r.stdout
    assert "[train]" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "run").exists()


def test_require_names_the_extra_only_for_the_missing_module(tmp_path, monkeypatch):
    assert require("json", "x").dumps([]) == "[]"
    with pytest.raises(InputError, match=r"\[someextra\]"):
        require("no_such_module_here.sub", "someextra")
    # installed, but one of its own imports is missing: that error, not a wrong 'install the extra'
    (tmp_path / "brokenpkg").mkdir()
    (tmp_path / "brokenpkg" / "__init__.py").write_text("import no_such_dependency_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_here"):
        require("brokenpkg", "someextra")
