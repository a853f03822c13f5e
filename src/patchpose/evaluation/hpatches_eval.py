"""HPatches evaluation: patch-pose transfer (paper, Table 1 right) and image matching (Section 4.4, supp. B).

``patchpose eval hpatches --root DIR --out DIR`` runs both on a real HPatches copy or on sequences made by
``patchpose generate hpatches`` (same layout, :mod:`patchpose.evaluation.datasets.hpatches`):

* **Pose transfer.** At up to 25 SIFT and 25 Harris keypoints of image 1 (at least ``POSE_MARGIN`` px
  inside) and their images under ``H_1_k`` (inside image ``k`` too), every method of the PatchPose
  evaluation (ours, SIFT, dominant gradient, ORB's centroid, LoG) estimates a pose in both images. The
  ground truth is the pose change of the **local** affine of ``H`` at the keypoint
  (:func:`patchpose.geometry.pose_change`). Metrics as in ``eval patchpose``: the official bin metric
  (scale ground truth rounded to bins) and the continuous errors. ``lower`` is "no pose" (0, 0) and
  ``upper`` the ground truth itself.
* **Matching.** SIFT keypoints (``--detector harris`` / ``gftt`` for corners, ``keynet`` for Key.Net,
  ``--keypoints DIR`` for keypoints from files: ``DIR/<sequence>/<k>.npy`` or ``<k>.txt``, x y per row,
  strongest first), a descriptor on the patch cut at each row's pose (:mod:`patchpose.evaluation.rows`:
  ``lower``, ``sift``, ``ours``, ``ours_topK``, the hand-crafted rows, with ``--peers DIR`` the peers'
  rows ``orinet`` and ``affnet+orinet``, ``upper``; keypoints without a pose of their own have no SIFT
  rows), mutual nearest neighbours, and per pair ``MMA(t) = mean(‖H·x1 − x2‖ ≤ t)`` (0 for a pair without
  matches) and the correct matches (within 3 px), averaged over pairs for illumination, viewpoint and
  overall; each row also says how many descriptors it makes per keypoint (k for ``ours_topK``, else 1).
  The peers (Key.Net, OriNet, AffNet, TFeat, HardTFeat: :mod:`patchpose.evaluation.peers`) take their
  weights from the ``--peers`` folder, for comparison only. The protocol is D2-Net's: every sequence but the 8
  high-resolution ones (108 of HPatches' 116), up to 2,000 keypoints (``--max-keypoints``), thresholds 1 … 10 px.

Each finished sequence is cached under ``OUT/cache/`` (atomic writes), so an interrupted run resumes.
Outputs: ``results.json``, ``results.md`` and ``mma.png``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from ..data.keypoints import MAX_KEYPOINTS, detect_harris, detect_sift
from ..errors import InputError, is_int_in, require
from ..fileio import read_keypoints, write_npz, write_text_atomic
from ..geometry import apply_homography, inside, pose_change, reprojection_errors
from ..matching.blend import blend_descriptors
from ..matching.describe import Describer
from ..matching.matcher import mutual_nn, ratio_matches
from ..shape import shape_estimator
from .datasets.hpatches import Sequence, load_hpatches
from .descriptors import PEER_DESCRIPTORS, describer
from .intervals import (
    DEFAULT_REPLICATES,
    check_bootstrap,
    count_intervals,
    format_interval,
    mean_interval_rows,
    mean_intervals,
)
from .metrics import redetections
from .patchpose_eval import POSE_ARRAYS, MethodPoses, continuous_accuracies, official_scores
from .peers import PEER_FILES, Peers
from .report import write_results
from .rows import (
    DETECTORS,
    MATCHERS,
    PEER_DETECTORS,
    Image,
    MatchConfig,
    Run,
    default_rows,
    detect,
    get_row,
    handcrafted_poses,
    label,
    pair_rows,
    peer_poses,
    pose_rows,
    row_cost,
    row_descriptors,
)

POSE_MARGIN = 32.0  # px: pose-transfer keypoints lie this far inside both images
POSE_KEYPOINTS = 25  # per detector (SIFT, Harris) in image 1, as the paper's 25 patches per pair
KINDS = ("overall", "illumination", "viewpoint")


#: D2-Net's protocol: the keypoints per image without ``max_keypoints``, and the thresholds of MMA (px); its
#: sequences leave out the 8 high-resolution ones (:data:`~patchpose.evaluation.datasets.hpatches.HIGH_RES_SEQUENCES`)
DEFAULT_KEYPOINTS = 2000
THRESHOLDS = tuple(range(1, 11))


# ----------------------------------------------------------------------------- matching
def pair_mma(err: np.ndarray, thresholds) -> list[float]:
    """``MMA(t)`` of one pair: the share of its matches within ``t`` px (0 when it has no match)."""
    err = np.asarray(err, np.float64)
    return [float(np.mean(err <= t)) if len(err) else 0.0 for t in thresholds]


#: the poses whose consistency at re-detected keypoints is reported, in table order, and their labels
REPEAT_SOURCES = ("sift", "ours", "dominant_gradient", "orinet")
REPEAT_LABELS = {
    "sift": "SIFT's own pose",
    "ours": "ours",
    "dominant_gradient": "dominant gradient (detector's scale)",
    "orinet": "OriNet (detector's scale)",
}
REPEAT_PX = 1.5  # a keypoint of image k "repeats" one of image 1 when H maps the latter within this


def repeated_pose_counts(H, f1, fk, poses1: dict, posesk: dict) -> dict:
    """Pose accuracy of each source at the keypoints the detector found again: for mutually nearest
    pairs ``‖H·x1 − xk‖ ≤ REPEAT_PX``, ``{source: [n within ±1/6 oct, ±1/3 oct, ±5°, ±10°], "n": pairs}``
    against the pose change of ``H`` at ``x1``."""
    if len(f1) == 0 or len(fk) == 0:
        return {"n": 0, **{s: [0, 0, 0, 0] for s in poses1}}
    i, j, _ = redetections(apply_homography(H, f1.xy), fk.xy, REPEAT_PX)
    ds, dt, ok = pose_change(H, f1.xy[i])
    i, j, ds, dt = i[ok], j[ok], ds[ok], dt[ok]
    out = {"n": int(len(i))}
    for src in poses1:
        (s1, o1), (sk, okk) = poses1[src], posesk[src]
        es = np.abs(sk[j] - s1[i] - ds)
        eo = np.degrees(np.abs(np.angle(np.exp(1j * (okk[j] - o1[i] - dt)))))
        out[src] = [
            int((es <= 1 / 6 + 1e-9).sum()),
            int((es <= 1 / 3 + 1e-9).sum()),
            int((eo <= 5).sum()),
            int((eo <= 10).sum()),
        ]
    return out


def sequence_keypoints(keypoints_dir: str | Path, seq: Sequence, k: int, max_keypoints: int) -> np.ndarray:
    """The keypoints a user gave for image ``k`` of ``seq``: ``DIR/<sequence>/<k>.npy`` (or ``.txt``, x y
    per row), strongest first; the first ``max_keypoints`` are kept."""
    d = Path(keypoints_dir) / seq.name
    for ext in (".npy", ".txt"):
        if (d / f"{k}{ext}").is_file():
            return read_keypoints(d / f"{k}{ext}")[:max_keypoints]
    raise InputError(f"no keypoints for {seq.name} image {k}: expected {d / f'{k}.npy'} (or {k}.txt)")


def model_digest(model) -> str:
    """A short hash of a model's parameters and buffers: the cache key sees a weights file that changed
    under the same name."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def sequence_fingerprint(seq: Sequence, keypoints_dir: str | Path | None = None) -> str:
    """A short hash of the sequence's files (path, size, modification time), and of its keypoint files: a
    cached result is reused only for the very files it was computed from."""
    files = [*seq.images.values(), *(seq.path / f"H_1_{k}" for k in seq.targets)]
    if keypoints_dir is not None:
        d = Path(keypoints_dir) / seq.name
        files += sorted(d.iterdir()) if d.is_dir() else []
    return files_fingerprint(files)


def files_fingerprint(files) -> str:
    """A short hash of files' paths, sizes and modification times (a missing file counts as such)."""
    h = hashlib.sha256()
    for f in files:
        st = Path(f).stat() if Path(f).exists() else None
        h.update(f"{Path(f).resolve()}|{st.st_size if st else -1}|{st.st_mtime_ns if st else -1};".encode())
    return h.hexdigest()[:12]


def match_sequence(
    seq: Sequence,
    est,
    describer: Describer,
    rows,
    cfg: MatchConfig,
    thresholds,
    images: dict | None = None,
    keypoints_dir: str | Path | None = None,
    peers: Peers | None = None,
) -> list[dict]:
    """``[{"k": k, "mma": {row: [MMA(t)…]}, "matches": {row: n}, "repeat": …}]`` for every pair ``(1, k)``
    (``repeat``: :func:`repeated_pose_counts` for ours, and for SIFT's own poses on SIFT detections).
    ``images``: ``{k: image}`` if already read; ``keypoints_dir``: keypoints from files
    (:func:`sequence_keypoints`) instead of ``cfg.detector``; ``peers``: for Key.Net and the peer rows."""
    images = images or {k: seq.image(k) for k in (1, *seq.targets)}

    def feats(k: int):
        kp = sequence_keypoints(keypoints_dir, seq, k, cfg.max_keypoints) if keypoints_dir else None
        f = detect(images[k], cfg.max_keypoints, kp, cfg.detector, peers)
        t = time.perf_counter()
        o = est.estimate(f.image, f.xy, top_k=cfg.top_k) if len(f) else None
        read = time.perf_counter() - t
        poses = {"ours": (o.scale[:, 0], o.orientation[:, 0])} if o is not None else {}
        if np.isfinite(f.sift_scale).all() and o is not None:
            poses = {"sift": (f.sift_scale, f.sift_ori), **poses}
        if "dominant_gradient" in rows and o is not None:  # memoised: the matching row shares it
            poses["dominant_gradient"] = handcrafted_poses(f)
        if "orinet" in rows and o is not None:  # the detector's scale, as the hand-crafted upright row
            poses["orinet"] = (f.frame, peer_poses(f, peers, "orinet")[0])
        return f, o, poses, read

    run = Run(describer, est, cfg, peers)
    match = ratio_matches if cfg.matcher == "ratio" else mutual_nn
    f1, o1, p1, read1 = feats(1)
    # every row on its own copy of the keypoints (a fresh memo): what it computes and its time are its own; image
    # 1's copy lasts the sequence (described once, its cost shared by the pairs)
    own1 = {name: Image(replace(f1, memo={}), o1) for name in rows}
    d1, t1 = {}, {}
    for name in rows:
        if not get_row(name).is_pair:
            t = time.perf_counter()
            d1[name] = row_descriptors(name, run, own1[name])
            t1[name] = time.perf_counter() - t
    out = []
    n_pairs = len(seq.targets)
    for k in seq.targets:
        H = seq.homographies[k]
        fk, ok_, pk, readk = feats(k)
        res = {"k": k, "mma": {}, "matches": {}, "descriptors": {}, "cost": {}}
        for name in rows:
            r, imk = get_row(name), Image(replace(fk, memo={}), ok_, H)
            t = time.perf_counter()
            xy1, xyk = f1.xy, fk.xy
            if r.redetect is not None:  # one photo's keypoints detected again: its own
                e1, ek, xy1, xyk, cost = r.redetect(run, own1[name], imk)
            elif r.is_pair:  # described with both photos: image 1's descriptors differ from pair to pair
                c1, ck, zoom, turn = r.pair(run, own1[name], imk)
                e1, ek = (blend_descriptors(c[3], c[2])[:, None] for c in (c1, ck))
                cost = row_cost(name, run, own1[name], imk, c1, ck, turn)
                res.setdefault("zoom", {})[name] = zoom.log2
                res["zoom_true"] = true_zoom(H, f1.xy, images[k].shape)
                if name == "pair_pose":  # the one row described at the turn (None: no turn found)
                    res.setdefault("turn", {})[name] = math.degrees(turn.radians) if turn.found else None
                    res["turn_true"] = true_turn(H, f1.xy, images[k].shape)
            else:
                e1, ek = d1[name], row_descriptors(name, run, imk)
                cost = row_cost(name, run, own1[name], imk)
            m, _ = match(e1, ek)
            seconds = time.perf_counter() - t + t1.get(name, 0.0) / n_pairs
            if r.reads_model_at(fk):  # the read of our model that the row takes from each image
                seconds += readk + read1 / n_pairs
            err = reprojection_errors(H, xy1[m[:, 0]], xyk[m[:, 1]])
            res["mma"][name] = pair_mma(err, thresholds)
            res["matches"][name] = int(len(m))
            res["descriptors"][name] = cost.descriptors
            res["cost"][name] = {**asdict(cost), "seconds": seconds}
        if o1 is not None and ok_ is not None:
            res["repeat"] = repeated_pose_counts(H, f1, fk, p1, pk)
        out.append(res)
    return out


def summarize_matching(per_seq: dict[str, list[dict]], rows) -> tuple[dict, dict]:
    """``mma[row][kind] = [MMA(t)…]`` averaged over pairs, and ``matches[row]`` = mean matches per pair."""
    mma, matches = {}, {}
    for row in rows:
        mma[row] = {}
        for kind in KINDS:
            vals = [
                p["mma"][row]
                for name, pairs in per_seq.items()
                for p in pairs
                if kind == "overall" or (name.startswith("i_") == (kind == "illumination"))
            ]
            mma[row][kind] = np.mean(vals, axis=0).tolist() if vals else []
        counts = [p["matches"][row] for pairs in per_seq.values() for p in pairs]
        matches[row] = float(np.mean(counts)) if counts else 0.0
    return mma, matches


def summarize_correct(per_seq: dict[str, list[dict]], rows, thresholds) -> dict:
    """``correct[row][kind]``: the mean over pairs of the correct matches of a pair (its matches within
    :data:`INTERVAL_PX` px: matches × MMA at that threshold); None for a kind without pairs."""
    ti = list(thresholds).index(INTERVAL_PX)
    out = {}
    for row in rows:
        out[row] = {}
        for kind in KINDS:
            vals = [
                p["matches"][row] * p["mma"][row][ti]
                for name, pairs in per_seq.items()
                for p in pairs
                if kind == "overall" or (name.startswith("i_") == (kind == "illumination"))
            ]
            out[row][kind] = float(np.mean(vals)) if vals else None
    return out


def summarize_costs(per_seq: dict[str, list[dict]], rows) -> dict:
    """``{row: {"computations", "descriptors", "passes", "fits", "seconds"}}``: each row's mean cost per pair
    (:class:`~patchpose.evaluation.rows.Cost`; seconds: its own description of both photos, image 1's shared by the
    pairs of its sequence, the read of our model where the row takes it, and its matching; not the detection)."""
    out = {}
    for row in rows:
        costs = [p["cost"][row] for pairs in per_seq.values() for p in pairs if "cost" in p]
        if costs:
            out[row] = {key: float(np.mean([c[key] for c in costs])) for key in costs[0]}
    return out


def descriptors_per_keypoint(per_seq: dict[str, list[dict]], row: str) -> float:
    """How many descriptors a row made per keypoint, on average over the pairs (each pair: both images'
    keypoints together): k for ``ours_topK`` (the closest pair is kept), SIFT's orientations per location
    for ``sift_all``, our strong candidates for ``ours_adaptive``, 1 for every other row."""
    vals = [p["descriptors"][row] for pairs in per_seq.values() for p in pairs]
    if vals:
        return round(float(np.mean(vals)), 3)
    return float(row[len("ours_top") :]) if row.startswith("ours_top") else 1.0


#: how each matcher reads in a report
MATCHER_NAMES = {"mnn": "mutual nearest neighbours", "ratio": "Lowe's ratio test (0.8) with a cross check"}

#: the threshold of the MMA whose intervals are reported, and the row the others are compared with
INTERVAL_PX, INTERVAL_REFERENCE = 3, "ours"


def sequence_clusters(names, pattern: str | None) -> dict[str, str]:
    r"""The bootstrap cluster of each sequence: the sequence itself (``pattern`` None), or what the regular
    expression ``pattern`` captures from its name (its first group, else the whole match), so that
    sequences made from one photo are drawn together: ``r"^(.*)_s\d+$"`` puts ``v_coins_s0`` …
    ``v_coins_s4`` in one cluster. A name the pattern does not match is an error, not a cluster of its own."""
    if pattern is None:
        return {n: n for n in names}
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise InputError(f"cluster pattern {pattern!r} is not a regular expression: {e}") from None
    out = {}
    for n in names:
        m = rx.search(n)
        if m is None:
            raise InputError(f"cluster pattern {pattern!r} does not match the sequence {n!r}")
        out[n] = m.group(1) if rx.groups else m.group(0)
    return out


def mma_intervals(
    per_seq: dict[str, list[dict]],
    rows,
    thresholds,
    replicates: int,
    reference: str | None = None,
    clusters: dict[str, str] | None = None,
    correct: bool = False,
) -> dict:
    """95 % intervals of MMA@3 px, by kind of sequence: ``{kind: mean_intervals}``
    (:func:`~patchpose.evaluation.intervals.mean_intervals`), resampling **sequences** with all their pairs
    (the five pairs of a sequence share its scene, and are hard or easy together), or, with ``clusters``
    (sequence name → label, :func:`sequence_clusters`), whole clusters of sequences; the same draws for
    every row; the differences are ``row − reference`` (default ``ours``). ``correct``: the same for the
    number of correct matches per pair (matches × MMA@3 px, a count) instead of MMA."""
    ti = list(thresholds).index(INTERVAL_PX)
    ref = reference or (INTERVAL_REFERENCE if INTERVAL_REFERENCE in rows else rows[0])
    out = {}
    for kind in KINDS:
        names = [n for n in per_seq if kind == "overall" or n.startswith("i_") == (kind == "illumination")]
        label = {n: (clusters or {}).get(n, n) for n in names}
        index = {c: i for i, c in enumerate(dict.fromkeys(label.values()))}
        pairs = [(index[label[n]], p) for n in names for p in per_seq[n]]
        if not pairs:
            continue
        cluster_ids = np.array([i for i, _ in pairs])
        values = {r: np.array([p["mma"][r][ti] for _, p in pairs]) for r in rows}
        if not correct:
            out[kind] = mean_intervals(values, cluster_ids, ref, replicates)
            continue
        counts = {r: v * np.array([p["matches"][r] for _, p in pairs]) for r, v in values.items()}
        out[kind] = count_intervals(counts, cluster_ids, ref, replicates)
    return out


def true_zoom(H, xy, shape) -> float | None:
    """The zoom that ``H`` makes between the photos (log2): the median of its local scale change
    (:func:`~patchpose.geometry.pose_change`) at image 1's keypoints ``xy`` that land inside image k of
    ``shape``; None where none does."""
    d_scale, _, ok = pose_change(H, xy)
    seen = ok & inside(apply_homography(H, xy), shape)
    return float(np.median(d_scale[seen])) if seen.any() else None


def true_turn(H, xy, shape) -> float | None:
    """The turn that ``H`` makes between the photos, degrees CCW as displayed in [0, 360): the circular median
    of its local turn (:func:`~patchpose.geometry.pose_change`) at image 1's keypoints ``xy`` that land inside
    image k of ``shape`` (the angle nearest all of them in summed absolute difference, to 0.1°); None where none
    does."""
    _, d_theta, ok = pose_change(H, xy)
    seen = ok & inside(apply_homography(H, xy), shape)
    if not seen.any():
        return None
    grid = np.radians(np.arange(0.0, 360.0, 0.1))
    offsets = d_theta[seen][None, :] - grid[:, None]  # (grid, keypoints)
    cost = np.abs(np.mod(offsets + np.pi, 2 * np.pi) - np.pi).sum(1)  # summed arc lengths
    return float(np.degrees(grid[int(np.argmin(cost))]))


def summarize_turn(per_seq: dict[str, list[dict]]) -> dict:
    """``{"pair_pose": {"pairs", "not_found", "median_abs_error", "p90_abs_error", "max_abs_error",
    "within_5deg"}}``: how far the turn the ``pair_pose`` row voted (degrees) is from the one ``H`` makes
    (:func:`true_turn`) over the pairs where both are known, and on how many pairs no turn was found (the row
    then describes each keypoint at its own poses)."""
    pairs = [p for ps in per_seq.values() for p in ps if "pair_pose" in p.get("turn", {})]
    e = np.array(
        [
            abs(math.remainder(p["turn"]["pair_pose"] - p["turn_true"], 360.0))
            for p in pairs
            if p["turn"]["pair_pose"] is not None and p.get("turn_true") is not None
        ]
    )
    if not pairs:
        return {}
    summary = {"pairs": len(pairs), "not_found": sum(p["turn"]["pair_pose"] is None for p in pairs)}
    if len(e):
        summary |= {
            "median_abs_error": float(np.median(e)),
            "p90_abs_error": float(np.percentile(e, 90)),
            "max_abs_error": float(e.max()),
            "within_5deg": float(np.mean(e <= 5.0)),
        }
    return {"pair_pose": summary}


def summarize_zoom(per_seq: dict[str, list[dict]], rows) -> dict:
    """``{row: {"pairs", "median_abs_error", "p90_abs_error", "max_abs_error", "within_quarter_octave"}}``:
    how far each pair row's voted zoom (log2) is from the one ``H`` makes (:func:`true_zoom`), over
    the pairs where both are known."""
    out = {}
    for row in pair_rows(rows):
        e = np.array(
            [
                abs(p["zoom"][row] - p["zoom_true"])
                for pairs in per_seq.values()
                for p in pairs
                if row in p.get("zoom", {}) and p.get("zoom_true") is not None
            ]
        )
        if len(e):
            out[row] = {
                "pairs": int(len(e)),
                "median_abs_error": float(np.median(e)),
                "p90_abs_error": float(np.percentile(e, 90)),
                "max_abs_error": float(e.max()),
                "within_quarter_octave": float(np.mean(e <= 0.25)),
            }
    return out


def summarize_repeat(per_seq: dict[str, list[dict]]) -> dict:
    """``{kind: {source: {acc…}, "n": pairs}}`` from the per-pair :func:`repeated_pose_counts`."""
    keys = ("scale_acc@1/6", "scale_acc@1/3", "ori_acc@5", "ori_acc@10")
    out = {}
    for kind in KINDS:
        reps = [
            p["repeat"]
            for name, pairs in per_seq.items()
            for p in pairs
            if "repeat" in p and (kind == "overall" or name.startswith("i_") == (kind == "illumination"))
        ]
        n = sum(r["n"] for r in reps)
        if not n:
            continue
        out[kind] = {"n": n}
        for src in [s for s in REPEAT_SOURCES if all(s in r for r in reps)]:
            tot = np.sum([r[src] for r in reps], axis=0)
            out[kind][src] = {k: 100.0 * float(v) / n for k, v in zip(keys, tot)}
    return out


# ----------------------------------------------------------------------------- pose transfer
def pose_samples(
    seq: Sequence,
    n_per_detector: int = POSE_KEYPOINTS,
    margin: float = POSE_MARGIN,
    images: dict | None = None,
):
    """The pose-transfer samples of a sequence as the PatchPose evaluation reads them: ``data`` (images,
    per-sample photo, keypoint and frame (0, 0)) and ``pairs`` (ref, trg and the ground truth)."""
    loaded = images or {k: seq.image(k) for k in (1, *seq.targets)}
    images = [loaded[1]] + [loaded[k] for k in seq.targets]
    img1 = images[0]
    xy_s, _ = detect_sift(img1, n_per_detector * 4, margin)
    xy_h = detect_harris(img1, n_per_detector * 4, margin)
    xy = np.concatenate([xy_s[:n_per_detector], xy_h[:n_per_detector]]).reshape(-1, 2)
    if len(xy) > 1:  # one sample per location: Harris corners are often SIFT keypoints too
        d = np.linalg.norm(xy[:, None] - xy[None], axis=2)
        keep = [i for i in range(len(xy)) if not (d[i, :i] < 2.0).any()]
        xy = xy[keep]
    s_xy, s_photo, ref, trg, d_scale, d_ori = [xy], [np.zeros(len(xy), int)], [], [], [], []
    n = len(xy)
    for j, k in enumerate(seq.targets, start=1):
        H = seq.homographies[k]
        x2 = apply_homography(H, xy)
        ds, dt, ok = pose_change(H, xy)
        ok &= inside(x2, images[j].shape, margin)
        i = np.nonzero(ok)[0]
        s_xy.append(x2[i])
        s_photo.append(np.full(len(i), j))
        ref.append(i)
        trg.append(n + np.arange(len(i)))
        d_scale.append(ds[i])
        d_ori.append(dt[i])
        n += len(i)
    xy_all = np.concatenate(s_xy)
    data = {
        "images": images,
        "photo": np.concatenate(s_photo),
        "xy": xy_all,
        "frame_sigma": np.zeros(len(xy_all)),
        "frame_theta": np.zeros(len(xy_all)),
        "series": np.zeros(len(xy_all), int),
    }
    d_scale, d_ori = np.concatenate(d_scale), np.concatenate(d_ori)
    pairs = {
        "ref": np.concatenate(ref).astype(np.int64),
        "trg": np.concatenate(trg).astype(np.int64),
        "d_scale": d_scale,
        "d_ori": d_ori,
        "scale_factor": 2.0**d_scale,
        "angle_deg": np.degrees(d_ori),
    }
    return data, pairs


def pose_sequence(seq: Sequence, est, images: dict | None = None) -> dict[str, np.ndarray]:
    """Every method's poses at a sequence's pose-transfer samples, flattened into arrays for the cache."""
    from .patchpose_eval import run_methods

    data, pairs = pose_samples(seq, images=images)
    out = {f"pairs/{k}": v for k, v in pairs.items()}
    # without pairs there are no method arrays, nor samples for _gather to step over
    out["n"] = np.array(len(data["xy"]) if len(pairs["ref"]) else 0)
    if len(pairs["ref"]) == 0:
        return out
    for m in run_methods(data, est, progress=False):
        for field in POSE_ARRAYS:
            v = getattr(m, field)
            if v is not None:
                out[f"{m.name}/{field}"] = np.asarray(v)
    return out


def _gather(per_seq: dict[str, dict], names: list[str], kind: str):
    """Concatenate the cached arrays of the sequences of ``kind`` (indices shifted per sequence)."""
    methods: dict[str, dict] = {}
    pairs: dict[str, list] = {}
    off = 0
    for name in names:
        d = per_seq[name]
        if kind != "overall" and name.startswith("i_") != (kind == "illumination"):
            continue
        n = int(d["n"])
        for key, v in d.items():
            if key.startswith("pairs/"):
                f = key.split("/", 1)[1]
                pairs.setdefault(f, []).append(v + off if f in ("ref", "trg") else v)
            elif "/" in key:
                meth, f = key.split("/", 1)
                methods.setdefault(meth, {}).setdefault(f, []).append(v)
        off += n
    pairs = {k: np.concatenate(v) for k, v in pairs.items()}
    methods = {m: {f: np.concatenate(v) for f, v in fs.items()} for m, fs in methods.items()}
    return methods, pairs, off


def _strip(acc: dict) -> dict:
    return {k: v for k, v in acc.items() if k != "n_pairs"}


def pose_tables(per_seq: dict[str, dict], names: list[str], top_k: int, bins_per_octave) -> dict:
    """``{kind: {"official": {method: acc}, "continuous": {method: acc}, "n_pairs": n}}``."""
    out = {}
    for kind in KINDS:
        methods, pairs, n = _gather(per_seq, names, kind)
        if not pairs or len(pairs["ref"]) == 0:
            continue
        trg = pairs["trg"]
        zero = np.zeros((n, 1))
        gt_s, gt_o = zero.copy(), zero.copy()
        gt_s[trg, 0], gt_o[trg, 0] = pairs["d_scale"], pairs["d_ori"]
        bounds = {"lower": {"scale": zero, "ori": zero}, "upper": {"scale": gt_s, "ori": gt_o}}
        official, continuous = {}, {}
        for name, f in {**bounds, **methods}.items():
            label = "ours" if name == "patchpose" else name
            m = MethodPoses(
                label, scale_bins_per_octave=bins_per_octave, **{k: f.get(k) for k in POSE_ARRAYS}
            )
            official[label] = _strip(official_scores(m, pairs, pairs))
            continuous[label] = _strip(continuous_accuracies(m, pairs)[0])
            if name == "patchpose":
                official[f"ours_top{top_k}"] = _strip(official_scores(m, pairs, pairs, k=top_k))
        out[kind] = {"official": official, "continuous": continuous, "n_pairs": int(len(trg))}
    return out


# ----------------------------------------------------------------------------- the command
def evaluate_hpatches(
    root: str | Path,
    out_dir: str | Path,
    weights: str | None = None,
    descriptor: str = "sift",
    top_k: int = 4,
    max_keypoints: int | None = None,
    names: list[str] | None = None,
    pose: bool = True,
    progress: bool = True,
    detector: str = "sift",
    keypoints_dir: str | Path | None = None,
    bootstrap: int = DEFAULT_REPLICATES,
    read_plan: dict | None = None,
    cluster_pattern: str | None = None,
    peers: str | Path | None = None,
    rows: list[str] | None = None,
    reference: str | None = None,
    shape_weights: str | None = None,
    matcher: str = "mnn",
) -> dict:
    """Run the pose-transfer and matching evaluations; write ``results.json``, ``results.md``, ``mma.png``.

    ``detector``: ``"sift"`` (default), ``"harris"``, ``"gftt"``, ``"gftt_scale"``, ``"keynet"`` or ``"aliked"`` (need ``peers``);
    ``keypoints_dir``: keypoints from files instead (:func:`sequence_keypoints`). Without SIFT detections
    the rows that read SIFT's pose are left out. ``peers``: the folder of the peers' weights
    (:class:`~patchpose.evaluation.peers.Peers`): adds the rows ``orinet`` and ``affnet+orinet`` and allows
    the ``keynet`` detector and the ``tfeat`` / ``hardtfeat`` descriptors; nothing else needs it.
    ``bootstrap`` replicates over sequences (0: none) give 95 % intervals of MMA@3 px (:func:`mma_intervals`);
    ``cluster_pattern`` draws sequences in clusters instead (:func:`sequence_clusters`: the sequences made
    from one photo with several seeds are not independent). ``read_plan``: changes to the model's read
    plan (:meth:`patchpose.ReadPlan.replace`), or None. ``rows``: the matching rows to compute, in report
    order (None: those of them that are not ablations, :func:`~patchpose.evaluation.rows.default_rows`; ``["all"]``:
    every one; a row they do not allow is an error).
    ``reference``: the row the intervals' differences are taken against (None: ``ours``, or the first row when
    ``rows`` leaves it out). ``shape_weights``: the affine shape network of the ``shape_pooled_blend`` row
    (:meth:`patchpose.shape.AffineShapeEstimator.load`; None: the bundled one)."""
    tqdm = require("tqdm", "eval").tqdm

    from ..estimator import PatchPoseEstimator

    if matcher not in MATCHERS:
        raise InputError(f"matcher must be one of {MATCHERS}, got {matcher!r}")
    if not is_int_in(top_k, 2, integral_floats=True):
        raise InputError(f"top_k must be an integer of at least 2 (the top-k row), got {top_k!r}")
    # 0 is no budget of its own (it once fell through to the default): None alone means the default
    if max_keypoints is not None and not is_int_in(max_keypoints, 1, MAX_KEYPOINTS, integral_floats=True):
        raise InputError(
            f"max_keypoints (--max-keypoints) must be a whole number from 1 to {MAX_KEYPOINTS:,} (leave it out for "
            f"{DEFAULT_KEYPOINTS:,}), got {max_keypoints!r}"
        )
    if detector not in DETECTORS:
        raise InputError(f"detector must be one of {DETECTORS}, got {detector!r}")
    if detector in PEER_DETECTORS and peers is None and keypoints_dir is None:
        raise InputError(f"the {detector} detector needs the peers' weights folder (--peers DIR)")
    if descriptor in PEER_DESCRIPTORS and peers is None:
        raise InputError(f"the {descriptor} descriptor needs the peers' weights folder (--peers DIR)")
    peer_set = Peers(peers) if peers is not None else None  # a missing folder fails here, before any work
    check_bootstrap(bootstrap)
    if keypoints_dir is not None and not Path(keypoints_dir).is_dir():
        raise InputError(f"keypoints folder not found: {keypoints_dir}")
    t0 = time.time()
    seqs = load_hpatches(root, drop_high_res=True, names=names)
    clusters = sequence_clusters([s.name for s in seqs], cluster_pattern)  # before any work: fail early
    est = PatchPoseEstimator.load(weights).with_plan(**(read_plan or {}))
    cfg = MatchConfig(
        max_keypoints=DEFAULT_KEYPOINTS if max_keypoints is None else int(max_keypoints),
        descriptor=descriptor,
        top_k=int(top_k),
        detector=detector,
        shape_weights=None if shape_weights is None else str(shape_weights),
        matcher=matcher,
    )
    describe = describer(cfg.descriptor, peers=peer_set)
    allowed = pose_rows(
        cfg.top_k,
        sift=keypoints_dir is None and detector == "sift",
        peers=peer_set is not None,
        keynet=keypoints_dir is None and detector in ("keynet", "gftt_scale"),
    )
    if rows is not None and list(rows) == ["all"]:
        rows = allowed
    elif rows is not None:
        bad = [r for r in rows if r not in allowed]
        if bad or not rows:
            raise InputError(
                f"rows {bad or rows} are not rows of this run; with these keypoints and peers they are "
                + ",".join(allowed)
            )
    rows = default_rows(allowed) if rows is None else tuple(r for r in allowed if r in rows)
    if reference is not None and reference not in rows:
        raise InputError(f"the reference row {reference!r} is not among this run's rows: {','.join(rows)}")
    # the peers' files this run reads (their sha256 sums key the cache), none without a peers folder
    used_peers = [
        n
        for n in PEER_FILES
        if peer_set is not None
        and (
            n in ("orinet", "affnet")
            or (n in ("keynet", "aliked") and detector == n and keypoints_dir is None)
            or n == cfg.descriptor
        )
    ]
    shape_rows = [r for r in rows if get_row(r).shape]
    if shape_weights is not None and not shape_rows:
        raise InputError(
            "--shape-weights is for the shape_pooled_blend and shape_zoom_blend rows, which this run does not compute"
        )
    shape_est = shape_estimator(cfg.shape_weights) if shape_rows else None  # fails early
    model_name = est.meta.get("name", str(weights))
    setting = json.dumps(
        {
            "model": model_name,
            "model_digest": model_digest(est.model),
            "shape_digest": None if shape_est is None else model_digest(shape_est.model),
            "plan": asdict(est.plan),
            "weights": str(weights),
            **asdict(cfg),
            # settings since removed, at the one value left (no descriptor weights file, D2-Net's protocol): the
            # caches written before them still match
            "descriptor_weights": None,
            "descriptor_weights_file": None,
            "protocol": "d2net",
            "keypoints_dir": None if keypoints_dir is None else str(Path(keypoints_dir).resolve()),
            **({"peers": peer_set.fingerprint(used_peers)} if peer_set is not None else {}),
            # raised whenever the code changes what a cached sequence holds or how it is computed, so that
            # a result computed another way is never reused
            "cache_version": 16,
            "rows": list(rows),
        },
        sort_keys=True,
    )
    out = Path(out_dir)
    cache = out / "cache" / hashlib.sha256(setting.encode()).hexdigest()[:12]
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "setting.json").write_text(setting)
    matching, poses = {}, {}
    for seq in tqdm(seqs, desc="sequences", disable=not progress):
        fp = sequence_fingerprint(seq, keypoints_dir)  # the files themselves, wherever the root is
        mf, pf = cache / f"{seq.name}.{fp}.match.json", cache / f"{seq.name}.{fp}.pose.npz"
        todo = not mf.is_file() or (pose and not pf.is_file())
        try:  # a user-input problem names its sequence
            images = {k: seq.image(k) for k in (1, *seq.targets)} if todo else None  # read once per sequence
            if not mf.is_file():
                res = match_sequence(
                    seq, est, describe, rows, cfg, THRESHOLDS, images, keypoints_dir, peer_set
                )
                write_text_atomic(mf, json.dumps(res))
            if pose and not pf.is_file():
                write_npz(pf, pose_sequence(seq, est, images))
        except InputError as e:
            raise InputError(f"sequence {seq.path}: {e}") from None
        matching[seq.name] = json.loads(mf.read_text())
        if pose:
            with np.load(pf) as z:
                poses[seq.name] = {k: z[k] for k in z.files}
    mma, matches = summarize_matching(matching, rows)
    repeat = summarize_repeat(matching)
    n_pairs = {
        kind: sum(
            len(v)
            for n, v in matching.items()
            if kind == "overall" or n.startswith("i_") == (kind == "illumination")
        )
        for kind in KINDS
    }
    vs_sift = ["sift", *(r for r in rows if r == "ours" or r.startswith("ours_top"))]
    doc = {
        "protocol": "d2net",
        "mma": mma,
        "descriptors_per_keypoint": {r: descriptors_per_keypoint(matching, r) for r in rows},
        "costs": summarize_costs(matching, rows),
        "correct_matches": summarize_correct(matching, rows, THRESHOLDS),
        "intervals": (
            mma_intervals(matching, rows, list(THRESHOLDS), bootstrap, reference, clusters=clusters)
            if bootstrap
            else {}
        ),
        # correct matches per pair (within 3 px) of every row, the same draws; differences against ours
        "correct_intervals": (
            mma_intervals(
                matching, rows, list(THRESHOLDS), bootstrap, reference, clusters=clusters, correct=True
            )
            if bootstrap
            else {}
        ),
        # our rows against the detector's own pose (the comparison docs/results.md reports), the same draws
        "intervals_vs_sift": (
            mma_intervals(matching, vs_sift, list(THRESHOLDS), bootstrap, reference="sift", clusters=clusters)
            if bootstrap and "sift" in rows
            else {}
        ),
        # the same for correct matches per pair (within 3 px): a pose can find more at the same precision
        "correct_vs_sift": (
            mma_intervals(
                matching,
                vs_sift,
                list(THRESHOLDS),
                bootstrap,
                reference="sift",
                clusters=clusters,
                correct=True,
            )
            if bootstrap and "sift" in rows
            else {}
        ),
        "matches": matches,
        # the pair rows' zoom against the one H makes (log2 octaves)
        "pair_zoom": summarize_zoom(matching, rows),
        "pair_turn": summarize_turn(matching),
        "pose_accuracy": {},
        "repeated_keypoints_pose": repeat,
        "thresholds_px": list(THRESHOLDS),
        "setup": {
            "root": str(root),
            "sequences": len(seqs),
            "cluster_pattern": cluster_pattern,
            "pairs": n_pairs,
            "detector": (
                f"keypoints from {keypoints_dir}"
                if keypoints_dir is not None
                else {
                    "sift": "OpenCV SIFT",
                    "harris": "Harris corners (OpenCV)",
                    "gftt": "Shi-Tomasi corners (OpenCV goodFeaturesToTrack)",
                    "keynet": "Key.Net (kornia KeyNetDetector, peers' weights)",
                    "gftt_scale": "Shi-Tomasi corners in a scale space (kornia ScaleSpaceDetector, CornerGFTT)",
                    "aliked": "ALIKED-n16 keypoints (kornia ALIKED, peers' weights; no scale)",
                }[detector]
            ),
            "max_keypoints": cfg.max_keypoints,
            "matcher": cfg.matcher,
            "descriptor": cfg.descriptor,
            "peers": None if peers is None else str(peers),
            "top_k": cfg.top_k,
            "model": model_name,
            "plan": asdict(est.plan),
        },
    }
    if pose:
        tables = pose_tables(poses, [s.name for s in seqs], cfg.top_k, est.cfg.scale_bins_per_octave)
        doc["pose"] = tables
        if "viewpoint" in tables:
            off = tables["viewpoint"]["official"]
            # the pose-transfer samples (SIFT and Harris keypoints) do not depend on the matching detector
            # (the baselines, hand-crafted ones included, are in doc["pose"])
            doc["pose_accuracy"] = {r: off[r] for r in pose_rows(cfg.top_k, handcrafted=False) if r in off}
    doc["seconds"] = time.time() - t0
    write_results(out, doc, results_markdown(doc))
    plot_mma(doc, out / "mma.png")
    return doc


# ----------------------------------------------------------------------------- reports
def _label(name: str) -> str:
    return label(name)


def _per_kp(v) -> str:
    """Descriptors per keypoint as a table cell: a whole number as such, else two decimals."""
    if v is None:
        return "–"
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def results_markdown(doc: dict) -> str:
    s = doc["setup"]
    th = doc["thresholds_px"]
    show = [t for t in th if t in (1, 2, 3, 5, 10)]
    lines = [
        f"# HPatches evaluation ({doc['protocol']} protocol)",
        "",
        f"Sequences: {s['sequences']} under `{s['root']}`; pairs {s['pairs']['overall']} "
        f"({s['pairs']['illumination']} illumination, {s['pairs']['viewpoint']} viewpoint). Model: "
        f"`{s['model']}`. Detector: {s['detector']}, up to {s['max_keypoints']} keypoints; descriptor: "
        f"{s['descriptor']}; {MATCHER_NAMES[s.get('matcher', 'mnn')]}; top-k = {s['top_k']}; {doc['seconds']:.0f} s.",
        "",
        "## Matching: MMA (fraction of matches within t px, mean over pairs), matches and correct matches per pair",
        "",
        "Cost, per pair: comp./kp, descriptor computations per keypoint; desc./kp, descriptors matched per keypoint; "
        "passes, matching passes; fits, geometric fits (RANSAC); s, seconds of the row's own description of both "
        "photos, our model's read where it takes it, and matching (the detection not counted). correct: matches "
        f"within {INTERVAL_PX} px per pair (overall, then viewpoint pairs).",
        "",
        "| pose | comp./kp | desc./kp | passes | fits | s | matches | correct | viewp. correct | "
        + " | ".join(f"{k} @{t}px" for k in KINDS for t in show if k == "overall")
        + " | "
        + " | ".join(f"{k[:5]}. @3px" for k in KINDS[1:])
        + " |",
        "|---|---|---|---|---|---|---|---|---|" + "---|" * (len(show) + 2),
    ]
    per_kp = doc.get("descriptors_per_keypoint") or {}
    correct = doc.get("correct_matches") or {}
    costs = doc.get("costs") or {}
    for row, by_kind in doc["mma"].items():
        o = by_kind["overall"]
        cells = [f"{o[th.index(t)]:.3f}" if o else "–" for t in show]
        extra = [f"{by_kind[k][th.index(3)]:.3f}" if by_kind[k] else "–" for k in KINDS[1:]]
        c = correct.get(row, {})
        counts = [f"{c[k]:.1f}" if c.get(k) is not None else "–" for k in ("overall", "viewpoint")]
        cost = costs.get(row)
        spent = (
            [_per_kp(round(cost["computations"], 2)), _per_kp(per_kp.get(row)), f"{cost['passes']:g}",
             f"{cost['fits']:g}", f"{cost['seconds']:.2f}"]
            if cost
            else ["–", _per_kp(per_kp.get(row)), "–", "–", "–"]
        )  # fmt: skip
        lines.append(
            f"| {_label(row)} | "
            + " | ".join(spent)
            + f" | {doc['matches'][row]:.1f} | "
            + " | ".join(counts + cells + extra)
            + " |"
        )
    lines += _intervals_markdown(doc.get("intervals") or {}, s.get("cluster_pattern"))
    lines += _intervals_markdown(doc.get("correct_intervals") or {}, s.get("cluster_pattern"), correct=True)
    lines += _vs_sift_markdown(doc.get("intervals_vs_sift") or {})
    lines += _vs_sift_markdown(doc.get("correct_vs_sift") or {}, correct=True)
    zoom = doc.get("pair_zoom") or {}
    if zoom:
        lines += [
            "",
            "## The pair's zoom: voted (our scales) against the one H makes, in octaves",
            "",
            "| pose | pairs | median error | 90th percentile | largest | within ±1/4 octave |",
            "|---|---|---|---|---|---|",
        ]
        for row, z in zoom.items():
            lines.append(
                f"| {_label(row)} | {z['pairs']} | {z['median_abs_error']:.3f} | {z['p90_abs_error']:.3f} | "
                f"{z['max_abs_error']:.2f} | {100 * z['within_quarter_octave']:.0f} % |"
            )
    for row, t in (doc.get("pair_turn") or {}).items():
        lines += [
            "",
            "## The pair's turn: voted (our angles) against the one H makes, in degrees",
            "",
            "| pose | pairs | no turn found | median error | 90th percentile | largest | within ±5° |",
            "|---|---|---|---|---|---|---|",
            f"| {_label(row)} | {t['pairs']} | {t['not_found']} | "
            + (
                f"{t['median_abs_error']:.2f} | {t['p90_abs_error']:.2f} | {t['max_abs_error']:.1f} | "
                f"{100 * t['within_5deg']:.0f} % |"
                if "median_abs_error" in t
                else "– | – | – | – |"
            ),
        ]
    rep = doc.get("repeated_keypoints_pose", {})
    if rep:
        lines += [
            "",
            f"## Pose consistency at the keypoints the detector finds again (within {REPEAT_PX} px under H; %)",
            "",
            "Scale ±1/6 / ±1/3 octave, orientation ±5° / ±10°, against the pose change of H.",
            "",
        ]
        srcs = [s for s in REPEAT_SOURCES if all(s in r for r in rep.values())]
        lines += [
            "| pairs | keypoint pairs | " + " | ".join(REPEAT_LABELS[s] for s in srcs) + " |",
            "|---|---|" + "---|" * len(srcs),
        ]
        for kind, r in rep.items():
            f = lambda a: " / ".join(f"{v:.1f}" for v in a.values())  # noqa: E731
            lines.append(f"| {kind} | {r['n']} | " + " | ".join(f(r[s]) for s in srcs) + " |")
    if "pose" in doc:
        lines += ["", "## Patch-pose transfer (scale ±1/6, ±1/3 octave; orientation ±5°, ±10°; %)", ""]
        for kind in ("viewpoint", "illumination"):
            if kind not in doc["pose"]:
                continue
            t = doc["pose"][kind]
            lines += [
                f"**{kind}** ({t['n_pairs']} keypoint pairs): official bin metric / continuous errors",
                "",
                "| method | official | continuous |",
                "|---|---|---|",
            ]
            for m, acc in t["official"].items():
                cont = t["continuous"].get(m, {})
                fmt = lambda a: " / ".join(  # noqa: E731
                    f"{a[k]:.1f}" if k in a else "–"
                    for k in ("scale_acc@1/6", "scale_acc@1/3", "ori_acc@5", "ori_acc@10")
                )
                name = "sift (nearest re-detection within 4 px)" if m == "sift" else _label(m)
                lines.append(f"| {name} | {fmt(acc)} | {fmt(cont) if cont else '–'} |")
            lines.append("")
    return "\n".join(lines) + "\n"


def _intervals_markdown(
    intervals: dict, cluster_pattern: str | None = None, correct: bool = False
) -> list[str]:
    """The table of :func:`mma_intervals` of every row by kind of pairs: of MMA@3 px, or with ``correct``
    of the correct matches per pair."""
    if not intervals:
        return []
    some = next(iter(intervals.values()))
    ref = some["reference"]
    kinds = list(intervals)
    unit, drawn = "sequences", "sequences"
    if cluster_pattern is not None:
        unit = "clusters"
        drawn = f"clusters of sequences (those whose names give one capture of `{cluster_pattern}`)"
    what = f"correct matches per pair (within {INTERVAL_PX} px)" if correct else f"MMA@{INTERVAL_PX}px"
    lines = [
        "",
        f"## How sure: 95 % intervals of {what} (bootstrap over {unit})",
        "",
        f"{some['replicates']} replicates, each drawing {drawn} with replacement and keeping all their pairs, "
        f"the same draws for every row. First each row's {'count' if correct else 'MMA'}, then each row minus "
        f"`{ref}`: an interval that holds 0 means these {unit} cannot tell the two apart.",
        "",
        "| pose | " + " | ".join(f"{k} ({intervals[k]['n_clusters']} {unit})" for k in kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    fmt = _count_cell if correct else None
    return lines + mean_interval_rows([intervals[k] for k in kinds], _label, fmt)


def _vs_sift_markdown(intervals: dict, correct: bool = False) -> list[str]:
    """Our rows minus SIFT's own pose (95 % intervals, the same kind of draws as the table above), of MMA@3
    px, or with ``correct`` (:func:`mma_intervals`) each row's correct matches per pair first."""
    if not intervals:
        return []
    kinds = list(intervals)
    first = intervals[kinds[0]]
    intro = (
        f"Correct matches per pair (matches within {INTERVAL_PX} px; {first['replicates']} replicates, the same "
        "kind of draws): MMA is a share, so a pose can find more correct matches at the same MMA:"
        if correct
        else f"Our rows minus SIFT's own pose, MMA@{INTERVAL_PX}px ({first['replicates']} replicates; the top-k "
        "row describes each keypoint k times and keeps the closest pair):"
    )
    lines = ["", intro, "", "| pose | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    if correct:
        return lines + mean_interval_rows([intervals[k] for k in kinds], _label, _count_cell)
    return lines + mean_interval_rows([intervals[k] for k in kinds], _label)[len(first["mean"]) :]


def _count_cell(d: dict, signed: bool) -> str:
    return format_interval(d["value"], d["interval"], signed)


def plot_mma(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    th = doc["thresholds_px"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    for ax, kind in zip(axes, KINDS):
        for row, by_kind in doc["mma"].items():
            if by_kind[kind]:
                ax.plot(th, by_kind[kind], marker="o", ms=3, label=_label(row))
        ax.set_title(f"{kind} ({doc['setup']['pairs'][kind]} pairs)")
        ax.set_xlabel("threshold (px)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("MMA")
    axes[0].set_ylim(0, 1)
    axes[-1].legend(loc="lower right", fontsize=8)
    fig.suptitle(
        f"HPatches MMA vs threshold ({doc['protocol']} protocol, {doc['setup']['descriptor']} descriptor, "
        f"model {doc['setup']['model']})"
    )
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


__all__ = [
    "DEFAULT_KEYPOINTS",
    "THRESHOLDS",
    "evaluate_hpatches",
    "pair_mma",
    "pose_samples",
    "summarize_matching",
    "pose_tables",
]
