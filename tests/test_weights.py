"""Bundled weights load with a verified checksum; foreign, corrupt or tampered files are clear errors."""

import shutil

import pytest
import torch
from safetensors.torch import save_file

from patchpose.errors import WeightsError
from patchpose.models import create_model
from patchpose.weights import BUNDLED, WEIGHTS_DIR, load_bundled, load_weights, save_weights, sha256_of


@pytest.mark.parametrize("name", ["patchpose-v1", "patchpose-v2", "patchpose-v3"])
def test_bundled_models_are_listed_small_and_verified(name):
    fname, sha = BUNDLED[name]
    path = WEIGHTS_DIR / fname
    assert path.stat().st_size < 20e6
    assert sha256_of(path) == sha
    model, meta = load_bundled(name)
    assert meta["name"] == name and not model.training
    assert load_bundled()[1]["name"] == "patchpose-v2"  # the default


def test_save_load_round_trip(tmp_path):
    m = create_model("small-cnn", width=0.5)
    p = save_weights(m, tmp_path / "m.safetensors", name="x")
    m2, meta = load_weights(p)
    assert meta["name"] == "x" and m2.cfg == m.cfg
    for k, v in m.state_dict().items():
        assert torch.equal(v, m2.state_dict()[k])


def test_foreign_safetensors_file(tmp_path):
    p = tmp_path / "foreign.safetensors"
    save_file({"w": torch.zeros(3)}, str(p))
    with pytest.raises(WeightsError, match="not a patchpose model"):
        load_weights(p)


def test_corrupt_file(tmp_path):
    src = WEIGHTS_DIR / BUNDLED["patchpose-v1"][0]
    p = tmp_path / "cut.safetensors"
    p.write_bytes(src.read_bytes()[:5000])
    with pytest.raises(WeightsError):
        load_weights(p)
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 100)
    with pytest.raises(WeightsError):
        load_weights(tmp_path / "junk.safetensors")


def test_checksum_mismatch(tmp_path):
    src = WEIGHTS_DIR / BUNDLED["patchpose-v1"][0]
    p = tmp_path / "copy.safetensors"
    shutil.copy(src, p)
    with pytest.raises(WeightsError, match="checksum"):
        load_weights(p, expected_sha256="0" * 64)


def test_weights_that_do_not_fit_their_config(tmp_path):
    m = create_model("small-cnn", width=0.5)
    p = save_weights(m, tmp_path / "m.safetensors")
    big = create_model("small-cnn")
    from safetensors.torch import load_file, safe_open

    with safe_open(str(p), framework="pt") as f:
        meta = f.metadata()
    save_file(
        {k: v.contiguous() for k, v in big.state_dict().items()},
        str(tmp_path / "bad.safetensors"),
        metadata=meta,
    )
    with pytest.raises(WeightsError, match="do not fit"):
        load_weights(tmp_path / "bad.safetensors")
    assert load_file(str(p))  # the good file is still fine


def test_missing_file():
    with pytest.raises(WeightsError, match="not found"):
        load_weights("/nonexistent/w.safetensors")
