"""COLMAP end to end through pycolmap: a folder of images → SIFT keypoints described at a pose → mutual
nearest-neighbour matches → a COLMAP database → COLMAP's geometric verification and incremental mapping.

:func:`reconstruct` runs one pose source (``pose``) on a folder and returns the statistics of the largest
model (registered images, 3-D points, mean track length, mean reprojection error, seconds):

=============== ==========================================================================================
``ours``        our scale and orientation (the default; :func:`~patchpose.integrations.opencv.assign`)
``ours_angle``  OpenCV SIFT's keypoints and scale, our orientation read in SIFT's window
                (:func:`~patchpose.integrations.opencv.assign` with ``keep_size=True``)
``sift``        SIFT's own pose: every orientation OpenCV SIFT found at the location, as it gives them
``upright``     SIFT's scale, orientation 0 (upright descriptors)
``colmap``      COLMAP's own pipeline: its SIFT (``pycolmap.extract_features``) and matcher
                (``pycolmap.match_exhaustive``: ratio test, cross check), the same verification and mapping
=============== ==========================================================================================

The ``ours*`` poses read :data:`COLMAP_MODEL` unless told otherwise. For every pose but ``colmap`` the
keypoints are the same (OpenCV SIFT's locations, strongest first, one per
location), each described by ``cv2.SIFT.compute`` at one orientation (``sift``: at each of SIFT's). A
location is one COLMAP keypoint, and two keypoints' distance is the smallest over their descriptor pairs
(:func:`match_keypoints`, :func:`~patchpose.matching.matcher.mutual_nn`), so that the rows differ only in
their descriptors. With ``split=True`` each descriptor is a keypoint of its own instead, as COLMAP's and
OpenCV's SIFT store a second orientation: a location then yields up to one 3-D point per orientation at the
same place, which the ``distinct_points3D`` statistic counts once.

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
from pathlib import Path

import cv2
import numpy as np

from .. import checks
from ..conventions import from_cv2_size_angle
from ..data.keypoints import MAX_KEYPOINTS, as_uint8_gray, detect_sift
from ..data.patches import check_image_shape, load_image
from ..errors import InputError, is_int_in, require
from ..estimator import EstimatorLike, PatchPoseEstimator, as_estimator
from ..fileio import write_text_atomic
from ..matching.matcher import mutual_nn
from .extract import image_names
from .formats import from_colmap_rows, to_colmap_rows
from .opencv import assign

POSES = ("ours_angle", "ours", "sift", "upright", "colmap")
#: the poses that read the model
OUR_POSES = ("ours_angle", "ours")
#: the file with the settings and statistics of a finished reconstruction
STATS = "stats.json"
#: the bundled model the ``ours*`` poses read when none is given: patchpose-v10, trained on keypoints found
#: again in a second image; with its scale (``ours``) it gives COLMAP more 3-D points than SIFT's own pose on
#: the same keypoints, where the default model gives fewer (docs/results.md, "COLMAP reconstruction")
COLMAP_MODEL = "patchpose-v10"


def colmap_estimator(estimator: EstimatorLike = None) -> PatchPoseEstimator:
    """The estimator the ``ours*`` poses read: ``estimator`` (an estimator, a bundled model's name or a weights
    file), or :data:`COLMAP_MODEL` when None."""
    return as_estimator(COLMAP_MODEL if estimator is None else estimator)


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


def describe_image(
    image: np.ndarray, pose: str, estimator: EstimatorLike = None, max_keypoints: int = 8192
) -> dict:
    """OpenCV SIFT keypoints of ``image`` described by OpenCV SIFT at ``pose`` (one of :data:`POSES` but
    ``colmap``): ``{"xy" (N, 2), "scale" (N,) log2, "ori" (N,) radians CCW (the first descriptor's pose),
    "descriptors" (M, 128) float32, "owner" (M,) the keypoint of each descriptor, ascending}`` (``M = N``
    but for ``sift``, which describes each keypoint at every orientation SIFT found there).

    ``estimator``: for the ``ours*`` poses, a :class:`~patchpose.PatchPoseEstimator`, a bundled model's name
    or a weights file (default: :data:`COLMAP_MODEL`). A keypoint that OpenCV's ``compute`` drops is
    dropped."""
    if pose not in POSES or pose == "colmap":
        raise InputError(f"pose must be one of {POSES[:-1]}, got {pose!r}")
    check_image_shape(image)
    xy, kps, cands = detect_sift(image, max_keypoints, candidates=True)
    # class_id carries each keypoint's index through compute
    kps = [cv2.KeyPoint(*k.pt, k.size, k.angle, k.response, k.octave, i) for i, k in enumerate(kps)]
    if pose == "sift":
        described = [cv2.KeyPoint(*k.pt, k.size, float(a), k.response, k.octave, k.class_id) for k, c in zip(kps, cands) for a in c]  # fmt: skip
    elif pose == "upright":
        described = [cv2.KeyPoint(*k.pt, k.size, 0.0, k.response, k.octave, k.class_id) for k in kps]
    else:  # ours_angle: one read in SIFT's window at SIFT's size; ours: our scale and angle
        described = assign(image, kps, colmap_estimator(estimator), keep_size=pose == "ours_angle")
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
def check_settings(pose: str, max_keypoints, seed, threads, split) -> None:
    """The settings of :func:`reconstruct`, checked before any work: an :class:`InputError` for a bad one."""
    if pose not in POSES:
        raise InputError(f"pose must be one of {POSES}, got {pose!r}")
    if not is_int_in(max_keypoints, 1, MAX_KEYPOINTS, integral_floats=True):
        raise InputError(
            f"max_keypoints must be a positive integer up to {MAX_KEYPOINTS:,}, got {max_keypoints!r}"
        )
    if not is_int_in(seed, 0):
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    if threads is not None and not is_int_in(threads, 1):
        raise InputError(f"threads must be None (all cores) or an integer >= 1, got {threads!r}")
    checks.flag(split, "split")


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
    pose: str = "ours",
    estimator: EstimatorLike = None,
    max_keypoints: int = 8192,
    split: bool = False,
    seed: int = 0,
    threads: int | None = None,
) -> dict:
    """Reconstruct the images below the folder ``images`` with COLMAP, keypoints described at ``pose``
    (:data:`POSES`, the module docstring), and return the statistics of the largest model.

    Args:
        images: a folder; every image below it (at least 2), named by its relative path.
        out: a new folder: ``database.db`` (COLMAP's), ``sparse/0, 1, …`` (the models COLMAP wrote) and
            ``stats.json`` (the settings and what is returned). Written as ``OUT.partial`` and renamed.
        pose: :data:`POSES`. estimator: for the ``ours*`` poses, a
            :class:`~patchpose.PatchPoseEstimator`, a bundled model's name or a weights file (default:
            :data:`COLMAP_MODEL`).
        max_keypoints: OpenCV SIFT keypoints per image at most (``colmap``: COLMAP SIFT's own
            ``max_num_features``).
        split: each descriptor a COLMAP keypoint of its own (as COLMAP stores SIFT's orientations) instead
            of one keypoint per location.
        seed: COLMAP's random seed (RANSAC, mapping); threads: COLMAP's threads (None: all cores).

    Returns:
        ``{"images", "registered", "points3D", "distinct_points3D", "track_length", "reprojection_px",
        "models", "keypoints", "matches", "verified_pairs", "inlier_matches", "seconds", "stage_seconds",
        "settings"}`` (``registered`` etc. of the model with the most registered images; 0 and None
        without a model).
    """
    check_settings(pose, max_keypoints, seed, threads, split)
    pycolmap = require("pycolmap", "colmap")
    folder = Path(images)
    names = _images(folder)
    est = colmap_estimator(estimator) if pose in OUR_POSES else None
    settings = {
        "pose": pose,
        "model": est.name if est is not None else None,
        "plan": est.plan.__dict__ if est is not None else None,
        "max_keypoints": int(max_keypoints),
        "split": bool(split),
        "seed": int(seed),
        "images": names,
        "pycolmap": pycolmap.__version__,
    }
    settings = json.loads(json.dumps(settings))
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
    if pose != "colmap":
        for name in names:
            feats[name] = describe_image(load_image(folder / name), pose, est, int(max_keypoints))
        stage["features"] = time.perf_counter() - t0
    work = out.with_name(out.name + ".partial")
    if work.exists():  # a run a kill interrupted: start again
        shutil.rmtree(work)
    work.mkdir(parents=True)
    db_path = work / "database.db"
    nthreads = -1 if threads is None else int(threads)
    pycolmap.set_random_seed(int(seed))
    if pose == "colmap":
        ext = pycolmap.FeatureExtractionOptions()
        ext.num_threads = nthreads
        ext.sift.max_num_features = int(max_keypoints)
        pycolmap.extract_features(
            db_path, folder, image_names=names, camera_mode=pycolmap.CameraMode.AUTO,
            extraction_options=ext, device=pycolmap.Device.cpu,
        )  # fmt: skip
        stage["features"] = time.perf_counter() - t0
        mo = pycolmap.FeatureMatchingOptions()
        mo.num_threads = nthreads
        tv = pycolmap.TwoViewGeometryOptions()
        tv.ransac.random_seed = int(seed)
        pycolmap.match_exhaustive(
            db_path, matching_options=mo, verification_options=tv, device=pycolmap.Device.cpu
        )
        stage["matching+verification"] = time.perf_counter() - t0 - stage["features"]
        n_matches = None
    else:
        pycolmap.Database.open(db_path).close()  # import_images needs the file
        pycolmap.import_images(db_path, folder, camera_mode=pycolmap.CameraMode.AUTO, image_names=names)
        db = pycolmap.Database.open(db_path)
        try:
            ids = {im.name: im.image_id for im in db.read_all_images()}
            for name in names:
                f = feats[name]
                # split: one keypoint per descriptor, at its location's pose (the first descriptor's)
                o = f["owner"] if split else slice(None)
                db.write_keypoints(ids[name], colmap_keypoints(f["xy"][o], f["scale"][o], f["ori"][o]))
            t1 = time.perf_counter()
            # each image's descriptors per keypoint, made once for all its pairs
            padded = {name: _per_keypoint(_split(f) if split else f) for name, f in feats.items()}
            n_matches = 0
            for a, b in itertools.combinations(names, 2):
                m = mutual_nn(padded[a], padded[b])[0]
                n_matches += len(m)
                db.write_matches(ids[a], ids[b], m.astype(np.uint32))
        finally:
            db.close()
        t2 = time.perf_counter()
        stage["matching"] = t2 - t1
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


def _finished(out: Path) -> dict | None:
    """The statistics in ``OUT/stats.json`` of a finished reconstruction, or None (no such file, or not
    one that :func:`reconstruct` wrote)."""
    try:
        had = json.loads((out / STATS).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return had if isinstance(had, dict) else None


def _split(f: dict) -> dict:
    """A :func:`describe_image` result with each descriptor a keypoint of its own."""
    o = f["owner"]
    return {"xy": f["xy"][o], "descriptors": f["descriptors"], "owner": np.arange(len(o))}


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
    "POSES",
    "OUR_POSES",
    "COLMAP_MODEL",
    "colmap_estimator",
    "reconstruct",
    "check_settings",
    "describe_image",
    "match_keypoints",
    "colmap_keypoints",
    "from_colmap_keypoints",
    "model_stats",
    "distinct_points",
]
