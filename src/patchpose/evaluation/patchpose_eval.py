"""``patchpose eval patchpose``: the paper's patch-pose evaluation on a generated PatchPose split.

Every method is scored on the same pairs (a keypoint's reference patch against its transformed copies):

* ``official_A`` / ``official_B`` / ``official_AB``: the official metric, bit for bit
  (:mod:`patchpose.evaluation.official`): scale-only pairs at angle 0, rotation-only pairs at scale 1,
  argmax bins, scale truth rounded to bins, orientation cyclic over 36 bins.
* ``continuous_AB``: the same pairs, errors in log2 and degrees against the exact truth, poses refined
  below the bin width.
* ``joint``: PatchPose-B pairs whose scale and rotation changed together, continuous errors.

Methods: ``patchpose`` (the bundled or given model), ``sift`` (OpenCV SIFT detected on the patch: the
keypoint nearest the centre, see :func:`patchpose.evaluation.baselines.sift_patch_poses`), ``dominant_gradient``
(kornia), ``orb_centroid`` (ORB's intensity centroid) and ``log`` (Laplacian-of-Gaussian scale selection). A
method that has no scale or no orientation leaves those cells empty.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..accuracy import accuracies, relative_errors, within_thresholds
from ..conventions import REFERENCE_RADIUS
from ..data.patches import Pyramid, extract_patches, to_gray
from ..data.polar import render_view_polar
from ..errors import InputError
from ..inference import decode_poses
from ..matching.gradient import ORI_PATCH
from ..reading import poses_of, read
from .baselines import (
    LOG_PATCH,
    LOG_WINDOWS,
    ORI_WINDOW,
    SIFT_PATCH,
    SIFT_WINDOW,
    dominant_gradient_orientation,
    intensity_centroid_orientation,
    log_scale_selection,
    sift_patch_poses,
)
from .datasets.patchpose_dataset import PatchPoseData
from .intervals import DEFAULT_REPLICATES, check_bootstrap, cluster_bootstrap, format_interval
from .official import (
    OFFICIAL_ORI_BINS,
    OFFICIAL_SCALE_BINS_PER_OCTAVE,
    ORI_THRESHOLDS_BINS,
    SCALE_THRESHOLDS_BINS,
    official_accuracies,
    official_errors_from_poses,
    official_topk_ori_errors,
    official_topk_scale_errors,
)
from .report import write_results

log = logging.getLogger(__name__)

PROTOCOLS = ("official_A", "official_B", "official_AB", "continuous_AB", "joint")
TOPK = (1, 2, 3, 4)
#: the protocols that get bootstrap intervals: official A+B and joint, the two PatchPose protocols that the
#: model card and docs/results.md report
INTERVAL_PROTOCOLS = ("official_AB", "joint")


def render(data: dict, idx: np.ndarray, patch_size: int, windows, color: str = "gray") -> np.ndarray:
    """Patches of samples ``idx`` re-rendered from the stored photos and frames (float in [0, 1]).

    A window whose patch pixels would be finer than the view's own pixels (``2·16·w / patch_size < 1``) is
    rendered at the view's pixel spacing and resized up to ``patch_size`` (bilinear), so that a view rendered
    small shows no detail it does not have (:func:`view_window`)."""
    chans = 1 if color == "gray" else 3
    out = np.empty((len(idx), len(windows) * chans, patch_size, patch_size), np.float32)
    cache = data.setdefault("_pyramids", {})  # one pyramid per photo and colour, shared by every method
    for p in np.unique(data["photo"][idx]):
        sel = np.nonzero(data["photo"][idx] == p)[0]
        if (p, color) not in cache:
            img = data["images"][p].astype(np.float32) / 255.0
            cache[(p, color)] = Pyramid(to_gray(img) if color == "gray" else img)
        pyr = cache[(p, color)]
        i = idx[sel]
        for j, w in enumerate(windows):
            size = view_window(patch_size, w)
            x = extract_patches(pyr, data["xy"][i], data["frame_sigma"][i], data["frame_theta"][i], size, [w])
            if size != patch_size:
                x = resize_patches(x, patch_size)
            out[sel, j * chans : (j + 1) * chans] = x
    return out


def view_window(patch_size: int, window: float) -> int:
    """The pixel size at which to render a window of ``window`` (covering ``±16·window`` view pixels) so that
    its pixels are no finer than the view's: ``patch_size`` when they already are, else
    ``⌈2·16·window⌉`` (at least 2)."""
    if 2 * REFERENCE_RADIUS * float(window) >= patch_size:
        return patch_size
    return max(2, int(np.ceil(2 * REFERENCE_RADIUS * float(window))))


def resize_patches(x: np.ndarray, size: int) -> np.ndarray:
    """Patches ``(N, C, m, m)`` resized up to ``(N, C, size, size)`` bilinearly over the same extent (pixel
    centres at half-integers, as every extractor here)."""
    import torch
    import torch.nn.functional as F

    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    return F.interpolate(t, size=(size, size), mode="bilinear", align_corners=False).numpy()


def render_polar(data: dict, idx: np.ndarray, grid, read_scale=None) -> np.ndarray:
    """Log-polar inputs of samples ``idx``: each view rendered as a transformed image crop first, then
    sampled at its centre (:func:`patchpose.data.polar.render_view_polar`), with the grid ``read_scale``
    (``(len(idx),)`` or a scalar, None for 0) octaves from the view's frame: a later read of the same view,
    from the view's own pixels."""
    out = np.empty((len(idx), 1, grid.rings, grid.angles), np.float32)
    cache = data.setdefault("_pyramids", {})
    rs = np.broadcast_to(np.asarray(0.0 if read_scale is None else read_scale, np.float64), (len(idx),))
    for p in np.unique(data["photo"][idx]):
        sel = np.nonzero(data["photo"][idx] == p)[0]
        if (p, "gray") not in cache:
            cache[(p, "gray")] = Pyramid(to_gray(data["images"][p].astype(np.float32) / 255.0))
        i = idx[sel]
        out[sel] = render_view_polar(
            cache[(p, "gray")],
            data["xy"][i],
            data["frame_sigma"][i],
            data["frame_theta"][i],
            grid,
            read_scale=rs[sel],
        )
    return out


def model_patches(data: dict, est, read_scale=None) -> np.ndarray:
    """The model's input for every sample: the stored patches when they fit, else re-rendered.

    ``read_scale`` (``(N,)``, None for 0): a later read of every view with the grid that many octaves from the
    view's frame, from the view's own pixels as the estimator reads an image
    (:func:`~patchpose.data.polar.render_view_polar`), never the photo re-rendered at that pose, which would
    give a view rendered small the detail it lost. Log-polar models only: a Cartesian model's later reads
    are an :class:`~patchpose.errors.InputError`."""
    cfg = est.cfg
    if cfg.is_polar:
        if cfg.color != "gray":
            raise ValueError("polar-cnn evaluation renders gray inputs only")
        return render_polar(data, np.arange(len(data["series"])), cfg.polar_grid, read_scale)
    if read_scale is not None and np.any(np.asarray(read_scale) != 0):
        raise InputError(
            "eval patchpose reads a rendered view again (passes > 1) for log-polar models only; "
            "give --read passes=1 for this Cartesian model"
        )
    stored = [float(w) for w in data.get("windows", [])]
    if (
        "patches" in data
        and cfg.color == "gray"
        and cfg.patch_size == data["patches"].shape[-1]
        and all(w in stored for w in cfg.windows)
    ):
        ch = [stored.index(float(w)) for w in cfg.windows]
        return data["patches"][:, ch].astype(np.float32) / 255.0
    return render(data, np.arange(len(data["series"])), cfg.patch_size, cfg.windows, cfg.color)


def model_passes(data: dict, est) -> tuple[dict, dict]:
    """The model's histograms and poses for every sample, read as
    :meth:`~patchpose.PatchPoseEstimator.estimate` reads an image (:func:`patchpose.reading.read`, with
    ``est``'s plan): each later read renders the same view again with the grid moved to the scale found, from
    the view's own pixels (:func:`model_patches`). Returns the histograms read last (the scale's, as the plan
    says), ``scale_hist`` moved back to the view's own frame (for the official metric's argmax bins), and the
    refined poses ``{"scale", "orientation"}`` ``(N, 1)`` in the view's frame."""
    n = len(data["series"])
    reading = read(
        est.model,
        est.plan,
        lambda frames: model_patches(data, est, read_scale=frames),
        n,
        frame0=data["frame_sigma"],
        batch_size=est.batch_size,
    )
    poses = poses_of(reading, est.cfg, est.plan, np.zeros(n), np.ones(n, bool), top_k=1)
    h = {"scale_hist": poses.scale_hist, "orientation_hist": poses.orientation_hist}
    return h, {"scale": poses.scale, "orientation": poses.orientation}


@dataclass
class MethodPoses:
    """Per-sample outputs of one method: histograms (ours) and/or continuous poses ``(N, k)``."""

    name: str
    scale: np.ndarray | None = None
    ori: np.ndarray | None = None
    scale_hist: np.ndarray | None = None
    ori_hist: np.ndarray | None = None
    scale_bins_per_octave: float | None = None


#: the per-sample arrays of a :class:`MethodPoses` (what a cache stores of it)
POSE_ARRAYS = ("scale", "ori", "scale_hist", "ori_hist")


def run_methods(data: dict, est, progress: bool = True) -> list[MethodPoses]:
    from tqdm import tqdm

    n = len(data["series"])
    idx = np.arange(n)
    steps = ["patchpose", "sift", "dominant_gradient", "orb_centroid", "log"]
    out = []
    ori_memo: dict = {}

    def ori_patches() -> np.ndarray:  # the same 32-px window serves both orientation baselines
        if "p" not in ori_memo:
            ori_memo["p"] = render(data, idx, ORI_PATCH, [ORI_WINDOW])
        return ori_memo["p"]

    for name in tqdm(steps, desc="methods", disable=not progress):
        if name == "patchpose":
            h, poses = model_passes(data, est)
            out.append(
                MethodPoses(
                    name,
                    poses["scale"],
                    poses["orientation"],
                    h["scale_hist"],
                    h["orientation_hist"],
                    est.cfg.scale_bins_per_octave,
                )
            )
        elif name == "sift":
            s, o = sift_patch_poses(render(data, idx, SIFT_PATCH, [SIFT_WINDOW]), k=max(TOPK))
            out.append(MethodPoses(name, s, o))
        elif name == "dominant_gradient":
            out.append(
                MethodPoses(
                    name,
                    ori=dominant_gradient_orientation(ori_patches())[:, None],
                )
            )
        elif name == "orb_centroid":
            out.append(
                MethodPoses(
                    name,
                    ori=intensity_centroid_orientation(ori_patches())[:, None],
                )
            )
        elif name == "log":
            out.append(
                MethodPoses(
                    name, scale=log_scale_selection(render(data, idx, LOG_PATCH, LOG_WINDOWS))[:, None]
                )
            )
        assert all(a is None or len(a) == n for a in (out[-1].scale, out[-1].ori))
    return out


def _official_errors(hist, poses, pairs: dict | None, kind: str, k: int, bins_per_octave=None):
    """Official errors of one quantity from histograms (ours) or poses (baselines); None if unmeasured."""
    if pairs is None or (hist is None and poses is None):
        return None
    gt = pairs["scale_factor"] if kind == "scale" else pairs["angle_deg"]
    if hist is not None:
        if kind == "scale":
            return official_topk_scale_errors(hist[pairs["ref"]], hist[pairs["trg"]], gt, k, bins_per_octave)
        return official_topk_ori_errors(hist[pairs["ref"]], hist[pairs["trg"]], gt, k)
    return official_errors_from_poses(poses[pairs["ref"], :k], poses[pairs["trg"], :k], gt, kind)


def official_pair_errors(m: MethodPoses, pairs_s: dict | None, pairs_o: dict | None, k: int = 1):
    """Official per-pair errors in bins ``(scale, orientation)``, each None where unmeasured.

    A histogram whose bins are not the metric's (orientation other than
    36 bins; scale other than 3 bins per octave, e.g. a model of the bin-count ablation): the metric's
    thresholds are counted in its own bins (1/3 octave, 10°), so such a histogram's ``k`` strongest peaks
    are decoded and binned as a baseline's poses are, instead of being read as bins of another width."""
    ori_hist, ori = m.ori_hist, m.ori
    if ori_hist is not None and ori_hist.shape[1] != OFFICIAL_ORI_BINS:
        ori_hist, ori = None, decode_poses({"orientation_hist": ori_hist}, k=k, refine=True)["orientation"]
    scale_hist, scale = m.scale_hist, m.scale
    if scale_hist is not None:  # bins per octave: given, or those of a histogram over [−2, 2]
        n = scale_hist.shape[1]
        bpo = (n - 1) / 4 if m.scale_bins_per_octave is None else m.scale_bins_per_octave
        if not np.isclose(bpo, OFFICIAL_SCALE_BINS_PER_OCTAVE):
            half = (n - 1) / (2 * bpo)  # a histogram centred on its view's frame, ``bpo`` bins per octave
            scale = decode_poses({"scale_hist": scale_hist}, k=k, refine=True, scale_range=(-half, half))[
                "scale"
            ]
            scale_hist = None
    return (
        _official_errors(scale_hist, scale, pairs_s, "scale", k, m.scale_bins_per_octave),
        _official_errors(ori_hist, ori, pairs_o, "orientation", k),
    )


def official_scores(
    m: MethodPoses, pairs_s: dict | None, pairs_o: dict | None, k: int = 1, errors=None
) -> dict:
    """Official accuracies of ``m`` (from ``errors``, :func:`official_pair_errors`'s, when given)."""
    se, oe = errors if errors is not None else official_pair_errors(m, pairs_s, pairs_o, k)
    acc = official_accuracies(se, oe)
    keys = (COLS[:2] if se is not None else ()) + (COLS[2:] if oe is not None else ())
    res = {key: acc[key] for key in keys}
    res["n_pairs"] = int((len(se) if se is not None else 0) + (len(oe) if oe is not None else 0))
    return res


def _official_correct(se, oe) -> dict[str, np.ndarray]:
    """Per pair and column, whether the official metric counts the pair as correct (the thresholds of
    :func:`~patchpose.evaluation.official.official_accuracies`), from :func:`official_pair_errors`."""
    out = {}
    if se is not None:
        e = np.asarray(se, dtype=np.float64).reshape(-1)
        out.update({key: e <= SCALE_THRESHOLDS_BINS[key] for key in COLS[:2]})
    if oe is not None:
        e = np.asarray(oe, dtype=np.float64).reshape(-1)
        out.update({key: e <= ORI_THRESHOLDS_BINS[key] for key in COLS[2:]})
    return out


def _intervals(
    per_method: dict[str, dict[str, np.ndarray]], clusters: dict[str, np.ndarray], replicates: int
):
    """Bootstrap intervals per column (:mod:`patchpose.evaluation.intervals`): our accuracy, and ours minus
    every other method that measures that column."""
    out = {}
    for col in COLS:
        correct = {name: c[col] for name, c in per_method.items() if col in c}
        if "patchpose" in correct:
            out[col] = cluster_bootstrap(correct, clusters[col], "patchpose", replicates)
    return out


def continuous_accuracies(m: MethodPoses, pairs: dict, what=("scale", "orientation")) -> tuple[dict, dict]:
    pa, pb = {}, {}
    if "scale" in what and m.scale is not None:
        pa["scale"], pb["scale"] = m.scale[pairs["ref"], 0], m.scale[pairs["trg"], 0]
    if "orientation" in what and m.ori is not None:
        pa["orientation"], pb["orientation"] = m.ori[pairs["ref"], 0], m.ori[pairs["trg"], 0]
    err = relative_errors(pa, pb, pairs["d_scale"], pairs["d_ori"])
    err = {k: np.where(np.isfinite(v), v, np.inf) for k, v in err.items()}
    return {**accuracies(err), "n_pairs": int(len(pairs["ref"]))}, err


def exact_poses(data: dict, seed: int = 0) -> MethodPoses:
    """A perfect estimator: every view's exact pose, each keypoint's own (canonical) scale and orientation
    drawn at random (scale uniform within a bin, orientation uniform on the circle).

    Its continuous errors are all zero; what it loses under the official metric is the quantisation of
    each view's pose to bins (e.g. about a quarter of the PatchPose-B rotation pairs at ±5°, whose
    ground-truth angles are continuous): the ceiling of that metric for any method that estimates each
    view on its own."""
    rng = np.random.default_rng(seed)
    kp = np.asarray(data["keypoint"])
    keys, inv = np.unique(kp, return_inverse=True)
    c_s, c_o = rng.uniform(0.0, 1.0 / 3.0, len(keys)), rng.uniform(0.0, 2 * np.pi, len(keys))
    scale = c_s[inv] + np.log2(data["scale_factor"])
    ori = (c_o[inv] + np.radians(data["angle_deg"])) % (2 * np.pi)
    return MethodPoses("exact", scale=scale[:, None], ori=ori[:, None])


def _cat(*ps: dict) -> dict:
    return {k: np.concatenate([p[k] for p in ps]) for k in ps[0]}


def evaluate(
    data_root: str | Path,
    out_dir: str | Path,
    weights: str | None = None,
    split: str = "test",
    progress: bool = True,
    read_plan: dict | None = None,
    bootstrap: int = DEFAULT_REPLICATES,
) -> dict:
    """Run every method on the split and write ``results.json``, ``results.md`` and the figures.

    ``read_plan``: changes to the model's read plan (:meth:`patchpose.ReadPlan.replace`), or None.

    ``bootstrap`` replicates (0: none) give 95 % intervals of our accuracy and of ours minus every other
    method on the official A+B and joint protocols, resampling keypoints (``doc["intervals"]``)."""
    check_bootstrap(bootstrap)
    from ..estimator import PatchPoseEstimator

    t0 = time.time()
    ds = PatchPoseData(data_root, split)
    data = ds.load()
    est = PatchPoseEstimator.load(weights).with_plan(**(read_plan or {}))
    pairs = {s: ds.pairs(s) for s in ("A_scale", "A_rot", "B_scale", "B_rot", "B_joint")}
    methods = run_methods(data, est, progress)
    ab_s, ab_o = _cat(pairs["A_scale"], pairs["B_scale"]), _cat(pairs["A_rot"], pairs["B_rot"])  # A+B
    protocols: dict = {p: {} for p in PROTOCOLS}
    topk: dict = {}
    cont_err: dict = {}
    correct: dict = {p: {} for p in INTERVAL_PROTOCOLS}
    for m in methods:
        protocols["official_A"][m.name] = official_scores(m, pairs["A_scale"], pairs["A_rot"])
        protocols["official_B"][m.name] = official_scores(m, pairs["B_scale"], pairs["B_rot"])
        ab_err = official_pair_errors(m, ab_s, ab_o)  # once: for the table and for the intervals
        protocols["official_AB"][m.name] = official_scores(m, ab_s, ab_o, errors=ab_err)
        correct["official_AB"][m.name] = _official_correct(*ab_err)
        rs, es = continuous_accuracies(m, ab_s, ("scale",))
        ro, eo = continuous_accuracies(m, ab_o, ("orientation",))
        protocols["continuous_AB"][m.name] = {
            **rs,
            **ro,
            "n_pairs": rs["n_pairs"] * ("scale" in es) + ro["n_pairs"] * ("orientation" in eo),
        }
        cont_err[m.name] = {"scale": es.get("scale"), "orientation": eo.get("orientation")}
        protocols["joint"][m.name], ej = continuous_accuracies(m, pairs["B_joint"])
        correct["joint"][m.name] = within_thresholds(ej)
        if m.name in ("patchpose", "sift"):
            topk[m.name] = {str(k): official_scores(m, ab_s, ab_o, k) for k in TOPK}
    exact = exact_poses(data)
    ceiling = {
        "official_A": official_scores(exact, pairs["A_scale"], pairs["A_rot"]),
        "official_B": official_scores(exact, pairs["B_scale"], pairs["B_rot"]),
        "official_AB": official_scores(exact, ab_s, ab_o),
    }
    intervals: dict = {}
    if bootstrap:
        kp = np.asarray(data["keypoint"])
        by_col = {
            "official_AB": dict.fromkeys(COLS[:2], kp[ab_s["trg"]])
            | dict.fromkeys(COLS[2:], kp[ab_o["trg"]]),
            "joint": dict.fromkeys(COLS, kp[pairs["B_joint"]["trg"]]),
        }
        intervals = {p: _intervals(correct[p], by_col[p], bootstrap) for p in INTERVAL_PROTOCOLS}
    for proto in protocols.values():  # drop methods that measure nothing under a protocol
        for name in [n for n, r in proto.items() if len(r) == 1]:
            del proto[name]
    doc = {
        "protocols": protocols,
        "topk": topk,
        "ceiling": ceiling,
        "intervals": intervals,
        "data": {
            "root": str(data_root),
            "split": split,
            "photos": len(data["images"]),
            "samples": int(len(data["series"])),
            "pairs": {k: int(len(v["ref"])) for k, v in pairs.items()},
        },
        "model": est.meta.get("name", str(weights)),
        "plan": asdict(est.plan),
        "seconds": time.time() - t0,
    }
    out = write_results(out_dir, doc, results_markdown(doc))
    from .figures import prediction_ranges, rangewise_accuracy

    prediction_ranges(methods, pairs, out / "prediction_ranges.png")
    rangewise_accuracy(cont_err, ab_s, ab_o, out / "rangewise_accuracy.png")
    doc["seconds"] = time.time() - t0
    write_results(out, doc)
    return doc


COLS = ("scale_acc@1/6", "scale_acc@1/3", "ori_acc@5", "ori_acc@10")


def results_markdown(doc: dict) -> str:
    d = doc["data"]
    lines = [
        f"# PatchPose evaluation ({doc['model']}, split {d['split']}: {d['photos']} photos, {d['samples']} patches)",
        "",
        "Accuracy in % (scale ±1/6, ±1/3 octave; orientation ±5°, ±10°).",
        "",
    ]
    for proto, methods in doc["protocols"].items():
        lines += [
            f"## {proto}",
            "",
            "| method | " + " | ".join(COLS) + " | pairs |",
            "|---" * (len(COLS) + 2) + "|",
        ]
        for m, r in methods.items():
            lines.append(
                f"| {m} | "
                + " | ".join(f"{r[c]:.1f}" if c in r else "–" for c in COLS)
                + f" | {r['n_pairs']} |"
            )
        lines.append("")
    if "ceiling" in doc:
        lines += [
            "## Ceiling of the official metric",
            "",
            "Exact poses (zero continuous error), each keypoint's own scale and orientation at random: what "
            "quantising each view's pose to bins costs any method that estimates each view on its own.",
            "",
            "| protocol | " + " | ".join(COLS) + " |",
            "|---" * (len(COLS) + 1) + "|",
        ]
        for proto, r in doc["ceiling"].items():
            lines.append(f"| {proto} | " + " | ".join(f"{r[c]:.1f}" for c in COLS) + " |")
        lines.append("")
    lines += _intervals_markdown(doc.get("intervals") or {})
    lines += [
        "## Top-k recall (official metric, A+B)",
        "",
        "| method | k | " + " | ".join(COLS) + " |",
        "|---" * (len(COLS) + 2) + "|",
    ]
    for m, ks in doc["topk"].items():
        for k, r in ks.items():
            lines.append(
                f"| {m} | {k} | " + " | ".join(f"{r[c]:.1f}" if c in r else "–" for c in COLS) + " |"
            )
    lines += ["", f"Evaluated in {doc['seconds']:.0f} s (every method, including rendering the views)."]
    return "\n".join(lines) + "\n"


def _intervals_markdown(intervals: dict) -> list[str]:
    if not intervals:
        return []
    some = next(iter(r for p in intervals.values() for r in p.values()))
    lines = [
        "## How sure: 95 % intervals (bootstrap over keypoints)",
        "",
        f"First row of each protocol: our accuracy and its interval. Other rows: ours minus the method, in "
        f"percentage points, with the interval of that difference. {some['replicates']} replicates, each drawing "
        "keypoints with replacement and keeping all their pairs, the same draws for every method "
        "(`patchpose.evaluation.intervals`). An interval that holds 0: this split cannot tell the two apart.",
        "",
        "| protocol | method | " + " | ".join(COLS) + " | keypoints |",
        "|---" * (len(COLS) + 3) + "|",
    ]
    for proto, cols in intervals.items():
        if not cols:
            continue
        n_kp = max(r["n_clusters"] for r in cols.values())
        ours = [format_interval(**cols[c]["accuracy"]["patchpose"]) if c in cols else "–" for c in COLS]
        lines.append(f"| {proto} | patchpose (accuracy) | " + " | ".join(ours) + f" | {n_kp} |")
        others = list(dict.fromkeys(m for r in cols.values() for m in r["difference"]))
        for m in others:
            cells = [
                format_interval(**cols[c]["difference"][m], signed=True)
                if c in cols and m in cols[c]["difference"]
                else "–"
                for c in COLS
            ]
            lines.append(f"| {proto} | ours − {m} | " + " | ".join(cells) + " | |")
    return lines + [""]
