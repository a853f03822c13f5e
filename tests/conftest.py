"""Shared fixtures and helpers: small synthetic images and the tiny files built from them (no downloads).

Test modules import the helpers as ``from conftest import ...`` (pytest puts this folder on ``sys.path``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import pytest

if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    # each test process (pyproject's ``-n``) gets its share of the cores for torch and the CLI's subprocesses:
    # two processes each spreading torch over every core ran the suite a quarter slower than one process
    # (OpenCV keeps its own threads: limiting them too made the suite a quarter slower again)
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    _share = max(1, _cores // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))
    os.environ["OMP_NUM_THREADS"] = str(_share)
    import torch

    torch.set_num_threads(_share)


def make_smooth_image(h: int, w: int, seed: int = 0, blur: float = 2.0) -> np.ndarray:
    """Smoothed uniform noise stretched to [0, 1], float32 ``H×W``."""
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.random((h, w)).astype(np.float32), (0, 0), blur)
    return ((img - img.min()) / (img.max() - img.min())).astype(np.float32)


def make_textured_image(size: int = 400, seed: int = 0) -> np.ndarray:
    """Smoothed random noise plus a few oriented bars, float32 ``size×size`` in [0, 1]."""
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.random((size, size)).astype(np.float32), (0, 0), 3.0)
    img = (img - img.min()) / (img.max() - img.min())
    bars = np.zeros((size, size), np.float32)
    for _ in range(12):
        c = rng.uniform(0.15 * size, 0.85 * size, 2)
        ang = rng.uniform(0, np.pi)
        half = rng.uniform(0.04, 0.12) * size
        d = half * np.array([np.cos(ang), np.sin(ang)])
        p0, p1 = tuple(int(v) for v in c - d), tuple(int(v) for v in c + d)
        cv2.line(bars, p0, p1, float(rng.uniform(0.5, 1.0)), thickness=int(rng.integers(3, 9)))
    bars = cv2.GaussianBlur(bars, (0, 0), 1.5)
    out = 0.6 * img + 0.4 * bars
    return ((out - out.min()) / (out.max() - out.min())).astype(np.float32)


def make_rgb_image(size: int = 240, seed: int = 0) -> np.ndarray:
    """:func:`make_textured_image` as uint8 ``size×size×3`` (the same gray in each channel)."""
    g = (make_textured_image(size, seed) * 255).astype(np.uint8)
    return np.repeat(g[..., None], 3, 2)


def make_hpatches_replica(
    root: Path, names: Sequence[str] = ("i_ajuntament", "v_boat", "v_talent"), targets: int = 2
) -> Path:
    """A tiny copy of ``hpatches-sequences-release/`` under ``root`` (ppm images, ASCII homographies): image
    ``k`` of a viewpoint sequence (``v_``) is image 1 warped by a similarity, of an illumination one (``i_``)
    image 1 itself. Returns the ``hpatches-sequences-release`` folder."""
    from patchpose.conventions import similarity_about
    from patchpose.evaluation.datasets.hpatches import write_homography

    rel = root / "hpatches-sequences-release"
    for n, name in enumerate(names):
        d = rel / name
        d.mkdir(parents=True)
        img = make_rgb_image(200, seed=n)
        cv2.imwrite(str(d / "1.ppm"), img)
        for k in range(2, targets + 2):
            H = np.eye(3) if name.startswith("i_") else similarity_about((100, 100), 0.1 * k, 0.3 * k)
            cv2.imwrite(str(d / f"{k}.ppm"), cv2.warpPerspective(img, H, (200, 200)))
            write_homography(d / f"H_1_{k}", H)
    return rel


def make_train_photos(root: Path, stems: Sequence[str] = ("astronaut", "chelsea")) -> Path:
    """A photo folder of the wheels' photos named ``stems``, all in its ``train`` split (``splits.json``)."""
    import json
    import shutil

    from patchpose.data.photos import wheel_photo_paths

    for p in wheel_photo_paths():
        if p.stem in stems:
            shutil.copy(p, root / p.name)
    names = sorted(p.name for p in root.iterdir() if p.name != "splits.json")
    (root / "splits.json").write_text(json.dumps({"train": names, "val": []}))
    return root


def pairs_file_line(name0: str = "a.png", name1: str = "b.png", t: Sequence[float] = (1.0, 0.0, 0.0)) -> str:
    """One line of a MegaDepth/ScanNet pairs file: the two names, zero rotations, the same intrinsics for both
    images and ``T_0to1`` a pure translation by ``t``."""
    K = [500, 0, 320, 0, 500, 240, 0, 0, 1]
    T = np.eye(4)
    T[:3, 3] = t
    return " ".join([name0, name1, "0", "0"] + [str(v) for v in K + K + T.ravel().tolist()])


#: layouts of models bundled until git tag models-v1-v8-2026-11-28 that no bundled model has any more:
#: the training config preset each was built from, and the keys of the model config its file stored (the
#: others load at their defaults)
LEGACY_LAYOUTS = {
    # patchpose-v1: the Cartesian CNN on 3 stacked gray windows (configs/v1.yaml), 13 scale bins over [-2, 2]
    "v1": ("v1", ("arch", "patch_size", "windows", "color", "heads", "head", "num_scale_bins", "num_ori_bins",
                  "width", "embed_dim", "standardize")),
    # patchpose-v2 (and v3): the log-polar network of configs/polar.yaml at full width, written before the wide
    # scale head and the ring clamp (polar_scale_dilations, polar_view_min_step) existed, with the removed
    # polar_blur at its "off" value
    "v2": ("polar", ("arch", "patch_size", "windows", "color", "heads", "head", "num_scale_bins", "num_ori_bins",
                     "scale_range", "width", "embed_dim", "standardize", "polar_rings", "polar_angles",
                     "polar_channels", "polar_head_width", "polar_harmonics", "polar_ori_dilations",
                     "polar_ori_kernel")),
}  # fmt: skip


def make_legacy_weights(path: Path, layout: str, seed: int = 0) -> Path:
    """A randomly initialised network of a :data:`LEGACY_LAYOUTS` layout, written to ``path`` as a weights
    file whose model config names what the old bundled file's named (``name``: ``"patchpose-{layout}-layout"``,
    no read plan). The layout's code paths stay tested without shipping its trained weights."""
    import json

    import torch
    from omegaconf import OmegaConf
    from safetensors.torch import load_file, safe_open, save_file

    from patchpose.models import create_model
    from patchpose.training.config import load_config
    from patchpose.weights import save_weights

    preset, keys = LEGACY_LAYOUTS[layout]
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = create_model(OmegaConf.to_container(load_config(preset).model)).eval()
    path = save_weights(model, path, name=f"patchpose-{layout}-layout")
    with safe_open(str(path), framework="pt") as f:
        meta = dict(f.metadata())
    stored = {k: v for k, v in model.cfg.to_dict().items() if k in keys}
    if layout == "v2":
        stored["polar_blur"] = 0
    save_file(load_file(str(path)), str(path), metadata={**meta, "model_config": json.dumps(stored)})
    return path


@pytest.fixture(scope="session")
def legacy_weights(tmp_path_factory) -> dict[str, Path]:
    """``{layout: weights file}`` of :func:`make_legacy_weights` for each of :data:`LEGACY_LAYOUTS`."""
    root = tmp_path_factory.mktemp("legacy_weights")
    return {k: make_legacy_weights(root / f"{k}.safetensors", k) for k in LEGACY_LAYOUTS}


@pytest.fixture(scope="session")
def smooth_image() -> np.ndarray:
    """A 160×200 smooth random float32 image in [0, 1]."""
    return make_smooth_image(160, 200)


@pytest.fixture(scope="session")
def textured_image() -> np.ndarray:
    """A 400×400 textured float32 image (noise + oriented bars) in [0, 1]."""
    return make_textured_image()


def _namespaces_work() -> str | None:
    """None where this process may make a mount namespace with a tmpfs of its own (``unshare``), else why not."""
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        return "no unshare here (util-linux)"
    import tempfile

    with tempfile.TemporaryDirectory() as where:
        mount = f"mount -t tmpfs -o size=64k tmpfs {where}"
        probe = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", mount],
            capture_output=True,
            text=True,
        )
    return (
        None if probe.returncode == 0 else f"no user and mount namespaces here ({probe.stderr.strip()[:80]})"
    )


def on_small_disk(folder: Path, size: str, script: str, timeout: int = 300):
    """Run the shell ``script`` with ``folder`` (made empty) a tmpfs of ``size`` (``"2m"``): a real disk that fills,
    in a mount namespace of its own (nothing outside sees it; it is gone when the script ends). ``$DISK`` names the
    folder and ``$PY`` this Python with ``src`` on its path. Skips where namespaces cannot be made (a container
    without user namespaces). Returns the finished process (stdout and stderr as text)."""
    import subprocess
    import sys

    why = _namespaces_work()
    if why is not None:
        pytest.skip(f"a small real disk needs a tmpfs: {why}")
    folder.mkdir(parents=True, exist_ok=True)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {
        **os.environ,
        "DISK": str(folder),
        "PY": sys.executable,
        "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "OMP_NUM_THREADS": "1",
    }
    wrapped = f'mount -t tmpfs -o size={size} tmpfs "$DISK" || exit 99\n{script}'
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", wrapped],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode == 99:
        pytest.skip(f"a small real disk needs a tmpfs: it could not be mounted ({done.stderr.strip()[:80]})")
    return done


def plane_views(folder: Path, n: int = 4, size: int = 240, spread: float = 40.0) -> Path:
    """``n`` square views of a textured plane (:func:`make_textured_image`) from cameras on an arc of
    ``spread`` degrees around it, all looking at its centre, with the focal length COLMAP assumes for an
    image without EXIF (1.2 × the image size): a scene COLMAP reconstructs with every view. Lighter above than
    below (each view's gray times 1 at the top to 0.6 at the bottom), as photos under a sky are: the way up that
    :func:`~patchpose.matching.collection.upright_cue` reads where half the views are turned."""
    folder.mkdir(parents=True, exist_ok=True)
    texture = 600
    tex = (make_textured_image(texture, seed=0) * 255).astype(np.uint8)
    f = 1.2 * size
    K = np.array([[f, 0, size / 2], [0, f, size / 2], [0, 0, 1.0]])
    to_plane = np.array([[2 / texture, 0, -1], [0, 2 / texture, -1], [0, 0, 1.0]])  # the plane is [-1, 1]²
    at_z2 = np.diag([1.0, 1.0, 2.0])  # at z = 2, the first camera at the origin
    for k, th in enumerate(np.radians(np.linspace(-spread / 2, spread / 2, n))):
        R = np.array([[np.cos(th), 0, np.sin(th)], [0, 1, 0], [-np.sin(th), 0, np.cos(th)]])
        C = np.array([2 * np.sin(th), 0, 2 - 2 * np.cos(th)])
        H = K @ (R @ at_z2 - np.outer(R @ C, [0, 0, 1])) @ to_plane
        view = cv2.warpPerspective(tex, H, (size, size), flags=cv2.INTER_AREA)
        sky = np.linspace(1.0, 0.6, size)[:, None]
        cv2.imwrite(str(folder / f"{k:02d}.png"), np.round(view * sky).astype(np.uint8))
    return folder


def upright_sift_extractor(image: np.ndarray):
    """A feature that does not turn with the photo (as learned features trained upright): SIFT's keypoints
    described upright (angle 0), ≤ 600."""
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
    sift = cv2.SIFT_create(600)
    kps = [cv2.KeyPoint(k.pt[0], k.pt[1], k.size, 0.0, k.response, k.octave) for k in sift.detect(gray, None)]
    kps, d = sift.compute(gray, kps)
    return np.array([k.pt for k in kps], np.float64).reshape(-1, 2), d.astype(np.float32)
