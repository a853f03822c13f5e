"""Matching keypoints by their descriptors, with several descriptors per keypoint (a keypoint's distance to another
is the smallest over their descriptor pairs): mutual nearest neighbours (:func:`mutual_nn`) and Lowe's ratio test
with a cross check (:func:`ratio_matches`, as COLMAP's matcher and most users run SIFT)."""

from __future__ import annotations

import numpy as np
import torch


def _as_keypoint_descriptors(d: np.ndarray) -> np.ndarray:
    d = np.asarray(d, np.float32)
    return d[:, None] if d.ndim == 2 else d


def _distinct(d: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The descriptors of ``d (N, k, D)`` as ``(R, D)`` rows, a keypoint's repeats of its first descriptor left out
    (a keypoint with fewer than ``k`` repeats its first), and where each keypoint's rows start ``(N,)`` (None for
    ``k = 1``): the smallest distance over a keypoint's rows is the same, at a fraction of the work."""
    n, k, dim = d.shape
    if k == 1:
        return d.reshape(n, dim), None
    real = np.ones((n, k), bool)
    real[:, 1:] = (d[:, 1:] != d[:, :1]).any(-1)
    return d[real], np.concatenate([[0], np.cumsum(real.sum(1))[:-1]])


def _distance_blocks(d1: np.ndarray, d2: np.ndarray, chunk: int):
    """``(i, block)`` for consecutive row blocks of the ``(N, M)`` keypoint distances (:func:`keypoint_distances`),
    each about ``chunk`` descriptors of ``d1`` by all of ``d2``."""
    d1, d2 = _as_keypoint_descriptors(d1), _as_keypoint_descriptors(d2)
    n, k1, _ = d1.shape
    flat2, starts2 = _distinct(d2)
    b = torch.from_numpy(np.ascontiguousarray(flat2))
    rows = max(1, chunk // k1)
    for i in range(0, n, rows):
        flat1, starts1 = _distinct(d1[i : i + rows])
        block = torch.cdist(torch.from_numpy(np.ascontiguousarray(flat1)), b).numpy()
        if starts2 is not None:
            block = np.minimum.reduceat(block, starts2, axis=1)
        if starts1 is not None:
            block = np.minimum.reduceat(block, starts1, axis=0)
        yield i, block


def keypoint_distances(d1: np.ndarray, d2: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """``(N, M)`` distances between keypoints described by ``d1 (N, k1, D)`` and ``d2 (M, k2, D)``: the
    smallest L2 distance over their ``k1 × k2`` descriptor pairs."""
    d1, d2 = _as_keypoint_descriptors(d1), _as_keypoint_descriptors(d2)
    out = np.empty((len(d1), len(d2)), np.float32)
    for i, block in _distance_blocks(d1, d2, chunk):
        out[i : i + len(block)] = block
    return out


def mutual_nn(d1: np.ndarray, d2: np.ndarray, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """Mutual nearest neighbours: ``(L, 2)`` index pairs ``(i in 1, j in 2)`` and their distances.

    ``d1``/``d2`` are ``(N, D)`` or ``(N, k, D)`` (``k`` descriptors per keypoint; a pair's distance is the
    smallest over its descriptor pairs). The distances are computed a block of about ``chunk`` rows at a
    time and never held whole: memory grows with ``chunk × M``, not ``N × M`` (34,000 keypoints a photo
    would need 4.6 GB). Ties go to the lowest index, as ``argmin`` of the whole matrix would."""
    if len(d1) == 0 or len(d2) == 0:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.float32)
    nn12 = np.empty(len(d1), np.int64)
    best12 = np.empty(len(d1), np.float32)
    nn21 = np.zeros(len(d2), np.int64)
    best21 = np.full(len(d2), np.inf, np.float32)
    for i, block in _distance_blocks(d1, d2, chunk):
        rows = np.arange(len(block))
        nn12[i : i + len(block)] = j = block.argmin(1)
        best12[i : i + len(block)] = block[rows, j]
        col = block.argmin(0)
        val = block[col, np.arange(block.shape[1])]
        better = val < best21  # strictly: an earlier block keeps a tie
        nn21[better], best21[better] = col[better] + i, val[better]
    i = np.nonzero(nn21[nn12] == np.arange(len(nn12)))[0]
    pairs = np.stack([i, nn12[i]], 1).astype(np.int64)
    return pairs, best12[i]


#: Lowe's ratio: a keypoint's nearest neighbour is kept when it is nearer than this share of the second nearest
#: (COLMAP's matcher's ``max_ratio``)
RATIO = 0.8


def ratio_matches(
    d1: np.ndarray, d2: np.ndarray, ratio: float = RATIO, cross_check: bool = True, chunk: int = 2048
) -> tuple[np.ndarray, np.ndarray]:
    """Lowe's ratio test: ``(L, 2)`` index pairs ``(i in 1, j in 2)`` and their distances, where ``j`` is ``i``'s
    nearest keypoint and nearer than ``ratio`` times its second nearest, and with ``cross_check`` ``i`` is ``j``'s
    nearest too (COLMAP's exhaustive matcher: ratio 0.8, cross check). Descriptors and blocks as :func:`mutual_nn`;
    a lone keypoint in image 2 has no second nearest and passes the ratio test."""
    if not (isinstance(ratio, (int, float)) and 0 < ratio <= 1):
        raise ValueError(f"ratio must be a number in (0, 1], got {ratio!r}")
    if len(d1) == 0 or len(d2) == 0:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.float32)
    nn12 = np.empty(len(d1), np.int64)
    best12 = np.empty(len(d1), np.float32)
    second12 = np.full(len(d1), np.inf, np.float32)
    nn21 = np.zeros(len(d2), np.int64)
    best21 = np.full(len(d2), np.inf, np.float32)
    for i, block in _distance_blocks(d1, d2, chunk):
        rows = np.arange(len(block))
        nn12[i : i + len(block)] = j = block.argmin(1)
        best12[i : i + len(block)] = block[rows, j]
        if block.shape[1] > 1:
            second12[i : i + len(block)] = np.partition(block, 1, axis=1)[:, 1]
        col = block.argmin(0)
        val = block[col, np.arange(block.shape[1])]
        better = val < best21
        nn21[better], best21[better] = col[better] + i, val[better]
    keep = best12 < ratio * second12
    if cross_check:
        keep &= nn21[nn12] == np.arange(len(nn12))
    i = np.nonzero(keep)[0]
    return np.stack([i, nn12[i]], 1).astype(np.int64), best12[i]


def short_repr(result) -> str:
    """A match result's ``repr`` (a dataclass of :class:`~.pair.PairMatches`' kind) that names each field with its
    value, an array by its dtype and shape only: ``UprightMatches(xy1=float64[1000, 2], ..., degrees=90, ...)``
    where the dataclass's own repr printed every keypoint."""
    import dataclasses

    def one(v) -> str:
        if isinstance(v, np.ndarray):
            return f"{v.dtype}{list(v.shape)}"
        if isinstance(v, float):
            return f"{v:.6g}"
        return repr(v)

    fields = ", ".join(f"{f.name}={one(getattr(result, f.name))}" for f in dataclasses.fields(result))
    return f"{type(result).__name__}({fields})"


__all__ = ["RATIO", "keypoint_distances", "mutual_nn", "ratio_matches", "short_repr"]
