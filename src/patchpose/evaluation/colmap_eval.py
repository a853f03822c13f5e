"""``patchpose eval colmap``: COLMAP reconstructions of one folder of frames, as they are and with every other
frame turned by 90° (a phone held sideways), over several random seeds of COLMAP (its RANSAC and mapping), for
each pose source (:data:`POSES`) in the stages of :func:`patchpose.integrations.colmap.run_reconstruction`
(COLMAP's SIFT keypoints and cameras, COLMAP's matcher and verification, its mapping):

=============== ==========================================================================================
``colmap``      COLMAP's own pipeline, ``patchpose colmap``: its SIFT's descriptors kept
``colmap_dsp``  COLMAP's own with its SIFT's domain-size pooling (DSP-SIFT; :data:`COLMAP_OPTIONS`)
``sift``        SIFT's own pose: each of COLMAP's keypoints (a location's orientations each a keypoint, as COLMAP
                stores them) described by OpenCV's SIFT at SIFT's size and that orientation
``pose``        the recipe ``pose``: one keypoint per location, SIFT's size, the dominant gradient's angle on
                SIFT's window (what ``patchpose colmap`` described OpenCV's keypoints with, before COLMAP's own)
``network``     our scale and orientation at each location (``patchpose colmap`` before 2026-11-29)
``upright``     one keypoint per location, SIFT's size, orientation 0 (upright descriptors)
``upright_ours`` one keypoint per location, SIFT's size, upright in the collection: each photo's keypoints at
                the turn our votes find for the photo (``run_reconstruction(unturn=True)``,
                :func:`~patchpose.integrations.colmap.describe_upright`; the photo is not resampled)
``upright_sift`` the same, the pairwise turns SIFT's instead of our network's (:func:`sift_collection_turns`)
=============== ==========================================================================================

and, with ``peers`` (ALIKED's weights; :data:`LEARNED`), a learned feature in place of COLMAP's SIFT (kornia's ALIKED,
at most ``max_keypoints`` a photo, mutual nearest neighbours, COLMAP's cameras, verification and mapping):

===================== ====================================================================================
``aliked``            ALIKED-n16 as it comes (trained upright)
``aliked_rot``        ALIKED-n16rot (trained with turns)
``aliked_ours``       ALIKED-n16 on each photo un-turned by our votes (``reconstruct(unturn=True)``,
                      :func:`~patchpose.matching.collection.upright_collection`)
``aliked_sift``       the same, the pairwise turns SIFT's instead of our network's (each photo's SIFT once, each
                      pair's ratio-test affine map, averaged the same way: :func:`sift_collection_turns`)
===================== ====================================================================================

``sift`` against ``colmap`` is the descriptor (OpenCV's SIFT against COLMAP's), the others against ``sift`` the
pose. Each run is a folder ``OUT/runs/{set}/{pose}-seed{s}/`` (``{pose}@{model}`` for the poses that
read a model, so that another ``--weights`` adds runs beside the others), reused when it is finished: an
interrupted evaluation continues where it stopped. The turned copies are made once in ``OUT/turned_images/``
(frames 1, 3, 5, … of the sorted names turned by 90° clockwise, names kept; ``turned_first``: frames 0, 2, …;
``turned_any``: frames 1, 3, … each turned by its own angle, :func:`turn_every_other`). Outputs ``results.json`` (every run's
statistics) and ``results.md`` (per set and pose: registered images, 3-D points, observations, mean track length,
mean reprojection error, each stage's seconds; the mean over seeds with the range); for a scene of ``patchpose
generate scenes`` (a ``cameras.json`` beside the frames; a folder with a ``cameras.json`` of another format is
refused) also the cameras' errors against the truth (:func:`camera_errors`: centres and optical axes).
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

from ..conventions import REFERENCE_RADIUS
from ..data.keypoints import MAX_KEYPOINTS
from ..errors import InputError, is_int_in, require
from ..estimator import EstimatorLike, as_estimator
from ..integrations.colmap import SIFT_WINDOW, STAGES, best_model, check_settings, run_reconstruction
from ..integrations.extract import image_names
from ..integrations.kornia import aliked_extractor
from ..integrations.opencv import sift_descriptors
from ..matching.candidates import gradient_angles
from ..matching.collection import CollectionTurns, collection_turns, unturn_settings, upright_cue
from ..matching.describe import Describer
from ..matching.features import Features, sift_detected
from ..matching.rectify import first_pass_affine
from ..matching.upright import turn_image
from .datasets.scenes import fit_similarity, read_cameras
from .report import write_results
from .upright_eval import affine_turn

#: the rows with a learned feature (they need ``peers``): the ALIKED model each runs
LEARNED = {
    "aliked": "aliked-n16",
    "aliked_rot": "aliked-n16rot",
    "aliked_ours": "aliked-n16",
    "aliked_sift": "aliked-n16",
}
#: the rows that describe COLMAP's keypoints upright in the collection (our votes' turns; SIFT's)
UNTURNED = ("upright_ours", "upright_sift")
#: COLMAP's own pipeline at other settings of its SIFT (peers: COLMAP at its best)
COLMAP_OPTIONS = {"colmap_dsp": {"domain_size_pooling": True}}
#: the rows :func:`describe_at` describes COLMAP's keypoints for
DESCRIBED = ("sift", "pose", "network", "upright")
POSES = ("colmap", *COLMAP_OPTIONS, *DESCRIBED, *UNTURNED, *LEARNED)
#: the poses that read the model
OUR_POSES = ("network", "upright_ours", "aliked_ours")
#: the frames: as they are; frames 1, 3, 5, … turned 90° clockwise; frames 0, 2, 4, … turned (the first photo
#: sideways: where as many photos are turned as not, the upright cue decides which way is up); frames 1, 3, 5, …
#: each turned by its own angle
SETS = ("upright", "turned", "turned_first", "turned_any")
#: the sets' default (``turned_first`` only where asked: it tests un-turning's tie rule)
DEFAULT_SETS = ("upright", "turned")
DEFAULT_POSES = ("colmap", "colmap_dsp", "sift", "pose", "network", "upright", "upright_ours", "upright_sift")


def pose_estimator(estimator: EstimatorLike = None):
    """The estimator the poses of :data:`OUR_POSES` read: ``estimator`` (an estimator, a bundled model's name or a
    weights file), or ``MODELS["pose"]`` (:data:`patchpose.recipes.MODELS`) when None."""
    return as_estimator(estimator, "pose")


def describe_at(feats: Features, pose: str, est=None) -> dict:
    """COLMAP's keypoints ``feats`` (:func:`~patchpose.integrations.colmap.colmap_sift_features`) described by
    OpenCV's SIFT (:func:`~patchpose.integrations.opencv.sift_descriptors`) at ``pose`` (one of :data:`DESCRIBED`), as the
    ``describe`` of :func:`~patchpose.integrations.colmap.run_reconstruction` takes them: one row per keypoint
    written (for ``sift`` one per orientation COLMAP found at a location); ``est`` for the poses that read our model."""
    if pose not in DESCRIBED:
        raise InputError(f"pose must be one of {list(DESCRIBED)}, got {pose!r}")
    xy, scale = feats.xy, feats.sift_scale - SIFT_WINDOW
    described = scale  # the radius OpenCV's SIFT describes at (its window 5.3 times its size)
    if pose == "sift":
        counts = np.array([len(c) for c in feats.sift_ori_candidates], np.int64)
        xy, scale = np.repeat(xy, counts, 0), np.repeat(scale, counts)
        ori = np.concatenate(feats.sift_ori_candidates) if len(counts) else np.zeros(0)
        described = scale
    elif pose == "upright":
        ori = np.zeros(len(xy))
    elif pose == "pose":  # the gradient's angle on SIFT's window (recipe_poses at SIFT's keypoints)
        ori = gradient_angles(feats, feats.frame)
    else:  # network: our scale and angle, SIFT's window made our descriptor window
        if est is None:
            raise InputError("the 'network' pose needs our estimator")
        if len(xy) == 0:
            return {
                "xy": xy,
                "scale": scale,
                "ori": np.zeros(0),
                "descriptors": np.zeros((0, 128), np.float32),
            }
        o = est.estimate(feats.image, xy)
        scale, ori, radius = (
            np.asarray(a).reshape(len(xy), -1)[:, 0] for a in (o.scale, o.orientation, o.descriptor_radius)
        )
        described = np.log2(np.maximum(radius, 1e-12) / REFERENCE_RADIUS) - SIFT_WINDOW
    return {
        "xy": xy,
        "scale": scale,
        "ori": ori,
        "descriptors": sift_descriptors(feats.image, xy, described, ori),
    }


def reconstruct_at(
    images,
    out,
    pose: str,
    est=None,
    max_keypoints: int = 8192,
    seed: int = 0,
    threads=None,
    progress: bool = False,
    peers: str | Path | None = None,
) -> dict:
    """One reconstruction of the images below ``images`` at ``pose`` (:data:`POSES`) into ``out`` (``peers``: the
    folder of ALIKED's weights, for :data:`LEARNED`)."""
    if pose not in POSES:
        raise InputError(f"pose must be one of {POSES}, got {pose!r}")
    if pose in LEARNED:
        return _reconstruct_learned(images, out, pose, est, peers, max_keypoints, seed, threads, progress)
    if pose in COLMAP_OPTIONS:
        return run_reconstruction(
            images, out, {"pose": pose, "keypoints": "colmap", "max_keypoints": int(max_keypoints)},
            sift_options=COLMAP_OPTIONS[pose], max_keypoints=max_keypoints, seed=seed, threads=threads,
            progress=progress,
        )  # fmt: skip
    if pose in UNTURNED:
        settings = {"pose": pose, "keypoints": "colmap", "max_keypoints": int(max_keypoints),
                    "model": est.name if est is not None else None, "unturn": unturn_settings(est)}  # fmt: skip
        return run_reconstruction(
            images, out, settings, unturn=pose == "upright_ours", estimator=est,
            turns=sift_collection_turns if pose == "upright_sift" else None,
            max_keypoints=max_keypoints, seed=seed, threads=threads, progress=progress,
        )  # fmt: skip
    settings = {
        "pose": pose,
        "keypoints": "colmap",
        "model": est.name if est is not None else None,
        "model_fingerprint": est.fingerprint if est is not None else None,
        "plan": est.plan.__dict__ if est is not None else None,
        "max_keypoints": int(max_keypoints),
    }
    if pose == "pose":  # what it is, so that a run made by another version is not reused
        settings.update(scale="detector", angle="gradient")

    def describe(feats: Features) -> dict:
        return describe_at(feats, pose, est)

    return run_reconstruction(
        images,
        out,
        settings,
        describe=None if pose == "colmap" else describe,
        max_keypoints=max_keypoints,
        seed=seed,
        threads=threads,
        progress=progress,
    )


def sift_collection_turns(images: list[np.ndarray], max_keypoints: int = 2000) -> CollectionTurns:
    """Each photo's turn from SIFT's pairwise turns averaged as our votes' are
    (:func:`~patchpose.matching.collection.collection_turns`): ``aliked_sift``, the model-free peer at its best
    cost: SIFT detected and described once a photo, each pair's ratio-test matches → one affine map (RANSAC,
    ``rectify``'s first pass) → its turn (:func:`~.upright_eval.affine_turn`); ties of upright broken by the same
    :func:`~patchpose.matching.collection.upright_cue`."""
    describer = Describer()
    feats = [sift_detected(im, max_keypoints) for im in images]
    pairs = []
    for i in range(len(images)):
        for j in range(i + 1, len(images)):
            t = affine_turn(first_pass_affine(feats[i], feats[j], describer)[0])
            if t.found:
                pairs.append((i, j, t.degrees))
    return collection_turns(len(images), pairs, np.array([upright_cue(im) for im in images]).reshape(-1, 4))


def _reconstruct_learned(images, out, pose, est, peers, max_keypoints, seed, threads, progress) -> dict:
    """One reconstruction of a :data:`LEARNED` row."""
    if peers is None:
        raise InputError(f"the row {pose} needs --peers DIR (ALIKED's weights: {LEARNED[pose]}.pth)")
    model = LEARNED[pose]
    weights = Path(peers) / f"{model}.pth"
    extract = aliked_extractor(weights, model, max_keypoints=min(int(max_keypoints), MAX_KEYPOINTS))
    settings = {"pose": pose, "feature": model, "weights_sha256": extract.name.split("sha256:")[1].split()[0],
                "model": est.name if est is not None else None,
                "model_fingerprint": est.fingerprint if est is not None else None,
                "max_keypoints": int(max_keypoints)}  # fmt: skip
    if pose in ("aliked_ours", "aliked_sift"):  # the rules of the turns and the canvas
        settings["unturn"] = unturn_settings(est, canvas=True)
    return run_reconstruction(
        images, out, settings, extract=extract, unturn=pose == "aliked_ours",
        turns=sift_collection_turns if pose == "aliked_sift" else None, estimator=est,
        max_keypoints=max_keypoints, seed=seed, threads=threads, progress=progress,
    )  # fmt: skip


#: the seed of the turns of ``--sets turned_any`` (each turned frame's angle drawn once, uniform in [0, 360))
ANY_TURN_SEED = 0


def turn_every_other(images: str | Path, dest: str | Path, first: int = 1, any_angle: bool = False) -> Path:
    """Copy the images below ``images`` into the new folder ``dest`` (same relative names), frames 1, 3, 5,
    … of the sorted names (``first=0``: 0, 2, 4, …) turned by 90° clockwise (``cv2.rotate``), the others as they are; written as
    ``DEST.partial`` and renamed. An existing ``dest`` is taken as made by this function. ``any_angle``: each turned
    frame turned instead by its own angle, drawn uniform in [0, 360) (:data:`ANY_TURN_SEED`), on a canvas that holds
    it (:func:`~patchpose.matching.upright.turn_image`, black around), the angles written to ``DEST/turns.json``
    (degrees counter-clockwise by name)."""
    dest = Path(dest)
    names = image_names(images)
    if dest.is_dir():
        return dest
    work = dest.with_name(dest.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    angles = np.random.default_rng(ANY_TURN_SEED).uniform(0.0, 360.0, len(names))
    turned = {}
    for i, (name, path) in enumerate(names):
        target = work / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if i % 2 != first:
            shutil.copyfile(path, target)
            continue
        # the pixels as stored (as COLMAP reads the frames copied as they are), not turned by an EXIF orientation
        flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION if any_angle else cv2.IMREAD_UNCHANGED
        image = cv2.imread(str(path), flags)
        if image is None:
            raise InputError(f"cannot read image {path}")
        if any_angle:
            turned[name] = round(float(angles[i]), 3)
            image = turn_image(image, turned[name])[0]
        else:
            image = cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE)
        if not cv2.imwrite(str(target), image):
            raise InputError(f"cannot write {target}")
    if any_angle:
        (work / "turns.json").write_text(json.dumps(turned, indent=1))
    os.replace(work, dest)
    return dest


#: what :func:`camera_errors` gives a run
CAMERA_ERRORS = ("centre_error_median", "centre_error_max", "view_error_median", "view_error_max")


def camera_errors(run_dir: str | Path, cameras: dict[str, dict]) -> dict:
    """Where the truth is known (``cameras``, :func:`~patchpose.evaluation.datasets.scenes.read_cameras`): the
    cameras of the model with the most registered images (then points) in ``run_dir/sparse/`` against the true ones
    after the similarity that best maps the found centres, and a point 1 m ahead of each, onto the true ones
    (:func:`~patchpose.evaluation.datasets.scenes.fit_similarity`): ``centre_error_median`` / ``_max`` (metres) and
    ``view_error_median`` / ``_max`` (degrees between each camera's optical axis and the truth's: blind to a turn
    of the frame about it, so the turned sets compare as the upright one). None where fewer than 3 frames are
    registered or their centres fix no similarity (a line); with few frames the fit takes up most of an error."""
    import pycolmap

    none = dict.fromkeys(CAMERA_ERRORS)
    sparse = Path(run_dir) / "sparse"
    folders = [d for d in sparse.iterdir() if d.name.isdigit()] if sparse.is_dir() else []
    best = best_model(pycolmap.Reconstruction(str(d)) for d in sorted(folders, key=lambda d: int(d.name)))
    found, true, axes, true_axes = [], [], [], []
    for image in best.images.values() if best is not None else []:
        if image.has_pose and image.name in cameras:
            c = cameras[image.name]
            found.append(image.projection_center())
            true.append(-c["R"].T @ c["t"])
            axes.append(image.cam_from_world().rotation.matrix()[2])  # the optical axis in the model's world
            true_axes.append(c["R"][2])
    if len(found) < 3:
        return none
    found, true, axes, true_axes = (np.array(a) for a in (found, true, axes, true_axes))
    try:
        # centres alone leave the turn about their line free where they lie near one (a walk): the fit also takes a
        # point 1 m ahead of each camera (in the model's units by the centres' scale)
        s0 = fit_similarity(found, true)[0]
        scale, R, t = fit_similarity(
            np.concatenate([found, found + axes / s0]), np.concatenate([true, true + true_axes])
        )
    except InputError:
        return none
    centre = np.linalg.norm(scale * found @ R.T + t - true, axis=1)
    cos = np.clip(np.sum((axes @ R.T) * true_axes, axis=1), -1.0, 1.0)
    view = np.degrees(np.arccos(cos))
    return {
        "centre_error_median": round(float(np.median(centre)), 4),
        "centre_error_max": round(float(centre.max()), 4),
        "view_error_median": round(float(np.median(view)), 3),
        "view_error_max": round(float(view.max()), 3),
    }


def _run_name(pose: str, model: str | None, seed: int) -> str:
    return f"{pose}@{model}-seed{seed}" if model else f"{pose}-seed{seed}"


def evaluate_colmap(
    images: str | Path,
    out: str | Path,
    weights: EstimatorLike = None,
    *,
    poses: Sequence[str] = DEFAULT_POSES,
    seeds: Sequence[int] = (0, 1, 2),
    sets: Sequence[str] = DEFAULT_SETS,
    threads: int | None = 1,
    max_keypoints: int = 8192,
    progress: bool = True,
    peers: str | Path | None = None,
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
    require("pycolmap", "colmap")  # before the turned copies are written
    folder = Path(images)
    image_names(folder)  # a missing or empty folder is an error before any work
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    est = pose_estimator(weights) if any(p in OUR_POSES for p in poses) else None
    cameras = read_cameras(folder)  # a rendered scene's ('generate scenes'): the cameras' errors too
    folders = {"upright": folder}
    if "turned" in sets:
        folders["turned"] = turn_every_other(folder, out / "turned_images")
    if "turned_first" in sets:
        folders["turned_first"] = turn_every_other(folder, out / "turned_first_images", first=0)
    if "turned_any" in sets:
        folders["turned_any"] = turn_every_other(folder, out / "turned_any_images", any_angle=True)
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
                    seed,
                    threads,
                    progress,
                    peers,
                )
                if cameras is not None:
                    stats = {**stats, **camera_errors(run_dir, cameras)}
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


#: the statistics :func:`summarize` gives of each run (``{stage}_seconds``: each of
#: :data:`~patchpose.integrations.colmap.STAGES`)
STATISTICS = (
    "registered",
    "points3D",
    "distinct_points3D",
    "observations",
    "track_length",
    "reprojection_px",
    *CAMERA_ERRORS,
    *(f"{stage}_seconds" for stage in STAGES),
    "seconds",
)


def summarize(runs: list[dict]) -> list[dict]:
    """Per (set, pose, model), in run order: the mean, min and max over seeds of each of :data:`STATISTICS`."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["set"], r["pose"], r["model"]), []).append(r)
    rows = []
    for (s, pose, model), rs in groups.items():
        row = {"set": s, "pose": pose, "model": model, "runs": len(rs), "images": rs[0]["images"]}
        for key in STATISTICS:
            got = [
                r["stage_seconds"].get(key[: -len("_seconds")]) if key.endswith("_seconds") else r.get(key)
                for r in rs
            ]
            v = np.array([np.nan if x is None else x for x in got], np.float64)
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
    truth = any(r["centre_error_median"]["mean"] is not None for r in doc["summary"])
    lines = [
        f"COLMAP incremental mapping of {doc['images']} (mean over seeds {doc['seeds']}, min–max in brackets; "
        f"{doc['threads'] or 'all'} thread(s))",
        "",
        "| frames | pose | registered | 3-D points (distinct) | observations | track length | reproj. px | "
        + ("camera centre error m; optical axis error °: median / max | " if truth else "")
        + "seconds: "
        + " / ".join(STAGES)
        + " / all |",
        "|---|---|---|---|---|---|---|---|" + ("---|" if truth else ""),
    ]
    for r in doc["summary"]:
        name = f"{r['pose']} ({r['model']})" if r["model"] else r["pose"]
        reg = r["registered"]
        reg_cell = f"{_cell(reg, '.0f' if reg['min'] == reg['max'] else '.1f')}/{r['images']}"
        times = " / ".join(_cell(r[k], ".1f", False) for k in (*(f"{k}_seconds" for k in STAGES), "seconds"))
        lines.append(
            f"| {r['set']} | {name} | {reg_cell} | {_cell(r['points3D'], ',.0f')} "
            f"({_cell(r['distinct_points3D'], ',.0f', False)}) | {_cell(r['observations'], ',.0f')} | "
            f"{_cell(r['track_length'], '.2f', False)} | {_cell(r['reprojection_px'], '.2f', False)} | "
            + (
                f"{_cell(r['centre_error_median'], '.3f')} / {_cell(r['centre_error_max'], '.3f')}; "
                f"{_cell(r['view_error_median'], '.2f')} / {_cell(r['view_error_max'], '.2f')} | "
                if truth
                else ""
            )
            + f"{times} |"
        )
    return "\n".join(lines) + "\n"


__all__ = [
    "POSES",
    "UNTURNED",
    "DESCRIBED",
    "COLMAP_OPTIONS",
    "LEARNED",
    "OUR_POSES",
    "sift_collection_turns",
    "STATISTICS",
    "describe_at",
    "reconstruct_at",
    "evaluate_colmap",
    "turn_every_other",
    "summarize",
    "results_markdown",
    "SETS",
    "DEFAULT_SETS",
    "DEFAULT_POSES",
    "pose_estimator",
    "camera_errors",
]
