"""Figures of the PatchPose evaluation (the paper's supplementary Figures C.1 and C.2)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

COLORS = {
    "patchpose": "tab:red",
    "sift": "tab:blue",
    "dominant_gradient": "tab:green",
    "orb_centroid": "tab:olive",
    "log": "tab:purple",
}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def prediction_ranges(methods, pairs: dict, path: Path) -> None:
    """Figure C.1: predicted relative pose (target − reference) against the truth, one panel per method
    and quantity, on the scale-only and rotation-only pairs of A and B."""
    plt = _plt()
    ps = {k: np.concatenate([pairs["A_scale"][k], pairs["B_scale"][k]]) for k in ("ref", "trg", "d_scale")}
    po = {k: np.concatenate([pairs["A_rot"][k], pairs["B_rot"][k]]) for k in ("ref", "trg", "d_ori")}
    panels = [(m, "scale") for m in methods if m.scale is not None] + [
        (m, "ori") for m in methods if m.ori is not None
    ]
    ncol = max(sum(q == "scale" for _, q in panels), sum(q == "ori" for _, q in panels))
    fig, axes = plt.subplots(2, ncol, figsize=(3.2 * ncol, 6.4), squeeze=False)
    col = {"scale": 0, "ori": 0}
    for m, q in panels:
        r = 0 if q == "scale" else 1
        ax = axes[r, col[q]]
        col[q] += 1
        if q == "scale":
            gt, pred = ps["d_scale"], m.scale[ps["trg"], 0] - m.scale[ps["ref"], 0]
            ax.plot([-2, 2], [-2, 2], color="0.6", lw=0.8)
            ax.set_xlim(-2.2, 2.2)
            ax.set_ylim(-4.5, 4.5)
            ax.set_xlabel("true Δ scale (log2)")
            ax.set_ylabel("predicted Δ scale (log2)")
        else:
            gt = np.degrees(po["d_ori"])
            pred = np.degrees((m.ori[po["trg"], 0] - m.ori[po["ref"], 0]) % (2 * np.pi))
            ax.plot([0, 360], [0, 360], color="0.6", lw=0.8)
            ax.set_xlim(0, 360)
            ax.set_ylim(0, 360)
            ax.set_xlabel("true Δ orientation (°)")
            ax.set_ylabel("predicted Δ orientation (°)")
        ok = np.isfinite(pred)
        ax.scatter(gt[ok], pred[ok], s=2, alpha=0.25, color=COLORS.get(m.name, "k"), rasterized=True)
        ax.set_title(
            f"{m.name}: {'scale' if q == 'scale' else 'orientation'}"
            + (f" ({100 * (1 - ok.mean()):.0f}% failed)" if not ok.all() else ""),
            fontsize=9,
        )
    for r in range(2):
        for c in range(col["scale" if r == 0 else "ori"], ncol):
            axes[r, c].set_visible(False)
    fig.suptitle("Prediction ranges on PatchPose (A+B): predicted vs true relative pose", fontsize=11)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


#: Figure C.2's scale bins: 13 bins of 1/3 octave centred on the PatchPose-A scale changes k/3, k = −6…6
#: (whose true values then sit mid-bin, not on an edge), covering B's continuous [−2, 2] too
SCALE_RANGE_EDGES = (np.arange(-6, 8) - 0.5) / 3.0
#: its rotation bins: 30° wide from 0° to 360°
ORI_RANGE_EDGES = np.arange(0, 361, 30)


def binned_accuracy(gt: np.ndarray, correct: np.ndarray, edges: np.ndarray) -> tuple[list, list]:
    """``(bin centres, accuracy in %)`` of the non-empty half-open bins ``[lo, hi)`` of ``edges`` (each pair
    in one bin at most)."""
    gt, correct = np.asarray(gt, np.float64), np.asarray(correct, bool)
    x, y = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (gt >= lo) & (gt < hi)
        if sel.any():
            x.append((lo + hi) / 2)
            y.append(100.0 * float(np.mean(correct[sel])))
    return x, y


def rangewise_accuracy(cont_err: dict, pairs_s: dict, pairs_o: dict, path: Path) -> None:
    """Figure C.2: accuracy by the size of the true scale / rotation difference (continuous errors)."""
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for name, e in cont_err.items():
        if e.get("scale") is not None:
            x, y = binned_accuracy(pairs_s["d_scale"], e["scale"] <= 1 / 3 + 1e-9, SCALE_RANGE_EDGES)
            a1.plot(x, y, "o-", label=name, color=COLORS.get(name))
        if e.get("orientation") is not None:
            gt = np.degrees(pairs_o["d_ori"])
            x, y = binned_accuracy(gt, e["orientation"] <= 10 + 1e-9, ORI_RANGE_EDGES)
            a2.plot(x, y, "o-", label=name, color=COLORS.get(name))
    a1.set(
        xlabel="true scale difference (log2; bins of 1/3 octave centred on k/3)",
        ylabel="accuracy ±1/3 octave (%)",
        title="Scale accuracy by scale difference",
        ylim=(0, 101),
    )
    a2.set(
        xlabel="true rotation (°, bins of 30°)",
        ylabel="accuracy ±10° (%)",
        title="Orientation accuracy by rotation",
        ylim=(0, 101),
        xticks=ORI_RANGE_EDGES[::2],
    )
    for a in (a1, a2):
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle("Range-wise accuracy on PatchPose (A+B, continuous errors)", fontsize=11)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


__all__ = ["binned_accuracy", "prediction_ranges", "rangewise_accuracy"]
