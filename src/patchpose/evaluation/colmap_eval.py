"""``patchpose eval colmap``: COLMAP reconstructions of one folder of frames, as they are and with every other
frame turned by 90° (a phone held sideways), over several random seeds of COLMAP (its RANSAC and mapping), for
each pose source (:data:`POSES`) in the stages of :func:`patchpose.integrations.colmap.run_reconstruction`:

=============== ==========================================================================================
``pose``        the recipe ``pose``: SIFT's scale, the dominant gradient's angle on SIFT's window, no model
                (:func:`patchpose.integrations.colmap.reconstruct`)
``network``     our scale and orientation (:func:`~patchpose.integrations.opencv.assign`; the recipe before
                2026-11-29)
``ours_angle``  OpenCV SIFT's keypoints and scale, our orientation read in SIFT's window
                (:func:`~patchpose.integrations.opencv.assign` with ``keep_size=True``)
``sift``        SIFT's own pose: every orientation OpenCV SIFT found at the location, as it gives them
``upright``     SIFT's scale, orientation 0 (upright descriptors)
``colmap``      COLMAP's own pipeline: its SIFT (``pycolmap.extract_features``) and matcher
                (``pycolmap.match_exhaustive``: ratio test, cross check), the same verification and mapping
=============== ==========================================================================================

For every pose but ``colmap`` the keypoints are the same (OpenCV SIFT's locations, strongest first, one per
location), each described by ``cv2.SIFT.compute`` at one orientation (``sift``: at each of SIFT's); with
``split=True`` each descriptor is a keypoint of its own instead, as COLMAP's and OpenCV's SIFT store a second
orientation: a location then yields up to one 3-D point per orientation at the same place, which the
``distinct_points3D`` statistic counts once.

Each run is a folder ``OUT/runs/{set}/{pose}-seed{s}/`` (``{pose}@{model}`` for the poses that read a model,
so that another ``--weights`` adds runs beside the others), reused when it is finished: an interrupted
evaluation continues where it stopped. The turned copies are made once in ``OUT/turned_images/`` (frames
1, 3, 5, … of the sorted names turned by 90° clockwise, names kept). Outputs ``results.json`` (every run's
statistics) and ``results.md`` (per set and pose: registered images, 3-D points, mean track length, mean
reprojection error, seconds; the mean over seeds with the range).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from .. import checks
from ..errors import InputError, is_int_in, require
from ..estimator import EstimatorLike, as_estimator
from ..integrations.colmap import (
    check_settings,
    describe_image,
    run_reconstruction,
    sift_described,
    sift_keypoints,
)
from ..integrations.extract import image_names
from ..integrations.opencv import assign
from .report import write_results

POSES = ("pose", "network", "ours_angle", "sift", "upright", "colmap")
#: the poses that read the model
OUR_POSES = ("network", "ours_angle")
SETS = ("upright", "turned")
DEFAULT_POSES = ("colmap", "sift", "pose", "network", "ours_angle", "upright")


def pose_estimator(estimator: EstimatorLike = None):
    """The estimator the poses of :data:`OUR_POSES` read: ``estimator`` (an estimator, a bundled model's name or a
    weights file), or ``MODELS["pose"]`` (:data:`patchpose.recipes.MODELS`) when None."""
    return as_estimator(estimator, "pose")


def describe_at(image: np.ndarray, pose: str, est=None, max_keypoints: int = 8192) -> dict:
    """OpenCV SIFT keypoints of ``image`` described by OpenCV SIFT at ``pose`` (one of :data:`POSES` but
    ``colmap``), as :func:`~patchpose.integrations.colmap.sift_described` gives them (``M = N`` descriptors but
    for ``sift``, which describes each keypoint at every orientation SIFT found there); ``est`` for the poses
    that read our model."""
    if pose not in POSES or pose == "colmap":
        raise InputError(f"pose must be one of {POSES[:-1]}, got {pose!r}")
    if pose == "pose":
        return describe_image(image, max_keypoints)
    xy, kps, cands = sift_keypoints(image, max_keypoints)
    if pose == "sift":
        described = [cv2.KeyPoint(*k.pt, k.size, float(a), k.response, k.octave, k.class_id) for k, c in zip(kps, cands) for a in c]  # fmt: skip
    elif pose == "upright":
        described = [cv2.KeyPoint(*k.pt, k.size, 0.0, k.response, k.octave, k.class_id) for k in kps]
    else:  # network: one read of our scale and angle; ours_angle: the angle read in SIFT's window at SIFT's size
        described = assign(image, kps, est, keep_size=pose == "ours_angle")
    return sift_described(image, xy, described)


def split_keypoints(f: dict) -> dict:
    """A described image (:func:`~patchpose.integrations.colmap.sift_described`) with each descriptor a keypoint
    of its own, at its location's pose (the first descriptor's), as COLMAP and OpenCV store SIFT's orientations."""
    o = f["owner"]
    return {
        "xy": f["xy"][o],
        "scale": f["scale"][o],
        "ori": f["ori"][o],
        "descriptors": f["descriptors"],
        "owner": np.arange(len(o)),
    }


def colmap_database(max_keypoints: int):
    """COLMAP's own pipeline as a ``database`` of :func:`~patchpose.integrations.colmap.run_reconstruction`: its
    SIFT (``max_num_features``) and exhaustive matcher, into the database; returns the seconds of each stage."""

    def fill(db_path: Path, folder: Path, names: list, nthreads: int, seed: int) -> dict:
        pycolmap = require("pycolmap", "colmap")
        t0 = time.perf_counter()
        ext = pycolmap.FeatureExtractionOptions()
        ext.num_threads = nthreads
        ext.sift.max_num_features = int(max_keypoints)
        pycolmap.extract_features(
            db_path, folder, image_names=names, camera_mode=pycolmap.CameraMode.AUTO,
            extraction_options=ext, device=pycolmap.Device.cpu,
        )  # fmt: skip
        features = time.perf_counter() - t0
        mo = pycolmap.FeatureMatchingOptions()
        mo.num_threads = nthreads
        tv = pycolmap.TwoViewGeometryOptions()
        tv.ransac.random_seed = int(seed)
        pycolmap.match_exhaustive(
            db_path, matching_options=mo, verification_options=tv, device=pycolmap.Device.cpu
        )
        return {"features": features, "matching+verification": time.perf_counter() - t0 - features}

    return fill


def reconstruct_at(
    images,
    out,
    pose: str,
    est=None,
    max_keypoints: int = 8192,
    split: bool = False,
    seed: int = 0,
    threads=None,
) -> dict:
    """One reconstruction of the images below ``images`` at ``pose`` (:data:`POSES`) into ``out``."""
    checks.flag(split, "split")
    settings = {
        "pose": pose,
        "model": est.name if est is not None else None,
        "plan": est.plan.__dict__ if est is not None else None,
        "max_keypoints": int(max_keypoints),
        "split": bool(split),
    }
    if pose == "pose":  # what the recipe is, so that a run made by another version of it is not reused
        settings.update(scale="detector", angle="gradient")
    if pose == "colmap":
        fill = colmap_database(max_keypoints)
        return run_reconstruction(images, out, settings, database=fill, seed=seed, threads=threads)

    def describe(image: np.ndarray) -> dict:
        f = describe_at(image, pose, est, int(max_keypoints))
        return split_keypoints(f) if split else f

    return run_reconstruction(images, out, settings, describe=describe, seed=seed, threads=threads)


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
    and ``OUT/results.md``; returns the results document. ``weights``: the model of the poses that read one (:data:`OUR_POSES`)
    (an estimator, a bundled model's name or a weights file; None: the recipe ``pose``'s,
    :data:`patchpose.recipes.MODELS`); the other arguments go to :func:`reconstruct_at`."""
    poses, seeds, sets = list(poses), list(seeds), list(sets)
    bad = [p for p in poses if p not in POSES]
    if not poses or bad:
        raise InputError(f"poses must be some of {POSES}, got {bad or poses}")
    if not seeds or not all(is_int_in(s, 0) for s in seeds):
        raise InputError(f"seeds must be integers >= 0, got {seeds}")
    if not sets or any(s not in SETS for s in sets):
        raise InputError(f"sets must be some of {SETS}, got {sets}")
    check_settings(max_keypoints, seeds[0], threads)
    checks.flag(split, "split")
    require("pycolmap", "colmap")  # before the turned copies are written
    folder = Path(images)
    image_names(folder)  # a missing or empty folder is an error before any work
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    est = pose_estimator(weights) if any(p in OUR_POSES for p in poses) else None
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
                stats = reconstruct_at(
                    folders[s],
                    run_dir,
                    pose,
                    est if pose in OUR_POSES else None,
                    max_keypoints,
                    split,
                    seed,
                    threads,
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
    write_results(out, doc, results_markdown(doc))
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


__all__ = [
    "POSES",
    "OUR_POSES",
    "describe_at",
    "reconstruct_at",
    "evaluate_colmap",
    "turn_every_other",
    "summarize",
    "results_markdown",
    "SETS",
    "DEFAULT_POSES",
    "pose_estimator",
]
