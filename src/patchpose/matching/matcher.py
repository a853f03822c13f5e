"""Mutual nearest-neighbour matching, with several descriptors per keypoint (top-k poses)."""

from __future__ import annotations

import numpy as np
import torch


def keypoint_distances(d1: np.ndarray, d2: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """``(N, M)`` distances between keypoints described by ``d1 (N, k1, D)`` and ``d2 (M, k2, D)``: the
    smallest L2 distance over their ``k1 × k2`` descriptor pairs."""
    d1, d2 = np.asarray(d1, np.float32), np.asarray(d2, np.float32)
    if d1.ndim == 2:
        d1 = d1[:, None]
    if d2.ndim == 2:
        d2 = d2[:, None]
    n, k1, dim = d1.shape
    m, k2, _ = d2.shape
    out = np.empty((n, m), np.float32)
    b = torch.from_numpy(d2.reshape(m * k2, dim))
    rows = max(1, chunk // k1)
    for i in range(0, n, rows):
        a = torch.from_numpy(d1[i : i + rows].reshape(-1, dim))
        dist = torch.cdist(a, b).view(-1, k1, m, k2)
        out[i : i + rows] = dist.amin(dim=(1, 3)).numpy()
    return out


def mutual_nn(d1: np.ndarray, d2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mutual nearest neighbours: ``(L, 2)`` index pairs ``(i in 1, j in 2)`` and their distances.

    ``d1``/``d2`` are ``(N, D)`` or ``(N, k, D)`` (``k`` descriptors per keypoint; a pair's distance is the
    smallest over its descriptor pairs)."""
    if len(d1) == 0 or len(d2) == 0:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.float32)
    dist = keypoint_distances(d1, d2)
    nn12 = dist.argmin(1)
    nn21 = dist.argmin(0)
    i = np.nonzero(nn21[nn12] == np.arange(len(nn12)))[0]
    pairs = np.stack([i, nn12[i]], 1).astype(np.int64)
    return pairs, dist[pairs[:, 0], pairs[:, 1]]


__all__ = ["keypoint_distances", "mutual_nn"]
