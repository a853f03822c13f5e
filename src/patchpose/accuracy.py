"""How far a relative pose is from the truth: errors and accuracies within ±1/6, ±1/3 octave and ±5°, ±10°
(continuous ground truth), for validation during training and for the benchmarks (the official bin metric is
:mod:`patchpose.evaluation.official`)."""

from __future__ import annotations

import numpy as np

from .conventions import angle_diff

SCALE_THRESHOLDS = (1 / 6, 1 / 3)  # octaves
ORI_THRESHOLDS_DEG = (5.0, 10.0)


def relative_errors(pred_a: dict, pred_b: dict, d_scale, d_ori) -> dict[str, np.ndarray]:
    """Errors of the predicted relative pose b − a against the truth: ``scale`` |log2| and
    ``orientation`` |angle| in degrees (cyclic). Predictions may be ``(N,)`` or ``(N, k)``; with ``k``
    candidates the error is the best over the k×k candidate pairs (top-k recall); a NaN candidate (a failed
    estimate) is passed over, and the error is NaN only where every pair is."""
    out = {}
    if "scale" in pred_a:
        a, b = np.atleast_2d(pred_a["scale"].T).T, np.atleast_2d(pred_b["scale"].T).T
        e = np.abs((b[:, None, :] - a[:, :, None]) - np.asarray(d_scale)[:, None, None])
        out["scale"] = _best(e)
    if "orientation" in pred_a:
        a, b = np.atleast_2d(pred_a["orientation"].T).T, np.atleast_2d(pred_b["orientation"].T).T
        e = np.abs(angle_diff(b[:, None, :] - a[:, :, None], np.asarray(d_ori)[:, None, None]))
        out["orientation"] = np.degrees(_best(e))
    return out


def _best(e: np.ndarray) -> np.ndarray:
    """Per row of ``(N, k, k)`` errors, the smallest that is not NaN (NaN where all are)."""
    e = e.reshape(len(e), -1)
    out = np.full(len(e), np.nan)
    some = ~np.isnan(e).all(1)
    out[some] = np.nanmin(e[some], axis=1)
    return out


def within_thresholds(errors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per pair, whether it is within ±1/6, ±1/3 octave and ±5°, ±10° (boolean arrays by column)."""
    out = {}
    if "scale" in errors:
        e = np.asarray(errors["scale"])
        out["scale_acc@1/6"] = e <= SCALE_THRESHOLDS[0] + 1e-9
        out["scale_acc@1/3"] = e <= SCALE_THRESHOLDS[1] + 1e-9
    if "orientation" in errors:
        e = np.asarray(errors["orientation"])
        out["ori_acc@5"] = e <= ORI_THRESHOLDS_DEG[0] + 1e-9
        out["ori_acc@10"] = e <= ORI_THRESHOLDS_DEG[1] + 1e-9
    return out


def accuracies(errors: dict[str, np.ndarray]) -> dict[str, float]:
    """Percent of pairs within ±1/6, ±1/3 octave and ±5°, ±10°."""
    return {key: 100.0 * float(np.mean(ok)) for key, ok in within_thresholds(errors).items()}


__all__ = ["ORI_THRESHOLDS_DEG", "SCALE_THRESHOLDS", "accuracies", "relative_errors", "within_thresholds"]
