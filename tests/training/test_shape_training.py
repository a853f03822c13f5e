"""Training the affine shape network: seeded pairs, a resumed run that is the uninterrupted one, clear errors."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from patchpose.cli.main import main
from patchpose.data.photos import wheel_photo_paths
from patchpose.errors import InputError
from patchpose.training import shape as T

TINY = [
    "steps=4",
    "batch=16",
    "photos_per_batch=4",
    "keypoints=40",
    "long_side=256",
    "margin=20",
    "threads=1",
]


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    root = tmp_path_factory.mktemp("photos")
    for p in wheel_photo_paths():
        if p.stem in ("astronaut", "chelsea"):
            shutil.copy(p, root / p.name)
    names = sorted(p.name for p in root.iterdir())
    (root / "splits.json").write_text(json.dumps({"train": names, "val": []}))
    return root


def cfg(photos, *extra) -> T.ShapeTrainConfig:
    return T.ShapeTrainConfig.from_overrides([f"photos={photos}", *TINY, *extra])


def test_random_affine_is_of_determinant_one_with_the_drawn_anisotropy():
    B = T.random_affine(np.random.default_rng(0), 500, 1.25)
    s = np.linalg.svd(B, compute_uv=False)
    assert np.allclose(np.linalg.det(B), 1.0)
    log2_aniso = np.log2(s[:, 0] / s[:, 1])
    assert log2_aniso.max() <= 1.25 + 1e-9 and log2_aniso.max() > 1.2  # squeeze 2**(u/2), stretch 2**(u/2)


def test_pairs_are_seeded_per_step_and_cut_through_the_drawn_map(photos):
    pairs = T.ShapePairs(cfg(photos), progress=False)
    a, b = pairs.batch(3), pairs.batch(3)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(pairs.batch(4)[2], a[2])
    x1, x2, B = a
    assert x1.shape == x2.shape == (16, 1, 32, 32) and B.shape == (16, 2, 2)
    near_identity = torch.linalg.matrix_norm(B - torch.eye(2), ord=2) < 0.02
    if near_identity.any():  # where B is the identity the two cuts are one patch
        assert torch.allclose(x1[near_identity], x2[near_identity], atol=0.05)


def test_resumed_run_is_the_uninterrupted_run(photos, tmp_path, monkeypatch):
    straight = T.train_shape(cfg(photos), tmp_path / "a", progress=False)
    calls = {"n": 0}
    real = T.ShapePairs.batch

    def stop_at_step_2(self, step):
        if step == 2 and calls["n"] == 0:
            calls["n"] += 1
            raise KeyboardInterrupt
        return real(self, step)

    monkeypatch.setattr(T.ShapePairs, "batch", stop_at_step_2)
    with pytest.raises(KeyboardInterrupt):
        T.train_shape(cfg(photos), tmp_path / "b", progress=False)
    assert T.load_shape_checkpoint(tmp_path / "b" / "checkpoint.pt")["step"] == 2
    assert not (tmp_path / "b" / T.SHAPE_WEIGHTS_FILE).exists()
    resumed = T.train_shape(cfg(photos), tmp_path / "b", resume=True, progress=False)
    assert resumed["step"] == straight["step"] == 4
    wa = T.load_shape_checkpoint(tmp_path / "a" / "checkpoint.pt")["model"]
    wb = T.load_shape_checkpoint(tmp_path / "b" / "checkpoint.pt")["model"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert resumed["loss"] == straight["loss"]
    steps = [json.loads(line)["step"] for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(set(steps))  # no step logged twice


def test_errors_are_one_line(photos, tmp_path, capsys):
    with pytest.raises(InputError, match="KEY=VALUE"):
        T.ShapeTrainConfig.from_overrides(["depth=3"])
    with pytest.raises(InputError, match="batch .* multiple of photos_per_batch"):
        T.ShapeTrainConfig.from_overrides(["batch=10", "photos_per_batch=4"])
    with pytest.raises(InputError, match="log2_radius"):
        T.ShapeTrainConfig.from_overrides(["log2_radius=[1, 0]"])
    assert (
        main(
            ["train-shape", "--out", str(tmp_path / "x"), "--photos", str(tmp_path / "none"), "--no-progress"]
        )
        == 2
    )
    assert "photo folder not found" in capsys.readouterr().err
    (tmp_path / "c").mkdir()
    torch.save({"model": {}}, tmp_path / "c" / "checkpoint.pt")
    assert (
        main(["train-shape", "--out", str(tmp_path / "c"), "--photos", str(photos), *TINY, "--no-progress"])
        == 2
    )
    assert "exists: pass --resume" in capsys.readouterr().err
    args = [
        "train-shape",
        "--out",
        str(tmp_path / "c"),
        "--photos",
        str(photos),
        *TINY,
        "--resume",
        "--no-progress",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "not a shape training checkpoint" in err and len(err.strip().splitlines()) == 1
