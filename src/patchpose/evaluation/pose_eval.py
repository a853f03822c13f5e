"""Two-view relative pose evaluation (paper, Section 4.4 and Table 5): SIFT + AdaLAM with SIFT's own poses
or ours, scored by IMC's mAA and LightGlue/LoFTR's AUC.

Per pair the error is ``max(rotation error, translation-direction error)`` in degrees, where the
translation error is the angle between the directions, folded to ``min(e, 180 − e)`` (an essential matrix
fixes ``t`` up to sign). When the true baseline is zero (a pure camera rotation) only the rotation error
counts. A pair whose pose cannot be estimated (no keypoints, too few matches, failed fit) has error 180°.

User input is checked before anything runs (:func:`check_pose_inputs`): every image the pairs file names
must exist, decode and be at least ``MIN_IMAGE_SIDE`` px on each side, the keypoint budgets must be
positive integers, and ``rot0``/``rot1`` must be 0 (this evaluation does not apply EXIF-style rotations);
a bad input raises :class:`~patchpose.errors.InputError` naming the pairs-file line, so only the method's
own failures are ever counted as 180°.

* ``mAA@τ`` (IMC 2020/21): the mean over thresholds ``1°, 2°, …, τ`` of the share of pairs within the
  threshold.
* ``AUC@τ`` (LoFTR/LightGlue): the area under the recall-against-error curve from 0 to ``τ``, divided by
  ``τ`` (continuous, with the recall curve starting at (0, 0)).

``patchpose eval pose --pairs FILE --images DIR --out DIR`` writes ``results.json`` and ``results.md``:
rows ``sift@K`` (descriptors and AdaLAM with SIFT's own poses), ``sift+ours@K`` (SIFT's descriptors,
our poses in AdaLAM), ``sift resolved by ours@K`` (:func:`patchpose.resolve_orientations`'s poses for
both) and, a peer, ``dominant gradient@K`` (SIFT's scale, kornia's dominant gradient read in SIFT's window, for
both) for K = 1,024 and 2,048 keypoints; with ``--peers DIR`` also ``orinet@K`` (OriNet's angle in SIFT's window)
and ``affnet+orinet@K`` (AffNet's affine frame there, turned by OriNet: descriptor patches and AdaLAM's LAFs
through it); ``shape zoom blend@K``, the pair row (our affine shape blend at the fixed 16 px widened by the pair's
zoom that our scales vote for, both photos together: :func:`patchpose.evaluation.twoview.match_two_views`) and
``pair pose@K``, the default of :func:`patchpose.match_pair` (every keypoint at one pose per photo, the pair's turn
and zoom that the keypoints' poses vote for: ours, SIFT's at SIFT's detections); plus the ablation rows (our poses for the descriptors too, AdaLAM's checks off, plain mutual nearest neighbours).
``--detector`` takes corners or Key.Net instead of SIFT (the rows that read SIFT's pose are left out). mAA@5° and
@10° come with 95 % intervals over photos (:func:`maa_intervals`, :func:`pair_clusters`), each budget's rows against
its SIFT row (the dominant gradient's without SIFT).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import cv2
import numpy as np

from ..errors import InputError, about, is_int_in, require
from .datasets.posed_pairs import read_pairs_file
from .report import write_results
from .rows import get_row

FAIL_DEG = 180.0
#: how results name each detector
DETECTOR_NAMES = {
    "sift": "OpenCV SIFT",
    "harris": "Harris corners (OpenCV)",
    "gftt": "Shi-Tomasi corners (OpenCV goodFeaturesToTrack)",
    "keynet": "Key.Net (kornia, the peers' weights)",
    "gftt_scale": "Shi-Tomasi corners in a scale space (kornia ScaleSpaceDetector, CornerGFTT)",
    "aliked": "ALIKED-n16 keypoints (kornia ALIKED, peers' weights; no scale)",
}


def rotation_error_deg(R_gt: np.ndarray, R: np.ndarray) -> float:
    c = (np.trace(R_gt.T @ R) - 1.0) / 2.0
    return float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))


def translation_error_deg(t_gt: np.ndarray, t: np.ndarray) -> float:
    """Angle between directions, folded to [0°, 90°] (the sign of ``t`` is not observable)."""
    n = np.linalg.norm(t_gt) * np.linalg.norm(t)
    if n < 1e-12:
        return FAIL_DEG
    e = float(np.degrees(np.arccos(np.clip(np.dot(t_gt, t) / n, -1.0, 1.0))))
    return min(e, 180.0 - e)


def pose_error_deg(T_gt: np.ndarray, R: np.ndarray | None, t: np.ndarray | None) -> float:
    """IMC's per-pair error: ``max(err_R, err_t)``; only ``err_R`` when the true baseline is zero."""
    if R is None:
        return FAIL_DEG
    er = rotation_error_deg(T_gt[:3, :3], R)
    t_gt = T_gt[:3, 3]
    if np.linalg.norm(t_gt) < 1e-9:
        return er
    return max(er, translation_error_deg(t_gt, t))


def maa(errors, max_deg: int) -> float:
    """IMC mean average accuracy: mean over ``1°…max_deg`` of the share of errors ≤ the threshold."""
    e = np.asarray(errors, np.float64)
    if e.size == 0:
        return float("nan")
    return float(np.mean(pair_accuracy(e, max_deg)))


def pair_accuracy(errors, max_deg: int) -> np.ndarray:
    """Each pair's share of the thresholds ``1°…max_deg`` its error is within: ``maa`` is their mean, so
    intervals of it resample these (:func:`maa_intervals`)."""
    e = np.asarray(errors, np.float64).reshape(-1)
    return np.mean(e[:, None] <= np.arange(1, max_deg + 1)[None, :], axis=1)


def pair_clusters(pairs) -> list[str]:
    """The cluster of each pair for intervals: pairs that share an image, directly or through other pairs, are
    one cluster (a photo and its turned copies; the motorcycle stereo pairs, which share the left image; a
    scene of a MegaDepth- or ScanNet-style list), named by its first image name in sorted order. ``pairs``:
    :class:`~patchpose.evaluation.datasets.posed_pairs.PosedPair` or ``(name0, name1)`` each."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    names = [(p.name0, p.name1) if hasattr(p, "name0") else tuple(p) for p in pairs]
    for a, b in names:
        ra, rb = root(a), root(b)
        parent[max(ra, rb)] = min(ra, rb)  # each group's root is its first name
    return [root(a) for a, _ in names]


def maa_intervals(
    errors: dict[str, list], clusters, reference: str, replicates: int = 2000
) -> dict[str, dict]:
    """mAA@5° and mAA@10° of each row with 95 % intervals and each row minus ``reference``, resampling the
    pairs' clusters (:func:`pair_clusters`; :func:`~patchpose.evaluation.intervals.mean_intervals`)."""
    from .intervals import mean_intervals

    return {
        f"mAA@{t}": mean_intervals(
            {r: pair_accuracy(e, t) for r, e in errors.items()}, np.asarray(clusters), reference, replicates
        )
        for t in (5, 10)
    }


def pose_auc(errors, threshold: float) -> float:
    """Area under the recall curve up to ``threshold`` degrees, normalised (LoFTR's ``pose_auc``)."""
    e = np.sort(np.asarray(errors, np.float64))
    if e.size == 0:
        return float("nan")
    recall = (np.arange(len(e)) + 1) / len(e)
    e = np.concatenate([[0.0], e])
    recall = np.concatenate([[0.0], recall])
    last = np.searchsorted(e, threshold)
    x = np.concatenate([e[:last], [threshold]])
    y = np.concatenate([recall[:last], [recall[last - 1]]])
    return float(np.trapezoid(y, x) / threshold)


def summarize(errors, inliers) -> dict:
    return {
        "inliers": float(np.mean(inliers)) if len(inliers) else 0.0,
        "mAA@5": maa(errors, 5),
        "mAA@10": maa(errors, 10),
        "AUC@5": pose_auc(errors, 5.0),
        "AUC@10": pose_auc(errors, 10.0),
        "AUC@20": pose_auc(errors, 20.0),
    }


def _rows(budgets, peers: bool = False, sift: bool = True) -> dict:
    """Row name → (keypoints, describe_pose, adalam_pose, adalam_checks, matcher), the poses rows of
    :data:`~patchpose.evaluation.rows.ROWS`; ``peers``: with the rows of the peers whose weights come from a
    peers folder; without ``sift`` (keypoints with no pose of their own: corners, Key.Net), the rows that read
    SIFT's pose are left out."""

    def same(k: int, row: str, checks: bool = True, matcher: str = "adalam") -> tuple:
        """The row for the descriptors and in AdaLAM alike."""
        return (k, row, row, checks, matcher)

    rows = {}
    for k in budgets:
        rows[f"sift@{k}"] = same(k, "sift")
        rows[f"sift+ours@{k}"] = (k, "sift", "ours", True, "adalam")
        # SIFT's poses, with our angle choosing where SIFT found several orientations (descriptors and AdaLAM)
        rows[f"sift resolved by ours@{k}"] = same(k, "sift_resolved_by_ours")
        # a peer: SIFT's scale, kornia's dominant gradient read in SIFT's window (descriptors and AdaLAM)
        rows[f"dominant gradient@{k}"] = same(k, "dominant_gradient")
        # one descriptor blended over the gradient histogram's peaks, at SIFT's scale and at ours
        rows[f"dominant gradient blend@{k}"] = same(k, "dominant_gradient_blend")
        rows[f"our scale, gradient blend@{k}"] = same(k, "ours_scale_gradient_blend")
        # our affine shape blend at the fixed 16 px widened by the pair's zoom our scales vote (SIFT's scale set
        # aside): both photos together
        rows[f"shape zoom blend@{k}"] = same(k, "shape_zoom_blend")
        # every keypoint at one pose per photo, the pair's turn and zoom the poses vote (the recipe
        # pair-pose of patchpose.match_pair): both photos together
        rows[f"pair pose@{k}"] = same(k, "pair_pose")
        if peers:  # SIFT's scale, OriNet's angle in SIFT's window; AffNet's frame there, turned by OriNet
            rows[f"orinet@{k}"] = same(k, "orinet")
            rows[f"affnet+orinet@{k}"] = same(k, "affnet+orinet")
    k = max(budgets)
    rows[f"ours+ours@{k}"] = same(k, "ours")  # our poses for the descriptors too
    rows[f"sift, adalam checks off@{k}"] = same(k, "sift", checks=False)
    rows[f"sift, mnn only@{k}"] = same(k, "sift", matcher="mnn")
    # blends with plain mutual nearest neighbours, against the dominant gradient's one pose
    rows[f"dominant gradient, mnn only@{k}"] = same(k, "dominant_gradient", matcher="mnn")
    rows[f"dominant gradient blend, mnn only@{k}"] = same(k, "dominant_gradient_blend", matcher="mnn")
    if not sift:
        rows = {r: v for r, v in rows.items() if not (get_row(v[1]).sift or get_row(v[2]).sift)}
    return rows


#: the rows kept without the ablation (names before the ``@K``)
MAIN_ROWS = (
    "sift",
    "sift+ours",
    "sift resolved by ours",
    "dominant gradient",
    "dominant gradient blend",
    "our scale, gradient blend",
    "shape zoom blend",
    "pair pose",
    "orinet",
    "affnet+orinet",
)


def check_budgets(budgets) -> tuple[int, ...]:
    """The keypoint budgets as a tuple of ints; :class:`InputError` unless each is a positive integer."""
    try:
        values = list(budgets)
    except TypeError:
        values = [budgets]
    if not values:
        raise InputError("give at least one keypoint budget (--keypoints K [K ...])")
    out = []
    for k in values:
        if not is_int_in(k, 1, integral_floats=True):
            raise InputError(f"keypoint budgets (--keypoints) must be positive integers, got {k!r}")
        out.append(int(k))
    return tuple(dict.fromkeys(out))  # a budget given twice is run once


def check_pose_inputs(pairs_file: str | Path, pairs: list, images: Path) -> None:
    """Check what the user gave before anything runs; :class:`InputError` naming the pairs-file line.

    * ``rot0``/``rot1`` must be 0: the evaluation does not apply EXIF-style quarter turns (rotate such
      images and their intrinsics and pose beforehand, and write 0);
    * every image named must exist below ``images``, decode (:func:`patchpose.data.patches.load_image`)
      and pass :func:`patchpose.data.patches.check_image` (both sides at least ``MIN_IMAGE_SIDE`` px).

    Each image is read once, whatever the number of pairs naming it."""
    from ..data.patches import check_image, load_image

    pairs_file = Path(pairs_file)
    checked: set[str] = set()
    for p in pairs:
        where = f"{pairs_file}:{p.line_no}" if p.line_no else str(pairs_file)
        if p.rot0 or p.rot1:
            raise InputError(
                f"{where}: non-zero rotations (rot0={p.rot0}, rot1={p.rot1}) are not supported: rotate the "
                "images, intrinsics and pose beforehand and write 0 0"
            )
        for name in (p.name0, p.name1):
            if name in checked:
                continue
            with about(where):
                img = load_image(images / name)  # its messages name the file
            with about(f"{where}: {images / name}"):
                check_image(img)
            del img
            checked.add(name)


def evaluate_pose(
    pairs_file: str | Path,
    images: str | Path,
    out_dir: str | Path,
    weights: str | None = None,
    budgets=(1024, 2048),
    ablation: bool = True,
    progress: bool = True,
    read_plan: dict | None = None,
    peers: str | Path | None = None,
    detector: str = "sift",
) -> dict:
    """Run every row on every pair; write ``results.json`` and ``results.md``. ``peers``: the folder of the
    peers' weights (:class:`~patchpose.evaluation.peers.Peers`), which adds the rows ``orinet@K`` and
    ``affnet+orinet@K``. ``detector``: the keypoints (:data:`~patchpose.evaluation.rows.DETECTORS`; Key.Net
    needs ``peers``); at keypoints without a pose of their own the rows that read SIFT's are left out, and the
    peers' and hand-crafted rows read and cut at the detector's size (16 px for corners; the rows at our scale
    and the pair row follow their own).

    The inputs are checked first (:func:`check_budgets`, :func:`check_pose_inputs`):
    a missing, unreadable or tiny image, a keypoint budget that is not a positive integer or a non-zero
    ``rot0``/``rot1`` raises :class:`InputError` before any work. A pair on which the method fails (no
    keypoints, too few matches for the robust fit) counts as error 180° for that row, is listed under
    ``failures``, and the run goes on. ``read_plan``: changes to the model's read plan
    (:meth:`patchpose.ReadPlan.replace`), or None."""
    tqdm = require("tqdm", "eval").tqdm

    from ..data.patches import load_image
    from ..estimator import PatchPoseEstimator
    from ..matching.describe import Describer
    from .peers import Peers
    from .rows import check_detector, detect, framed_poses
    from .twoview import TwoViewConfig, match_two_views, relative_pose

    t0 = time.time()
    budgets = check_budgets(budgets)
    peer_set = Peers(peers) if peers is not None else None  # a missing folder fails here, before any work
    check_detector(detector, peer_set)
    rows = _rows(budgets, peers=peer_set is not None, sift=detector == "sift")
    if not ablation:
        rows = {k: v for k, v in rows.items() if k.split("@")[0] in MAIN_ROWS}
    configs = {
        row: TwoViewConfig(
            max_keypoints=k,
            describe_pose=dpose,
            adalam_pose=apose,
            adalam_checks=checks,
            matcher=matcher,
        )
        for row, (k, dpose, apose, checks, matcher) in rows.items()
    }
    for cfg in configs.values():
        cfg.validate()
    pairs = read_pairs_file(pairs_file)
    images = Path(images)
    if not images.is_dir():
        raise InputError(f"images folder not found: {images}")
    check_pose_inputs(pairs_file, pairs, images)
    est = PatchPoseEstimator.load(weights).with_plan(**(read_plan or {}))
    for cfg in configs.values():  # the rows that describe at our pose cut the model's calibrated window
        cfg.descriptor_region = est.plan.descriptor_region
    describer = Describer()
    errors = {r: [] for r in rows}
    inliers = {r: [] for r in rows}
    failures: list[str] = []
    feats_cache: dict = {}

    def features(name: str, k: int):
        """``(features, our poses, our poses in SIFT's frame)`` of an image at budget ``k`` (cached); the
        images were checked up front, so reading them here does not fail on user input."""
        key = (name, k)
        if key not in feats_cache:
            if len(feats_cache) > 8:
                feats_cache.clear()
            f = detect(load_image(images / name), k, detector=detector, peers=peer_set)
            ours = est.estimate(f.image, f.xy, top_k=1) if len(f) else None
            framed = framed_poses(est, f) if len(f) and detector == "sift" else None  # the resolved rows
            feats_cache[key] = (f, ours, framed)
        return feats_cache[key]

    per_pair = []
    for p in tqdm(pairs, desc="pairs", disable=not progress):
        rec = {"pair": f"{p.name0} {p.name1}", "errors": {}}
        for row, cfg in configs.items():
            try:
                f0, o0, r0 = features(p.name0, cfg.max_keypoints)
                f1, o1, r1 = features(p.name1, cfg.max_keypoints)
                if "sift_resolved_by_ours" in (cfg.describe_pose, cfg.adalam_pose):
                    o0, o1 = r0, r1
                empty = list(dict.fromkeys(n for n, f in ((p.name0, f0), (p.name1, f1)) if not len(f)))
                if empty:  # a blank image: nothing to match, a failure of the method on this pair
                    raise RuntimeError(f"no keypoints detected in {', '.join(empty)}")
                m = match_two_views(f0, f1, describer, cfg, o0, o1, peers=peer_set, est=est)
                fit = relative_pose(f0.xy[m[:, 0]], f1.xy[m[:, 1]], p.K0, p.K1, cfg)
                err = pose_error_deg(p.T_0to1, fit["R"], fit["t"])
                n_in = fit["inliers"]
            except InputError:  # the inputs were checked up front: this is not a failure of the method
                raise
            except (RuntimeError, ValueError, cv2.error) as e:  # this pair fails, the run goes on
                failures.append(f"{p.name0} {p.name1} [{row}]: {type(e).__name__}: {e}")
                err, n_in = FAIL_DEG, 0
            errors[row].append(err)
            inliers[row].append(n_in)
            rec["errors"][row] = round(err, 3)
        per_pair.append(rec)
    clusters = pair_clusters(pairs)
    intervals = {}
    for k in budgets:  # each budget's rows against its SIFT row, or the dominant gradient's without SIFT
        at_k = {r: errors[r] for r in rows if r.endswith(f"@{k}")}
        ref = f"sift@{k}" if f"sift@{k}" in at_k else f"dominant gradient@{k}"
        intervals[str(k)] = maa_intervals(at_k, clusters, ref)
    doc = {
        "rows": {r: summarize(errors[r], inliers[r]) for r in rows},
        "intervals": intervals,
        "n_pairs": len(pairs),
        "setup": {
            "pairs_file": str(pairs_file),
            "detector": DETECTOR_NAMES[detector],
            "descriptor": "RootSIFT (kornia SIFTDescriptor) on pose-normalised 32 px patches",
            "matcher": "kornia match_adalam (default config)",
            "estimator": "OpenCV findEssentialMat (USAC_ACCURATE, 1 px), or a pure rotation when it explains as much",
            "model": est.meta.get("name", str(weights)),
            "plan": asdict(est.plan),
        },
        "failures": failures,
        "per_pair": per_pair,
        "seconds": time.time() - t0,
    }
    write_results(out_dir, doc, results_markdown(doc))
    return doc


def results_markdown(doc: dict) -> str:
    s = doc["setup"]
    lines = [
        "# Two-view relative pose",
        "",
        f"{doc['n_pairs']} pairs from `{s['pairs_file']}`. Detector: {s['detector']}; descriptor: {s['descriptor']}; "
        f"matcher: {s['matcher']}; robust fit: {s['estimator']}. Model: `{s['model']}`. {doc['seconds']:.0f} s.",
        "",
        (
            "`sift` = SIFT's own poses for the descriptors and in AdaLAM; `sift+ours` = SIFT's descriptors, our "
            "poses in AdaLAM; `sift resolved by ours` = SIFT's own poses, with our angle choosing where SIFT found "
            "several orientations (descriptors and AdaLAM). "
            if any(r.startswith("sift") for r in doc["rows"])
            else "Keypoints without a pose of their own: every row reads and cuts at the detector's size (16 px "
            "for corners), but the rows at our scale (`our scale, gradient blend`, `ours+ours`) and the pair rows. "
        )
        + "`shape zoom blend` = our affine shape blend at 16 px widened by the pair's zoom that our scales vote "
        "for, both photos together; `pair pose` = every keypoint at one pose per photo, the pair's turn and zoom "
        "that the keypoints' poses vote for (ours; SIFT's at SIFT's detections), at 16 px widened by the zoom. mAA and AUC as fractions.",
        "",
        "| row | inliers | mAA@5° | mAA@10° | AUC@5° | AUC@10° | AUC@20° |",
        "|---|---|---|---|---|---|---|",
    ]
    for r, v in doc["rows"].items():
        lines.append(
            f"| {r} | {v['inliers']:.1f} | {v['mAA@5']:.3f} | {v['mAA@10']:.3f} | {v['AUC@5']:.3f} | "
            f"{v['AUC@10']:.3f} | {v['AUC@20']:.3f} |"
        )
    from .intervals import mean_interval_rows

    for k, by_t in doc.get("intervals", {}).items():
        first = by_t["mAA@5"]
        lines += [
            "",
            f"{k} keypoints, with 95 % intervals over {first['n_clusters']} groups of pairs that share images (a "
            "photo and its copies, a scene: resampled together; differences paired):",
            "",
            "| row | mAA@5° | mAA@10° |",
            "|---|---|---|",
            *mean_interval_rows([by_t["mAA@5"], by_t["mAA@10"]]),
        ]
    if doc["failures"]:
        lines += [
            "",
            f"{len(doc['failures'])} row/pair failures (counted as 180°), e.g. {doc['failures'][0]}",
        ]
    return "\n".join(lines) + "\n"


__all__ = [
    "rotation_error_deg",
    "translation_error_deg",
    "pose_error_deg",
    "maa",
    "pair_accuracy",
    "maa_intervals",
    "pair_clusters",
    "pose_auc",
    "evaluate_pose",
]
