"""``patchpose eval bins``: the paper's Table 3 (number of histogram bins) as a sweep of training runs.

Each configuration trains the same network and recipe (``--config``, default ``v1``) with another pair of
bin counts ``(B_s, B_o)`` for the same wall-time budget, then is scored on a generated PatchPose split. The
official metric is defined on 13/36 bins, so the ablation reports the continuous metric on the same A+B
pairs (argmax and refined poses, in log2 and degrees): comparable across bin counts. The budget is part of
the result: short budgets favour configurations that converge fast.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..fileio import write_text_atomic
from .report import write_results

PAPER_GRID = ((7, 9), (9, 18), (13, 36), (17, 72))


def run(
    data: str | Path,
    out: str | Path,
    minutes: float,
    config: str = "v1",
    grid=PAPER_GRID,
    overrides: list[str] | None = None,
    split: str = "test",
    progress: bool = True,
) -> dict:
    from ..accuracy import accuracies, relative_errors
    from ..inference import decode_poses, predict_histograms
    from ..models import ModelConfig, PoseNet
    from ..training.checkpoint import load_checkpoint
    from ..training.config import (
        load_config,
        removed_settings_in_use,
        to_container,
        without_removed_settings,
    )
    from ..training.trainer import train
    from .datasets.patchpose_dataset import PatchPoseData
    from .patchpose_eval import render

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ds = PatchPoseData(data, split)
    d = ds.load()
    pairs = {s: ds.pairs(s) for s in ("A_scale", "B_scale", "A_rot", "B_rot")}
    ps = {
        k: np.concatenate([pairs["A_scale"][k], pairs["B_scale"][k]])
        for k in ("ref", "trg", "d_scale", "d_ori")
    }
    po = {
        k: np.concatenate([pairs["A_rot"][k], pairs["B_rot"][k]]) for k in ("ref", "trg", "d_scale", "d_ori")
    }
    rows = {}
    for bs, bo in grid:
        name = f"Bs{bs}_Bo{bo}"
        run_dir = out / name
        cfg = load_config(
            config,
            [
                f"model.num_scale_bins={bs}",
                f"model.num_ori_bins={bo}",
                f"run.max_minutes={minutes}",
                *(overrides or []),
            ],
        )
        t0 = time.time()
        ck_path = run_dir / "checkpoint.pt"
        # a run (finished, or to resume) is taken only for the config it was trained with, which its
        # checkpoint holds resolved: bins, run.max_minutes and the overrides
        if ck_path.is_file():
            stored = load_checkpoint(ck_path)["config"]
            # settings since removed, at their "off" values, are the run this code makes
            if removed_settings_in_use(stored) or without_removed_settings(stored) != to_container(cfg):
                raise InputError(
                    f"{run_dir} was trained with other settings; choose another --out or delete it"
                )
        if not (run_dir / "done.json").is_file():
            train(cfg, run_dir, resume=ck_path.is_file(), progress=progress)
            write_text_atomic(run_dir / "done.json", json.dumps({"minutes": (time.time() - t0) / 60}))
        ck = load_checkpoint(run_dir / "checkpoint.pt")
        model = PoseNet(ModelConfig.from_dict(ck["config"]["model"]))
        model.load_state_dict(ck["model"])
        mc = model.cfg
        patches = render(d, np.arange(len(d["series"])), mc.patch_size, mc.windows, mc.color)
        h = predict_histograms(model, patches, 32)
        res = {"steps": int(ck["step"]), "pairs_seen": int(ck["step"]) * int(cfg.optim.batch_size)}
        for label, refine in (("argmax", False), ("refined", True)):
            p = decode_poses(h, 1, refine, scale_range=mc.scale_range)
            es = relative_errors(
                {"scale": p["scale"][ps["ref"], 0]},
                {"scale": p["scale"][ps["trg"], 0]},
                ps["d_scale"],
                ps["d_ori"],
            )
            eo = relative_errors(
                {"orientation": p["orientation"][po["ref"], 0]},
                {"orientation": p["orientation"][po["trg"], 0]},
                po["d_scale"],
                po["d_ori"],
            )
            res[label] = accuracies({**es, **eo})
        rows[name] = res
    doc = {
        "minutes_per_run": minutes,
        "config": config,
        "overrides": overrides or [],
        "split": split,
        "n_scale_pairs": int(len(ps["ref"])),
        "n_ori_pairs": int(len(po["ref"])),
        "rows": rows,
    }
    md = [
        f"# Number of bins (Table 3): {minutes:g} min of training each, config {config}",
        "",
        "| B_s | B_o | steps | scale ±1/6 | ±1/3 | ori ±5° | ±10° | (refined) scale ±1/6 | ±1/3 | ori ±5° | ±10° |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (bs, bo), r in zip(grid, rows.values()):
        a, b = r["argmax"], r["refined"]
        cells = [
            a["scale_acc@1/6"],
            a["scale_acc@1/3"],
            a["ori_acc@5"],
            a["ori_acc@10"],
            b["scale_acc@1/6"],
            b["scale_acc@1/3"],
            b["ori_acc@5"],
            b["ori_acc@10"],
        ]
        md.append(f"| {bs} | {bo} | {r['steps']} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")
    write_results(out, doc, "\n".join(md) + "\n")
    return doc
