"""Which photos of an unordered collection to pair: each photo's most similar photos by a global descriptor, so
that a collection's turns (:func:`~.collection.upright_collection`) are voted over ``N·k`` pairs instead of every
one of the ``N(N−1)/2``.

* :func:`vlad` — one vector a photo: VLAD (Jégou et al. 2010) of its local descriptors over a codebook of
  :data:`WORDS` words that k-means (OpenCV's, seeded) learns from the collection's own descriptors, each word's
  residual sum normalised (intra-normalisation), signed square roots, then L2.
* :func:`nearest_pairs` — each photo paired with its ``k`` most similar photos by those vectors (cosine), each
  unordered pair once.

No network and no weights: the descriptors are whatever the caller has (the votes' blended corners' descriptors,
which turn with the photo, so a turned photo finds its neighbours).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError, is_int_in

#: the neighbours `extract --unturn` votes each photo with where no other pairs are chosen: chosen on val (the val
#: photos' generated sequences, 24 images a scene, 192 in one folder; git tag ``lab-unturn-retrieval-v2-2026-11-29``)
#: as the smallest K with every scene one group, every photo a turn and no photo further from the truth than the worst
#: of every pair of each scene alone + 5° (a rule written after a first val run); every pair up to K + 1 photos. On test
#: one photo whose only found turn was to another scene was left 87° off (every pair of that folder: 22 over 10°)
NEIGHBOURS = 10
#: words of the codebook (set before any run, not tuned; fewer where the collection has fewer descriptors)
WORDS = 32
#: descriptors at most that k-means reads (an even sample of the collection's)
KMEANS_SAMPLE = 50_000
#: k-means' seed, rounds and restarts (OpenCV's ``kmeans``, k-means++ starts)
SEED, ROUNDS, ATTEMPTS = 0, 20, 1


def retrieval_settings(k: int) -> dict:
    """What a run's settings record of retrieval with ``k`` neighbours: ``k`` and every constant of the vectors, so
    that turns voted under other rules are not reused."""
    return {"retrieval": int(k), "words": WORDS, "kmeans_sample": KMEANS_SAMPLE, "seed": SEED, "rounds": ROUNDS,
            "attempts": ATTEMPTS}  # fmt: skip


def vlad(descriptors: Sequence[np.ndarray], words: int = WORDS) -> np.ndarray:
    """``(N, words·D)`` L2-normalised VLAD vectors of ``N`` photos' local descriptors (each ``(n_i, D)``; a photo
    without any gets zeros), over a codebook k-means learns from them all (at most :data:`KMEANS_SAMPLE` of them,
    evenly sampled; ``words`` lowered to the number of descriptors where there are fewer)."""
    import cv2

    if isinstance(descriptors, np.ndarray) or not isinstance(descriptors, Sequence):
        raise InputError(
            f"descriptors must be a list of (n, D) arrays, one a photo, got {type(descriptors).__name__}"
        )
    arrays = [np.asarray(d, np.float32) for d in descriptors]
    dims = {a.shape[1] for a in arrays if a.ndim == 2 and len(a)}
    if (
        any(a.ndim != 2 and a.size for a in arrays)
        or len(dims) > 1
        or not all(np.isfinite(a).all() for a in arrays)
    ):
        raise InputError("descriptors must be finite (n, D) arrays of one D")
    if not is_int_in(words, 1):
        raise InputError(f"words must be a whole number >= 1, got {words!r}")
    everything = np.concatenate([a for a in arrays if a.ndim == 2 and len(a)]) if dims else np.zeros((0, 1))
    dim = everything.shape[1]
    if len(everything) == 0:
        return np.zeros((len(arrays), int(words) * dim), np.float32)
    sample = everything[np.linspace(0, len(everything) - 1, min(len(everything), KMEANS_SAMPLE)).astype(int)]
    k = min(int(words), len(sample))
    cv2.setRNGSeed(SEED)
    criteria = (cv2.TERM_CRITERIA_MAX_ITER, ROUNDS, 0.0)
    _, _, centres = cv2.kmeans(sample, k, None, criteria, ATTEMPTS, cv2.KMEANS_PP_CENTERS)
    out = np.zeros((len(arrays), int(words), dim), np.float32)
    for i, a in enumerate(arrays):
        if a.ndim != 2 or len(a) == 0:
            continue
        nearest = np.argmin(((a[:, None, :] - centres[None]) ** 2).sum(-1), 1)
        np.add.at(out[i], nearest, a - centres[nearest])
    norms = np.linalg.norm(out, axis=2, keepdims=True)
    out = np.where(norms > 0, out / np.maximum(norms, 1e-12), 0.0).reshape(len(arrays), -1)
    out = np.sign(out) * np.sqrt(np.abs(out))
    total = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.maximum(total, 1e-12)).astype(np.float32)


def nearest_pairs(vectors: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Each of ``N`` photos (``(N, E)`` global vectors, :func:`vlad`) paired with its ``k`` most similar others
    (cosine: the vectors are normalised here; a zero vector is least similar to all; ties: the earlier photo), each
    unordered pair once, sorted: at most ``N·k`` pairs, every pair where ``k ≥ N − 1``."""
    v = np.asarray(vectors, np.float64)
    if v.ndim != 2 or not np.isfinite(v).all():
        raise InputError(f"vectors must be a finite (N, E) array, got shape {v.shape}")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = np.where(norms > 0, v / np.maximum(norms, 1e-300), 0.0)
    if not is_int_in(k, 1):
        raise InputError(f"k must be a whole number >= 1, got {k!r}")
    n = len(v)
    sim = v @ v.T
    np.fill_diagonal(sim, -np.inf)
    pairs = set()
    for i in range(n):
        for j in np.argsort(-sim[i], kind="stable")[: min(int(k), n - 1)]:
            pairs.add((min(i, int(j)), max(i, int(j))))
    return sorted(pairs)


__all__ = ["NEIGHBOURS", "WORDS", "vlad", "nearest_pairs", "retrieval_settings"]
