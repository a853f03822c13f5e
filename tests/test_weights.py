"""Bundled weights load with a verified checksum; foreign, corrupt or tampered files are clear errors."""

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from patchpose.errors import WeightsError
from patchpose.models import create_model
from patchpose.reading import ReadPlan
from patchpose.weights import (
    BUNDLED,
    PLAN_KEYS,
    WEIGHTS_DIR,
    load_bundled,
    load_weights,
    recommended_descriptor_region,
    recommended_orientation_offset,
    recommended_passes,
    save_weights,
    sha256_of,
)

#: what the wheel ships (issue #59): the default, the model of the matching and COLMAP recipes, the teacher of
#: the default's training recipe (and of most published numbers), and the affine shape network
SHIPPED = {"patchpose-fast-v1", "patchpose-v10", "patchpose-v9", "patchpose-shape-v1"}


def test_the_wheel_bundles_exactly_the_models_that_are_used_each_listed_and_verified():
    """bundled.json lists exactly the shipped models; each entry's file exists, is small and has the listed
    sha256; no other weights file lies in the package (package-data would ship it); each loads by name."""
    import json

    from patchpose.recipes import MODELS
    from patchpose.training.recipe import load_recipe
    from patchpose.weights import BUNDLED_SHAPES, DEFAULT_MODEL, DEFAULT_SHAPE_MODEL, load_shape_model

    entries = json.loads((WEIGHTS_DIR / "bundled.json").read_text())
    assert set(entries) == SHIPPED == set(BUNDLED) | set(BUNDLED_SHAPES)
    assert {DEFAULT_MODEL, DEFAULT_SHAPE_MODEL} <= SHIPPED
    # what the model table names, and what a shipped training recipe loads (fast-v1's teacher, v9): nothing else
    teachers = {
        o.partition("=")[2]
        for stage in load_recipe("patchpose-fast-v1")["stages"]
        for o in stage.get("overrides", [])
        if o.startswith("run.teacher=")
    }
    assert teachers == {"patchpose-v9"} and SHIPPED == set(MODELS.values()) | teachers
    for name, entry in entries.items():
        path = WEIGHTS_DIR / entry["file"]
        assert path.is_file() and path.stat().st_size < 1e6, name
        assert sha256_of(path) == entry["sha256"], name
    assert {p.name for p in WEIGHTS_DIR.iterdir()} == {"bundled.json"} | {e["file"] for e in entries.values()}
    for name in BUNDLED:
        model, meta = load_bundled(name)
        assert meta["name"] == name and not model.training
    assert load_bundled()[1]["name"] == "patchpose-fast-v1"  # the default
    assert load_shape_model()[1]["name"] == "patchpose-shape-v1"


@pytest.mark.parametrize("name", ["patchpose-v1", "patchpose-v7"])
def test_a_model_no_longer_bundled_is_a_clear_error_naming_the_tag_that_keeps_it(name, tmp_path, monkeypatch):
    """``from_pretrained("patchpose-v7")`` (and --weights, run.teacher) says where the file is, not "file not
    found: patchpose-v7"; a file of that name in the working folder still loads."""
    from patchpose import PatchPoseEstimator
    from patchpose.weights import REMOVED_MODELS, REMOVED_MODELS_TAG, load_model

    assert name in REMOVED_MODELS and not set(REMOVED_MODELS) & set(BUNDLED)
    for load in (load_bundled, load_model, PatchPoseEstimator.from_pretrained, PatchPoseEstimator.load):
        with pytest.raises(WeightsError, match=f"{name} is no longer bundled.*git tag {REMOVED_MODELS_TAG}"):
            load(name)
    save_weights(create_model("small-cnn", width=0.5), tmp_path / name, name="mine")
    monkeypatch.chdir(tmp_path)
    assert load_model(name)[1]["name"] == "mine"


def test_the_shape_models_name_given_for_a_pose_model_says_what_it_is(tmp_path, capsys):
    """``from_pretrained("patchpose-shape-v1")`` said "no bundled model" and ``load``/``export onnx --weights`` "file
    not found", though it is bundled: now each says it is the affine shape network and where it is used."""
    from patchpose import PatchPoseEstimator
    from patchpose.cli.main import main
    from patchpose.weights import DEFAULT_SHAPE_MODEL, load_model

    name = DEFAULT_SHAPE_MODEL
    said = rf"^'{name}' is the bundled affine shape network, not a pose model: .*AffineShapeEstimator.*pose models: "
    for load in (load_bundled, load_model, PatchPoseEstimator.from_pretrained, PatchPoseEstimator.load):
        with pytest.raises(WeightsError, match=said):
            load(name)
    assert main(["export", "onnx", "--weights", name, "--out", str(tmp_path / "m.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the bundled affine shape network, not a pose model" in err


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_a_file_of_an_older_layout_loads_as_it_was_written(legacy_weights, layout):
    """Files like patchpose-v1's and -v2's (no longer bundled) name fewer settings than today's: the rest load
    at the values those files were trained with: v1's 13 scale bins over [-2, 2]; v2's narrow scale head
    (dilations [1, 1]) and rings read at any sharpness (polar_view_min_step 0), unlike every bundled model."""
    import json

    from safetensors import safe_open

    model, meta = load_weights(legacy_weights[layout])
    with safe_open(str(legacy_weights[layout]), "pt") as f:
        stored = json.loads(f.metadata()["model_config"])
    if layout == "v1":
        assert "scale_range" not in stored
        assert (model.cfg.arch, list(model.cfg.windows), model.cfg.num_scale_bins) == (
            "small-cnn",
            [1, 2, 4],
            13,
        )
        assert list(model.cfg.scale_range) == [-2.0, 2.0]
    else:
        assert "polar_scale_dilations" not in stored and "polar_view_min_step" not in stored
        assert list(model.cfg.polar_scale_dilations) == [1, 1] and model.cfg.polar_view_min_step == 0.0
        assert [m.dilation[0] for m in model.polar.scale_head if isinstance(m, torch.nn.Conv1d)] == [1, 1, 1]
        bundled, _ = load_bundled("patchpose-v9")
        assert list(bundled.cfg.polar_scale_dilations) == [1, 2, 4] and bundled.cfg.polar_view_min_step == 1.0
    assert ReadPlan.from_meta(meta) == ReadPlan()  # no plan in the file: one read, window 1


def test_a_bundled_models_recipe_builds_its_network(tmp_path):
    """``train --recipe NAME`` for a bundled model NAME ends in a network with exactly the bundled layout, so the
    one documented command reproduces it (the v6 recipe once lacked its wide scale head)."""
    from omegaconf import OmegaConf

    from patchpose.models import ModelConfig
    from patchpose.training.recipe import list_recipes, load_recipe, stage_configs

    names = sorted(BUNDLED)
    assert set(names) <= set(list_recipes())  # every bundled pose model has its recipe
    for name in names:
        rec = load_recipe(name)
        last = stage_configs(rec, tmp_path / name)[-1]
        model, meta = load_bundled(name)
        assert ModelConfig.from_dict(OmegaConf.to_container(last.model)) == model.cfg, name
        # and the exported file says what the bundled one says: its whole read plan
        assert rec["passes"] == recommended_passes(meta), name
        assert rec["descriptor_region"] == recommended_descriptor_region(meta), name
        assert rec["orientation_offset"] == recommended_orientation_offset(meta), name
        stated = {k: rec[k] for k in PLAN_KEYS if rec[k] is not None}
        assert ReadPlan.from_meta(meta) == ReadPlan(**stated), name


def test_the_plan_keys_are_the_read_plans_fields():
    """Weights files, recipes and ONNX metadata carry the read plan by ``PLAN_KEYS``: every field, no other."""
    from dataclasses import fields

    assert set(PLAN_KEYS) == {f.name for f in fields(ReadPlan)}


def test_v9_is_the_half_width_polar_network_fine_tuned_with_jitter_and_read_twice():
    """patchpose-v9 is what its model card says: the log-polar network at half width (32 channels in both heads)
    with the wide scale head and rings no sharper than a view pixel, fine-tuned with keypoint jitter, read twice
    with the orientation 4/3 octave below the scale found and described in a window of 2.25 radii."""
    v9, meta = load_bundled("patchpose-v9")
    assert v9.cfg.arch == "polar-cnn" and v9.cfg.width == 0.5
    assert v9.polar.scale_head[0].out_channels == 32 and v9.polar.ori_convs[0].out_channels == 32
    assert list(v9.cfg.polar_scale_dilations) == [1, 2, 4] and v9.cfg.polar_view_min_step == 1.0
    assert v9.cfg.num_scale_bins == 25 and v9.cfg.num_ori_bins == 36
    assert recommended_passes(meta) == 2 and meta["descriptor_region"] == "2.25"
    assert recommended_orientation_offset(meta) == -4 / 3  # model card, "Read plan"
    assert "jitter" in meta["notes"]


def test_v10_is_v9s_network_fine_tuned_on_redetected_pairs_with_v9s_read_plan():
    """patchpose-v10 is v9's network and read plan (two reads, orientation 4/3 octave below, window 2.25) with
    its own weights, and its recipe is v9's four stages plus one on re-detected pairs (model card)."""
    from patchpose.training.recipe import load_recipe

    v9, meta9 = load_bundled("patchpose-v9")
    v10, meta = load_bundled("patchpose-v10")
    assert v10.cfg == v9.cfg
    for key in ("passes", "orientation_offset", "descriptor_region"):
        assert meta[key] == meta9[key], key
    assert "re-detected" in meta["notes"]
    assert any(not torch.equal(a, b) for a, b in zip(v9.state_dict().values(), v10.state_dict().values()))
    r9, r10 = load_recipe("patchpose-v9"), load_recipe("patchpose-v10")
    assert r10["stages"][:4] == r9["stages"]
    assert "data.redetect=1.0" in r10["stages"][4]["overrides"]


def test_fast_v1_is_v9_at_half_width_read_without_the_second_scale_read_at_a_quarter_of_its_cost():
    """patchpose-fast-v1 reads v9's inputs through a network of half v9's width (model card), with v9's plan
    except that the first read's scale stands, so its convolutions cost about a quarter of v9's per keypoint;
    its recipe learns from v9 as a teacher and stores that plan."""
    import numpy as np

    from patchpose import PatchPoseEstimator
    from patchpose.evaluation.bench import conv_flops_per_keypoint
    from patchpose.training.recipe import load_recipe

    v9, meta9 = load_bundled("patchpose-v9")
    fast, meta = load_bundled("patchpose-fast-v1")
    assert fast.cfg.input_shape == v9.cfg.input_shape and fast.cfg.polar_grid == v9.cfg.polar_grid
    assert fast.cfg.width == v9.cfg.width / 2
    for key in ("passes", "orientation_offset", "descriptor_region"):
        assert meta[key] == meta9[key], key
    assert meta["reread_scale"] == "false" and "reread_scale" not in meta9
    assert load_recipe("patchpose-fast-v1")["reread_scale"] is False
    img = np.random.default_rng(0).uniform(0, 255, (200, 200)).astype(np.uint8)
    xy = np.array([[100.0, 100.0], [60.0, 140.0]])
    cost = [
        conv_flops_per_keypoint(PatchPoseEstimator.load(m), img, xy)
        for m in ("patchpose-v9", "patchpose-fast-v1")
    ]
    assert 0.2 < cost[1] / cost[0] < 0.27
    overrides = load_recipe("patchpose-fast-v1")["stages"][-1]["overrides"]
    assert "run.teacher=patchpose-v9" in overrides and "loss.distill=1" in overrides


def test_the_orientation_ignores_far_content():
    """What the context stage of the bundled models' recipes (v8's, before v9's jitter) is for: blacking out the
    right half of a photo hardly moves their orientation at keypoints 64-160 px left of the cut (a warped
    canvas's black corners, the edge of a second image). patchpose-v7, the same network without that stage
    (git tag models-v1-v8-2026-11-28), moved by more than 10° at 23 % of these keypoints; v8 at 3.6 %."""
    import numpy as np
    import skimage.data

    from patchpose import PatchPoseEstimator
    from patchpose.data.keypoints import detect_sift

    img = skimage.data.astronaut()
    line = img.shape[1] // 2
    xy, _ = detect_sift(img, 2000, margin=20)
    xy = xy[(xy[:, 0] < line - 64) & (xy[:, 0] > line - 160)]
    cut = img.copy()
    cut[:, line:] = 0
    moved = {}
    for name in sorted(BUNDLED):
        est = PatchPoseEstimator.from_pretrained(name)
        a, b = (est.estimate(im, xy).orientation for im in (img, cut))
        moved[name] = np.mean(np.degrees(np.abs(np.angle(np.exp(1j * (a - b))))) > 10)
    assert len(xy) > 100
    assert max(moved.values()) < 0.06, moved


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
    with pytest.raises(WeightsError, match="not a patchpose model: it has no metadata"):
        load_weights(p)


@pytest.mark.parametrize(
    "drop, change, said",
    [
        ("format", {}, "its metadata has no 'format' key"),
        ("model_config", {}, "its metadata has no 'model_config' key"),
        (None, {"format": "pt"}, "its metadata 'format' is 'pt', not 'patchpose'"),
        (None, {"format": "patchpose-shape"}, "'patchpose-shape', an affine shape network's"),
    ],
)
def test_a_missing_metadata_key_is_named(tmp_path, drop, change, said):
    """A weights file without one of the keys a pose network's metadata needs said "no patchpose metadata";
    now the message names the key that is missing (or the format that is not a pose network's)."""
    from safetensors.torch import load_file, safe_open

    p = save_weights(create_model("small-cnn", width=0.5), tmp_path / "m.safetensors")
    with safe_open(str(p), framework="pt") as f:
        meta = {k: v for k, v in f.metadata().items() if k != drop}
    save_file(load_file(str(p)), str(tmp_path / "bad.safetensors"), metadata={**meta, **change})
    with pytest.raises(
        WeightsError, match="bad.safetensors is a safetensors file but not a patchpose model: "
    ) as e:
        load_weights(tmp_path / "bad.safetensors")
    assert said in str(e.value) and "\n" not in str(e.value)


def test_corrupt_file(tmp_path):
    src = WEIGHTS_DIR / BUNDLED["patchpose-v9"][0]
    p = tmp_path / "cut.safetensors"
    p.write_bytes(src.read_bytes()[:5000])
    with pytest.raises(WeightsError):
        load_weights(p)
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 100)
    with pytest.raises(WeightsError):
        load_weights(tmp_path / "junk.safetensors")


def test_checksum_mismatch(tmp_path):
    src = WEIGHTS_DIR / BUNDLED["patchpose-v9"][0]
    p = tmp_path / "copy.safetensors"
    shutil.copy(src, p)
    with pytest.raises(WeightsError, match="checksum"):
        load_weights(p, expected_sha256="0" * 64)


@pytest.mark.parametrize("name", ["patchpose-v10", "patchpose-shape-v1"])
def test_a_copy_of_a_bundled_file_with_a_flipped_byte_is_refused_when_loaded_by_path(tmp_path, name):
    """A file whose metadata names a bundled model and whose sha256 is not that model's is compared with it, tensor
    by tensor (a flipped bit in a tensor once loaded and turned orientations by up to 6.27 rad under the bundled
    name): one that differs is refused, saying its tensors differ; an intact copy loads; a file of another name
    carries no checksum."""
    from patchpose import PatchPoseEstimator
    from patchpose.weights import BUNDLED_SHAPES, load_model, load_shape_weights

    shape = name in BUNDLED_SHAPES
    src = WEIGHTS_DIR / (BUNDLED_SHAPES if shape else BUNDLED)[name][0]
    copy = tmp_path / "copy.safetensors"
    shutil.copy(src, copy)
    load = load_shape_weights if shape else load_weights
    assert load(copy)[1]["name"] == name  # an intact copy
    data = bytearray(src.read_bytes())
    data[-100] ^= 0x40  # a byte of the last tensor's data: the file still parses
    flipped = tmp_path / "flipped.safetensors"
    flipped.write_bytes(bytes(data))
    loads = [load] if shape else [load, load_model, PatchPoseEstimator.load]
    for f in loads:
        with pytest.raises(
            WeightsError,
            match=rf"flipped\.safetensors: its tensors differ from the bundled model '{name}' it names \(a modified "
            r"copy or another version\): save a model of your own under another name$",
        ) as e:
            f(flipped)
        assert "\n" not in str(e.value)
    if not shape:
        with pytest.raises(WeightsError, match="its tensors differ"):
            PatchPoseEstimator.load(flipped, backend="onnx")
        renamed = _with_metadata(flipped, tmp_path / "renamed.safetensors", name="mine")
        assert load_weights(renamed)[1]["name"] == "mine"  # no checksum to check: it loads
        # what the structural checks find is said first (the comparison comes last)
        from safetensors.torch import load_file, safe_open

        state = load_file(str(src))
        key = next(iter(state))
        state[key] = torch.full_like(state[key], float("nan"))
        with safe_open(str(src), framework="pt") as f:
            save_file(state, str(tmp_path / "nan.safetensors"), metadata=f.metadata())
        with pytest.raises(WeightsError, match=f"tensor '{key}' holds non-finite values"):
            load_weights(tmp_path / "nan.safetensors")


@pytest.mark.parametrize("name", ["patchpose-v10", "patchpose-shape-v1"])
def test_an_unchanged_resave_of_a_bundled_file_loads_by_path(tmp_path, name):
    """safetensors writes ``__metadata__`` in another key order in each process (a hash map), so a bundled file
    saved again unchanged has another sha256: it was refused as "corrupt or was modified". Its tensors and
    settings are the bundled model's, so it loads; so does an earlier genuine version whose config names removed
    settings at their "off" value and whose notes differ."""
    import json

    from safetensors.torch import load_file, safe_open

    from patchpose.models.posenet import REMOVED_SETTINGS
    from patchpose.weights import BUNDLED_SHAPES, load_shape_weights

    shape = name in BUNDLED_SHAPES
    src = WEIGHTS_DIR / (BUNDLED_SHAPES if shape else BUNDLED)[name][0]
    with safe_open(str(src), framework="pt") as f:
        meta = f.metadata()
    state = load_file(str(src))
    resaved = tmp_path / "resaved.safetensors"
    for _ in range(50):  # another key order: another hash map, until its bytes differ
        save_file(state, str(resaved), metadata=dict(reversed(meta.items())))
        if sha256_of(resaved) != sha256_of(src):
            break
    assert sha256_of(resaved) != sha256_of(src)
    load = load_shape_weights if shape else load_weights
    model, got = load(resaved)
    assert got["name"] == name
    if not shape:
        assert ReadPlan.from_meta(got) == ReadPlan.from_meta(meta)
        older = tmp_path / "older.safetensors"
        config = json.dumps({**json.loads(meta["model_config"]), **REMOVED_SETTINGS})
        save_file(state, str(older), metadata={**meta, "model_config": config, "notes": "an earlier note"})
        assert load_weights(older)[1]["name"] == name


def test_a_copy_of_a_bundled_file_with_another_read_plan_is_refused_naming_the_key(tmp_path):
    """The same tensors under the bundled name with another setting (the read plan, or the config) are not the
    bundled model: refused in one line naming the key, the bundled value and the file's."""
    import json

    from safetensors.torch import safe_open

    src = WEIGHTS_DIR / BUNDLED["patchpose-v10"][0]
    bad = _with_metadata(src, tmp_path / "bad.safetensors", passes="1")
    with pytest.raises(
        WeightsError,
        match=r"bad\.safetensors: same tensors as the bundled model 'patchpose-v10' it names, other settings "
        r"\(key 'passes': 2 -> 1\)",
    ) as e:
        load_weights(bad)
    assert "\n" not in str(e.value)
    with safe_open(str(src), framework="pt") as f:
        config = {**json.loads(f.metadata()["model_config"]), "standardize": False}
    bad = _with_metadata(src, tmp_path / "cfg.safetensors", model_config=json.dumps(config))
    with pytest.raises(
        WeightsError, match=r"other settings \(key 'model_config.standardize': True -> False\)"
    ):
        load_weights(bad)


@pytest.mark.parametrize("name", ["patchpose-v10", "patchpose-fast-v1", "patchpose-shape-v1"])
def test_a_model_of_your_own_is_not_saved_under_a_bundled_name(tmp_path, capsys, name):
    """``save_weights(model, path, name=est.name)``, ``export CKPT --name patchpose-v10`` and ``export onnx --name``
    wrote a file that names a bundled model without a word (and loading it was refused); each is one line now,
    nothing written. ``export onnx`` of a bundled model itself keeps its name."""
    from patchpose.cli.main import main
    from patchpose.errors import InputError
    from patchpose.models.shapenet import ShapeNet, ShapeNetConfig
    from patchpose.weights import export_checkpoint, save_shape_weights

    said = rf"^'{name}' is a bundled model's name; save yours under another"
    m = create_model("small-cnn", width=0.5)
    with pytest.raises(InputError, match=said):
        save_weights(m, tmp_path / "a.safetensors", name=name)
    with pytest.raises(InputError, match=said):
        save_shape_weights(ShapeNet(ShapeNetConfig()), tmp_path / "s.safetensors", name=name)
    ck = _checkpoint(tmp_path / "ck.pt", m)
    with pytest.raises(InputError, match=said):
        export_checkpoint(ck, tmp_path / "b.safetensors", name=name)
    assert main(["export", str(ck), "--out", str(tmp_path / "c.safetensors"), "--name", name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"'{name}' is a bundled model's name" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"]
    if name in BUNDLED and importlib.util.find_spec("onnx"):
        from patchpose.onnx_backend import export_onnx

        args = ["export", "onnx", "--weights", "patchpose-fast-v1", "--out", str(tmp_path / "m.onnx")]
        assert main([*args, "--name", name]) == 2
        assert f"'{name}' is a bundled model's name" in capsys.readouterr().err
        with pytest.raises(InputError, match=said):
            export_onnx(create_model("polar-cnn", width=0.25), tmp_path / "m.onnx", meta={"name": name})
        assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"]
        own, meta = load_bundled(name)
        assert export_onnx(own, tmp_path / "m.onnx", meta=meta).is_file()  # the bundled model itself


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


def _with_metadata(src, dst, **changes):
    """Copy a weights file with some of its header metadata replaced."""
    from safetensors.torch import load_file, safe_open

    with safe_open(str(src), framework="pt") as f:
        meta = {**f.metadata(), **changes}
    save_file(load_file(str(src)), str(dst), metadata=meta)
    return dst


@pytest.mark.parametrize("config", ["null", "[1, 2]", '"small-cnn"', "7"])
def test_model_config_that_is_not_an_object(tmp_path, config):
    p = save_weights(create_model("small-cnn", width=0.5), tmp_path / "m.safetensors")
    bad = _with_metadata(p, tmp_path / "bad.safetensors", model_config=config)
    with pytest.raises(WeightsError, match=r"bad\.safetensors: model_config is not an object"):
        load_weights(bad)


def test_model_config_with_non_finite_numbers_or_bad_json(tmp_path):
    import json

    m = create_model("small-cnn", width=0.5)
    p = save_weights(m, tmp_path / "m.safetensors")
    cfg = json.dumps({**m.cfg.to_dict(), "windows": [1.0, float("inf")]})
    with pytest.raises(WeightsError, match="model_config is not valid JSON"):
        load_weights(_with_metadata(p, tmp_path / "inf.safetensors", model_config=cfg))
    with pytest.raises(WeightsError, match="model_config is not valid JSON"):
        load_weights(_with_metadata(p, tmp_path / "junk.safetensors", model_config="{not json"))


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_weights_are_refused(tmp_path, value):
    m = create_model("small-cnn", width=0.5)
    key = next(k for k, v in m.state_dict().items() if k.endswith("weight") and v.is_floating_point())
    with torch.no_grad():
        m.state_dict()[key].view(-1)[0] = value
    p = save_weights(m, tmp_path / "nan.safetensors")
    with pytest.raises(WeightsError, match=rf"nan\.safetensors: tensor '{key}' holds non-finite values"):
        load_weights(p)


def test_integer_weights_are_refused(tmp_path):
    """load_state_dict would silently cast integer tensors into the float parameters."""
    from safetensors.torch import load_file, safe_open

    p = save_weights(create_model("small-cnn", width=0.5), tmp_path / "m.safetensors")
    state = {k: v.round().long() if v.is_floating_point() else v for k, v in load_file(str(p)).items()}
    with safe_open(str(p), framework="pt") as f:
        meta = f.metadata()
    save_file(state, str(tmp_path / "int.safetensors"), metadata=meta)
    with pytest.raises(WeightsError, match="not floating point"):
        load_weights(tmp_path / "int.safetensors")


def _onnx_with_config(tmp_path, config: str):
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from patchpose.onnx_backend import export_bytes

    proto = onnx.load_from_string(export_bytes(create_model("small-cnn", width=0.5)))
    for p in proto.metadata_props:
        if p.key == "patchpose_model_config":
            p.value = config
    path = tmp_path / "m.onnx"
    path.write_bytes(proto.SerializeToString())
    return path


def test_onnx_config_that_is_not_an_object(tmp_path):
    from patchpose.onnx_backend import OnnxPoseNet

    with pytest.raises(WeightsError, match=r"m\.onnx: model_config is not an object"):
        OnnxPoseNet(_onnx_with_config(tmp_path, "null"))


def test_onnx_config_that_does_not_match_the_graph(tmp_path):
    """A config whose input (or output) is not the graph's is refused when loading, not with an onnxruntime
    traceback from estimate()."""
    import json

    from patchpose.estimator import PatchPoseEstimator
    from patchpose.onnx_backend import OnnxPoseNet

    cfg = create_model("small-cnn", width=0.5).cfg.to_dict()
    path = _onnx_with_config(tmp_path, json.dumps({**cfg, "color": "rgb"}))
    with pytest.raises(WeightsError, match=r"m\.onnx: the graph's input .* does not match its model config"):
        PatchPoseEstimator.load(path, backend="onnx")
    path = _onnx_with_config(tmp_path, json.dumps({**cfg, "num_ori_bins": 2 * cfg["num_ori_bins"]}))
    with pytest.raises(WeightsError, match="the graph's outputs .* do not match its model config"):
        OnnxPoseNet(path)
    net = OnnxPoseNet(_onnx_with_config(tmp_path, json.dumps(cfg)))  # the true config is fine
    assert net(torch.rand(2, *net.cfg.input_shape))["ori_logits"].shape == (2, cfg["num_ori_bins"])


def test_kornia_angle_detector_refuses_non_finite_patches(legacy_weights):
    import patchpose
    from patchpose.errors import InputError
    from patchpose.estimator import PatchPoseEstimator

    det = patchpose.kornia_angle_detector(PatchPoseEstimator.load(legacy_weights["v1"]))  # a Cartesian model
    patches = torch.rand(2, 1, 32, 32)
    assert det(patches).shape == (2,)
    patches[1, 0, 3, 4] = float("nan")
    with pytest.raises(InputError, match="non-finite"):
        det(patches)
    with pytest.raises(InputError, match="non-finite"):
        det(torch.full((1, 1, 32, 32), float("inf")))


def _checkpoint(path, net=None, **changes):
    """A training checkpoint of ``net`` as :func:`save_checkpoint` writes it, with entries replaced
    (``None``: removed)."""
    from patchpose.training.checkpoint import save_checkpoint

    net = net or create_model("small-cnn", width=0.5)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    save_checkpoint(path, net, opt, sched, {"model": net.cfg.to_dict()}, 3, {}, 0.5)
    ck = torch.load(path, weights_only=True)
    for k, v in changes.items():
        if v is None:
            ck.pop(k)
        else:
            ck[k] = v
    torch.save(ck, path)
    return path


def test_export_of_a_checkpoint_refuses_an_existing_out_unless_overwrite(tmp_path, capsys):
    """``export CHECKPOINT --out EXISTING``, as ``export onnx``: one line before any work, the file untouched;
    ``--overwrite`` replaces it."""
    from patchpose.cli.main import main

    out = tmp_path / "w.safetensors"
    out.write_bytes(b"an earlier file")
    args = ["export", str(_checkpoint(tmp_path / "ck.pt")), "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out} exists: pass --overwrite" in err
    assert out.read_bytes() == b"an earlier file"
    assert main([*args, "--overwrite"]) == 0
    assert load_weights(out)[1]["name"] == "custom"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt", "w.safetensors"]


def test_an_interrupted_export_leaves_no_temporary_and_a_link_out_is_replaced(tmp_path, monkeypatch):
    """``export CKPT`` wrote a fixed ``NAME.tmp`` and left it on Ctrl-C; it writes through the temporary sibling and
    rename that ``export onnx`` and ``estimate`` use, so an interrupt inside the write leaves the old file and no
    temporary. Both forms replace a symbolic link at ``--out`` with the file, its target left as it was (as
    ``export CKPT`` always did and ``export onnx`` did before it wrote through write_bytes_atomic)."""
    import os

    import patchpose.weights as w
    from patchpose.cli.main import main

    ck = _checkpoint(tmp_path / "ck.pt")
    out = tmp_path / "w.safetensors"
    out.write_bytes(b"an earlier file")
    real_save_file = w._save_file

    def interrupted(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"a part")
        raise KeyboardInterrupt

    monkeypatch.setattr(w, "_save_file", interrupted)
    assert main(["export", str(ck), "--out", str(out), "--overwrite"]) == 130  # interrupted
    assert sorted(os.listdir(tmp_path)) == ["ck.pt", "w.safetensors"]
    assert out.read_bytes() == b"an earlier file"
    monkeypatch.setattr(w, "_save_file", real_save_file)
    outs = {"safetensors": [str(ck)]}
    if importlib.util.find_spec("onnx"):
        outs["onnx"] = ["onnx", "--weights", "patchpose-fast-v1"]
    for suffix, args in outs.items():
        target, link = tmp_path / f"t.{suffix}", tmp_path / f"l.{suffix}"
        target.write_bytes(b"the link's target")
        link.symlink_to(target.name)
        assert main(["export", *args, "--out", str(link), "--overwrite"]) == 0
        assert not link.is_symlink() and link.stat().st_size > 100, suffix
        assert target.read_bytes() == b"the link's target", suffix
    assert not [p for p in os.listdir(tmp_path) if "tmp" in p]


def test_export_of_a_training_checkpoint(tmp_path):
    from patchpose.weights import export_checkpoint

    m = create_model("small-cnn", width=0.5)
    out = export_checkpoint(_checkpoint(tmp_path / "ck.pt", m), tmp_path / "w.safetensors")
    m2, meta = load_weights(out)
    assert m2.cfg == m.cfg and "step 3" in meta["notes"]


def test_one_checkpoint_exported_again_gives_the_same_bytes(tmp_path):
    """safetensors writes its metadata in a hash map's order, which changed from one export to the next: the
    keys are written sorted, so that a rerun (a resumed recipe, a reproduction) can be checked byte for byte."""
    import hashlib
    import json

    from safetensors import safe_open

    from patchpose.weights import export_checkpoint

    ck = _checkpoint(tmp_path / "ck.pt", create_model("small-cnn", width=0.5))
    outs = [export_checkpoint(ck, tmp_path / f"w{i}.safetensors", notes="é") for i in range(6)]
    assert len({hashlib.sha256(p.read_bytes()).hexdigest() for p in outs}) == 1
    data = outs[0].read_bytes()
    header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
    assert list(header["__metadata__"]) == sorted(header["__metadata__"])
    with safe_open(str(outs[0]), "pt") as f:  # safetensors reads it back: metadata and tensors as written
        meta = f.metadata()
        assert meta["notes"] == "é" and meta["format"] == "patchpose"
    m, _ = load_weights(outs[0])
    assert m.cfg.arch == "small-cnn"


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"config": {"lr": 1}}, "its config has no 'model' section"),
        ({"config": "x"}, "its config has no 'model' section"),
        ({"step": None, "optimizer": None}, "missing 'step', 'optimizer'"),
        ({"step": "3"}, "'step' must be a whole number"),
        ({"model": [1, 2]}, "'model' is not a state dict"),
        ({"config": {"model": {"arch": "small-cnn", "bogus": 1}}}, "invalid model config"),
    ],
)
def test_foreign_training_checkpoints_are_clear_errors(tmp_path, changes, message):
    from patchpose.training.checkpoint import load_checkpoint

    p = _checkpoint(tmp_path / "ck.pt", **changes)
    with pytest.raises(WeightsError, match=rf"ck\.pt is not a patchpose training checkpoint: {message}"):
        load_checkpoint(p)


def test_checkpoint_weights_of_the_wrong_shapes_or_not_finite(tmp_path):
    from patchpose.training.checkpoint import load_checkpoint

    other = create_model("small-cnn").state_dict()  # width 1, the config says 0.5
    with pytest.raises(WeightsError, match="the 'model' weights do not fit the checkpoint's model config"):
        load_checkpoint(_checkpoint(tmp_path / "a.pt", model=other))
    m = create_model("small-cnn", width=0.5)
    state = {k: v.clone() for k, v in m.state_dict().items()}
    key = next(k for k, v in state.items() if v.is_floating_point())
    state[key].view(-1)[0] = float("nan")
    with pytest.raises(WeightsError, match=f"tensor '{key}' holds non-finite values"):
        load_checkpoint(_checkpoint(tmp_path / "b.pt", m, model=state))


def test_foreign_checkpoint_in_the_cli_is_one_line(tmp_path, capsys):
    """`patchpose export CKPT` and `patchpose train --config v1 --out DIR --resume` print one line and exit with 2."""
    from patchpose.cli.main import main

    torch.save({"model": {"w": torch.zeros(3)}, "config": {"lr": 1}}, tmp_path / "foreign.pt")
    assert main(["export", str(tmp_path / "foreign.pt"), "--out", str(tmp_path / "w.safetensors")]) == 2
    err = capsys.readouterr().err
    assert "foreign.pt is not a patchpose training checkpoint" in err and err.count("\n") == 1
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(tmp_path / "foreign.pt", run / "checkpoint.pt")
    assert main(["train", "--config", "v1", "--out", str(run), "--resume", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "checkpoint.pt is not a patchpose training checkpoint" in err and err.count("\n") == 1


def _png(path):
    import cv2
    import numpy as np

    path.write_bytes(cv2.imencode(".png", np.zeros((8, 8), np.uint8))[1].tobytes())
    return path


def _load_hardnet(path):
    """A network that is not ours (kornia's HardNet architecture) loaded from ``path`` as the peers' are."""
    import kornia.feature as KF

    from patchpose.weights import load_state_into

    return load_state_into(KF.HardNet(pretrained=False), path, "hardnet")


def test_a_file_that_is_not_a_torch_file_is_a_one_line_error(tmp_path, capsys):
    """No torch advice to re-run with weights_only=False (files from elsewhere are never unpickled)."""
    import numpy as np

    from patchpose.cli.main import main

    png = _png(tmp_path / "image.png")
    torch.save({"a": np.zeros(3)}, tmp_path / "numpy.pt")  # needs unpickling a numpy global
    for path in (png, tmp_path / "numpy.pt"):
        with pytest.raises(WeightsError, match="is not a PyTorch state dict / checkpoint") as e:
            _load_hardnet(path)
        assert "\n" not in str(e.value) and "weights_only" not in str(e.value)
        assert main(["export", str(path), "--out", str(tmp_path / "w.safetensors")]) == 2
        err = capsys.readouterr().err
        assert "is not a PyTorch state dict / checkpoint" in err and err.count("\n") == 1
        assert "weights_only" not in err


def test_weights_of_a_network_not_ours_that_are_not_its_state_dict(tmp_path):
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(WeightsError, match="not a PyTorch state dict"):
        _load_hardnet(tmp_path / "list.pt")
    torch.save({"features.0.weight": torch.zeros(3)}, tmp_path / "other.pt")
    with pytest.raises(WeightsError, match="cannot load hardnet weights") as e:
        _load_hardnet(tmp_path / "other.pt")
    assert "\n" not in str(e.value)
    # the right names and shapes, but NaN or integer values: load_state_dict would take them silently
    import kornia.feature as KF

    good = KF.HardNet(pretrained=False).state_dict()
    torch.save(good, tmp_path / "good.pt")
    _load_hardnet(tmp_path / "good.pt")  # num_batches_tracked (int) is fine
    key = next(k for k, v in good.items() if v.is_floating_point())
    for name, bad in (("nan", torch.full_like(good[key], float("nan"))), ("int", good[key].to(torch.int32))):
        torch.save({**good, key: bad}, tmp_path / f"{name}.pt")
        with pytest.raises(WeightsError, match="non-finite" if name == "nan" else "int32"):
            _load_hardnet(tmp_path / f"{name}.pt")


def test_export_to_a_folder_is_a_clear_error_and_leaves_nothing(tmp_path):
    from patchpose.cli.main import main

    out = tmp_path / "odir.onnx"
    out.mkdir()
    assert main(["export", "onnx", "--weights", "patchpose-v10", "--out", str(out)]) == 2
    assert not list(tmp_path.glob("*.tmp")) and not list(out.iterdir())
    # load(backend="onnx") tells an ONNX file by its suffix: another suffix made a file it could not load
    assert main(["export", "onnx", "--weights", "patchpose-v10", "--out", str(tmp_path / "m.txt")]) == 2
    assert not (tmp_path / "m.txt").exists()


def test_kornia_angle_detector_takes_a_model_name():
    import patchpose

    det = patchpose.kornia_angle_detector("patchpose-v10")
    assert det.est.meta["name"] == "patchpose-v10"


def test_a_weights_file_may_recommend_its_number_of_reads(tmp_path):
    """save_weights(passes=) stores the reads a model is meant for; the estimator takes them as its default,
    an explicit passes wins, a file without them reads once, and a bad value is a clear WeightsError."""
    import importlib.util

    from safetensors.torch import load_file, safe_open, save_file

    from patchpose import PatchPoseEstimator
    from patchpose.errors import InputError, WeightsError
    from patchpose.weights import load_bundled, recommended_passes, save_weights

    model, _ = load_bundled("patchpose-v10")
    two = save_weights(model, tmp_path / "two.safetensors", passes=2)
    assert PatchPoseEstimator.load(two).plan.passes == 2
    assert PatchPoseEstimator.load(two).with_plan(passes=1).plan.passes == 1
    if importlib.util.find_spec("onnxruntime"):  # the ONNX look-alike keeps the file's metadata
        assert PatchPoseEstimator.load(two, backend="onnx").plan.passes == 2
    plain = save_weights(model, tmp_path / "plain.safetensors")
    assert PatchPoseEstimator.load(plain).plan.passes == 1
    assert recommended_passes({}) is None and recommended_passes({"passes": "3"}) == 3
    with pytest.raises(InputError, match="passes"):
        save_weights(model, tmp_path / "bad.safetensors", passes=0)
    with safe_open(str(two), framework="pt") as f:
        meta = f.metadata()
    for bad in ("0", "9", "two", "-1"):
        path = tmp_path / f"bad{bad}.safetensors"
        save_file(load_file(str(two)), str(path), metadata={**meta, "passes": bad})
        with pytest.raises(WeightsError, match="'passes' must be an integer from 1 to 8"):
            PatchPoseEstimator.load(path)


def test_a_weights_file_may_carry_its_descriptor_window(tmp_path):
    """save_weights(descriptor_region=) stores the descriptor window a model's pose was calibrated with; the
    estimator takes it as its default, an explicit value wins, a file without one uses 1, and a bad value is
    a clear InputError (argument) or WeightsError (file)."""
    from safetensors.torch import load_file, safe_open, save_file

    from patchpose import PatchPoseEstimator
    from patchpose.errors import InputError, WeightsError
    from patchpose.weights import load_bundled, recommended_descriptor_region, save_weights

    model, _ = load_bundled("patchpose-v10")
    wide = save_weights(model, tmp_path / "wide.safetensors", descriptor_region=2.5)
    assert PatchPoseEstimator.load(wide).plan.descriptor_region == 2.5
    assert PatchPoseEstimator.load(wide).with_plan(descriptor_region=1.5).plan.descriptor_region == 1.5
    assert (
        PatchPoseEstimator.load(save_weights(model, tmp_path / "plain.safetensors")).plan.descriptor_region
        == 1.0
    )
    assert PatchPoseEstimator.load("patchpose-v10").plan.descriptor_region == 2.25  # its file's
    assert recommended_descriptor_region({}) is None
    assert recommended_descriptor_region({"descriptor_region": "2.25"}) == 2.25
    for bad in (0, -1.0, float("nan"), float("inf"), 17.0, "2", True):
        with pytest.raises(InputError, match="descriptor_region must be a number in"):
            save_weights(model, tmp_path / "bad.safetensors", descriptor_region=bad)
        with pytest.raises(InputError, match="descriptor_region must be a number in"):
            PatchPoseEstimator.load("patchpose-v10").with_plan(descriptor_region=bad)
    assert not (tmp_path / "bad.safetensors").exists()
    with safe_open(str(wide), framework="pt") as f:
        meta = f.metadata()
    for bad in ("0", "-2", "wide", "nan", "100"):
        path = tmp_path / "badmeta.safetensors"
        save_file(load_file(str(wide)), str(path), metadata={**meta, "descriptor_region": bad})
        with pytest.raises(WeightsError, match="'descriptor_region' must be a number in"):
            PatchPoseEstimator.load(path)


def test_a_weights_file_may_carry_its_orientation_offset(tmp_path):
    """save_weights(orientation_offset=) stores where a model's orientation is meant to be read; the estimator
    takes it as its default, an explicit value wins, a file without one reads in the frame found (0), and a
    bad value is a clear InputError (argument) or WeightsError (file, and the ONNX metadata check)."""
    from safetensors.torch import load_file, safe_open, save_file

    from patchpose import PatchPoseEstimator
    from patchpose.errors import InputError, WeightsError
    from patchpose.weights import (
        check_recommendations,
        load_bundled,
        recommended_orientation_offset,
        save_weights,
    )

    model, _ = load_bundled("patchpose-v9")
    moved = save_weights(model, tmp_path / "moved.safetensors", passes=2, orientation_offset=-1.0)
    assert PatchPoseEstimator.load(moved).plan.orientation_offset == -1.0
    assert PatchPoseEstimator.load(moved).with_plan(orientation_offset=0).plan.orientation_offset == 0.0
    assert (
        PatchPoseEstimator.load(save_weights(model, tmp_path / "p.safetensors")).plan.orientation_offset
        == 0.0
    )
    assert recommended_orientation_offset({}) is None
    assert recommended_orientation_offset({"orientation_offset": "-0.5"}) == -0.5
    for bad in (4.5, float("nan"), float("inf"), "-1", True):
        with pytest.raises(InputError, match="orientation_offset must be a number of octaves"):
            save_weights(model, tmp_path / "bad.safetensors", orientation_offset=bad)
    assert not (tmp_path / "bad.safetensors").exists()
    with safe_open(str(moved), "pt") as f:
        meta = dict(f.metadata())
    for bad in ("far", "nan", "-9"):
        save_file(
            load_file(str(moved)),
            str(tmp_path / "t.safetensors"),
            metadata={**meta, "orientation_offset": bad},
        )
        with pytest.raises(WeightsError, match="orientation_offset"):
            PatchPoseEstimator.load(tmp_path / "t.safetensors")
        with pytest.raises(WeightsError, match="orientation_offset"):
            check_recommendations({"orientation_offset": bad}, "the ONNX export")


def test_a_weights_file_may_say_not_to_reread_the_scale(tmp_path):
    """save_weights(reread_scale=False) stores it as ``false``, the estimator's plan takes it, a file without it
    rereads (true), and a bad value is an InputError (argument) or a WeightsError (file, ONNX metadata)."""
    from safetensors.torch import load_file, safe_open, save_file

    from patchpose import PatchPoseEstimator
    from patchpose.errors import InputError, WeightsError
    from patchpose.weights import check_recommendations, load_bundled, save_weights

    model, _ = load_bundled("patchpose-v9")
    lean = save_weights(model, tmp_path / "lean.safetensors", passes=2, reread_scale=False)
    with safe_open(str(lean), "pt") as f:
        meta = dict(f.metadata())
    assert meta["reread_scale"] == "false" and PatchPoseEstimator.load(lean).plan.reread_scale is False
    assert PatchPoseEstimator.load(save_weights(model, tmp_path / "p.safetensors")).plan.reread_scale is True
    for bad in ("false", 0):
        with pytest.raises(InputError, match="reread_scale"):
            save_weights(model, tmp_path / "bad.safetensors", reread_scale=bad)
    assert not (tmp_path / "bad.safetensors").exists()
    save_file(load_file(str(lean)), str(tmp_path / "t.safetensors"), metadata={**meta, "reread_scale": "no"})
    with pytest.raises(WeightsError, match="reread_scale"):
        PatchPoseEstimator.load(tmp_path / "t.safetensors")
    with pytest.raises(WeightsError, match="reread_scale"):
        check_recommendations({"reread_scale": "maybe"}, "the ONNX export")


@pytest.mark.parametrize(
    "change, match",
    [
        ({"num_ori_bins": 0}, "orientation bins"),
        ({"num_scale_bins": True}, "num_scale_bins must be int"),
        ({"width": 1e308}, "width must be"),
        ({"polar_harmonics": None}, "polar_harmonics must be int"),
        ({"polar_ori_kernel": 2.5}, "polar_ori_kernel must be int"),
        ({"polar_rings": True}, "polar_rings must be int"),
        ({"polar_head_width": 0}, "polar_head_width must be at least 1"),
    ],
)
def test_a_tampered_model_config_is_a_weights_error(tmp_path, change, match):
    """Each of these came through as a ZeroDivisionError, OverflowError or TypeError from deep inside the
    network, some only at the first estimate."""
    import json

    m = create_model("polar-cnn", width=0.5)
    p = save_weights(m, tmp_path / "m.safetensors")
    bad = _with_metadata(
        p, tmp_path / "bad.safetensors", model_config=json.dumps({**m.cfg.to_dict(), **change})
    )
    with pytest.raises(WeightsError, match=match):
        load_weights(bad)


def test_onnx_weights_with_nan_are_refused(tmp_path):
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    from patchpose.onnx_backend import OnnxPoseNet, export_bytes

    proto = onnx.load_from_string(export_bytes(create_model("small-cnn", width=0.5)))
    init = next(i for i in proto.graph.initializer if numpy_helper.to_array(i).dtype.kind == "f")
    arr = numpy_helper.to_array(init).copy()
    arr.reshape(-1)[0] = np.nan
    init.CopyFrom(numpy_helper.from_array(arr, init.name))
    path = tmp_path / "nan.onnx"
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(WeightsError, match="non-finite"):
        OnnxPoseNet(path)


def test_export_of_a_checkpoint_with_integer_weights_is_refused(tmp_path):
    from patchpose.weights import export_checkpoint

    m = create_model("small-cnn", width=0.5)
    state = {k: v.round().int() if v.is_floating_point() else v for k, v in m.state_dict().items()}
    ck = _checkpoint(tmp_path / "ck.pt", m, model=state)
    with pytest.raises(WeightsError, match="not floating point"):
        export_checkpoint(ck, tmp_path / "w.safetensors")
    assert not (tmp_path / "w.safetensors").exists()


def test_bundled_files_name_removed_settings_at_their_off_value_and_load():
    """The bundled files were written while the settings of REMOVED_SETTINGS existed and name them, at the
    value that turned each off: they load into the network of today, whose config no longer has them."""
    import json

    from safetensors import safe_open

    from patchpose.models.posenet import REMOVED_SETTINGS

    named = set()
    for name, (fname, _) in BUNDLED.items():
        with safe_open(str(WEIGHTS_DIR / fname), "pt") as f:
            stored = json.loads(f.metadata()["model_config"])
        legacy = {k: v for k, v in stored.items() if k in REMOVED_SETTINGS}
        assert legacy == {k: REMOVED_SETTINGS[k] for k in legacy}, name
        named |= set(legacy)
        model, _ = load_bundled(name)
        assert not set(model.cfg.to_dict()) & set(REMOVED_SETTINGS), name
    assert named == set(REMOVED_SETTINGS)  # every removed setting is met in a bundled file


@pytest.mark.parametrize(
    "key, value",
    [
        ("polar_blur", 1),
        ("polar_ori_min_ring", 9),
        ("polar_ori_rings_below_scale", 6),
        ("polar_ori_window", 9),
        ("polar_grad_hist", True),
        ("polar_ori_vector", True),
        ("polar_grad_hist", 0),  # 0 is not false: the loader takes a setting of the wrong type for none
    ],
)
def test_a_weights_file_that_uses_a_removed_setting_is_refused(tmp_path, key, value):
    """A file whose model_config sets a removed setting to anything but its "off" value holds a network this
    code cannot build: a one-line WeightsError that names the setting and the tag that keeps it. The same
    file with the setting off loads, and gives the network's outputs."""
    import json

    from patchpose.models.posenet import REMOVED_SETTINGS, REMOVED_SETTINGS_TAG

    torch.manual_seed(0)
    m = create_model("polar-cnn", width=0.5).eval()
    p = save_weights(m, tmp_path / "m.safetensors")
    cfg = m.cfg.to_dict()
    bad = _with_metadata(p, tmp_path / "bad.safetensors", model_config=json.dumps({**cfg, key: value}))
    with pytest.raises(WeightsError, match=f"{key}.*removed.*{REMOVED_SETTINGS_TAG}") as e:
        load_weights(bad)
    assert "\n" not in str(e.value)
    legacy = json.dumps({**cfg, **REMOVED_SETTINGS})
    ok, _ = load_weights(_with_metadata(p, tmp_path / "ok.safetensors", model_config=legacy))
    assert ok.cfg == m.cfg
    x = torch.rand(3, *m.cfg.input_shape)
    with torch.no_grad():
        for k, v in m(x).items():
            torch.testing.assert_close(ok(x)[k], v, rtol=0, atol=0)


def test_a_checkpoint_that_uses_a_removed_setting_is_refused(tmp_path):
    """A training checkpoint's model config goes through the same rule: removed settings at their "off"
    value load (export works), any other value is a WeightsError naming the setting."""
    from patchpose.models.posenet import REMOVED_SETTINGS
    from patchpose.training.checkpoint import load_checkpoint
    from patchpose.weights import export_checkpoint

    m = create_model("small-cnn", width=0.5)
    legacy = {**m.cfg.to_dict(), **REMOVED_SETTINGS}
    ok = _checkpoint(tmp_path / "ok.pt", m, config={"model": legacy})
    assert load_checkpoint(ok)["step"] == 3
    assert load_weights(export_checkpoint(ok, tmp_path / "ok.safetensors"))[0].cfg == m.cfg
    bad = _checkpoint(tmp_path / "bad.pt", m, config={"model": {**legacy, "polar_ori_window": 9}})
    with pytest.raises(WeightsError, match="polar_ori_window.*removed"):
        load_checkpoint(bad)


def test_export_of_a_run_folder_or_to_an_onnx_name_says_what_to_give(tmp_path, capsys):
    """`export RUN` (the folder) said "checkpoint not found"; `export CKPT --out x.onnx` wrote safetensors under an
    ONNX name. Both are one-line errors that say what to give, before any file is written."""
    from patchpose.cli.main import main

    run = tmp_path / "run"
    run.mkdir()
    _checkpoint(run / "checkpoint.pt", create_model("small-cnn", width=0.5))
    assert main(["export", str(run), "--out", str(tmp_path / "w.safetensors")]) == 2
    err = capsys.readouterr().err
    assert (
        f"{run} is a folder: give its checkpoint.pt ({run / 'checkpoint.pt'})" in err and err.count("\n") == 1
    )
    assert main(["export", str(run / "checkpoint.pt"), "--out", str(tmp_path / "w.onnx")]) == 2
    err = capsys.readouterr().err
    assert "a checkpoint exports to .safetensors" in err and "export onnx" in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_training_checkpoint_given_as_weights_says_how_to_export_it(tmp_path):
    """A newcomer passes OUT/checkpoint.pt where weights are asked: the one-line error names `patchpose export`;
    another unreadable file gets no such hint."""
    from patchpose.errors import WeightsError
    from patchpose.weights import load_model

    torch.save({"step": 1}, tmp_path / "checkpoint.pt")
    ck = tmp_path / "checkpoint.pt"
    with pytest.raises(WeightsError, match=f"'patchpose export {ck} --out W.safetensors'"):
        load_model(ck)
    (tmp_path / "junk.safetensors").write_bytes(b"not weights at all")
    with pytest.raises(WeightsError) as e:
        load_model(tmp_path / "junk.safetensors")
    assert "export" not in str(e.value)


def test_the_plan_a_bundled_copy_is_compared_by_is_read_plans_own():
    """``weights.stated_plan`` over ``PLAN_DEFAULTS`` (what the bundled-copy check compares; ``weights`` cannot
    import ``reading``, which imports it) is what ``ReadPlan.from_meta`` gives, its defaults included."""
    from dataclasses import asdict

    from patchpose import ReadPlan
    from patchpose.weights import PLAN_DEFAULTS, stated_plan

    for meta in ({}, {"passes": "2", "orientation_offset": "-1.3333333333333333"}, {"reread_scale": "false"}):
        assert {**PLAN_DEFAULTS, **stated_plan(meta)} == asdict(ReadPlan.from_meta(meta))


def test_a_weights_file_that_cannot_be_written_is_a_weights_error(tmp_path, monkeypatch):
    """A disk error while writing (here: full) is the one-line :class:`WeightsError` that a weights file not
    written always was (2d6bfd7 made it an ``InputError`` by writing through ``fileio.write_through``)."""
    import errno

    import patchpose.weights as w

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    model, _ = w.load_model("patchpose-fast-v1")
    monkeypatch.setattr(w, "_save_file", full)
    with pytest.raises(WeightsError, match="w.safetensors") as e:
        w.save_weights(model, tmp_path / "w.safetensors", name="mine")
    assert "\n" not in str(e.value) and not list(tmp_path.iterdir())
