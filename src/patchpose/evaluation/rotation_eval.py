"""In-plane rotation matching with OpenCV (Roto-360 style): does ``cv2.SIFT.compute`` match
better on our keypoint poses (:func:`patchpose.assign`) than on SIFT's own?

Each photo is turned about its centre by 0°, 10°, …, 350° (same canvas; the corners that leave it are lost).
SIFT keypoints are detected in both images (one per location) and described by OpenCV's SIFT descriptor
at these poses: SIFT's own (where SIFT found several orientations at a location, the first it lists, as
any one-per-location pipeline would keep), ours (:func:`patchpose.assign`, whose sizes make SIFT's window
cover the model's calibrated descriptor window, as in the matching pipeline), ours at SIFT's size
(``keep_size``: SIFT's size kept, our angle read in its frame), SIFT's own angle resolved by ours (where
SIFT found several, the one nearest our angle: :func:`patchpose.resolve_orientations`), and upright (SIFT's
size, angle 0, the lower bound); the peers users run at SIFT's keypoints without SIFT's angle, each in
SIFT's window (SIFT's size kept): kornia's dominant gradient (``dominant_gradient``) and, with the
peers' weights (``peers``), OriNet as kornia reads it (``orinet``); and one **blended descriptor** per
keypoint (:func:`patchpose.integrations.opencv.compute_blended`, :data:`BLEND_ROWS`: our top-k angles at
our scale, the gradient histogram's peaks at our scale, and at SIFT's size). One more row is SIFT as it comes, a keypoint per orientation
(``sift_all_orientations``): about a fifth more keypoints than the other rows, so a reference, not a rival
at equal cost. Matches are mutual nearest neighbours (``cv2.BFMatcher(crossCheck=True)``); MMA@t is the
share within t px of the true rotation, averaged over pairs. Outputs ``results.json``, ``results.md``.

Positions: ``cv2.SIFT_create()`` reports keypoints a quarter pixel right of and below what it found
(:data:`~patchpose.conventions.OPENCV_SIFT_XY_BIAS`), and turning the image does not turn that shift. The
true rotation is applied to pixel-centre positions (:func:`~patchpose.interop.keypoint_xy`), our model reads
there (``assign``'s ``xy_bias``), and ``cv2.SIFT.compute`` gets OpenCV's own ``pt``, as it expects. (Without
the correction a keypoint found again would sit up to 0.71 px off its true position at 180°, on every row, and
our angle, which rests on content near the keypoint, would be read there.)

The inputs are checked before any work (:class:`~patchpose.errors.InputError` otherwise): at least one
photo, and at least one angle that is not a multiple of 360° (``patchpose eval rotation --step S --start A``
turns by ``A, A + S, … < A + 360``, so ``S`` must be an integer from 1 to 359 and ``A`` one from 0 to 359:
:func:`rotation_angles`); a run
where no photo has the 10 SIFT keypoints it needs is an error too, not a table of NaNs.

A diagnostic goes with it: the **angle error at the keypoints SIFT finds again** (a keypoint of the turned
image within 1 px of a keypoint's true position and within ±1/4 octave of its size), for each row's angle,
split by how far from the true position the keypoint was found again (``ANGLE_OFFSET_BINS``, pixels), and
once more with our angle read at the keypoint's true position in the turned image
(``ours_at_sift_size_true_position``): the difference between the two is what the re-detection offset costs.

How sure the MMA numbers are: the turned copies of one photo are not independent (a photo with repetitive
texture is hard at every angle), so ``bootstrap`` replicates resample **photos**, each with all its turns, the
same draws for every row (:func:`mma_intervals`), and give 95 % intervals
of every row's MMA and of every row minus SIFT's own pose (``doc["intervals"]``).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import cv2
import numpy as np

from ..conventions import (
    OPENCV_SIFT_WINDOW_PER_SIZE,
    REFERENCE_RADIUS,
    similarity_about,
    to_cv2_size_angle,
)
from ..errors import InputError, is_int_in, require
from ..fileio import write_npz, write_text_atomic
from ..geometry import apply_homography
from ..interop import keypoint_xy
from .hpatches_eval import model_digest
from .intervals import (
    DEFAULT_REPLICATES,
    check_bootstrap,
    format_fraction_interval,
    mean_interval_rows,
    mean_intervals,
)
from .metrics import redetections
from .report import write_results

BASE_ROWS = ("sift", "ours", "ours_at_sift_size", "sift_resolved_by_ours", "dominant_gradient", "upright")
#: rows that need the peers' weights (:class:`~patchpose.evaluation.peers.Peers`)
PEER_ROWS = ("orinet",)
#: the rows whose angle :func:`peer_angles` reads
PEER_ANGLE_ROWS = ("dominant_gradient", *PEER_ROWS)
#: one blended descriptor per keypoint (:func:`patchpose.integrations.opencv.compute_blended`), each with the
#: settings of the matching pipeline's row of that name: our top-k angles at our scale, the gradient
#: histogram's peaks at our scale, and at SIFT's size
BLEND_ROWS = {
    "ours_blend": {"orientations": "ours", "keep_size": False},
    "ours_scale_gradient_blend": {"keep_size": False},
    "dominant_gradient_blend": {"keep_size": True},
}
ROWS = (*BASE_ROWS, *BLEND_ROWS, "sift_all_orientations")
ANGLE_ROWS = ("sift", "ours", "ours_at_sift_size", "sift_resolved_by_ours", "dominant_gradient", "orinet")
#: the angle diagnostic's extra row: our angle read at the true position of each keypoint found again
TRUE_POSITION_ROW = "ours_at_sift_size_true_position"
ANGLE_OFFSET_BINS = ((0.0, 0.25), (0.25, 0.5), (0.5, 1.0))
#: a photo (and each turned copy) needs this many SIFT locations to be evaluated
MIN_KEYPOINTS = 10


def rotation_angles(step, start=0) -> tuple[int, ...]:
    """The angles ``start, start + step, … < start + 360`` (degrees); :class:`InputError` unless ``step`` is an
    integer from 1 to 359 (0 or less gives no angles, 360 or more only the unturned photo) and ``start`` an
    integer from 0 to 359 (``start=5, step=10`` gives 5°, 15°, …, 355°: turns that the default run does not
    measure)."""
    if not is_int_in(step, 1, 359, integral_floats=True):
        raise InputError(f"the rotation step (--step) must be an integer from 1 to 359 degrees, got {step!r}")
    if not is_int_in(start, 0, 359, integral_floats=True):
        raise InputError(
            f"the first rotation (--start) must be an integer from 0 to 359 degrees, got {start!r}"
        )
    return tuple(range(int(start), int(start) + 360, int(step)))


def check_angles(angles) -> tuple[float, ...]:
    """The rotation angles (degrees) as a tuple; :class:`InputError` unless they are finite numbers, at
    least one of them a real turn (not a multiple of 360°)."""
    try:
        values = tuple(angles)
        arr = np.asarray(values, np.float64)
    except (TypeError, ValueError):
        raise InputError(f"angles must be numbers (degrees), got {angles!r}") from None
    if arr.ndim != 1 or not np.isfinite(arr).all():
        raise InputError(f"angles must be finite numbers (degrees), got {angles!r}")
    if not np.any(arr % 360):
        raise InputError(
            f"no rotation to evaluate (angles {list(values)}): give angles other than 0° "
            "(with --step, an integer from 1 to 359)"
        )
    return values


def found_again(k0, k1, H: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices ``i`` into ``k0`` and ``j`` into ``k1`` of the keypoints found again (mutually nearest within
    1 px of the true position ``H·x0``, size within ±1/4 octave; pixel-centre positions, :func:`~patchpose.interop.keypoint_xy`),
    and the distances ``d`` (px)."""
    i, j, d = redetections(apply_homography(H, keypoint_xy(k0)), keypoint_xy(k1), 1.0)
    s0 = np.array([k.size for k in k0])[i]
    s1 = np.array([k.size for k in k1])[j]
    ok = np.abs(np.log2(s1 / s0)) <= 0.25
    return i[ok], j[ok], d[ok]


def _wrapped(a1, a0, angle_deg: float) -> np.ndarray:
    return np.abs((np.asarray(a1) - np.asarray(a0) + angle_deg + 180.0) % 360.0 - 180.0)


def angle_errors(views0: dict, views1: dict, H: np.ndarray, angle_deg: float) -> dict:
    """Per row of ``ANGLE_ROWS`` in ``views0``, ``(n, 2)`` rows ``[|angle error| in degrees, re-detection
    offset in px]`` at the keypoints of image 0 found again in image 1 (:func:`found_again`; every row's
    list is aligned with ``views["sift"]``).

    ``cv2.KeyPoint.angle`` is clockwise as displayed, and turning the image counter-clockwise by ``a``
    changes it by ``−a``: the error is ``angle1 − angle0 + a``, wrapped to (−180°, 180°]."""
    i, j, d = found_again(views0["sift"], views1["sift"], H)
    out = {}
    for r in (r for r in ANGLE_ROWS if r in views0):
        a0 = np.array([k.angle for k in views0[r]])[i]
        a1 = np.array([k.angle for k in views1[r]])[j]
        out[r] = np.stack([_wrapped(a1, a0, angle_deg), d], axis=1)
    return out


def true_position_errors(
    img1, views0: dict, views1: dict, H: np.ndarray, angle_deg: float, est
) -> np.ndarray:
    """Like :func:`angle_errors` for ``ours_at_sift_size``, but our angle in image 1 read at the keypoint's
    *true* position ``H·x0`` (with the size SIFT found again): what our angle would be with a detector
    that finds its keypoints again exactly. The offset column is still the re-detection's, so the two
    tables compare keypoint for keypoint."""
    from ..integrations.opencv import assign

    i, j, d = found_again(views0["sift"], views1["sift"], H)
    if len(i) == 0:
        return np.zeros((0, 2))
    x1 = apply_homography(H, keypoint_xy([views0["sift"][q] for q in i]))  # pixel-centre positions
    k1 = [cv2.KeyPoint(*x, views1["sift"][q].size) for x, q in zip(x1, j)]
    a1 = [k.angle for k in assign(img1, k1, est, keep_size=True, xy_bias=0.0)]
    a0 = np.array([k.angle for k in views0["ours_at_sift_size"]])[i]
    return np.stack([_wrapped(a1, a0, angle_deg), d], axis=1)


def summarise_angle_errors(errs: dict) -> dict:
    """``{row: {"LO-HI px": {"n", "median_deg", "within_5", "within_10", "over_90"}}}`` (shares in [0, 1])."""
    out = {}
    for r, v in errs.items():
        v = np.concatenate(v) if v else np.zeros((0, 2))
        out[r] = {}
        for lo, hi in ((0.0, 1.0), *ANGLE_OFFSET_BINS):  # each bin [lo, hi), the last one up to 1 px included
            e = v[(v[:, 1] >= lo) & ((v[:, 1] < hi) | (hi == 1.0)), 0]
            out[r][f"{lo:g}-{hi:g} px"] = {
                "n": int(len(e)),
                "median_deg": float(np.median(e)) if len(e) else float("nan"),
                "within_5": float(np.mean(e <= 5)) if len(e) else float("nan"),
                "within_10": float(np.mean(e <= 10)) if len(e) else float("nan"),
                "over_90": float(np.mean(e > 90)) if len(e) else float("nan"),
            }
    return out


def _dedupe(kps):
    seen, out = set(), []
    for k in sorted(kps, key=lambda k: -k.response):
        key = (round(k.pt[0], 2), round(k.pt[1], 2))
        if key not in seen:
            seen.add(key)
            out.append(k)
    return out


def peer_angles(img, kps, row: str, peers=None) -> list[cv2.KeyPoint]:
    """SIFT's keypoints ``kps`` with SIFT's size kept and the angle of a peer read in SIFT's descriptor
    window (half-width ``OPENCV_SIFT_WINDOW_PER_SIZE · size``), as the matching pipeline's rows of that name
    read it in a detector's frame (:data:`~patchpose.evaluation.rows.ROWS`): ``dominant_gradient``
    (kornia's ``PatchDominantGradientOrientation``) or ``orinet`` (OriNet through kornia's ``LAFOrienter``;
    ``peers``: :class:`~patchpose.evaluation.peers.Peers`)."""
    from .rows import Image, Run, detect, get_row

    if row not in PEER_ANGLE_ROWS:
        raise InputError(f"unknown peer row {row!r}; the peer rows are {PEER_ANGLE_ROWS}")
    if not kps:
        return []
    size = np.array([k.size for k in kps], np.float64)
    feats = replace(
        detect(img, keypoints=keypoint_xy(kps)),
        detector_scale=np.log2(OPENCV_SIFT_WINDOW_PER_SIZE * size / REFERENCE_RADIUS),
    )
    _, theta = get_row(row).poses(Run(None, peers=peers), Image(feats))
    _, angle = to_cv2_size_angle(0.0, theta[:, 0])
    return [
        cv2.KeyPoint(*k.pt, k.size, float(a), k.response, k.octave, k.class_id) for k, a in zip(kps, angle)
    ]


def _views(img, detected, est, peers=None) -> dict:
    """The keypoints of every row, one per location (:func:`_dedupe` of SIFT's ``detected`` keypoints):
    SIFT's own, ours, SIFT's size with our angle, SIFT's angle nearest ours where SIFT found several
    (:func:`patchpose.integrations.opencv.resolve_orientations`), the peers' angles in SIFT's window
    (:func:`peer_angles`; OriNet with ``peers``), and upright."""
    from ..integrations.opencv import assign, resolve_orientations

    kps = _dedupe(detected)
    resolved = {(k.pt, k.size): k for k in resolve_orientations(img, detected, est)}
    return {
        "sift": kps,
        # our size: SIFT's window made to cover the model's calibrated descriptor window
        "ours": assign(img, kps, est),
        # SIFT's size, our angle read in the frame of SIFT's window
        "ours_at_sift_size": assign(img, kps, est, keep_size=True),
        "sift_resolved_by_ours": [resolved[(k.pt, k.size)] for k in kps],
        "dominant_gradient": peer_angles(img, kps, "dominant_gradient"),
        **({"orinet": peer_angles(img, kps, "orinet", peers)} if peers is not None else {}),
        "upright": [cv2.KeyPoint(*k.pt, k.size, 0, k.response, k.octave, k.class_id) for k in kps],
        # SIFT as it comes: a keypoint per orientation (more keypoints than the other rows; MMA only)
        "sift_all_orientations": sorted(detected, key=lambda k: -k.response),
    }


def _described(sift, gray, views: dict, est) -> tuple[dict, dict]:
    """Per row, the keypoints ``cv2.SIFT.compute`` kept and their descriptors (match indices refer to the
    kept list, which OpenCV may shorten), and for the :data:`BLEND_ROWS` one blended descriptor per keypoint of
    SIFT's (``views["sift"]``; ``est`` for those that read the model)."""
    from ..integrations.opencv import compute_blended

    kept, desc = {}, {}
    for r, v in views.items():
        kept[r], desc[r] = sift.compute(gray, v)
    for r, kw in BLEND_ROWS.items():
        kept[r], desc[r] = compute_blended(sift, gray, views["sift"], est, **kw)
    return kept, desc


#: raised whenever the code changes what a photo's cached turns hold or how they are computed
CACHE_VERSION = 1


def _content_hash(p) -> str:
    try:
        return hashlib.sha256(Path(p).read_bytes()).hexdigest()[:16]
    except OSError as e:
        raise InputError(f"cannot read {p}: {e.strerror or e}") from None


def _cache_folder(out: Path, est, peers, angles, max_keypoints, max_side, thresholds, rows) -> Path:
    """``OUT/cache/<setting>``: a photo's results are reused only under the very settings, model (its
    parameters) and peers' files that computed them."""
    setting = json.dumps(
        {
            "model_digest": model_digest(est.model),
            "model_config": est.cfg.to_dict(),
            "plan": asdict(est.plan),
            "peers": None if peers is None else peers.fingerprint(list(PEER_ROWS)),
            "angles": list(angles),
            "max_keypoints": max_keypoints,
            "max_side": max_side,
            "thresholds": list(thresholds),
            "rows": list(rows),
            "cache_version": CACHE_VERSION,
        },
        sort_keys=True,
    )
    cache = out / "cache" / hashlib.sha256(setting.encode()).hexdigest()[:12]
    cache.mkdir(parents=True, exist_ok=True)
    write_text_atomic(cache / "setting.json", setting)
    return cache


def _photo_arrays(p, est, peers, angles, max_keypoints, max_side, thresholds, rows) -> dict[str, np.ndarray]:
    """One photo against its turned copies, as arrays for the cache: ``used`` (whether it has
    :data:`MIN_KEYPOINTS`), and per row ``mma|ROW|i`` (MMA at each threshold at the i-th angle),
    ``matches|ROW`` (the matches of each turn described) and ``errors|ROW|i`` (:func:`angle_errors`)."""
    from ..data.patches import load_image, resize_long_side

    sift = cv2.SIFT_create(nfeatures=max_keypoints)
    bf = cv2.BFMatcher(cv2.NORM_L2, crossCheck=True)
    img, _ = resize_long_side(load_image(p), max_side)
    h, w = img.shape[:2]
    g0 = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    det0 = sift.detect(g0, None)
    if len(_dedupe(det0)) < MIN_KEYPOINTS:
        return {"used": np.array(False)}
    arrays: dict[str, np.ndarray] = {"used": np.array(True)}
    matches: dict = {r: [] for r in rows}
    views0 = _views(img, det0, est, peers)
    kept0, d0 = _described(sift, g0, views0, est)
    for i, a in enumerate(angles):
        H = similarity_about(((w - 1) / 2, (h - 1) / 2), 0.0, np.radians(a))
        img1 = cv2.warpAffine(img, H[:2], (w, h), flags=cv2.INTER_LINEAR)
        g1 = cv2.cvtColor(img1, cv2.COLOR_RGB2GRAY)
        det1 = sift.detect(g1, None)
        if len(_dedupe(det1)) < MIN_KEYPOINTS:
            arrays.update({f"mma|{r}|{i}": np.zeros(len(thresholds)) for r in rows})
            continue
        views1 = _views(img1, det1, est, peers)
        if a % 360:
            for r, e in angle_errors(views0, views1, H, a).items():
                arrays[f"errors|{r}|{i}"] = e
            arrays[f"errors|{TRUE_POSITION_ROW}|{i}"] = true_position_errors(img1, views0, views1, H, a, est)
        kept1, d1 = _described(sift, g1, views1, est)
        for r in rows:
            m = bf.match(d0[r], d1[r])
            matches[r].append(len(m))
            if not m:
                arrays[f"mma|{r}|{i}"] = np.zeros(len(thresholds))
                continue
            x0 = keypoint_xy([kept0[r][q.queryIdx] for q in m])
            x1 = keypoint_xy([kept1[r][q.trainIdx] for q in m])
            e = np.linalg.norm(apply_homography(H, x0) - x1, axis=1)
            arrays[f"mma|{r}|{i}"] = np.array([np.mean(e <= t) for t in thresholds], np.float64)
    arrays.update({f"matches|{r}": np.array(v, np.int64) for r, v in matches.items()})
    return arrays


def evaluate_rotation(
    photos: list[Path],
    out_dir: str | Path,
    weights: str | None = None,
    angles=tuple(range(0, 360, 10)),
    max_keypoints: int = 1000,
    max_side: int = 640,
    thresholds=(1, 3, 5, 10),
    progress: bool = True,
    bootstrap: int = DEFAULT_REPLICATES,
    read_plan: dict | None = None,
    peers=None,
) -> dict:
    """Match every photo against its turned copies at every pose row; write ``results.json`` and
    ``results.md`` to ``out_dir``. ``photos`` must not be empty and ``angles`` must hold a real turn
    (:func:`check_angles`); photos with fewer than ``MIN_KEYPOINTS`` SIFT locations are skipped, and a run
    that skips them all raises :class:`InputError`. ``bootstrap`` replicates over photos (0: none) give the
    MMA intervals (:func:`mma_intervals`). ``read_plan``: changes to the model's read plan
    (:meth:`patchpose.ReadPlan.replace`), or None. ``peers``: the peers' weights folder (or its
    :class:`~patchpose.evaluation.peers.Peers`) for the ``orinet`` row, or None."""
    tqdm = require("tqdm", "eval").tqdm
    from ..estimator import PatchPoseEstimator
    from .peers import Peers

    t0 = time.time()
    photos = list(photos)
    if not photos:
        raise InputError("no photos to evaluate: the folder (or split) holds no images (.png, .jpg, …)")
    angles = check_angles(angles)
    check_bootstrap(bootstrap)
    if not is_int_in(max_keypoints, 1):
        raise InputError(f"max_keypoints must be a positive integer, got {max_keypoints!r}")
    est = PatchPoseEstimator.load(weights).with_plan(**(read_plan or {}))
    if peers is not None and not isinstance(peers, Peers):
        peers = Peers(peers)
    rows = (*BASE_ROWS, *BLEND_ROWS, *(PEER_ROWS if peers is not None else ()), "sift_all_orientations")
    angle_rows = tuple(r for r in ANGLE_ROWS if r in rows)
    per_angle = {r: {a: [] for a in angles} for r in rows}
    n_matches: dict = {r: [] for r in rows}
    errs: dict = {r: [] for r in (*angle_rows, TRUE_POSITION_ROW)}
    used = 0  # photos with enough keypoints
    names: list[str] = []
    out = Path(out_dir)
    cache = _cache_folder(out, est, peers, angles, max_keypoints, max_side, thresholds, rows)
    for p in tqdm(photos, desc="photos", disable=not progress):
        # by the photo's bytes (its name cut short, for whoever looks): a photo changed under its name is new
        f = cache / f"{Path(p).stem[:40]}.{_content_hash(p)}.npz"
        if not f.is_file():  # each photo's turns once: a stopped run resumes at the first photo not done
            write_npz(f, _photo_arrays(p, est, peers, angles, max_keypoints, max_side, thresholds, rows))
        with np.load(f, allow_pickle=False) as z:
            if z["used"]:
                used += 1
                names.append(Path(p).name)
                for r in rows:
                    for i, a in enumerate(angles):
                        per_angle[r][a].append(z[f"mma|{r}|{i}"].tolist())
                    n_matches[r] += z[f"matches|{r}"].tolist()
                for r in errs:
                    errs[r] += [
                        z[f"errors|{r}|{i}"] for i in range(len(angles)) if f"errors|{r}|{i}" in z.files
                    ]
    if not used:
        raise InputError(
            f"none of the {len(photos)} photos has {MIN_KEYPOINTS} SIFT keypoints (blank or too small?): "
            "nothing to evaluate"
        )
    curves = {r: {str(a): np.mean(v, axis=0).tolist() for a, v in per_angle[r].items() if v} for r in rows}
    overall = {r: np.mean([c for c in curves[r].values()], axis=0).tolist() for r in rows}
    doc = {
        "angles_deg": list(angles),
        "thresholds_px": list(thresholds),
        "mma_overall": overall,
        "mma_per_angle": curves,
        "matches": {r: float(np.mean(v)) if v else 0.0 for r, v in n_matches.items()},
        "angle_consistency": summarise_angle_errors(errs),
        "intervals": mma_intervals(per_angle, thresholds, bootstrap) if bootstrap else {},
        "by_rotation": by_rotation(per_angle, thresholds, bootstrap),
        "mma_per_photo": per_photo(per_angle, names),
        "photos": len(photos),
        "photos_used": used,
        "model": est.meta.get("name", str(weights)),
        "plan": asdict(est.plan),
        "seconds": time.time() - t0,
    }
    lines = [
        "# In-plane rotation matching with OpenCV SIFT descriptors",
        "",
        f"{len(photos)} photos × {len(angles)} rotations ({_angle_list(angles)}); SIFT keypoints (≤ {max_keypoints}); descriptors by "
        f"`cv2.SIFT.compute` at each pose; mutual nearest neighbours. Model `{doc['model']}`. {doc['seconds']:.0f} s.",
        "",
        "| pose | matches | " + " | ".join(f"MMA@{t}px" for t in thresholds) + " |",
        "|---|---|" + "---|" * len(thresholds),
    ]
    for r in rows:
        mma = " | ".join(f"{v:.3f}" for v in overall[r])
        lines.append(f"| {r} | {doc['matches'][r]:.1f} | {mma} |")
    lines += _intervals_markdown(doc["intervals"], used)
    lines += _by_rotation_markdown(doc["by_rotation"], thresholds)
    lines += _per_photo_markdown(doc["mma_per_photo"], thresholds)
    lines += [
        "",
        "## Angle error at the keypoints SIFT finds again",
        "",
        "Keypoints of the turned image within 1 px of a keypoint's true position (size within ±1/4 octave), "
        "every rotation but 0°; by the distance between the true and the re-detected position. Median error "
        "in degrees; shares within 5°, within 10° and beyond 90°. `ours_at_sift_size_true_position`: our "
        "angle in the turned image read at the keypoint's true position instead of where SIFT found it "
        "(the offset column is still SIFT's): what the re-detection offset costs our angle.",
        "",
        "| pose | offset | keypoints | median ° | ≤ 5° | ≤ 10° | > 90° |",
        "|---|---|---|---|---|---|---|",
    ]
    for r, bins in doc["angle_consistency"].items():
        for b, v in bins.items():
            lines.append(
                f"| {r} | {b} | {v['n']} | {v['median_deg']:.2f} | {v['within_5']:.3f} | "
                f"{v['within_10']:.3f} | {v['over_90']:.3f} |"
            )
    write_results(out, doc, "\n".join(lines) + "\n")
    return doc


def _angle_list(angles) -> str:
    """``"0°, 10°, …, 350°"``: the turns of a run, shortened past four."""
    deg = [f"{a:g}°" for a in angles]
    return ", ".join(deg if len(deg) <= 4 else deg[:2] + ["…", deg[-1]])


def _measured_angles(per_angle: dict) -> list:
    """The angles of ``per_angle`` (:func:`mma_intervals`' layout) that hold any photo."""
    return [a for a, v in per_angle["sift"].items() if v]


#: bands of the turn's distance from upright, ``min(a, 360 − a)`` in degrees, ``[lo, hi]`` both included
ROTATION_BANDS = ((0, 0), (1, 44), (45, 89), (90, 180))


def rotation_band(angle_deg: float) -> str:
    """The :data:`ROTATION_BANDS` name (``"LO-HI°"``) of a turn by ``angle_deg`` (by its distance from
    upright, so 350° is in the band of 10°; a band holds every whole degree from LO to HI)."""
    d = float(angle_deg) % 360.0
    d = min(d, 360.0 - d)
    for lo, hi in ROTATION_BANDS:
        if d <= hi + 0.5:
            return f"{lo}-{hi}°"
    raise AssertionError("unreachable: every distance from upright is at most 180°")


def by_rotation(per_angle: dict, thresholds, replicates: int) -> dict:
    """Per :data:`ROTATION_BANDS` band that holds angles: ``{"angles": [...], "mma": {row: [MMA@t ...]},
    "intervals": mma_intervals(...) of those angles only}`` (intervals empty when ``replicates`` is 0): how the
    poses compare under small turns, where a gradient histogram barely moves, and under large ones."""
    out = {}
    for lo, hi in ROTATION_BANDS:
        name = f"{lo}-{hi}°"
        angles = [a for a in _measured_angles(per_angle) if rotation_band(a) == name]
        if not angles:
            continue
        band = {r: {a: per_angle[r][a] for a in angles} for r in per_angle}
        out[name] = {
            "angles": angles,
            "mma": {r: np.mean([np.mean(band[r][a], axis=0) for a in angles], axis=0).tolist() for r in band},
            "intervals": mma_intervals(band, thresholds, replicates) if replicates else {},
        }
    return out


def per_photo(per_angle: dict, names: list[str]) -> dict:
    """``{row: {photo: [MMA@t ...]}}``: each photo's MMA averaged over its turns."""
    angles = _measured_angles(per_angle)
    return {
        r: {n: np.mean([per_angle[r][a][i] for a in angles], axis=0).tolist() for i, n in enumerate(names)}
        for r in per_angle
    }


def mma_intervals(per_angle: dict, thresholds, replicates: int) -> dict:
    """95 % intervals of each row's MMA and of each row minus ``sift``, resampling photos.

    ``per_angle[row][angle]``: one list ``[MMA@t for t in thresholds]`` per photo, in the same photo order for
    every row and angle (what :func:`evaluate_rotation` collects). Returns, for every threshold ``T``,
    ``{"mma@Tpx": ...}`` with :func:`~patchpose.evaluation.intervals.mean_intervals` of that column (MMA as
    fractions, photos as clusters, ``minus_reference`` = row − sift)."""
    angles = _measured_angles(per_angle)
    clusters = np.concatenate([np.arange(len(per_angle["sift"][a])) for a in angles])
    return {
        f"mma@{t}px": mean_intervals(
            {r: np.concatenate([np.asarray(per_angle[r][a])[:, ti] for a in angles]) for r in per_angle},
            clusters,
            "sift",
            replicates,
        )
        for ti, t in enumerate(thresholds)
    }


def _column(thresholds) -> int:
    """The threshold column the summary tables show: 3 px when measured, else the first."""
    return list(thresholds).index(3) if 3 in list(thresholds) else 0


def _by_rotation_markdown(bands: dict, thresholds) -> list[str]:
    c = _column(thresholds)
    t = list(thresholds)[c]
    lines = [
        "",
        f"## By how far the photo is turned (MMA@{t}px)",
        "",
        "Turns grouped by their distance from upright (350° is 10° away). Each row, then each row minus SIFT's "
        "own pose with its 95 % interval over photos (same bootstrap as above) when one was asked for.",
        "",
        "| pose | " + " | ".join(f"{b} ({len(v['angles'])} turns)" for b, v in bands.items()) + " |",
        "|---|" + "---|" * len(bands),
    ]
    rows = next(iter(bands.values()))["mma"] if bands else {}
    for r in rows:
        lines.append(f"| {r} | " + " | ".join(f"{v['mma'][r][c]:.3f}" for v in bands.values()) + " |")
    for r in rows:
        if r == "sift":
            continue
        cells = []
        for v in bands.values():
            iv = v["intervals"].get(f"mma@{t}px") if v["intervals"] else None
            d = v["mma"][r][c] - v["mma"]["sift"][c]
            cells.append(
                format_fraction_interval(iv["minus_reference"][r], True)
                if iv
                else f"{d:+.3f}".replace("-", "−")
            )
        lines.append(f"| {r} − sift | " + " | ".join(cells) + " |")
    return lines


def _per_photo_markdown(photos: dict, thresholds) -> list[str]:
    c = _column(thresholds)
    t = list(thresholds)[c]
    names = list(photos["sift"])
    lines = [
        "",
        f"## Per photo (MMA@{t}px over its turns)",
        "",
        "| photo | " + " | ".join(photos) + " | ours − sift |",
        "|---|" + "---|" * (len(photos) + 1),
    ]
    for n in names:
        d = photos["ours"][n][c] - photos["sift"][n][c]
        lines.append(
            f"| {n} | "
            + " | ".join(f"{photos[r][n][c]:.3f}" for r in photos)
            + f" | {d:+.3f} |".replace("-", "−")
        )
    return lines


def _intervals_markdown(intervals: dict, photos: int) -> list[str]:
    if not intervals:
        return []
    some = next(iter(intervals.values()))
    cols = list(intervals)
    lines = [
        "",
        f"## How sure: 95 % intervals (bootstrap over the {photos} photos)",
        "",
        f"{some['replicates']} replicates, each drawing photos with replacement and keeping all their turns, the "
        "same draws for every row. First the MMA of each row, then each row minus SIFT's own pose: an interval "
        "that holds 0 means these photos cannot tell the two apart.",
        "",
        "| pose | " + " | ".join(c.replace("mma@", "MMA@") for c in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    return lines + mean_interval_rows([intervals[c] for c in cols])


__all__ = [
    "evaluate_rotation",
    "rotation_angles",
    "check_angles",
    "mma_intervals",
    "by_rotation",
    "rotation_band",
    "ROTATION_BANDS",
]
