"""Multi-stage training in one command: ``patchpose train --recipe patchpose-v9 --out runs/v9``.

A recipe (``patchpose/configs/recipes/NAME.yaml``, or any YAML file) names its stages, each a config
preset with its own ``key=value`` overrides. Stage ``k`` trains into ``OUT/stage{k}`` starting from stage
``k − 1``'s checkpoint (``run.init_from``); the command line's overrides apply to every stage, after the
recipe's own.
A finished stage leaves ``OUT/stage{k}/done.json`` and is skipped when the command runs again; an unfinished
one (stopped by Ctrl-C, SIGTERM or ``run.max_minutes``) continues from its checkpoint under ``--resume``. When
the last stage is done, its weights are exported to ``OUT/NAME.safetensors`` (``patchpose export``'s format;
``NAME-retrained`` for a bundled model's recipe: :func:`export_name`). A finished stage trained with other
settings than the command's is refused (:func:`_check_finished_stage`), not taken for the command's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from omegaconf import OmegaConf

RECIPES_DIR = Path(__file__).resolve().parent.parent / "configs" / "recipes"


def list_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def load_recipe(name_or_path: str) -> dict:
    """``{"name": str, "stages": [{"config": str, "overrides": [str, ...]}, ...], "passes": int | None,
    "descriptor_region": float | None, "orientation_offset": float | None, "reread_scale": bool | None}``,
    validated (``passes``: the reads per keypoint the recipe's model is meant for; ``descriptor_region``: the
    descriptor window its own pose is calibrated with; ``orientation_offset``: where its orientation is read;
    ``reread_scale``: whether its last read reads the scale again; all written into its weights file, its read
    plan: :class:`patchpose.ReadPlan`)."""
    p = Path(name_or_path)
    if not p.is_file():
        p = RECIPES_DIR / f"{name_or_path}.yaml"
    if not p.is_file():
        raise FileNotFoundError(f"no recipe file or name {name_or_path!r}; recipes: {list_recipes()}")
    try:
        r = OmegaConf.to_container(OmegaConf.load(p), resolve=True)
    except Exception as e:  # a YAML syntax error, an unreadable file
        raise ValueError(f"bad recipe {p}: {str(e).splitlines()[0]}") from None
    stages = r.get("stages") if isinstance(r, dict) else None
    if not isinstance(stages, list) or not stages:
        raise ValueError(f"bad recipe {p}: it needs a non-empty 'stages' list")
    out = []
    for i, st in enumerate(stages, 1):
        if not isinstance(st, dict) or not isinstance(st.get("config"), str):
            raise ValueError(f"bad recipe {p}: stage {i} needs a 'config' (a preset name or YAML file)")
        ov = st.get("overrides") or []
        if not isinstance(ov, list) or not all(isinstance(o, str) and "=" in o for o in ov):
            raise ValueError(f"bad recipe {p}: stage {i}'s overrides must be a list of key=value strings")
        if any(o.startswith("run.init_from=") for o in ov) and i > 1:
            raise ValueError(f"bad recipe {p}: stage {i} starts from stage {i - 1}; drop its run.init_from")
        out.append({"config": st["config"], "overrides": ov})
    from ..checks import flag
    from ..errors import InputError, is_int_in
    from ..weights import MAX_PASSES, check_descriptor_region, check_orientation_offset

    passes = r.get("passes")
    if passes is not None and not is_int_in(passes, 1, MAX_PASSES):
        raise ValueError(
            f"bad recipe {p}: 'passes' (reads per keypoint the model is meant for) must be 1 to {MAX_PASSES}"
        )
    checked = {}  # what the recipe's weights file will recommend besides its reads
    for key, check in (
        ("descriptor_region", check_descriptor_region),
        ("orientation_offset", check_orientation_offset),
        ("reread_scale", flag),
    ):
        v = r.get(key)
        try:
            checked[key] = None if v is None else check(v, f"'{key}'")
        except InputError as e:
            raise ValueError(f"bad recipe {p}: {e}") from None
    return {"name": str(r.get("name") or p.stem), "stages": out, "passes": passes, **checked}


def stage_configs(recipe: dict, out_dir: str | Path, overrides=()) -> list:
    """The resolved :class:`~patchpose.training.config.TrainConfig` of every stage (checked before any
    training starts, so a mistyped override fails at once)."""
    from .config import load_config

    out = Path(out_dir)
    cfgs = []
    for i, st in enumerate(recipe["stages"], 1):
        ov = list(st["overrides"]) + list(overrides)
        if i > 1:
            ov.append(f"run.init_from={out / f'stage{i - 1}' / 'checkpoint.pt'}")
        cfgs.append(load_config(st["config"], ov))
    return cfgs


def export_name(recipe_name: str) -> str:
    """The name a recipe's weights are exported under: the recipe's, but ``NAME-retrained`` where it is a bundled
    model's (``patchpose train`` with the default recipe), so that reports and settings do not take a model
    trained here for the bundled one."""
    from ..weights import BUNDLED, BUNDLED_SHAPES

    return (
        f"{recipe_name}-retrained" if recipe_name in BUNDLED or recipe_name in BUNDLED_SHAPES else recipe_name
    )


#: settings a finished stage may have been trained with otherwise and still be taken as done (they do not change
#: what it learned): its data loaders' workers and the run's own settings (threads, progress, the checkpoint it
#: started from, which the recipe sets)
FINISHED_MAY_DIFFER = {("data", "num_workers")}


def _check_finished_stage(sdir: Path, cfg) -> None:
    """An :class:`~patchpose.errors.InputError` where the finished stage in ``sdir`` was trained with other
    settings than ``cfg`` (other than :data:`FINISHED_MAY_DIFFER` and ``run.*``): a rerun into the folder with
    other overrides would otherwise return the old stage's weights without a word."""
    from ..errors import InputError
    from .config import LEARNING_SECTIONS, config_changes, removed_settings_in_use, to_container

    path = sdir / "config.yaml"
    if not path.is_file():
        return  # a stage finished before config.yaml was written: nothing to compare
    stored = to_container(OmegaConf.load(path))
    removed = removed_settings_in_use(stored)  # a key this command cannot name, so not compared below
    if removed:
        raise InputError(f"{sdir} is finished, trained with {removed}: choose another --out")
    changed = config_changes(
        stored, to_container(cfg), LEARNING_SECTIONS, lambda s, k: (s, k) not in FINISHED_MAY_DIFFER
    )
    if changed:
        raise InputError(
            f"{sdir} is finished with other settings; this command changes {', '.join(changed[:4])}"
            f"{' …' if len(changed) > 4 else ''}: choose another --out (or repeat the first run's overrides)"
        )


def train_recipe(
    recipe: str | dict, out_dir: str | Path, overrides=(), resume: bool = False, progress: bool = True
) -> dict:
    """Run every unfinished stage of ``recipe`` into ``out_dir``; see the module docstring.

    Returns ``{"name", "stages": [per-stage result], "finished": bool, "weights": path or None}``."""
    from ..weights import PLAN_KEYS, export_checkpoint
    from .trainer import train

    rec = load_recipe(recipe) if isinstance(recipe, str) else recipe
    out = Path(out_dir)
    cfgs = stage_configs(rec, out, overrides)
    results = []
    for i, cfg in enumerate(cfgs, 1):
        sdir = out / f"stage{i}"
        done = sdir / "done.json"
        if done.is_file():
            _check_finished_stage(sdir, cfg)
            results.append(json.loads(done.read_text()))
            continue
        if (sdir / "checkpoint.pt").is_file() and not resume:
            raise FileExistsError(
                f"{sdir / 'checkpoint.pt'} exists: pass --resume to continue the recipe, or choose another --out"
            )
        res = train(cfg, sdir, resume=resume, progress=progress)
        results.append(res)
        if res["step"] < cfg.optim.steps:  # stopped early (run.max_minutes): continue with --resume
            return {"name": rec["name"], "stages": results, "finished": False, "weights": None}
        if res.get("rank", 0) == 0:
            tmp = sdir / "done.json.tmp"
            tmp.write_text(json.dumps(res))
            os.replace(tmp, done)
    name = export_name(rec["name"])
    weights = out / f"{name}.safetensors"
    if not weights.is_file() and results[-1].get("rank", 0) == 0:  # rank 0 alone writes files
        export_checkpoint(
            out / f"stage{len(cfgs)}" / "checkpoint.pt",
            weights,
            name=name,
            **{k: rec.get(k) for k in PLAN_KEYS},
        )
    return {"name": name, "stages": results, "finished": True, "weights": str(weights)}


__all__ = ["export_name", "list_recipes", "load_recipe", "stage_configs", "train_recipe"]
