"""COLMAP end to end through pycolmap: a folder of images → OpenCV SIFT keypoints described with the recipe
``pose`` (each described once by OpenCV's SIFT at SIFT's size and the dominant gradient's angle on SIFT's window,
:func:`~patchpose.matching.candidates.recipe_poses`; no model: at SIFT's keypoints ours does not help) →
mutual nearest-neighbour matches → a COLMAP database → COLMAP's geometric verification and incremental mapping.

:func:`reconstruct` runs it on a folder and returns the statistics of the largest model (registered images, 3-D
points, mean track length, mean reprojection error, seconds). Its stages are the library's for any
description of the same keypoints (:func:`run_reconstruction`, which the benchmarks also run with SIFT's own
poses and COLMAP's own pipeline: ``patchpose eval colmap``). A location is one COLMAP keypoint, and two
keypoints' distance is the smallest over their descriptor pairs (:func:`match_keypoints`,
:func:`~patchpose.matching.matcher.mutual_nn`).

Keypoints go into the database in COLMAP's conventions (:func:`colmap_keypoints`: top-left pixel centre at
(0.5, 0.5), scale a radius in px, orientation radians clockwise as displayed); the matching is exhaustive
(every pair of images). An output folder is written as ``OUT.partial`` and renamed when done; a rerun into a
finished one with the same settings returns its statistics, anything else there is refused.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

from ..conventions import from_cv2_size_angle
from ..data.keypoints import MAX_KEYPOINTS, as_uint8_gray, detect_sift
from ..data.patches import check_image_shape, load_image
from ..errors import InputError, is_int_in, require
from ..fileio import write_text_atomic
from ..matching.candidates import recipe_poses
from ..matching.features import sift_features
from ..matching.matcher import mutual_nn
from .extract import image_names
from .formats import from_colmap_rows, to_colmap_rows
from .opencv import keypoints_at_poses

#: the file with the settings and statistics of a finished reconstruction
STATS = "stats.json"


# ----------------------------------------------------------------------------- keypoints and descriptors
def colmap_keypoints(xy, scale, ori) -> np.ndarray:
    """``(N, 4)`` float32 rows ``x, y, scale, orientation`` as ``pycolmap.Database.write_keypoints`` takes
    them: top-left pixel centre at (0.5, 0.5), scale the radius in px, orientation radians clockwise as
    displayed in ``[−π, π)``, from our ``xy`` (pixel centres at integers), log2 ``scale`` and ``ori``
    (radians counter-clockwise; :func:`~patchpose.integrations.formats.to_colmap_rows`)."""
    return to_colmap_rows(xy, scale, ori).astype(np.float32)


def from_colmap_keypoints(rows) -> dict:
    """Inverse of :func:`colmap_keypoints` for the rows ``pycolmap.Database.read_keypoints`` returns (4
    columns ``x, y, scale, orientation``, or 6: the affine shape ``a11 a12 a21 a22``): ``{"xy", "scale"
    (log2), "ori" (radians CCW)}``."""
    r = np.asarray(rows, np.float64)
    if r.ndim != 2 or r.shape[1] not in (4, 6):
        raise InputError(f"COLMAP keypoints must be (N, 4) or (N, 6) rows, got shape {r.shape}")
    if not np.isfinite(r).all():
        raise InputError("COLMAP keypoints hold NaN or infinite values")
    if r.shape[1] == 6:  # COLMAP's FeatureKeypoint: scale = sqrt(a11² + a21²), orientation = atan2(a21, a11)
        r = np.column_stack([r[:, :2], np.hypot(r[:, 2], r[:, 4]), np.arctan2(r[:, 4], r[:, 2])])
    return from_colmap_rows(r, "COLMAP keypoints")


def sift_keypoints(image: np.ndarray, max_keypoints: int = 8192) -> tuple[np.ndarray, list, list]:
    """OpenCV SIFT's keypoints of ``image`` (strongest first, one per location:
    :func:`~patchpose.data.keypoints.detect_sift`): their ``(N, 2)`` pixel centres, ``cv2.KeyPoint``s whose
    ``class_id`` is their index, and the angles of every orientation SIFT found at each."""
    check_image_shape(image)
    xy, kps, cands = detect_sift(image, max_keypoints, candidates=True)
    # class_id carries each keypoint's index through compute
    kps = [cv2.KeyPoint(*k.pt, k.size, k.angle, k.response, k.octave, i) for i, k in enumerate(kps)]
    return xy, kps, cands


def describe_image(image: np.ndarray, max_keypoints: int = 8192) -> dict:
    """The recipe ``pose`` on one image: OpenCV SIFT keypoints (:func:`sift_keypoints`) described by OpenCV SIFT
    at SIFT's size and the dominant gradient's angle on SIFT's window
    (:func:`~patchpose.matching.candidates.recipe_poses`), as :func:`sift_described` gives them."""
    xy, kps, _ = sift_keypoints(image, max_keypoints)
    poses = recipe_poses(sift_features(image, xy, kps))
    return sift_described(image, xy, keypoints_at_poses(kps, poses))


def sift_described(image: np.ndarray, xy: np.ndarray, described: list) -> dict:
    """OpenCV SIFT's descriptors at ``described`` (``cv2.KeyPoint``s whose ``class_id`` names the keypoint of
    ``xy`` each describes, ascending; several may describe one): ``{"xy" (N, 2), "scale" (N,) log2, "ori"
    (N,) radians CCW (the first descriptor's pose), "descriptors" (M, 128) float32, "owner" (M,) the keypoint of
    each descriptor, ascending}``. A keypoint that OpenCV's ``compute`` drops is dropped."""
    if described:
        kept, desc = cv2.SIFT_create().compute(as_uint8_gray(image), described)
    else:
        kept, desc = [], None
    owner = np.array([k.class_id for k in kept], np.int64)
    desc = np.zeros((0, 128), np.float32) if desc is None else np.asarray(desc, np.float32)
    first = np.unique(owner, return_index=True)[1]  # each kept keypoint's first descriptor
    order = np.argsort(owner, kind="stable")
    idx = owner[first]
    scale, ori = from_cv2_size_angle([kept[i].size for i in first], [kept[i].angle for i in first])
    # keypoints renumbered 0..N-1 in detection order
    renumber = np.searchsorted(idx, owner[order])
    return {
        "xy": xy[idx].reshape(-1, 2),
        "scale": np.asarray(scale, np.float64).reshape(-1),
        "ori": np.asarray(ori, np.float64).reshape(-1),
        "descriptors": desc[order],
        "owner": renumber.astype(np.int64),
    }


def _per_keypoint(f: dict) -> np.ndarray:
    """The descriptors of a :func:`describe_image` result as ``(N, k, 128)``, ``k`` the most any keypoint
    has; a keypoint with fewer repeats its first (which leaves its smallest distance as it is)."""
    owner, desc = f["owner"], f["descriptors"]
    n = len(f["xy"])
    starts = np.searchsorted(owner, np.arange(n))
    counts = np.diff(np.r_[starts, len(owner)])
    k = int(counts.max()) if n else 1
    j = np.minimum(np.arange(k)[None, :], counts[:, None] - 1)
    return desc[starts[:, None] + j]


def match_keypoints(f1: dict, f2: dict) -> np.ndarray:
    """Mutual nearest neighbours ``(L, 2)`` (keypoint of 1, keypoint of 2) of two :func:`describe_image`
    results, two keypoints' distance the smallest over their descriptor pairs."""
    return mutual_nn(_per_keypoint(f1), _per_keypoint(f2))[0]


# ----------------------------------------------------------------------------- the reconstruction
def check_settings(max_keypoints, seed, threads) -> None:
    """The settings of a reconstruction, checked before any work: an :class:`InputError` for a bad one."""
    if not is_int_in(max_keypoints, 1, MAX_KEYPOINTS, integral_floats=True):
        raise InputError(
            f"max_keypoints must be a positive integer up to {MAX_KEYPOINTS:,}, got {max_keypoints!r}"
        )
    _check_run(seed, threads)


def _check_run(seed, threads) -> None:
    """COLMAP's seed and threads, as :func:`check_settings` checks them."""
    if not is_int_in(seed, 0):
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    if threads is not None and not is_int_in(threads, 1, MAX_THREADS):
        raise InputError(
            f"threads must be None (all cores) or an integer from 1 to {MAX_THREADS}, got {threads!r}"
        )


#: the most threads a reconstruction takes (COLMAP's and torch's)
MAX_THREADS = 1024


def _images(folder: Path) -> list[str]:
    """The names of the images below ``folder`` (:func:`~patchpose.integrations.extract.image_names`), at
    least 2."""
    names = [name for name, _ in image_names(folder)]
    if len(names) < 2:
        raise InputError(f"{folder} holds {len(names)} image(s); a reconstruction needs at least 2")
    return names


def reconstruct(
    images: str | Path,
    out: str | Path,
    *,
    max_keypoints: int = 8192,
    seed: int = 0,
    threads: int | None = None,
) -> dict:
    """Reconstruct the images below the folder ``images`` with COLMAP, their OpenCV SIFT keypoints described
    with the recipe ``pose`` (:func:`describe_image`), and return the statistics of the largest model.

    Args:
        images: a folder; every image below it (at least 2), named by its relative path.
        out: a new folder: ``database.db`` (COLMAP's), ``sparse/0, 1, …`` (the models COLMAP wrote) and
            ``stats.json`` (the settings and what is returned). Written as ``OUT.partial`` and renamed.
        max_keypoints: OpenCV SIFT keypoints per image at most.
        seed: COLMAP's random seed (RANSAC, mapping); threads: COLMAP's threads (None: all cores).

    Returns:
        ``{"images", "registered", "points3D", "distinct_points3D", "track_length", "reprojection_px",
        "models", "keypoints", "matches", "verified_pairs", "inlier_matches", "seconds", "stage_seconds",
        "settings"}`` (``registered`` etc. of the model with the most registered images; 0 and None
        without a model).
    """
    check_settings(max_keypoints, seed, threads)
    require("pycolmap", "colmap")
    _images(Path(images))  # a missing folder or one of fewer than 2 images
    # "scale": "detector" since 2026-11-29 (our scale and angle before): a folder made then is not reused
    settings = {
        "recipe": "pose",
        "scale": "detector",
        "angle": "gradient",
        "max_keypoints": int(max_keypoints),
    }
    return run_reconstruction(
        images,
        out,
        settings,
        describe=lambda image: describe_image(image, int(max_keypoints)),
        seed=seed,
        threads=threads,
    )


def run_reconstruction(
    images: str | Path,
    out: str | Path,
    settings: dict,
    *,
    describe: Callable[[np.ndarray], dict] | None = None,
    database: Callable[..., dict] | None = None,
    seed: int = 0,
    threads: int | None = None,
) -> dict:
    """The stages of :func:`reconstruct` for any description of the images: ``describe`` (an image → what
    :func:`sift_described` gives: each keypoint one COLMAP keypoint, matched by its closest descriptor pair)
    describes each image, then mutual nearest neighbours, COLMAP's geometric verification and incremental mapping;
    or ``database`` (``(db_path, folder, names, threads, seed) ->`` the seconds of its stages) fills the database
    with features and matches of its own, and COLMAP maps them (the benchmarks run COLMAP's own pipeline so).
    ``settings``: what a rerun into ``out`` must match (with the images, the seed and pycolmap's version)."""
    if (describe is None) == (database is None):
        raise InputError("a reconstruction takes either a description of each image or a database to map")
    _check_run(seed, threads)
    pycolmap = require("pycolmap", "colmap")
    folder = Path(images)
    names = _images(folder)
    settings = json.loads(
        json.dumps(
            {
                **settings,
                "seed": int(seed),
                "images": names,
                "pycolmap": pycolmap.__version__,
            }
        )  # fmt: skip
    )
    out = Path(out)
    if out.exists():
        had = _finished(out)
        if had is None or had.get("settings") != settings:
            raise InputError(
                f"{out} exists and is not this reconstruction's output; remove it or choose another --out"
            )
        return had
    t0 = time.perf_counter()
    stage = {}
    # our features first: a photo that cannot be read stops the run before anything is written
    feats = {}
    if describe is not None:
        for name in names:
            feats[name] = describe(load_image(folder / name))
        stage["features"] = time.perf_counter() - t0
    work = out.with_name(out.name + ".partial")
    if work.exists():  # a run a kill interrupted: start again
        shutil.rmtree(work)
    work.mkdir(parents=True)
    db_path = work / "database.db"
    nthreads = -1 if threads is None else int(threads)
    pycolmap.set_random_seed(int(seed))
    if database is not None:
        stage.update(database(db_path, folder, names, nthreads, int(seed)))
        n_matches = None
    else:
        n_matches = _write_database(pycolmap, db_path, folder, names, feats, stage)
        t2 = time.perf_counter()
        vo = pycolmap.GeometricVerifierOptions()
        vo.num_threads = nthreads
        tv = pycolmap.TwoViewGeometryOptions()
        tv.ransac.random_seed = int(seed)
        pycolmap.geometric_verification(db_path, verifier_options=vo, two_view_geometry_options=tv)
        stage["verification"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    po = pycolmap.IncrementalPipelineOptions()
    po.num_threads = nthreads
    po.random_seed = int(seed)
    (work / "sparse").mkdir()
    models = pycolmap.incremental_mapping(db_path, folder, work / "sparse", options=po)
    stage["mapping"] = time.perf_counter() - t3
    seconds = time.perf_counter() - t0
    db = pycolmap.Database.open(db_path)
    try:
        counts = {
            "keypoints": int(db.num_keypoints()),
            "matches": int(db.num_matches()) if n_matches is None else int(n_matches),
            "verified_pairs": int(db.num_verified_image_pairs()),
            "inlier_matches": int(db.num_inlier_matches()),
        }
    finally:
        db.close()
    stats = {
        "images": len(names),
        **model_stats(models.values()),
        **counts,
        "seconds": round(seconds, 2),
        "stage_seconds": {k: round(v, 2) for k, v in stage.items()},
        "settings": settings,
    }
    write_text_atomic(work / STATS, json.dumps(stats, indent=1))
    os.replace(work, out)
    return stats


def _write_database(pycolmap, db_path: Path, folder: Path, names: list, feats: dict, stage: dict) -> int:
    """Import the images (COLMAP's cameras), write each one's keypoints and the mutual nearest neighbours of
    every pair of images; the matching's seconds go to ``stage``; returns the matches written."""
    pycolmap.Database.open(db_path).close()  # import_images needs the file
    pycolmap.import_images(db_path, folder, camera_mode=pycolmap.CameraMode.AUTO, image_names=names)
    db = pycolmap.Database.open(db_path)
    try:
        ids = {im.name: im.image_id for im in db.read_all_images()}
        for name in names:
            f = feats[name]
            db.write_keypoints(ids[name], colmap_keypoints(f["xy"], f["scale"], f["ori"]))
        t1 = time.perf_counter()
        # each image's descriptors per keypoint, made once for all its pairs
        padded = {name: _per_keypoint(f) for name, f in feats.items()}
        n_matches = 0
        for a, b in itertools.combinations(names, 2):
            m = mutual_nn(padded[a], padded[b])[0]
            n_matches += len(m)
            db.write_matches(ids[a], ids[b], m.astype(np.uint32))
    finally:
        db.close()
    stage["matching"] = time.perf_counter() - t1
    return n_matches


def _finished(out: Path) -> dict | None:
    """The statistics in ``OUT/stats.json`` of a finished reconstruction, or None (no such file, or not
    one that :func:`reconstruct` wrote)."""
    try:
        had = json.loads((out / STATS).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return had if isinstance(had, dict) else None


def model_stats(models) -> dict:
    """Statistics of the model with the most registered images (then the most points) among ``models``
    (``pycolmap.Reconstruction``s): ``registered``, ``points3D``, ``distinct_points3D`` (points that share
    no observed keypoint position with another, joined, counted once), ``track_length``,
    ``reprojection_px``, and ``models`` (how many COLMAP made)."""
    models = list(models)
    if not models:
        return {"registered": 0, "points3D": 0, "distinct_points3D": 0, "track_length": None,
                "reprojection_px": None, "models": 0}  # fmt: skip
    best = max(models, key=lambda r: (r.num_reg_images(), r.num_points3D()))
    return {
        "registered": int(best.num_reg_images()),
        "points3D": int(best.num_points3D()),
        "distinct_points3D": distinct_points(best),
        "track_length": round(float(best.compute_mean_track_length()), 3),
        "reprojection_px": round(float(best.compute_mean_reprojection_error()), 3),
        "models": len(models),
    }


def distinct_points(rec) -> int:
    """3-D points of a ``pycolmap.Reconstruction`` counted once per group of points that observe the same
    keypoint position in some image (several keypoints at one position, e.g. SIFT's orientations stored
    apart, give several points at one place)."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    seen: dict[tuple, int] = {}
    for pid, point in rec.points3D.items():
        parent.setdefault(pid, pid)
        for el in point.track.elements:
            xy = rec.images[el.image_id].points2D[el.point2D_idx].xy
            key = (el.image_id, round(float(xy[0]), 3), round(float(xy[1]), 3))
            if key in seen:
                parent[root(pid)] = root(seen[key])
            else:
                seen[key] = pid
    return len({root(p) for p in parent})


__all__ = [
    "MAX_THREADS",
    "reconstruct",
    "run_reconstruction",
    "check_settings",
    "describe_image",
    "sift_described",
    "sift_keypoints",
    "match_keypoints",
    "colmap_keypoints",
    "from_colmap_keypoints",
    "model_stats",
    "distinct_points",
]
