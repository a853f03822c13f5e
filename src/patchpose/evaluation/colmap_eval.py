"""``patchpose eval colmap``: COLMAP reconstructions of one folder of frames, as they are and with every other
frame turned by 90° (a phone held sideways), for each pose source of :func:`patchpose.integrations.colmap.reconstruct`
and COLMAP's own SIFT pipeline, over several random seeds of COLMAP (its RANSAC and mapping).

Each run is a folder ``OUT/runs/{set}/{pose}-seed{s}/`` (``{pose}@{model}`` for the poses that read a model,
so that another ``--weights`` adds runs beside the others), reused when it is finished: an interrupted
evaluation continues where it stopped. The turned copies are made once in ``OUT/turned_images/`` (frames
1, 3, 5, … of the sorted names turned by 90° clockwise, names kept). Outputs ``results.json`` (every run's
statistics) and ``results.md`` (per set and pose: registered images, 3-D points, mean track length, mean
reprojection error, seconds; the mean over seeds with the range).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from ..errors import InputError, is_int_in, require
from ..estimator import EstimatorLike
from ..fileio import write_text_atomic
from ..integrations.colmap import OUR_POSES, POSES, check_settings, colmap_estimator, reconstruct
from ..integrations.extract import image_names

SETS = ("upright", "turned")
DEFAULT_POSES = ("colmap", "sift", "ours_angle", "ours", "upright")


def turn_every_other(images: str | Path, dest: str | Path) -> Path:
    """Copy the images below ``images`` into the new folder ``dest`` (same relative names), frames 1, 3, 5,
    … of the sorted names turned by 90° clockwise (``cv2.rotate``), the others as they are; written as
    ``DEST.partial`` and renamed. An existing ``dest`` is taken as made by this function."""
    dest = Path(dest)
    names = image_names(images)
    if dest.is_dir():
        return dest
    work = dest.with_name(dest.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    for i, (name, path) in enumerate(names):
        target = work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if i % 2 == 0:
            shutil.copyfile(path, target)
            continue
        image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if image is None:
            raise InputError(f"cannot read image {path}")
        if not cv2.imwrite(str(target), cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE)):
            raise InputError(f"cannot write {target}")
    os.replace(work, dest)
    return dest


def _run_name(pose: str, model: str | None, seed: int) -> str:
    return f"{pose}@{model}-seed{seed}" if model else f"{pose}-seed{seed}"


def evaluate_colmap(
    images: str | Path,
    out: str | Path,
    weights: EstimatorLike = None,
    *,
    poses: Sequence[str] = DEFAULT_POSES,
    seeds: Sequence[int] = (0, 1, 2),
    sets: Sequence[str] = SETS,
    threads: int | None = 1,
    max_keypoints: int = 8192,
    split: bool = False,
    progress: bool = True,
) -> dict:
    """Run every (set, pose, seed) reconstruction of the module docstring and write ``OUT/results.json``
    and ``OUT/results.md``; returns the results document. ``weights``: the model of the ``ours*`` poses
    (an estimator, a bundled model's name or a weights file; None: ``COLMAP_MODEL``); the other arguments go to
    :func:`~patchpose.integrations.colmap.reconstruct`."""
    poses, seeds, sets = list(poses), list(seeds), list(sets)
    bad = [p for p in poses if p not in POSES]
    if not poses or bad:
        raise InputError(f"poses must be some of {POSES}, got {bad or poses}")
    if not seeds or not all(is_int_in(s, 0) for s in seeds):
        raise InputError(f"seeds must be integers >= 0, got {seeds}")
    if not sets or any(s not in SETS for s in sets):
        raise InputError(f"sets must be some of {SETS}, got {sets}")
    for pose in poses:
        check_settings(pose, max_keypoints, seeds[0], threads, split)
    require("pycolmap", "colmap")  # before the turned copies are written
    folder = Path(images)
    image_names(folder)  # a missing or empty folder is an error before any work
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    est = colmap_estimator(weights) if any(p in OUR_POSES for p in poses) else None
    folders = {"upright": folder}
    if "turned" in sets:
        folders["turned"] = turn_every_other(folder, out / "turned_images")
    t0 = time.perf_counter()
    runs = []
    for s in sets:
        for pose in poses:
            model = est.name if pose in OUR_POSES else None
            for seed in seeds:
                run_dir = out / "runs" / s / _run_name(pose, model, seed)
                if progress:
                    print(f"{s} {pose} seed {seed} -> {run_dir}", flush=True)
                stats = reconstruct(
                    folders[s],
                    run_dir,
                    pose=pose,
                    estimator=est,
                    max_keypoints=max_keypoints,
                    split=split,
                    seed=seed,
                    threads=threads,
                )
                runs.append({"set": s, "pose": pose, "model": model, "seed": seed, **stats})
    doc = {
        "images": str(folder),
        "model": est.name if est is not None else None,
        "seeds": seeds,
        "threads": threads,
        "runs": runs,
        "summary": summarize(runs),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    write_text_atomic(out / "results.json", json.dumps(doc, indent=1))
    write_text_atomic(out / "results.md", results_markdown(doc))
    return doc


def summarize(runs: list[dict]) -> list[dict]:
    """Per (set, pose, model), in run order: the mean, min and max over seeds of each statistic."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["set"], r["pose"], r["model"]), []).append(r)
    rows = []
    for (s, pose, model), rs in groups.items():
        row = {"set": s, "pose": pose, "model": model, "runs": len(rs), "images": rs[0]["images"]}
        for key in (
            "registered",
            "points3D",
            "distinct_points3D",
            "track_length",
            "reprojection_px",
            "seconds",
        ):
            v = np.array([np.nan if r[key] is None else r[key] for r in rs], np.float64)
            ok = v[np.isfinite(v)]
            row[key] = {
                "mean": float(ok.mean()) if len(ok) else None,
                "min": float(ok.min()) if len(ok) else None,
                "max": float(ok.max()) if len(ok) else None,
            }
        rows.append(row)
    return rows


def _cell(v: dict, fmt: str, spread: bool = True) -> str:
    if v["mean"] is None:
        return "–"
    if not spread or v["min"] == v["max"]:
        return format(v["mean"], fmt)
    return f"{format(v['mean'], fmt)} ({format(v['min'], fmt)}–{format(v['max'], fmt)})"


def results_markdown(doc: dict) -> str:
    lines = [
        f"COLMAP incremental mapping of {doc['images']} (mean over seeds {doc['seeds']}, min–max in brackets; "
        f"{doc['threads'] or 'all'} thread(s))",
        "",
        "| frames | pose | registered | 3-D points | distinct points | track length | reproj. px | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["summary"]:
        name = f"{r['pose']} ({r['model']})" if r["model"] else r["pose"]
        reg = r["registered"]
        reg_cell = f"{_cell(reg, '.0f' if reg['min'] == reg['max'] else '.1f')}/{r['images']}"
        lines.append(
            f"| {r['set']} | {name} | {reg_cell} | {_cell(r['points3D'], ',.0f')} | "
            f"{_cell(r['distinct_points3D'], ',.0f')} | {_cell(r['track_length'], '.2f', False)} | "
            f"{_cell(r['reprojection_px'], '.2f', False)} | {_cell(r['seconds'], '.0f', False)} |"
        )
    return "\n".join(lines) + "\n"


__all__ = ["evaluate_colmap", "turn_every_other", "summarize", "results_markdown", "SETS", "DEFAULT_POSES"]
