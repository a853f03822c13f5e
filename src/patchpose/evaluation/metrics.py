"""Keypoints a detector finds again in a second image, for the benchmarks' repeatability counts."""

from __future__ import annotations

import numpy as np


def redetections(projected, found, max_px: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keypoints found again: mutually nearest pairs ``(i, j)`` of ``projected`` ``(N, 2)`` (keypoints of one
    image mapped into the other by the true transform) and ``found`` ``(M, 2)`` (the other image's
    keypoints) that lie within ``max_px`` of each other; returns ``i``, ``j`` and their distances."""
    p, f = np.asarray(projected, np.float64), np.asarray(found, np.float64)
    if len(p) == 0 or len(f) == 0:
        e = np.zeros(0, np.int64)
        return e, e, np.zeros(0)
    d = np.linalg.norm(p[:, None] - f[None], axis=2)
    d = np.where(np.isfinite(d), d, np.inf)
    j = d.argmin(1)
    dij = d[np.arange(len(p)), j]
    i = np.nonzero((dij <= max_px) & (d.argmin(0)[j] == np.arange(len(p))))[0]
    return i, j[i], dij[i]


__all__ = ["redetections"]
