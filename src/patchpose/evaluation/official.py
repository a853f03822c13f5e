"""The official PatchPose metric (self-sca-ori ``test.py`` / ``utils/test_utils.py``), on histograms.

Protocol
    Each test pair is a source patch and a target patch, the target being the source transformed by a
    known scale factor ``s`` (scale subset: names with ``angle000``) or a known rotation of ``θ`` degrees,
    counter-clockwise as displayed (orientation subset: names with ``scale1.0000``). The model gives one
    histogram per patch (13 scale bins, 36 orientation bins) and the **predicted relative pose is a
    difference of argmax bins**, ``d = argmax(trg) − argmax(src)``, an integer that can be negative. A
    pose difference moves a histogram towards higher bins (our convention and the official one), so a
    perfect model has ``d`` equal to the ground truth in bins.

    * Scale: the ground truth is ``round(3·log2 s)`` (``log2(s)/2 · 6`` in the official code, i.e. 3 bins
      per octave), **rounded to an integer**; the error ``|d − gt|`` is an integer number of bins.
      Thresholds (0.5, 1, 1.5, 2) bins, i.e. factors 2^(1/6), 2^(1/3), 2^(1/2), 2^(2/3). Because the error
      is an integer, the 1.5 threshold always gives the same accuracy as 1.
    * Orientation: the ground truth is ``g = θ/10`` as a float (**not rounded**), and the official error is
      ``min(|d−g|, |d−g−36|, |d−g+36|)``, which the reference writes ``min(|d−g|, |d−g∓36|)``. Since
      ``d−g`` lies in ``(−71, 71)``, one shift of ±36 is not enough and this is **not fully cyclic**
      (``d = −35, g = 35`` gives 34 instead of 2). ``cyclic=True`` (our default) uses the fully cyclic
      distance on 36 bins instead; ``cyclic=False`` reproduces the official numbers. Thresholds
      (0.5, 1, 2, 4) bins, i.e. ±5°, ±10°, ±20°, ±40°.
    * Accuracy is ``100 · mean(error ≤ threshold)`` with no tolerance. The official script prints it
      rounded to 2 decimals (``official_accuracies(..., decimals=2)``).

Numerics
    The official test dataset builds the ground truth with ``torch.tensor(float)``, i.e. in **float32**,
    and computes ``log2(s)/2·6``, ``θ/10`` and ``d − g`` in float32. We do the same arithmetic in float32
    (and return float64 arrays holding those float32 values) so that threshold comparisons agree with
    the official ones; for integer degrees and 4-decimal scale factors (the PatchPose file names) float64
    would give the same accuracies anyway.

Differences from our continuous metric (:mod:`patchpose.evaluation.metrics`)
    * Here predictions are integer argmax bins (no sub-bin refinement), so on PatchPoseA, whose ground
      truth falls on whole bins, "±5°" means exact-bin accuracy and "2^(1/6)" means the exact scale bin.
      The continuous metric compares refined poses with the exact ground truth (octaves, degrees).
    * The scale ground truth is rounded here and not there; the orientation distance is semi-cyclic
      here with ``cyclic=False``.
    * Top-k (:func:`official_topk_scale_errors`, :func:`official_topk_ori_errors`) is not in the
      official code (the paper's Table 2 "top-k candidates" has no released implementation); it is the
      same bin metric, taking the best of the ``k×k`` pairs of the ``k`` highest bins of each histogram.
"""

from __future__ import annotations

import numpy as np

#: Scale thresholds in bins and their report keys (fractions of an octave).
SCALE_THRESHOLDS_BINS = {
    "scale_acc@1/6": 0.5,
    "scale_acc@1/3": 1.0,
    "scale_acc@1/2": 1.5,
    "scale_acc@2/3": 2.0,
}
#: Orientation thresholds in bins (10° each) and their report keys (degrees).
ORI_THRESHOLDS_BINS = {"ori_acc@5": 0.5, "ori_acc@10": 1.0, "ori_acc@20": 2.0, "ori_acc@40": 4.0}

#: The bins the official metric is defined on: 36 orientation bins (10° each) and 13 scale bins over
#: [−2, 2] (3 per octave). Its thresholds are counted in these bins.
OFFICIAL_ORI_BINS = 36
OFFICIAL_SCALE_BINS_PER_OCTAVE = 3

_F32 = np.float32


# ----------------------------------------------------------------------------- helpers
def _check(hist_src, hist_trg, gt, name: str):
    a, b = np.asarray(hist_src), np.asarray(hist_trg)
    g = np.asarray(gt)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"{name}: histograms must both be (N, B), got {a.shape} and {b.shape}")
    if g.shape != (a.shape[0],):
        raise ValueError(f"{name}: ground truth must be ({a.shape[0]},), got {g.shape}")
    return a, b, g


def _topk_bins(hist: np.ndarray, k: int) -> np.ndarray:
    """Indices ``(N, k)`` of the ``k`` highest bins, highest first; ties go to the lowest index, so
    ``k = 1`` is exactly ``argmax`` for finite histograms (numpy and torch both return the first maximum)."""
    if not 1 <= k <= hist.shape[1]:
        raise ValueError(f"k must be in [1, {hist.shape[1]}], got {k}")
    return np.argsort(-hist.astype(np.float64), axis=1, kind="stable")[:, :k]


def _pair_diffs(hist_src, hist_trg, k: int) -> np.ndarray:
    """Predicted differences ``trg_bin − src_bin`` for all ``k×k`` candidate pairs, ``(N, k*k)``."""
    s, t = _topk_bins(hist_src, k), _topk_bins(hist_trg, k)
    return (t[:, None, :] - s[:, :, None]).reshape(len(s), -1)


def scale_gt_bins(gt_scale_factor, num_bins: int = 13) -> np.ndarray:
    """Official scale ground truth in bins, ``round(log2(s)/2 · (B−1)/2)`` = ``round(3·log2 s)`` for 13
    bins, computed in float32 as the official code does.

    Rounding: the official code uses Python's built-in ``round`` on a float, which rounds halves to
    even; ``np.round`` also rounds halves to even, so we use ``np.round`` and the two agree on every
    input (exact halves essentially never occur for real scale factors anyway)."""
    s = np.asarray(gt_scale_factor, dtype=_F32)
    with np.errstate(divide="raise", invalid="raise"):
        g = np.log2(s) / _F32(2.0) * _F32((num_bins - 1) / 2)
    return np.round(g).astype(np.int64)


def ori_gt_bins(gt_angle_deg, num_bins: int = 36) -> np.ndarray:
    """Official orientation ground truth in bins, ``θ / (360/B)`` as a float32 (not rounded)."""
    return np.asarray(gt_angle_deg, dtype=_F32) / _F32(360.0 / num_bins)


def _ori_distance(d, g, num_bins: int, cyclic: bool) -> np.ndarray:
    """Distance in bins between integer differences ``d`` and float ground truth ``g`` (float32).

    * ``cyclic=False`` (official): ``min(|x|, |x − B|, |x + B|)`` with ``x = d − g``. This equals the
      reference's ``∓`` read literally, ``min(|x|, |x − B·sign(x)|)`` (the shift away from zero never wins).
    * ``cyclic=True`` (ours): ``|x − B·round(x/B)|``, the distance on the circle of ``B`` bins."""
    x = d.astype(_F32) - g.astype(_F32)
    nb = _F32(num_bins)
    if cyclic:
        # subtract the nearest multiple of B: the same float32 operation as the official ``x ∓ B``, so
        # the two variants agree bit for bit wherever one wrap suffices (|x| ≤ 1.5·B)
        return np.abs(x - nb * np.round(x / nb))
    return np.minimum(np.abs(x), np.minimum(np.abs(x - nb), np.abs(x + nb)))


# ----------------------------------------------------------------------------- errors
def official_scale_errors(hist_src, hist_trg, gt_scale_factor) -> np.ndarray:
    """Official scale errors in bins, ``|(argmax(trg) − argmax(src)) − round(3·log2 s)|``.

    ``hist_src``, ``hist_trg``: ``(N, 13)`` histograms (logits or probabilities); ``gt_scale_factor``:
    ``(N,)`` factors ``s`` by which the target content is enlarged. Returns ``(N,)`` float64 integers."""
    return official_topk_scale_errors(hist_src, hist_trg, gt_scale_factor, k=1)


def official_ori_errors(hist_src, hist_trg, gt_angle_deg, cyclic: bool = True) -> np.ndarray:
    """Official orientation errors in bins between ``d = argmax(trg) − argmax(src)`` and
    ``g = θ/10`` (float). ``cyclic=False`` reproduces the official semi-cyclic
    ``min(|d−g|, |d−g−36|, |d−g+36|)``; ``cyclic=True`` (default) is the fully cyclic distance.

    ``hist_*``: ``(N, 36)``; ``gt_angle_deg``: ``(N,)`` degrees, counter-clockwise as displayed, of the
    target relative to the source. Returns ``(N,)`` float64."""
    return official_topk_ori_errors(hist_src, hist_trg, gt_angle_deg, k=1, cyclic=cyclic)


def official_topk_scale_errors(
    hist_src, hist_trg, gt_scale_factor, k: int, bins_per_octave: float | None = None
) -> np.ndarray:
    """Scale errors of the best of the ``k×k`` pairs of the ``k`` highest bins of each histogram
    (``k = 1`` is :func:`official_scale_errors`).

    ``bins_per_octave``: None for histograms over [−2, 2] (the official case, bins per octave from the
    bin count); otherwise the histogram's bin density, e.g. 3 for 25 bins over [−4, 4]. The ground truth
    is then computed exactly as for the [−2, 2] histogram of that density (13 bins for 3 per octave)."""
    a, b, s = _check(hist_src, hist_trg, gt_scale_factor, "official_topk_scale_errors")
    g = scale_gt_bins(s, a.shape[1] if bins_per_octave is None else int(round(4 * bins_per_octave)) + 1)
    err = np.abs(_pair_diffs(a, b, k) - g[:, None]).min(axis=1)
    return err.astype(np.float64)


def official_topk_ori_errors(hist_src, hist_trg, gt_angle_deg, k: int, cyclic: bool = True) -> np.ndarray:
    """Orientation errors of the best of the ``k×k`` pairs of the ``k`` highest bins of each histogram
    (``k = 1`` is :func:`official_ori_errors`)."""
    a, b, ang = _check(hist_src, hist_trg, gt_angle_deg, "official_topk_ori_errors")
    g = ori_gt_bins(ang, a.shape[1])
    err = _ori_distance(_pair_diffs(a, b, k), g[:, None], a.shape[1], cyclic).min(axis=1)
    return err.astype(np.float64)


# ----------------------------------------------------------------------------- accuracies
def _acc(errors: np.ndarray, thr: float, decimals: int | None) -> float:
    if errors.size == 0:
        return float("nan")
    v = 100.0 * float(np.mean(errors <= thr))
    return round(v, decimals) if decimals is not None else v


def official_accuracies(scale_errors=None, ori_errors=None, decimals: int | None = None) -> dict:
    """Percent of pairs with ``error ≤ threshold`` (no tolerance), for errors in bins from the functions
    above. Keys ``scale_acc@1/6, @1/3, @1/2, @2/3`` (0.5, 1, 1.5, 2 bins) and ``ori_acc@5, @10, @20,
    @40`` (0.5, 1, 2, 4 bins), plus ``n_scale_pairs`` / ``n_ori_pairs``. ``decimals=2`` rounds as the
    official script prints. Empty inputs give ``nan`` accuracies."""
    out: dict = {}
    if scale_errors is not None:
        e = np.asarray(scale_errors, dtype=np.float64).reshape(-1)
        for key, thr in SCALE_THRESHOLDS_BINS.items():
            out[key] = _acc(e, thr, decimals)
        out["n_scale_pairs"] = int(e.size)
    if ori_errors is not None:
        e = np.asarray(ori_errors, dtype=np.float64).reshape(-1)
        for key, thr in ORI_THRESHOLDS_BINS.items():
            out[key] = _acc(e, thr, decimals)
        out["n_ori_pairs"] = int(e.size)
    return out


__all__ = [
    "OFFICIAL_ORI_BINS",
    "OFFICIAL_SCALE_BINS_PER_OCTAVE",
    "ORI_THRESHOLDS_BINS",
    "SCALE_THRESHOLDS_BINS",
    "official_accuracies",
    "official_ori_errors",
    "official_scale_errors",
    "official_topk_ori_errors",
    "official_topk_scale_errors",
    "ori_gt_bins",
    "scale_gt_bins",
]


# ----------------------------------------------------------------------------- continuous methods
def official_errors_from_poses(src, trg, gt, kind: str, cyclic: bool = True) -> np.ndarray:
    """The official metric for a method that outputs poses rather than histograms: each pose is
    quantised to its nearest bin (log2 scale to multiples of 1/3, orientation to multiples of 10°),
    then ``d = bin(trg) − bin(src)`` is scored as above.

    ``src``, ``trg``: ``(N,)`` or ``(N, k)`` candidates (log2 scale, or radians CCW); NaN marks a
    failure (the error is then infinite). ``gt``: scale factors (``kind="scale"``) or degrees
    (``kind="orientation"``). With ``k`` candidates the best of the ``k×k`` pairs counts.
    """
    s = np.asarray(src, dtype=np.float64)
    t = np.asarray(trg, dtype=np.float64)
    s, t = (s[:, None] if s.ndim == 1 else s), (t[:, None] if t.ndim == 1 else t)
    if kind == "scale":
        bs, bt = np.round(3.0 * s), np.round(3.0 * t)
    elif kind == "orientation":
        bs = np.round(np.degrees(s) / 10.0) % 36
        bt = np.round(np.degrees(t) / 10.0) % 36
    else:
        raise ValueError(f"kind must be 'scale' or 'orientation', got {kind!r}")
    d = (bt[:, None, :] - bs[:, :, None]).reshape(len(s), -1)
    bad = ~np.isfinite(d)
    d = np.where(bad, 0.0, d)
    if kind == "scale":
        g = scale_gt_bins(gt).astype(np.float64)[:, None]
        e = np.abs(d - g)
    else:
        g = ori_gt_bins(gt)[:, None]
        e = _ori_distance(d.astype(np.int64), np.broadcast_to(g, d.shape), 36, cyclic).astype(np.float64)
    e = np.where(bad, np.inf, e)
    return e.min(axis=1)
