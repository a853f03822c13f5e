"""Short CPU training runs: the default recipe learns, both measured traps stay at chance, and a killed
run resumes from its checkpoint with nothing lost."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from patchpose.data.photos import wheel_photo_paths
from patchpose.errors import InputError
from patchpose.training.checkpoint import load_checkpoint
from patchpose.training.config import load_config
from patchpose.training.trainer import train

TRAIN = ["astronaut", "chelsea", "rocket", "grace_hopper", "china", "motorcycle_left"]
VAL = ["coffee"]


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    root = tmp_path_factory.mktemp("photos")
    for p in wheel_photo_paths():
        if p.stem in TRAIN + VAL:
            shutil.copy(p, root / p.name)
    names = sorted(p.name for p in root.iterdir())
    splits = {
        "train": [n for n in names if n.split(".")[0] in TRAIN],
        "val": [n for n in names if n.split(".")[0] in VAL],
    }
    (root / "splits.json").write_text(json.dumps(splits))
    return root


def small_cfg(photos, steps, *extra):
    return load_config(
        "v1",
        [
            f"data.photos={photos}",
            "model.windows=[1.0]",
            "model.width=0.5",
            "model.embed_dim=128",
            f"optim.steps={steps}",
            "optim.batch_size=32",
            "optim.warmup_steps=20",
            "optim.lr=3e-3",
            "optim.amp=none",
            "data.num_workers=0",
            "data.val_pairs=200",
            f"run.val_every={steps}",
            "data.long_side=512",
            "run.threads=2",
            *extra,
        ],
    )


@pytest.mark.slow
def test_orientation_learns_with_default_loss(photos, tmp_path):
    """With the entropy regularisers (default), orientation rises far above chance (~5.6 % at ±10°)."""
    torch.manual_seed(0)
    r = train(small_cfg(photos, 150, "model.heads=[orientation]"), tmp_path / "run", progress=False)
    assert r["val"]["rotation"]["ori_acc@10"] > 25.0


@pytest.mark.slow
def test_orientation_trap_without_regulariser(photos, tmp_path):
    """The paper's loss alone stays at the uniform stationary point: accuracy at chance."""
    r = train(
        small_cfg(photos, 150, "model.heads=[orientation]", "loss.ori_entropy=0", "loss.ori_batch_entropy=0"),
        tmp_path / "run",
        progress=False,
    )
    assert r["val"]["rotation"]["ori_acc@10"] < 12.0


@pytest.mark.slow
def test_scale_learns_over_all_bins_but_not_over_shared_bins(photos, tmp_path):
    """Counting every bin learns scale; equation 4 read literally (shared bins only) is cheated."""
    good = train(small_cfg(photos, 400, "model.heads=[scale]"), tmp_path / "all", progress=False)
    trap = train(
        small_cfg(photos, 400, "model.heads=[scale]", "loss.scale_bins=shared"),
        tmp_path / "shared",
        progress=False,
    )
    assert good["val"]["scale"]["scale_acc@1/3"] > 35.0
    assert trap["val"]["scale"]["scale_acc@1/3"] < 25.0
    assert good["val"]["scale"]["scale_acc@1/3"] > trap["val"]["scale"]["scale_acc@1/3"] + 15.0


def test_checkpoint_round_trip_and_resume(photos, tmp_path, caplog):
    """A run stopped early resumes from its checkpoint: the step, model and optimizer state carry over; a setting
    a resume may change (here the steps) is said, as a command that leaves out the first run's value changes it."""
    out = tmp_path / "run"
    cfg = small_cfg(photos, 6, "data.val_pairs=0")
    first = train(small_cfg(photos, 3, "data.val_pairs=0"), out, progress=False)
    assert first["step"] == 3
    ck = load_checkpoint(out / "checkpoint.pt")
    assert ck["step"] == 3 and set(ck) >= {"model", "optimizer", "scheduler", "config", "step"}
    assert (out / "config.yaml").is_file() and not list(out.glob("*.tmp"))
    with pytest.raises(FileExistsError):
        train(cfg, out, progress=False)  # refuses to overwrite without --resume
    with caplog.at_level("WARNING", logger="patchpose.training.trainer"):
        second = train(cfg, out, resume=True, progress=False)
    assert second["step"] == 6
    assert "this command changes optim.steps: 3 -> 6" in caplog.text
    ck2 = load_checkpoint(out / "checkpoint.pt")
    changed = any(
        not torch.equal(ck["model"][k], ck2["model"][k]) for k in ck["model"] if k.endswith("weight")
    )
    assert changed, "resumed training did not update the model"
    assert ck2["optimizer"]["state"], "optimizer state lost"


def test_corrupt_checkpoint_is_a_clear_error(tmp_path):
    from patchpose.errors import WeightsError

    bad = tmp_path / "checkpoint.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(WeightsError, match="cannot read checkpoint"):
        load_checkpoint(bad)


def test_fine_tuning_starts_from_given_weights(photos, tmp_path):
    """run.init_from copies a checkpoint's (or safetensors') weights into a new run of the same network,
    and refuses another network."""
    from patchpose.models import ModelConfig, PoseNet
    from patchpose.weights import save_weights

    base = tmp_path / "base"
    train(small_cfg(photos, 2, "data.val_pairs=0"), base, progress=False)
    ck = load_checkpoint(base / "checkpoint.pt")
    # zero learning rate: the fine-tuned model must equal its start, whatever the start file's format
    model = PoseNet(ModelConfig.from_dict(ck["config"]["model"]))
    model.load_state_dict(ck["model"])
    w = save_weights(model, tmp_path / "base.safetensors")
    for i, src in enumerate((base / "checkpoint.pt", w)):
        out = tmp_path / f"ft{i}"
        train(
            small_cfg(photos, 1, "data.val_pairs=0", "optim.lr=0", f"run.init_from={src}"),
            out,
            progress=False,
        )
        ft = load_checkpoint(out / "checkpoint.pt")["model"]
        for k, v in ck["model"].items():
            if k.endswith("weight"):
                assert torch.equal(ft[k], v), k
    # settings without parameters of their own (INIT_FREE_KEYS) may change in a fine-tuning
    train(
        small_cfg(photos, 1, "data.val_pairs=0", "model.polar_view_min_step=1.0", f"run.init_from={w}"),
        tmp_path / "free",
        progress=False,
    )
    with pytest.raises(ValueError, match="another network"):
        train(
            small_cfg(photos, 1, "data.val_pairs=0", "model.width=1.0", f"run.init_from={w}"),
            tmp_path / "bad",
            progress=False,
        )


def test_sigterm_writes_a_checkpoint_that_resumes(photos, tmp_path):
    """A training killed with SIGTERM (as a stopped session's processes are) saves its step first."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_training import small_cfg\n"
        "from patchpose.training.trainer import train\n"
        f"train(small_cfg({str(photos)!r}, 100000, 'data.val_pairs=0', 'run.log_every=1'), {str(out)!r}, "
        "progress=False)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    metrics = out / "metrics.jsonl"
    t0 = time.time()
    while (not metrics.is_file() or metrics.stat().st_size == 0) and time.time() - t0 < 120:
        time.sleep(0.2)
    assert metrics.is_file(), "training never started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0  # it stops (interrupted), it does not finish
    ck = load_checkpoint(out / "checkpoint.pt")
    # nothing else writes a checkpoint this early (validation is off, the periodic one comes after minutes)
    assert ck["step"] >= 1 and "KeyboardInterrupt" in err


def test_recipe_runs_its_stages_in_order_resumes_and_exports(photos, tmp_path):
    """``train --recipe``: stage 2 starts from stage 1's weights (lr 0 keeps them), the last stage is exported,
    finished stages are skipped on a rerun, and an unfinished one needs --resume."""
    from patchpose.estimator import PatchPoseEstimator
    from patchpose.reading import ReadPlan
    from patchpose.training.recipe import export_name, load_recipe, train_recipe

    rec = tmp_path / "tiny.yaml"
    rec.write_text(
        "name: tiny\n"
        "passes: 2\n"
        "descriptor_region: 2.5\n"
        "orientation_offset: -0.5\n"
        "reread_scale: false\n"
        "stages:\n"
        "  - config: polar\n"
        "    overrides: [optim.steps=3, optim.warmup_steps=1, optim.batch_size=16, run.val_every=3]\n"
        "  - config: polar\n"
        "    overrides: [optim.steps=2, optim.batch_size=16, optim.lr=0.0, data.resample=0.5, run.val_every=2]\n"
    )
    common = [f"data.photos={photos}", "data.val_pairs=0", "data.long_side=384", "run.threads=2"]
    out = tmp_path / "run"
    res = train_recipe(str(rec), out, common, progress=False)
    assert res["finished"] and [s["step"] for s in res["stages"]] == [3, 2]
    s1 = load_checkpoint(out / "stage1" / "checkpoint.pt")["model"]
    s2 = load_checkpoint(out / "stage2" / "checkpoint.pt")["model"]
    assert all(torch.equal(s1[k], s2[k]) for k in s1 if k.endswith("weight"))
    est = PatchPoseEstimator.load(res["weights"])
    assert est.name == "tiny" and est.cfg.is_polar
    # the recipe's read plan travels in the weights file
    assert est.plan == ReadPlan(passes=2, orientation_offset=-0.5, descriptor_region=2.5, reread_scale=False)
    mtime = (out / "stage2" / "checkpoint.pt").stat().st_mtime_ns
    again = train_recipe(str(rec), out, common, resume=True, progress=False)  # nothing left to do
    assert again["finished"] and (out / "stage2" / "checkpoint.pt").stat().st_mtime_ns == mtime
    # a rerun with other settings does not take the finished stages for its own; workers and run.* may differ
    with pytest.raises(
        InputError, match=r"stage1 is finished with other settings.*data.long_side: 384 -> 320"
    ):
        train_recipe(str(rec), out, [*common, "data.long_side=320"], progress=False)
    same = [*common, "data.num_workers=1", "run.threads=1"]
    assert train_recipe(str(rec), out, same, progress=False)["finished"]
    (out / "stage2" / "done.json").unlink()  # as if stage 2 had been stopped
    with pytest.raises(FileExistsError, match="--resume"):
        train_recipe(str(rec), out, common, progress=False)
    assert train_recipe(str(rec), out, common, resume=True, progress=False)["stages"][1]["step"] == 2
    assert [s["config"] for s in load_recipe("patchpose-v9")["stages"]] == ["polar"] * 4
    # a bundled model's recipe exports under another name, so that reports do not take it for the bundled model
    assert export_name("patchpose-v10") == "patchpose-v10-retrained" and export_name("tiny") == "tiny"


def test_every_shipped_recipe_resolves(tmp_path):
    """Each recipe in the package names configs and overrides that exist, and builds its network."""
    from omegaconf import OmegaConf

    from patchpose.models import ModelConfig, PoseNet
    from patchpose.training.recipe import list_recipes, load_recipe, stage_configs

    names = list_recipes()
    assert {"patchpose-fast-v1", "patchpose-v9", "patchpose-v10"} <= set(names)
    for name in names:
        rec = load_recipe(name)
        assert rec["name"] == name
        for cfg in stage_configs(rec, tmp_path / name):
            PoseNet(ModelConfig.from_dict(OmegaConf.to_container(cfg.model)))


@pytest.mark.parametrize(
    "text, match",
    [
        ("name: x\n", "stages"),
        ("stages:\n  - overrides: [optim.steps=1]\n", "config"),
        ("stages:\n  - config: polar\n    overrides: [optim.steps]\n", "key=value"),
        ("stages:\n  - config: polar\n  - config: polar\n    overrides: [run.init_from=a.pt]\n", "init_from"),
        ("passes: 0\nstages:\n  - config: polar\n", "passes"),
        ("passes: two\nstages:\n  - config: polar\n", "passes"),
        ("descriptor_region: 0\nstages:\n  - config: polar\n", "descriptor_region"),
        ("descriptor_region: wide\nstages:\n  - config: polar\n", "descriptor_region"),
        ("orientation_offset: 5\nstages:\n  - config: polar\n", "orientation_offset"),
        ("orientation_offset: near\nstages:\n  - config: polar\n", "orientation_offset"),
        ("reread_scale: 0\nstages:\n  - config: polar\n", "reread_scale"),
        ("reread_scale: sometimes\nstages:\n  - config: polar\n", "reread_scale"),
    ],
)
def test_bad_recipes_are_clear_errors(tmp_path, text, match):
    from patchpose.training.recipe import load_recipe

    p = tmp_path / "r.yaml"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_recipe(str(p))
    with pytest.raises(FileNotFoundError, match="recipes"):
        load_recipe("no-such-recipe")


def _polar_cfg(photos, *extra):
    return load_config(
        "polar",
        [
            f"data.photos={photos}",
            "model.polar_head_width=8",
            "optim.steps=1",
            "optim.batch_size=16",
            "optim.warmup_steps=0",
            "data.val_pairs=0",
            "data.long_side=512",
            "run.log_every=1",
            "run.threads=2",
            *extra,
        ],
    )


def _first_logged(out: Path) -> dict:
    return next(json.loads(s) for s in (out / "metrics.jsonl").read_text().splitlines() if '"total"' in s)


def test_distillation_from_a_teacher(photos, tmp_path):
    """run.teacher + loss.distill: a student that starts as its teacher has zero distillation loss at its
    first step and one that starts elsewhere does not; a teacher that reads other inputs, or one half of
    the pair of settings without the other, is a clear error."""
    from patchpose.models import ModelConfig, PoseNet
    from patchpose.weights import save_weights

    train(_polar_cfg(photos), tmp_path / "t", progress=False)
    ck = load_checkpoint(tmp_path / "t" / "checkpoint.pt")
    teacher = PoseNet(ModelConfig.from_dict(ck["config"]["model"]))
    teacher.load_state_dict(ck["model"])
    w = save_weights(teacher, tmp_path / "teacher.safetensors")
    kd = [f"run.teacher={w}", "loss.distill=1.0"]
    train(_polar_cfg(photos, *kd, f"run.init_from={w}", "optim.lr=0"), tmp_path / "same", progress=False)
    assert _first_logged(tmp_path / "same")["distill"] == pytest.approx(0.0, abs=1e-5)
    train(
        _polar_cfg(photos, *kd, "model.polar_head_width=4", "run.seed=1"), tmp_path / "narrow", progress=False
    )
    first = _first_logged(tmp_path / "narrow")
    assert first["distill"] > 5e-4  # two nearly uniform random networks: small, but 50× the tolerance above
    # the total adds the distillation term with its weight
    assert first["total"] == pytest.approx(
        first["scale"] + first["orientation"] + first["ori_reg"] + first["distill"], rel=1e-4
    )
    with pytest.raises(ValueError, match="reads other inputs"):
        train(_polar_cfg(photos, *kd, "model.polar_rings=29"), tmp_path / "bad", progress=False)
    with pytest.raises(ValueError, match="go together"):
        train(_polar_cfg(photos, f"run.teacher={w}"), tmp_path / "half", progress=False)


def test_a_stop_signal_mid_step_checkpoints_a_whole_step(photos, tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM inside a step (here after the optimizer's and the schedule's steps, before the step
    is counted) used to write a checkpoint whose optimizer and schedule were a step ahead of its ``step``: the
    step now completes first, then the checkpoint is written, then the run stops."""
    import os
    import signal

    from patchpose.training import trainer as T

    make_scheduler = T.make_scheduler

    def signalling_scheduler(opt, oc):
        sched = make_scheduler(opt, oc)

        class Signalling(type(sched)):
            def step(self, *a, **k):
                super().step(*a, **k)
                if self.last_epoch == 3:  # the schedule's step of training step 3
                    os.kill(os.getpid(), signal.SIGINT)

        sched.__class__ = Signalling
        return sched

    monkeypatch.setattr(T, "make_scheduler", signalling_scheduler)
    before = signal.getsignal(signal.SIGINT)  # default_int_handler, or SIG_IGN under a shell's `&`
    with pytest.raises(KeyboardInterrupt):
        train(small_cfg(str(photos), 50, "data.val_pairs=0"), tmp_path / "r", progress=False)
    ck = load_checkpoint(tmp_path / "r" / "checkpoint.pt")
    assert ck["step"] == 3
    assert ck["scheduler"]["last_epoch"] == 3
    assert all(int(s["step"]) == 3 for s in ck["optimizer"]["state"].values())
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_bad_amp_or_schedule_values_are_refused(photos, tmp_path):
    for bad, what in (("optim.amp=bf61", "amp"), ("optim.schedule=const", "schedule")):
        with pytest.raises(ValueError, match=what):
            train(small_cfg(str(photos), 2, "data.val_pairs=0", bad), tmp_path / bad, progress=False)


def test_config_values_are_checked_and_strings_stay_as_written(tmp_path):
    cfg = load_config("v1", ["data.photos=010", "run.init_from=1e3"])
    assert cfg.data.photos == "010" and cfg.run.init_from == "1e3"  # YAML read them as 8 and 1000.0
    bad_values = (
        "run.log_every=0", "optim.warmup_steps=-5", "optim.grad_clip=-1", "optim.steps=-1",
        # what allocates or spawns has a range, checked before any work (#62: these aborted or ran out of memory)
        "run.threads=100000", "optim.batch_size=100000000", "data.val_pairs=100000000", "data.val_pairs=-5",
        "data.delta_scale=nan", "data.sigma_min=3", "data.margin=-1", "data.max_keypoints=0", "data.noise=inf",
    )  # fmt: skip
    for bad in bad_values:
        with pytest.raises(ValueError, match=bad.split("=")[0].replace(".", r"\.")):
            load_config("v1", [bad])
    (tmp_path / "bad.yaml").write_text("optim: [1, 2\n")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    for f in ("bad.yaml", "list.yaml"):
        with pytest.raises(ValueError, match="bad training config"):
            load_config(str(tmp_path / f))


def test_resume_refuses_settings_the_checkpoint_cannot_honour(photos, tmp_path):
    """The optimizer and schedule come back from the checkpoint: a new optim.lr was never used, yet
    config.yaml said so. Only optim.steps (and run.*) may change on --resume."""
    from patchpose.errors import InputError

    out = tmp_path / "r"
    train(small_cfg(str(photos), 2, "data.val_pairs=0"), out, progress=False)
    before = (out / "config.yaml").read_text()
    with pytest.raises(InputError, match="optim.lr"):
        train(
            small_cfg(str(photos), 4, "data.val_pairs=0", "optim.lr=1e-5"), out, resume=True, progress=False
        )
    assert (out / "config.yaml").read_text() == before  # not rewritten by the refused run
    res = train(
        small_cfg(str(photos), 3, "data.val_pairs=0", "run.log_every=1"), out, resume=True, progress=False
    )
    assert res["step"] == 3
    with pytest.raises(InputError, match="run.device"):
        train(small_cfg(str(photos), 1, "data.val_pairs=0", "run.device=tpu"), tmp_path / "t", progress=False)


#: a value other than the "off" one of each removed setting (REMOVED_TRAINING_SETTINGS)
IN_USE = {
    ("data", "jitter"): 0.5,
    ("data", "level_jitter"): True,
    ("data", "teacher_turns"): 3,
    ("data", "context_swap"): 0.5,
    ("data", "reread"): 1.0,
    ("data", "harris"): True,
    ("data", "anisotropy"): 0.4,
    ("data", "anisotropy_prob"): 1.0,
    ("data", "shading"): 1.0,
    ("optim", "ema"): 0.999,
    ("loss", "scale_entropy"): 0.1,
    ("loss", "scale_weight"): 2.0,
    ("loss", "ori_weight"): 0.5,
}


def made_before(run: Path, **in_use) -> None:
    """Rewrite the run folder ``run`` as patchpose at git tag options-before-cleanup-2026-12-01 wrote it: the
    config in its checkpoint and its config.yaml name the settings removed since, each at its "off" value, or
    at the value ``in_use`` gives (``data__harris=True``)."""
    from omegaconf import OmegaConf

    from patchpose.training.config import CLEANUP_TAG, REMOVED_TRAINING_SETTINGS

    ck = torch.load(run / "checkpoint.pt", weights_only=True)
    for (section, key), (off, tag) in REMOVED_TRAINING_SETTINGS.items():
        if tag == CLEANUP_TAG:
            ck["config"][section][key] = in_use.pop(f"{section}__{key}", off)
    assert not in_use, in_use
    torch.save(ck, run / "checkpoint.pt")
    (run / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(ck["config"])))


def test_the_removed_settings_are_gone_and_each_names_its_tag():
    """A removed setting keeps no field (else the table would ignore or refuse a setting in use), and each
    names the git tag that still trains with it, listed in docs/lab/tags.txt."""
    import dataclasses

    from patchpose.training.config import REMOVED_TRAINING_SETTINGS, TrainConfig

    sections = {f.name: f.type for f in dataclasses.fields(TrainConfig)}
    tags = Path(__file__).resolve().parents[2] / "docs" / "lab" / "tags.txt"
    listed = {line.split()[0] for line in tags.read_text().splitlines() if line and not line.startswith("#")}
    assert set(REMOVED_TRAINING_SETTINGS) == set(IN_USE)
    for (section, key), (off, tag) in REMOVED_TRAINING_SETTINGS.items():
        fields = {f.name for f in dataclasses.fields(getattr(TrainConfig(), section))}
        assert section in sections and key not in fields, (section, key)
        assert tag in listed and IN_USE[section, key] != off


def test_resume_refuses_a_checkpoint_trained_with_a_removed_setting(tmp_path):
    """A checkpoint whose config sets a removed setting (REMOVED_TRAINING_SETTINGS: data, optim or loss) to
    anything but its "off" value was trained in a way this code no longer trains: --resume refuses it in one
    line naming the setting and the git tag that still trains with it. At the "off" value (what every config
    written while it existed holds) it is ignored."""
    from patchpose.training.config import REMOVED_TRAINING_SETTINGS
    from patchpose.training.trainer import _check_resumed_config

    given = {"data": {"resample": 0.5, "jitter_px": 0.3}, "optim": {"lr": 1e-3}, "loss": {"distill": 0.0}}
    old = {section: dict(values) for section, values in given.items()}
    for (section, key), (off, _) in REMOVED_TRAINING_SETTINGS.items():
        old[section][key] = off
    _check_resumed_config(tmp_path / "c.pt", old, given)
    # data.anisotropy_prob had no effect where data.anisotropy was off (no draw was made): the same run
    _check_resumed_config(tmp_path / "c.pt", {**old, "data": {**old["data"], "anisotropy_prob": 0.3}}, given)
    for (section, key), value in IN_USE.items():
        stored = {**old, section: {**old[section], key: value}}
        if key == "anisotropy_prob":  # in use only with a stretch
            stored["data"]["anisotropy"] = IN_USE["data", "anisotropy"]
        tag = REMOVED_TRAINING_SETTINGS[section, key][1]
        with pytest.raises(InputError, match=f"{section}.{key}={value!r}.*removed.*git tag {tag}") as e:
            _check_resumed_config(tmp_path / "c.pt", stored, given)
        assert "\n" not in str(e.value)


def test_a_run_made_before_the_removal_resumes_exports_and_is_refused_if_it_used_one(photos, tmp_path):
    """A run folder written while data.harris, data.anisotropy, data.anisotropy_prob, data.shading, optim.ema,
    loss.scale_entropy, loss.scale_weight and loss.ori_weight existed names them all. At their "off" values it
    resumes (with the same overrides, or with its config.yaml as --config), bit for bit as a run made now, and
    exports; with one in use --resume, its config.yaml and a recipe rerun over it as a finished stage are refused
    in one line naming it and git tag options-before-cleanup-2026-12-01. export still writes its weights (the
    network is one this code builds)."""
    from patchpose.cli.main import main
    from patchpose.training.recipe import _check_finished_stage

    now, old = tmp_path / "now", tmp_path / "old"
    for out in (now, old):
        train(small_cfg(photos, 2, "data.val_pairs=0"), out, progress=False)
    made_before(old)
    results = [
        train(small_cfg(photos, 3, "data.val_pairs=0"), out, resume=True, progress=False)
        for out in (now, old)
    ]
    assert results[0]["param_checksum"] == results[1]["param_checksum"] and results[1]["step"] == 3
    # its config.yaml (every removed setting at "off") is a config: the same run, resumed once more
    made_before(old)
    cfg = load_config(str(old / "config.yaml"), ["optim.steps=4"])
    assert train(cfg, old, resume=True, progress=False)["step"] == 4
    made_before(old)
    assert main(["export", str(old / "checkpoint.pt"), "--out", str(tmp_path / "old.safetensors")]) == 0
    _check_finished_stage(old, cfg)  # a recipe's finished stage made before: taken as done

    for setting, value in (("data__harris", True), ("optim__ema", 0.999), ("loss__scale_weight", 2.0)):
        made_before(old, **{setting: value})
        named = rf"{setting.replace('__', '.')}={value!r}.*git tag options-before-cleanup-2026-12-01"
        before = (old / "config.yaml").read_text()
        with pytest.raises(InputError, match="--resume: .*" + named):
            train(small_cfg(photos, 5, "data.val_pairs=0"), old, resume=True, progress=False)
        assert (old / "config.yaml").read_text() == before  # refused before anything is written
        with pytest.raises(ValueError, match="config.yaml sets " + named):
            load_config(str(old / "config.yaml"))
        with pytest.raises(InputError, match="is finished, trained with " + named):
            _check_finished_stage(old, cfg)
        exported = tmp_path / f"{setting}.safetensors"
        assert main(["export", str(old / "checkpoint.pt"), "--out", str(exported)]) == 0


@pytest.mark.parametrize(
    "override",
    ["data.harris=true", "data.anisotropy=0.4", "data.anisotropy_prob=1", "data.shading=1",
     "optim.ema=0.999", "loss.scale_entropy=0.1", "loss.scale_weight=2", "loss.ori_weight=0.5"],
)  # fmt: skip
def test_an_override_naming_a_removed_setting_says_it_was_removed(override, tmp_path, capsys):
    """``patchpose train ... data.harris=true``: one line saying the setting was removed and which git tag still
    trains with it (it read as a key the config never had, once with a "Did you mean" an unrelated setting); no
    traceback, nothing trained."""
    from patchpose.cli.main import main

    section, key = override.split("=")[0].split(".")
    out = tmp_path / "run"
    assert main(["train", "--config", "polar", "--out", str(out), override]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"{section}.{key} was removed from patchpose; git tag options-before-cleanup-2026-12-01" in err, (
        err
    )
    assert not out.exists()


def test_exported_weights_get_the_usual_file_mode(tmp_path):
    import os

    from patchpose.models import create_model
    from patchpose.weights import save_weights

    umask = os.umask(0o022)
    try:
        p = save_weights(create_model("small-cnn", width=0.5), tmp_path / "w.safetensors")
    finally:
        os.umask(umask)
    assert p.stat().st_mode & 0o777 == 0o644  # safetensors wrote 0600
