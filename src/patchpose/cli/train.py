"""``patchpose train`` and ``patchpose export``: train a network (one config, or a recipe of stages) and turn a
training checkpoint into a weights file (safetensors) or an ONNX model."""

from __future__ import annotations

import argparse
import json

from ..weights import DEFAULT_MODEL
from .options import add_read, add_weights, print_line, read_plan

#: what ``patchpose train`` trains without --config or --recipe: the recipe of the default bundled model
#: (patchpose/configs/recipes/NAME.yaml for NAME = :data:`patchpose.weights.DEFAULT_MODEL`)
DEFAULT_RECIPE = DEFAULT_MODEL


def train_command(a: argparse.Namespace) -> int:
    """One run of ``--config`` or, by default, every stage of ``--recipe`` (the default model's recipe when
    neither is given)."""
    from ..errors import InputError

    if a.config is not None and a.recipe is not None:
        raise InputError("give --recipe or --config, not both (a recipe names its stages' configs)")
    if a.config is not None:
        from ..training.config import load_config
        from ..training.trainer import train

        res = train(load_config(a.config, a.overrides), a.out, resume=a.resume, progress=not a.no_progress)
        print_line(json.dumps(res))
        return 0
    from ..training.recipe import train_recipe

    recipe = a.recipe or DEFAULT_RECIPE
    res = train_recipe(recipe, a.out, a.overrides, resume=a.resume, progress=not a.no_progress)
    print_line(json.dumps(res))
    if not res["finished"]:
        print_line(
            f"stopped before the end: continue with 'patchpose train --recipe {recipe} --out {a.out} --resume'"
        )
    return 0


def train_shape_command(a: argparse.Namespace) -> int:
    """``patchpose train-shape``: the affine shape network (:mod:`patchpose.training.shape`)."""
    from ..training.shape import ShapeTrainConfig, train_shape

    overrides = ([f"photos={a.photos}"] if a.photos is not None else []) + list(a.overrides)
    res = train_shape(
        ShapeTrainConfig.from_overrides(overrides), a.out, resume=a.resume, progress=not a.no_progress
    )
    print_line(json.dumps(res))
    return 0


def export_command(a: argparse.Namespace) -> int:
    """``export CHECKPOINT`` → safetensors weights; ``export onnx --weights W`` → an ONNX model. An existing
    ``--out`` is refused unless ``--overwrite`` (the file is written beside, then renamed over it)."""
    from ..apps import check_outputs_free
    from ..weights import check_own_name

    if a.checkpoint == "onnx":
        from ..errors import InputError
        from ..estimator import PatchPoseEstimator
        from ..onnx_backend import export_onnx

        if not str(a.out).lower().endswith(".onnx"):  # load(backend="onnx") tells an ONNX file by its suffix
            raise InputError(f"--out must end in .onnx, got {a.out}")
        check_outputs_free([a.out], a.overwrite, [a.weights])  # before any work, as estimate's outputs
        check_own_name(a.name)

        est = PatchPoseEstimator.load(a.weights)
        meta = dict(est.meta)  # what the weights carry, unless the command line says otherwise
        if a.name is not None:
            meta["name"] = a.name
        if a.notes is not None:
            meta["notes"] = a.notes
        meta.update(est.plan.replace(**read_plan(a)).to_meta())
        path = export_onnx(est.model, a.out, meta=meta)
        print(f"wrote {path}")
        return 0
    from ..errors import InputError
    from ..weights import export_checkpoint

    if a.weights is not None:
        raise InputError("--weights is for 'export onnx'; a checkpoint is exported from its own weights")
    if str(a.out).lower().endswith(".onnx"):  # the file would be safetensors under an ONNX name
        raise InputError(
            f"a checkpoint exports to .safetensors, not {a.out}: export it so, then 'patchpose export onnx "
            f"--weights W.safetensors --out {a.out}'"
        )
    changes = read_plan(a)
    check_outputs_free([a.out], a.overwrite, [a.checkpoint])
    path = export_checkpoint(  # a bundled model's name is refused there, first
        a.checkpoint,
        a.out,
        name="custom" if a.name is None else a.name,
        notes="" if a.notes is None else a.notes,
        **changes,
    )
    print(f"wrote {path}")
    return 0


def _add_run_arguments(p: argparse.ArgumentParser, out_help: str, overrides_help: str) -> None:
    """What every training command takes: ``--out``, ``--resume``, ``--no-progress`` and ``key=value``
    settings."""
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a stopped run from its checkpoint (a recipe: finished stages are kept, the stopped one "
        "continues from OUT/stageK/checkpoint.pt)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    p.add_argument("overrides", nargs="*", help=overrides_help)


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``train``, ``train-shape`` and ``export`` on the top-level subparsers."""
    t = sub.add_parser(
        "train",
        help=f"train a pose network on self-supervised pairs (default: the default model's recipe, {DEFAULT_RECIPE})",
    )
    t.add_argument(
        "--config",
        default=None,
        help="one run of this YAML file or preset name (patchpose/configs/*.yaml: v1, polar, paper) instead of "
        "a recipe; docs/training.md",
    )
    t.add_argument(
        "--recipe",
        default=None,
        help="several stages in one command (patchpose/configs/recipes/*.yaml): OUT/stage1, OUT/stage2, ..., "
        "then OUT/NAME.safetensors (NAME-retrained for a bundled model's recipe; default without --config: "
        f"{DEFAULT_RECIPE}, the default model's recipe)",
    )
    _add_run_arguments(
        t,
        "output folder (checkpoints, config.yaml, metrics.jsonl)",
        "key=value overrides (for a recipe: of every stage), e.g. optim.lr=1e-3 run.threads=2",
    )
    t.set_defaults(func=train_command)

    ts = sub.add_parser(
        "train-shape",
        help="train the affine shape network on self-supervised pairs (the recipe of the bundled "
        "patchpose-shape-v1 by default; docs/training.md)",
    )
    ts.add_argument(
        "--photos", default=None, help="photo folder whose 'train' split is used (default: data/photos)"
    )
    _add_run_arguments(
        ts,
        "output folder (checkpoint.pt, metrics.jsonl, shape.safetensors)",
        "key=value settings (patchpose.training.shape.ShapeTrainConfig), e.g. steps=2500 seed=0 threads=2",
    )
    ts.set_defaults(func=train_shape_command)

    e = sub.add_parser(
        "export",
        help="a training checkpoint → safetensors weights; or 'export onnx --weights W --out model.onnx'",
    )
    e.add_argument("checkpoint", help="checkpoint.pt to export, or the word 'onnx' (then see --weights)")
    add_weights(e, read=False, model=f"for 'export onnx' only: {DEFAULT_MODEL}")
    e.add_argument(
        "--out", required=True, help="the file to write (.safetensors, or .onnx for 'export onnx')"
    )
    carried = "for 'export onnx', what --weights carries; for a checkpoint, not stored"
    e.add_argument(
        "--name",
        default=None,
        help=f"the model's name in the file, not a bundled model's (default: {carried}, i.e. 'custom')",
    )
    e.add_argument("--notes", default=None, help=f"free text stored in the file (default: {carried})")
    e.add_argument(
        "--overwrite",
        action="store_true",
        help="replace --out if it exists (without it: an error, before any work; the new file is written beside "
        "it, then renamed over it)",
    )
    add_read(
        e,
        help="the read plan stored in the file (KEY=VALUE, repeatable: passes, orientation_offset, "
        f"descriptor_region, reread_scale; default: {carried}, i.e. one read, no offset, a window of one radius, the "
        "scale read again)",
    )
    e.set_defaults(func=export_command)
