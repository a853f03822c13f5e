"""Training the affine shape network: seeded pairs, a resumed run that is the uninterrupted one, clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from conftest import make_train_photos
from patchpose.cli.main import main
from patchpose.errors import InputError
from patchpose.training import shape as T

TINY = [
    "steps=4",
    "log_every=1",
    "batch=16",
    "photos_per_batch=4",
    "keypoints=40",
    "long_side=256",
    "margin=20",
    "threads=1",
]


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    return make_train_photos(tmp_path_factory.mktemp("photos"))


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
    assert not torch.equal(x1, x2)
    # the first photo's pairs of step 3 drawn again by hand: x1 through r·I, x2 through r·B for the B returned
    from patchpose.data.patches import extract_patches

    rng = np.random.default_rng((0, 3))
    i = int(rng.integers(len(pairs.pyramids)))
    xy = pairs.keypoints[i][rng.integers(len(pairs.keypoints[i]), size=4)]
    logr = rng.uniform(-0.7, 1.0, 4)
    b = T.random_affine(rng, 4, 1.25)
    np.testing.assert_allclose(B[:4].numpy(), b, rtol=1e-6)
    zero = np.zeros(4)
    np.testing.assert_array_equal(x1[:4].numpy(), extract_patches(pairs.pyramids[i], xy, logr, zero, 32))
    np.testing.assert_array_equal(
        x2[:4].numpy(), extract_patches(pairs.pyramids[i], xy, logr, zero, 32, shape=b)
    )
    assert x1.dtype == torch.float32 and 0.0 <= float(x1.min()) and float(x1.max()) <= 1.0  # float images
    assert not np.allclose(
        x1.numpy() * 255, np.round(x1.numpy() * 255), atol=1e-3
    )  # not rounded to 8-bit levels


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
    ca = T.load_shape_checkpoint(tmp_path / "a" / "checkpoint.pt")
    cb = T.load_shape_checkpoint(tmp_path / "b" / "checkpoint.pt")
    assert ca["running"] == cb["running"]
    log_a, log_b = ((tmp_path / d / "metrics.jsonl").read_text().splitlines() for d in "ab")
    strip = lambda lines: [{k: v for k, v in json.loads(x).items() if k != "time"} for x in lines]  # noqa: E731
    assert strip(log_b) == strip(log_a) and [r["step"] for r in strip(log_a)] == [1, 2, 3, 4]


def test_errors_are_one_line(photos, tmp_path, capsys):
    with pytest.raises(InputError, match="KEY=VALUE"):
        T.ShapeTrainConfig.from_overrides(["depth=3"])
    with pytest.raises(InputError, match="batch .* multiple of photos_per_batch"):
        T.ShapeTrainConfig.from_overrides(["batch=10", "photos_per_batch=4"])
    with pytest.raises(InputError, match="log2_radius"):
        T.ShapeTrainConfig.from_overrides(["log2_radius=[1, 0]"])
    for bad, match in (
        ("log2_radius=[true, 1]", "log2_radius"),
        ("seed=18446744073709551616", "seed"),
        ("photos=", "photos must name"),
        ("steps=abc", "not a number"),
        ("threads=1.5", "threads"),
    ):
        with pytest.raises(InputError, match=match):
            T.ShapeTrainConfig.from_overrides([bad])
    with pytest.raises(InputError, match="warm-up of exactly one step"):
        T.train_shape(cfg(photos, "steps=10", "warmup=0.1"), tmp_path / "w", progress=False)
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
