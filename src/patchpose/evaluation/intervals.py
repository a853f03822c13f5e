"""How sure a measured accuracy, or a difference between two methods, is: a bootstrap over keypoints.

The pairs of a PatchPose split are not independent. Every pair of a series is one keypoint's reference patch
against one of its transformed copies, and a keypoint that is hard (its orientation histogram has two peaks,
say) fails on many of its copies at once. Resampling pairs would then make intervals far too narrow. So the
unit that is resampled is the **keypoint** (the cluster): each bootstrap replicate draws as many keypoints as
there are, with replacement, and keeps every pair of each one drawn.

Differences between methods are *paired*: all methods are scored on the same replicates, so a keypoint that is
hard for every method moves them together and cancels in the difference.

Intervals are percentile intervals of the replicates, in percentage points. An interval of a difference that
holds 0 means the split cannot tell the two methods apart on that column. With fewer than two clusters there is
nothing to resample: the interval is None ("cannot be computed"), never a zero-width one.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError, is_int_in

#: the fewest clusters (keypoints, sequences, photos) an interval can be computed from
MIN_CLUSTERS = 2

#: bootstrap replicates by default (enough that the 2.5 and 97.5 percentiles barely move between seeds)
DEFAULT_REPLICATES = 2000


def cluster_bootstrap(
    correct: dict[str, np.ndarray],
    clusters: np.ndarray,
    reference: str | None = None,
    replicates: int = DEFAULT_REPLICATES,
    level: float = 0.95,
    seed: int = 0,
) -> dict:
    """Accuracies and paired differences with bootstrap intervals over clusters.

    Args:
        correct: per method, a boolean ``(N,)`` array: whether each pair was within the threshold; or a
            score in ``[0, 1]`` per pair (e.g. the share of a pair's matches that are correct), whose mean
            is then reported like an accuracy, in percent. Every method is scored on the same N pairs, in
            the same order.
        clusters: ``(N,)`` the cluster of each pair (the keypoint id); any hashable numeric labels.
        reference: the method whose differences to every other one are reported (``reference − other``);
            None: no differences.
        replicates: bootstrap replicates (> 0).
        level: the central probability of each interval, in (0, 1).
        seed: the random seed; the same seed gives the same intervals.

    Returns:
        ``{"accuracy": {method: {"value": %, "interval": [lo, hi]}}, "difference": {method: {"value": points,
        "interval": [lo, hi]}}, "n_pairs": N, "n_clusters": K, "replicates": R, "level": level}``; every
        interval is None when there are fewer than :data:`MIN_CLUSTERS` clusters.
    """
    if not correct:
        raise InputError("cluster_bootstrap needs at least one method")
    if replicates < 1:
        raise InputError(f"replicates must be positive, got {replicates}")
    if not 0.0 < level < 1.0:
        raise InputError(f"level must lie in (0, 1), got {level}")
    if reference is not None and reference not in correct:
        raise InputError(f"reference method {reference!r} is not among {sorted(correct)}")
    cl = np.asarray(clusters).reshape(-1)
    n = cl.size
    if n == 0:
        raise InputError("cluster_bootstrap needs at least one pair")
    arrays = {}
    for name, c in correct.items():
        a = np.asarray(c)
        if a.shape != (n,):
            raise InputError(f"method {name!r}: {a.shape} correctness values for {n} pairs")
        if a.dtype != bool:
            if not np.issubdtype(a.dtype, np.number) or not np.all((a >= 0) & (a <= 1)):
                raise InputError(
                    f"method {name!r}: correctness must be boolean, or a score from 0 to 1 per pair"
                )
            a = a.astype(np.float64)
        arrays[name] = a
    _, inv = np.unique(cl, return_inverse=True)
    k = int(inv.max()) + 1
    size = np.bincount(inv, minlength=k).astype(np.float64)
    hits = {name: np.bincount(inv, weights=a.astype(np.float64), minlength=k) for name, a in arrays.items()}
    rng = np.random.default_rng(seed)
    # how often each cluster is drawn in each replicate: (R, K), each row sums to K
    draws = rng.multinomial(k, np.full(k, 1.0 / k), size=replicates).astype(np.float64)
    pairs_drawn = draws @ size  # > 0: every cluster holds at least one pair
    rep = {name: 100.0 * (draws @ h) / pairs_drawn for name, h in hits.items()}
    q = 100.0 * np.array([(1.0 - level) / 2.0, (1.0 + level) / 2.0])

    def interval(x: np.ndarray) -> list[float] | None:
        if k < MIN_CLUSTERS:  # every replicate is the sample itself: no spread to measure
            return None
        lo, hi = np.percentile(x, q)
        return [float(lo), float(hi)]

    out: dict = {
        "accuracy": {
            name: {"value": 100.0 * float(a.mean()), "interval": interval(rep[name])}
            for name, a in arrays.items()
        },
        "difference": {},
        "n_pairs": int(n),
        "n_clusters": k,
        "replicates": int(replicates),
        "level": float(level),
    }
    if reference is not None:
        ref = arrays[reference]
        for name, a in arrays.items():
            if name != reference:
                out["difference"][name] = {
                    "value": 100.0 * float(ref.mean() - a.mean()),
                    "interval": interval(rep[reference] - rep[name]),
                }
    return out


def check_bootstrap(bootstrap) -> None:
    """An evaluation's ``bootstrap`` setting: 0 (no intervals) or a number of replicates."""
    if not is_int_in(bootstrap, 0):
        raise InputError(f"bootstrap must be 0 (off) or a number of replicates, got {bootstrap!r}")


def mean_intervals(
    values: dict[str, np.ndarray], clusters: np.ndarray, reference: str, replicates: int = DEFAULT_REPLICATES
) -> dict:
    """:func:`cluster_bootstrap` for scores in ``[0, 1]`` reported as fractions (an MMA, say): ``{"mean": {row:
    {"value", "interval"}}, "minus_reference": {row: {"value", "interval"}}, "reference": name, "n_clusters",
    "replicates"}``, the differences being ``row − reference``."""
    b = cluster_bootstrap(values, clusters, reference, replicates)

    def frac(d: dict, sign: float = 1.0) -> dict:
        iv = d["interval"]
        return {
            "value": sign * d["value"] / 100.0,
            "interval": None if iv is None else sorted(sign * v / 100.0 for v in iv),
        }

    return {
        "mean": {r: frac(v) for r, v in b["accuracy"].items()},
        # cluster_bootstrap gives reference − row: turned round
        "minus_reference": {r: frac(v, -1.0) for r, v in b["difference"].items()},
        "reference": reference,
        "n_clusters": b["n_clusters"],
        "replicates": b["replicates"],
    }


def count_intervals(
    values: dict[str, np.ndarray], clusters: np.ndarray, reference: str, replicates: int = DEFAULT_REPLICATES
) -> dict:
    """:func:`mean_intervals` of counts per pair (correct matches, say: any non-negative numbers), in their own
    units: the counts are divided by the largest for the bootstrap and multiplied back."""
    unit = max(1.0, *(float(np.max(v, initial=0.0)) for v in values.values()))
    out = mean_intervals(
        {r: np.asarray(v, np.float64) / unit for r, v in values.items()}, clusters, reference, replicates
    )

    def mul(d: dict) -> dict:
        iv = d["interval"]
        return {"value": d["value"] * unit, "interval": None if iv is None else [x * unit for x in iv]}

    return {
        **out,
        "mean": {r: mul(d) for r, d in out["mean"].items()},
        "minus_reference": {r: mul(d) for r, d in out["minus_reference"].items()},
    }


#: what a table shows in place of an interval that could not be computed (fewer than two clusters)
NO_INTERVAL = "[no interval: fewer than 2 sequences or photos]"


def format_fraction_interval(d: dict, signed: bool = False) -> str:
    """``0.843 [0.812, 0.871]`` or ``−0.050 [−0.071, −0.030]`` from ``{"value", "interval"}`` (fractions)."""
    f = "{:+.3f}" if signed else "{:.3f}"

    def g(x: float) -> str:  # round first, so that −0.0004 reads +0.000 rather than −0.000
        return f.format(round(float(x), 3) + 0.0)

    if d["interval"] is None:
        return f"{g(d['value'])} {NO_INTERVAL}".replace("-", "−")
    lo, hi = d["interval"]
    return f"{g(d['value'])} [{g(lo)}, {g(hi)}]".replace("-", "−")


def mean_interval_rows(columns: list[dict], label=str, fmt=None) -> list[str]:
    """Markdown table rows of :func:`mean_intervals` results side by side (one result per column): each
    row's mean, then each row minus the reference; ``label`` names a row; ``fmt(d, signed)`` writes a cell
    (default :func:`format_fraction_interval`)."""
    fmt = fmt or format_fraction_interval
    first = columns[0]
    ref = label(first["reference"])
    rows = [
        f"| {label(r)} | " + " | ".join(fmt(c["mean"][r], False) for c in columns) + " |"
        for r in first["mean"]
    ]
    return rows + [
        f"| {label(r)} − {ref} | " + " | ".join(fmt(c["minus_reference"][r], True) for c in columns) + " |"
        for r in first["minus_reference"]
    ]


def format_interval(value: float, interval: list[float] | None, signed: bool = False) -> str:
    """``"+1.2 [−0.4, +2.9]"`` (signed) or ``"68.5 [64.1, 72.6]"``, one decimal; :data:`NO_INTERVAL` after
    the value when the interval could not be computed (None)."""
    f = "{:+.1f}" if signed else "{:.1f}"
    if interval is None:
        return f"{f.format(value)} {NO_INTERVAL}".replace("-", "−")
    lo, hi = interval
    return f"{f.format(value)} [{f.format(lo)}, {f.format(hi)}]".replace("-", "−")


__all__ = [
    "DEFAULT_REPLICATES",
    "MIN_CLUSTERS",
    "NO_INTERVAL",
    "check_bootstrap",
    "cluster_bootstrap",
    "count_intervals",
    "format_fraction_interval",
    "format_interval",
    "mean_interval_rows",
    "mean_intervals",
]
