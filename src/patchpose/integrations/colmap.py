"""COLMAP end to end through pycolmap: a folder of images → COLMAP's SIFT keypoints, descriptors and cameras →
COLMAP's exhaustive matcher and geometric verification → its incremental mapping, with a line per stage, a summary
and a project COLMAP's GUI opens (:func:`reconstruct`, ``patchpose colmap``).

No description of ours goes in (``patchpose eval colmap``, docs/results.md: keypoint by keypoint none beats
COLMAP's own; described upright in the collection, :func:`describe_upright`, they find as many distinct points as
COLMAP's domain-size pooling on TUM, at a reprojection error #61 does not allow and with Sacré-Cœur's counts within
its mapping's instability: a benchmark row, not an option). The stages take any other description of COLMAP's
keypoints (:func:`run_reconstruction`'s ``describe``: :func:`colmap_sift_features` in, keypoints and descriptors
out, described by OpenCV's SIFT through :func:`~patchpose.integrations.opencv.sift_descriptors`), which the
benchmark runs with SIFT's own pose, the recipe ``pose``, our network's and upright.

Keypoints go into the database in COLMAP's conventions (:func:`colmap_keypoints`: top-left pixel centre at
(0.5, 0.5), scale a radius in px, orientation radians clockwise as displayed), descriptors as COLMAP stores its
SIFT's (:func:`colmap_descriptors`). An output folder is written as ``OUT.partial`` and renamed when done; a rerun
into a finished one with the same settings returns its statistics, anything else there is refused.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..checks import MAX_THREADS
from ..data.keypoints import MAX_KEYPOINTS
from ..data.patches import load_image
from ..errors import InputError, is_int_in, require
from ..estimator import EstimatorLike
from ..fileio import room_for, settings_difference, size_text, write_text_atomic
from ..interop import to_cv2_keypoints
from ..matching.collection import neighbour_pairs, unturn_settings, upright_collection
from ..matching.features import SIFT_REGION, Features, sift_features
from ..matching.upright import Extractor, applied_turn
from .extract import _Photos, image_names
from .formats import from_colmap_rows, to_colmap_rows
from .opencv import sift_descriptors

#: the file with the settings and statistics of a finished reconstruction
STATS = "stats.json"
#: the file that marks ``OUT.partial`` as a run's own: only such a folder is removed when a run starts again
MARK = ".patchpose-partial"
#: the file with :func:`summary_table` of a finished reconstruction
SUMMARY = "summary.md"
#: log2 of SIFT's descriptor window over its radius (COLMAP's σ; :data:`~patchpose.matching.features.SIFT_REGION`)
SIFT_WINDOW = math.log2(2.0 * SIFT_REGION)


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


def colmap_sift_features(image: np.ndarray, rows) -> Features:
    """:class:`~patchpose.matching.features.Features` of COLMAP's SIFT keypoints of ``image`` (the rows
    ``pycolmap.Database.read_keypoints`` gives, :func:`from_colmap_keypoints`): one keypoint per location, in
    COLMAP's order, at COLMAP's size (its σ is our radius; SIFT's window about it) and its first orientation, every
    orientation COLMAP stored at the location kept as :attr:`~patchpose.matching.features.Features.sift_ori_candidates`."""
    k = from_colmap_keypoints(rows)  # (N, 4) or (N, 6) rows, checked there
    # COLMAP stores a location's orientations as keypoints of their own, one after another
    at = np.column_stack([k["xy"], k["scale"]])
    same = np.r_[False, (np.abs(np.diff(at, axis=0)) < 1e-4).all(1)] if len(at) else np.zeros(0, bool)
    first = np.flatnonzero(~same)
    xy, scale = k["xy"][first], k["scale"][first]
    feats = sift_features(image, xy, to_cv2_keypoints(xy, scale, k["ori"][first]))
    feats.sift_ori_candidates = np.split(k["ori"], first[1:]) if len(first) else []
    return feats


def colmap_descriptors(descriptors) -> np.ndarray:
    """``(N, 128)`` uint8 descriptors as COLMAP stores its SIFT's (``round(512·d)`` clipped to 255, from
    L2-normalised float descriptors such as RootSIFT's)."""
    d = np.asarray(descriptors, np.float32)
    if d.ndim != 2 or d.shape[1] != 128:
        raise InputError(f"COLMAP's SIFT matcher takes (N, 128) descriptors, got shape {d.shape}")
    return np.clip(np.round(512.0 * d), 0, 255).astype(np.uint8)


def describe_upright(feats: Features, degrees: float) -> dict:
    """COLMAP's keypoints ``feats`` (:func:`colmap_sift_features`) described by OpenCV's SIFT upright in the
    collection: one descriptor per location, every one at the angle that the photo's turn ``degrees``
    (counter-clockwise, as :attr:`~patchpose.matching.collection.CollectionTurns.degrees`: 90 for a photo whose
    content is turned 90° clockwise, as ``cv2.ROTATE_90_CLOCKWISE`` turns it: a camera rolled counter-clockwise) shows upright; the photo is not resampled. ``{"xy", "scale", "ori",
    "descriptors"}`` as :func:`run_reconstruction`'s ``describe`` gives them."""
    xy, scale = feats.xy, feats.sift_scale - SIFT_WINDOW
    ori = np.full(len(xy), -math.radians(float(degrees)))
    return {
        "xy": xy,
        "scale": scale,
        "ori": ori,
        "descriptors": sift_descriptors(feats.image, xy, scale, ori),
    }


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


def _images(folder: Path) -> list[str]:
    """The names of the images below ``folder`` (:func:`~patchpose.integrations.extract.image_names`), at
    least 2."""
    names = [name for name, _ in image_names(folder)]
    if len(names) < 2:
        raise InputError(f"{folder} holds {len(names)} image(s); a reconstruction needs at least 2")
    for name in names:  # COLMAP's database keeps names as UTF-8 text: a name that is not would fail inside it
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(
                f"{folder}: the image name {name!r} is not UTF-8 text, which COLMAP's database needs; rename it"
            ) from None
    return names


def reconstruct(
    images: str | Path,
    out: str | Path,
    *,
    extract: Extractor | None = None,
    unturn: bool = False,
    max_keypoints: int = 8192,
    seed: int = 0,
    threads: int | None = None,
    progress: bool = False,
    estimator: EstimatorLike = None,
    unturn_window: int | None = None,
) -> dict:
    """Reconstruct the images below the folder ``images`` with COLMAP's own pipeline (:func:`run_reconstruction`
    without a description of ours), or with a learned feature of one's own, and return the statistics of the
    largest model.

    Args:
        images: a folder; every image below it (at least 2), named by its relative path.
        out: a new folder: ``database.db`` (COLMAP's), ``sparse/0, 1, …`` (the models COLMAP wrote),
            ``stats.json`` (the settings and what is returned) and ``project.ini`` (COLMAP's GUI opens it). Written
            as ``OUT.partial`` and renamed.
        extract: None (COLMAP's SIFT), or an extractor ``image -> (xy, descriptors)`` (e.g.
            :func:`~patchpose.integrations.kornia.aliked_extractor`) whose keypoints are matched (mutual nearest
            neighbours of every pair) and verified and mapped by COLMAP. Its ``name`` attribute (a string) tells a
            finished ``out`` made with it from one made with another; without one, an existing ``out`` is refused.
        unturn: with ``extract``, each photo extracted un-turned by the turn our network votes for it
            (:func:`~patchpose.matching.collection.upright_collection`, reading ``estimator``): a feature trained
            upright then matches photos taken sideways or rolled. Without ``extract`` it is refused: COLMAP's SIFT
            described upright in the collection is the benchmark's row ``upright_ours``, not an option
            (docs/results.md).
        max_keypoints: features per image at most (COLMAP's SIFT's ``max_num_features``, or the extractor's first).
        seed: COLMAP's random seed (RANSAC, mapping); threads: COLMAP's threads (None: all cores).
        unturn_window: with ``unturn``, vote only the pairs of photos at most this many apart in the sorted names
            (:func:`~patchpose.matching.collection.neighbour_pairs`: a sequence's neighbours); None: every pair.
        progress: a line when each stage starts and ends (COLMAP's own stages give no finer progress), and bars
            over photos and pairs in ours.

    Returns:
        ``{"images", "registered", "points3D", "distinct_points3D", "observations", "track_length",
        "reprojection_px", "models", "keypoints", "matches", "verified_pairs", "inlier_matches", "seconds",
        "stage_seconds", "settings"}`` (``registered`` etc. of the model with the most registered images; 0 and None
        without a model), and ``turns`` (``{name: {"degrees", "applied", "found"}}``: the voted turn, the turn the
        photo was extracted or described at (a learned feature's: within
        :data:`~patchpose.matching.upright.SNAP_DEG` of a quarter turn that quarter turn), and whether a turn was
        found) where photos were un-turned.
    """
    check_settings(max_keypoints, seed, threads)
    require("pycolmap", "colmap")
    _images(Path(images))  # a missing folder or one of fewer than 2 images
    # COLMAP's own since 2026-11-29 (OpenCV's keypoints at our poses and mutual nearest neighbours before): a
    # folder made then is not reused
    neighbour_pairs(0, unturn_window, unturn)  # a bad window: its one-line error before any work
    if unturn is not False and extract is None:
        raise InputError(
            "un-turning needs a learned feature (extract; --aliked FILE): COLMAP's SIFT keeps its own orientations"
        )
    settings = {"keypoints": "colmap", "descriptors": "colmap", "max_keypoints": int(max_keypoints)}
    if extract is not None:
        name = getattr(extract, "name", None)
        if not isinstance(name, str) and Path(out).exists():
            raise InputError(
                f"{out} exists, and an extractor without a name attribute cannot be told apart from another: remove "
                "it, choose another out, or set extract.name"
            )
        settings = {
            "feature": name if isinstance(name, str) else None,
            "max_keypoints": int(max_keypoints),
            "unturn": unturn_settings(estimator, canvas=True) if unturn is True else None,
        }
    # recorded only where given: outputs voted over every pair keep their settings
    if unturn_window is not None:
        settings["unturn"] = {**settings["unturn"], "window": int(unturn_window)}
    return run_reconstruction(
        images,
        out,
        settings,
        extract=extract,
        unturn=unturn,
        unturn_window=unturn_window,
        estimator=estimator,
        max_keypoints=max_keypoints,
        seed=seed,
        threads=threads,
        progress=progress,
    )


#: the stages of a reconstruction, in order (``turns`` only where photos are un-turned, ``describe`` only where
#: COLMAP's descriptors are replaced)
STAGES = ("turns", "features", "describe", "matching", "mapping")


def run_reconstruction(
    images: str | Path,
    out: str | Path,
    settings: dict,
    *,
    describe: Callable[[Features], dict] | None = None,
    extract: Extractor | None = None,
    unturn: bool = False,
    turns: Sequence[float] | Callable[[list[np.ndarray]], Sequence[float]] | None = None,
    estimator: EstimatorLike = None,
    max_keypoints: int = 8192,
    seed: int = 0,
    threads: int | None = None,
    progress: bool = False,
    sift_options: dict | None = None,
    unturn_window: int | None = None,
) -> dict:
    """The stages of :func:`reconstruct` (:data:`STAGES`), COLMAP's own but for ``describe`` or ``extract``:

    1. ``features``: COLMAP's SIFT (``pycolmap.extract_features``: at most ``max_keypoints`` detections a photo, as its
       ``max_num_features``; each with up to 2 orientations, each stored as a keypoint) and its
       cameras (``CameraMode.AUTO``: one per image, its focal length from EXIF where the photo has it);
    2. ``describe``: each photo's keypoints (:func:`colmap_sift_features`) given to ``describe``, whose ``{"xy",
       "scale" (log2 radius / 16 px), "ori" (radians CCW), "descriptors" (M, 128) float}`` (each row a keypoint)
       replace COLMAP's keypoints and descriptors in the database (None: COLMAP's own are kept, no such stage);
    3. ``matching``: COLMAP's exhaustive matcher (ratio test 0.8, cross check, distance 0.7) and its geometric
       verification (``pycolmap.match_exhaustive``);
    4. ``mapping``: COLMAP's incremental mapping.

    With ``unturn`` (each photo's turn, :func:`~patchpose.matching.collection.upright_collection` reading
    ``estimator``) or ``turns`` (one per photo in the order of the sorted names, as
    :attr:`~patchpose.matching.collection.CollectionTurns.degrees`: the turn counter-clockwise that shows the photo
    upright, 90 for a photo whose content is turned 90° clockwise (``cv2.ROTATE_90_CLOCKWISE``); or a callable that finds them from the
    photos, returning such degrees or a :class:`~patchpose.matching.collection.CollectionTurns`), a ``turns``
    stage comes first, and the ``describe`` stage describes COLMAP's keypoints upright in the collection
    (:func:`describe_upright`: one descriptor per location at the photo's turn) instead of ``describe``.

    With ``extract`` (an extractor, :data:`~patchpose.matching.upright.Extractor`: ``image -> (xy, descriptors)``)
    instead: ``turns`` as above, ``features`` (COLMAP's cameras, ``pycolmap.import_images``; each photo's
    keypoints by ``extract`` on the photo un-turned, mapped back, at most ``max_keypoints``), ``matching`` (mutual
    nearest neighbours of every pair, then COLMAP's geometric verification) and ``mapping``.

    ``unturn_window``: with ``unturn``, only the pairs of photos at most this many apart in the sorted names are
    voted (:func:`~patchpose.matching.collection.neighbour_pairs`).

    ``sift_options``: COLMAP's SIFT options other than its defaults (``pycolmap.SiftExtractionOptions`` attributes,
    e.g. ``{"domain_size_pooling": True}``; the benchmark's peer at its best), with COLMAP's SIFT only.

    ``settings``: what a rerun into ``out`` must match (with the images, the seed, pycolmap's version and
    ``sift_options``)."""
    if extract is not None and describe is not None:
        raise InputError(
            "give describe (COLMAP's keypoints described) or extract (keypoints of one's own), not both"
        )
    if extract is not None and not callable(extract):
        raise InputError(
            f"extract must be a callable image -> (xy, descriptors), got {type(extract).__name__}"
        )
    if not isinstance(unturn, bool):
        raise InputError(f"unturn must be True or False, got {unturn!r}")
    if (unturn or turns is not None) and describe is not None:
        raise InputError(
            "un-turning describes COLMAP's keypoints itself (describe_upright): give describe, or unturn or turns"
        )
    if unturn and turns is not None:
        raise InputError("give unturn (our votes of the turns) or turns (known ones), not both")
    check_settings(max_keypoints, seed, threads)
    pycolmap = require("pycolmap", "colmap")
    sift_options = _check_sift_options(pycolmap, sift_options, extract)
    if sift_options:
        settings = {**settings, "sift_options": sift_options}
    folder = Path(images)
    names = _images(folder)
    if turns is not None and not callable(turns):
        turns = _check_turns(turns, len(names))
        settings = {**settings, "turns": [round(float(t), 6) for t in turns]}
    settings = json.loads(
        json.dumps({**settings, "seed": int(seed), "images": names, "pycolmap": pycolmap.__version__})
    )
    out = Path(out)
    if out.exists():
        had = _finished(out)
        if had is None or had.get("settings") != settings:
            why = settings_difference(had.get("settings") if had else None, settings)
            raise InputError(
                f"{out} exists and is not this reconstruction's output{why}; remove it or choose another --out"
            )
        return had
    # a photo that cannot be read stops the run before anything is written; a feature of one's own keeps them
    # the pixels as stored, as COLMAP reads them (no EXIF orientation): keypoints in COLMAP's frame
    photos = (
        [load_image(folder / name, exif_orientation=False) for name in names] if extract is not None else None
    )
    if photos is None:
        for name in names:
            load_image(folder / name, exif_orientation=False)
        # the turns of COLMAP's keypoints described upright: each photo read again when the votes reach it
        photos = _Photos([folder / name for name in names], exif_orientation=False)
    if unturn:  # our votes are one source of turns among others

        def turns(images: list[np.ndarray]):
            pairs = neighbour_pairs(len(images), unturn_window)
            return upright_collection(images, pairs=pairs, estimator=estimator, progress=progress)

    work = out.with_name(out.name + ".partial")
    # a run a kill interrupted: start again, but only in a folder a run made (its mark inside)
    if work.exists():
        if not (work / MARK).is_file():
            raise InputError(
                f"{work} exists and was not made by patchpose colmap; remove it or choose another --out"
            )
        shutil.rmtree(work)
    work.mkdir(parents=True)
    try:  # COLMAP's database writer aborts the process on a full disk (SQLite's error in a thread): room first
        need, database = _room_needed(len(names), max_keypoints)
        room_for(out, need, "COLMAP's output", total=database)
    except InputError:
        shutil.rmtree(work)
        raise
    (work / MARK).write_text("a patchpose colmap run in progress\n")
    db_path = work / "database.db"
    nthreads = -1 if threads is None else int(threads)
    stage: dict[str, float] = {}
    t0 = time.perf_counter()
    with _quiet(pycolmap):
        pycolmap.set_random_seed(int(seed))
        tv = pycolmap.TwoViewGeometryOptions()
        tv.ransac.random_seed = int(seed)
        degrees, found = _turns_stage(turns, photos, names, stage, progress, work)
        if extract is not None:
            _learned_features(
                pycolmap, db_path, folder, names, photos, extract, degrees, max_keypoints, tv, nthreads, stage, progress
            )  # fmt: skip
        else:
            with _stage(stage, "features", progress, f"COLMAP's SIFT on {len(names)} images", work):
                ext = pycolmap.FeatureExtractionOptions()
                ext.num_threads = nthreads
                ext.sift.max_num_features = int(max_keypoints)
                for name, value in sift_options.items():
                    setattr(ext.sift, name, value)
                pycolmap.extract_features(
                    db_path, folder, image_names=names, camera_mode=pycolmap.CameraMode.AUTO,
                    extraction_options=ext, device=pycolmap.Device.cpu,
                )  # fmt: skip
            # each photo's keypoints upright in the collection, one descriptor a location
            if degrees is not None:
                by_name = dict(zip(names, degrees.tolist()))

                def describe(feats: Features, name: str) -> dict:
                    return describe_upright(feats, by_name[name])

                what = "each photo's keypoints described upright in the collection"
            elif describe is not None:
                user_describe, what = describe, "each keypoint described at its pose"

                def describe(feats: Features, name: str) -> dict:
                    return user_describe(feats)

            if describe is not None:
                with _stage(stage, "describe", progress, what, work):
                    _describe_into(pycolmap, db_path, folder, describe, progress)
            with _stage(stage, "matching", progress, "COLMAP's exhaustive matching and verification", work):
                mo = pycolmap.FeatureMatchingOptions()
                mo.num_threads = nthreads
                pycolmap.match_exhaustive(
                    db_path, matching_options=mo, verification_options=tv, device=pycolmap.Device.cpu
                )
        with _stage(stage, "mapping", progress, "COLMAP's incremental mapping", work):
            po = pycolmap.IncrementalPipelineOptions()
            po.num_threads = nthreads
            po.random_seed = int(seed)
            (work / "sparse").mkdir()
            models = pycolmap.incremental_mapping(db_path, folder, work / "sparse", options=po)
    seconds = time.perf_counter() - t0
    db = pycolmap.Database.open(db_path)
    try:
        counts = {
            "keypoints": int(db.num_keypoints()),
            "matches": int(db.num_matches()),
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
    if degrees is not None:  # a learned feature extracts the photo turned, snapped to a quarter turn near one
        applied = [applied_turn(t) if extract is not None else t % 360.0 for t in degrees.tolist()]
        stats["turns"] = {
            n: {"degrees": round(t, 3), "applied": round(a, 3), "found": bool(f)}
            for n, t, a, f in zip(names, degrees.tolist(), applied, found)
        }
    _write_project(work, out, folder)
    write_text_atomic(work / SUMMARY, summary_table(stats))
    write_text_atomic(work / STATS, json.dumps(stats, indent=1))
    os.replace(work, out)
    (out / MARK).unlink(
        missing_ok=True
    )  # after the rename: a kill before it leaves a folder a rerun may remove
    return stats


def _room_needed(images: int, max_keypoints: int) -> tuple[int, int]:
    """Bytes a reconstruction's folder may need, and its database: per keypoint its row and descriptor in the
    database and SQLite's journal of them (360 bytes) and its 2-D point in the model (24), per image 64 KiB, per pair
    of images 16 KiB (its matches and verified inliers: TUM's pairs took 3.7 KB each, Sacré-Cœur's 11.9 KB), and 1 MiB. An estimate,
    counted high for the keypoints, not a bound for the pairs: photos whose every pair matches thousands of keypoints
    may take more."""
    pairs = images * (images - 1) // 2
    database = images * (int(max_keypoints) * 360 + 2**16) + pairs * 2**14 + 2**20
    return database + images * int(max_keypoints) * 24, database


@contextlib.contextmanager
def _stage(stage: dict, name: str, progress: bool, what: str, work: Path):
    """Time a stage (its files in ``work``) into ``stage[name]``; with ``progress`` a line when it starts and its seconds when it ends."""
    if progress:
        print(f"{name}: {what} ...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    try:
        yield
    except (
        RuntimeError,
        OSError,
    ) as e:  # COLMAP's own failures (a full disk, a file it cannot read): one line, with the room left
        free = size_text(shutil.disk_usage(work).free)
        raise InputError(
            f"COLMAP's {name} stage failed: {' '.join(str(e).split())[:200]} ({free} free on the disk of {work})"
        ) from None
    stage[name] = time.perf_counter() - t
    if progress:
        print(f"{name}: done in {stage[name]:.1f} s", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _quiet(pycolmap):
    """COLMAP's own log (glog's INFO and WARNING lines, several per image and pair) silenced while a reconstruction
    runs (our stage lines say where it is); its errors still print."""
    old = pycolmap.logging.minloglevel
    pycolmap.logging.minloglevel = 2
    try:
        yield
    finally:
        pycolmap.logging.minloglevel = old


def _check_turns(turns, count: int) -> np.ndarray:
    """``turns`` as ``(count,)`` finite degrees, or a one-line :class:`InputError`."""
    try:
        t = np.asarray(turns, np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"turns must be {count} numbers (degrees), one per photo") from None
    if t.shape != (count,) or not np.isfinite(t).all():
        raise InputError(f"turns must be {count} finite degrees, one per photo, got {t.size} values")
    return t


def _loaded(image: np.ndarray, path: Path, cam) -> np.ndarray:
    """``image`` (the file ``path`` as patchpose reads it), refused where COLMAP read another size (its keypoints
    would be written in the wrong places)."""
    if image.shape[:2] != (cam.height, cam.width):
        raise InputError(
            f"{path}: COLMAP read it as {cam.width}×{cam.height}, patchpose as "
            f"{image.shape[1]}×{image.shape[0]} (an EXIF orientation?): its keypoints would be described "
            "in the wrong places"
        )
    return image


def _check_sift_options(pycolmap, options, extract) -> dict:
    """``sift_options`` checked: a dict of ``pycolmap.SiftExtractionOptions`` attributes and values of their type
    (an :class:`InputError` for an unknown name, a value of another type, or options with a feature of one's
    own)."""
    if not options:
        return {}
    if extract is not None:
        raise InputError("sift_options set COLMAP's SIFT; a learned feature (extract) has none")
    if not isinstance(options, dict):
        raise InputError(
            f"sift_options must be a dict of COLMAP's SIFT options, got {type(options).__name__}"
        )
    known = pycolmap.SiftExtractionOptions()
    for name, value in options.items():
        if not isinstance(name, str) or name.startswith("_") or not hasattr(known, name):
            raise InputError(f"COLMAP's SIFT has no option {name!r}")
        if type(value) is not type(getattr(known, name)):
            raise InputError(
                f"COLMAP's SIFT option {name} takes a {type(getattr(known, name)).__name__}, got {value!r}"
            )
    return dict(options)


def _turns_stage(turns, images, names, stage, progress, work) -> tuple[np.ndarray | None, np.ndarray | None]:
    """:func:`run_reconstruction`'s ``turns`` stage: each photo's turn (degrees) from ``turns`` (None, known
    turns, or a callable of the loaded ``images``) and whether it was found; ``(None, None)`` without turns."""
    if turns is None:
        return None, None
    found = np.ones(len(names), bool)
    if callable(turns):  # a source of turns over the photos: our votes (unturn), the benchmark's SIFT
        with _stage(stage, "turns", progress, f"each photo's turn ({len(names)} photos, every pair)", work):
            got = turns(images)
            if hasattr(got, "found"):  # CollectionTurns
                found = np.asarray(got.found, bool)
                got = got.degrees
    else:
        got = turns
    return _check_turns(got, len(names)), found


def _learned_features(
    pycolmap, db_path, folder, names, images, extract, turns, max_keypoints, tv, nthreads, stage, progress
) -> None:
    """:func:`run_reconstruction`'s stages with a feature of one's own (``features``, ``matching``) on ``images``
    (the photos ``names`` below ``folder``, loaded), each extracted at its turn in ``turns`` (degrees; None:
    as it is)."""
    from tqdm import tqdm

    from ..matching.matcher import mutual_nn
    from ..matching.upright import extract_turned

    bar = dict(disable=not progress, file=sys.stderr)
    with _stage(
        stage, "features", progress, f"COLMAP's cameras, the feature on {len(names)} photos", db_path.parent
    ):
        pycolmap.Database.open(db_path).close()
        pycolmap.import_images(db_path, folder, pycolmap.CameraMode.AUTO, names)
        db = pycolmap.Database.open(db_path)
        try:
            ids = {im.name: im.image_id for im in db.read_all_images()}
            feats = []
            for k in tqdm(range(len(images)), desc="features", unit="image", **bar):
                name = names[k]
                _loaded(images[k], folder / name, db.read_camera(db.read_image(ids[name]).camera_id))
                xy, d = extract_turned(images[k], extract, float(turns[k]) if turns is not None else 0.0)
                feats.append((xy[:max_keypoints], d[:max_keypoints]))
                db.write_keypoints(
                    ids[name], np.ascontiguousarray(feats[-1][0] + 0.5, np.float32)
                )  # COLMAP: 0.5
        finally:
            db.close()
    with _stage(
        stage,
        "matching",
        progress,
        "mutual nearest neighbours of every pair, COLMAP's verification",
        db_path.parent,
    ):
        db = pycolmap.Database.open(db_path)
        try:
            pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
            matched = []
            for i, j in tqdm(pairs, desc="matching", unit="pair", **bar):
                matched.append(mutual_nn(feats[i][1], feats[j][1])[0])
                db.write_matches(ids[names[i]], ids[names[j]], np.ascontiguousarray(matched[-1], np.uint32))
        finally:
            db.close()
        # the verification writes each pair's inliers in threads (a full disk aborts the process): room first
        written = sum(len(mutual) for mutual in matched)
        room_for(db_path, 16 * written + 2**20, "COLMAP's database")
        gv = pycolmap.GeometricVerifierOptions()
        gv.num_threads = nthreads
        pycolmap.geometric_verification(str(db_path), verifier_options=gv, two_view_geometry_options=tv)


def _describe_into(pycolmap, db_path: Path, folder: Path, describe, progress: bool) -> None:
    """Replace every image's keypoints and descriptors in the database by ``describe(features, name)``'s at
    COLMAP's keypoints (:func:`colmap_sift_features`; ``name``: the image's name in the database)."""
    from tqdm import tqdm  # the colmap extra's, not the core install's

    db = pycolmap.Database.open(db_path)
    try:
        images = sorted(db.read_all_images(), key=lambda im: im.image_id)
        rows = {im.image_id: np.asarray(db.read_keypoints(im.image_id)) for im in images}
        db.clear_keypoints()
        db.clear_descriptors()
        for im in tqdm(images, desc="describe", unit="image", disable=not progress, file=sys.stderr):
            image = _loaded(
                load_image(folder / im.name, exif_orientation=False),
                folder / im.name,
                db.read_camera(im.camera_id),
            )
            f = describe(colmap_sift_features(image, rows[im.image_id]), im.name)
            db.write_keypoints(im.image_id, colmap_keypoints(f["xy"], f["scale"], f["ori"]))
            d = colmap_descriptors(f["descriptors"])
            db.write_descriptors(
                im.image_id, pycolmap.FeatureDescriptors(pycolmap.FeatureExtractorType.SIFT, d)
            )
    finally:
        db.close()


def _write_project(work: Path, out: Path, folder: Path) -> None:
    """``project.ini`` in ``work`` (renamed ``out``) for COLMAP's GUI (File > Open project): the database and the
    images; the model is ``sparse/0`` (File > Import model)."""
    # as COLMAP writes a project: its options as key=value lines, these two first and in no section
    text = f"database_path={(out / 'database.db').resolve()}\nimage_path={folder.resolve()}\n"
    write_text_atomic(work / "project.ini", text)


def summary_table(stats: dict) -> str:
    """A reconstruction's statistics (:func:`reconstruct`'s) as a Markdown table: registered images, 3-D points,
    observations, mean track length, mean reprojection error, and each stage's seconds."""
    track = "–" if stats["track_length"] is None else f"{stats['track_length']:.2f}"
    err = "–" if stats["reprojection_px"] is None else f"{stats['reprojection_px']:.2f}"
    times = " / ".join(
        "–" if stats["stage_seconds"].get(k) is None else f"{stats['stage_seconds'][k]:.1f}" for k in STAGES
    )
    return (
        "| registered | 3-D points | observations | track length | reprojection px | models | seconds: "
        + " / ".join(STAGES)
        + " / all |\n|---|---|---|---|---|---|---|\n"
        + f"| {stats['registered']}/{stats['images']} | {stats['points3D']:,} | {stats.get('observations', 0):,} | "
        + f"{track} | {err} | {stats['models']} | {times} / {stats['seconds']:.1f} |\n"
    )


def _finished(out: Path) -> dict | None:
    """The statistics in ``OUT/stats.json`` of a finished reconstruction, or None (no such file, or not
    one that :func:`reconstruct` wrote)."""
    try:
        had = json.loads((out / STATS).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return had if isinstance(had, dict) else None


def best_model(models):
    """The model (``pycolmap.Reconstruction``) with the most registered images, then the most points, among
    ``models`` in COLMAP's order (the first of a tie); None if there is none."""
    models = list(models)
    return max(models, key=lambda r: (r.num_reg_images(), r.num_points3D())) if models else None


def model_stats(models) -> dict:
    """Statistics of the model with the most registered images (then the most points) among ``models``
    (``pycolmap.Reconstruction``s): ``registered``, ``points3D``, ``distinct_points3D`` (points that share
    no observed keypoint position with another, joined, counted once), ``track_length``,
    ``reprojection_px``, and ``models`` (how many COLMAP made)."""
    models = list(models)
    if not models:
        return {"registered": 0, "points3D": 0, "distinct_points3D": 0, "observations": 0, "track_length": None,
                "reprojection_px": None, "models": 0}  # fmt: skip
    best = best_model(models)
    return {
        "registered": int(best.num_reg_images()),
        "points3D": int(best.num_points3D()),
        "distinct_points3D": distinct_points(best),
        "observations": int(best.compute_num_observations()),
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
    "SIFT_WINDOW",
    "STAGES",
    "SUMMARY",
    "reconstruct",
    "summary_table",
    "run_reconstruction",
    "check_settings",
    "colmap_descriptors",
    "colmap_sift_features",
    "colmap_keypoints",
    "from_colmap_keypoints",
    "model_stats",
    "best_model",
    "distinct_points",
]
