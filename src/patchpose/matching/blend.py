"""Blended descriptors: one descriptor per keypoint from several orientation candidates.

A keypoint whose orientation histogram has two peaks of about equal height is read at one of them in one
image and at the other in the next; a descriptor cut at the argmax then fails to match, and SIFT's answer
(one descriptor per strong peak) costs descriptors and matching time. A **blended descriptor** is the
average of the descriptors cut at the histogram's ``k`` strongest candidates
(:meth:`~patchpose.PatchPoseEstimator.estimate` with ``top_k=k``), weighted by each candidate's peak mass
(:attr:`Poses.confidence <patchpose.Poses.confidence>`) raised to ``gamma``, then L2-normalised: still one
descriptor per keypoint, and the same descriptor whichever of two near-equal peaks won. Only float
descriptors can be blended (SIFT, RootSIFT, HardNet-like networks), not binary ones.

It needs ``k`` descriptor computations per keypoint; matching and storage stay at one.
"""

from __future__ import annotations

import numpy as np

from ..conventions import REFERENCE_RADIUS, rotation_matrix
from ..data.patches import Pyramid, extract_patches
from ..errors import InputError
from .gradient import ORI_PATCH, dominant_gradient_candidates

#: candidates blended per keypoint
BLEND_K = 4
#: the exponent of the peak masses: 1 weighs each candidate by its mass, 0 weighs them alike. Our histograms'
#: masses (a softmax, often one sharp peak) are flattened by 0.5; the gradient histogram's, flat already,
#: are used as they are
BLEND_GAMMA = 0.5
GRADIENT_BLEND_GAMMA = 1.0
#: domain-size pooling (as DSP-SIFT, Dong and Soatto, CVPR 2015): each candidate is also described on windows
#: ``2**±POOL_OCTAVES`` times as large, weighted :data:`POOL_WEIGHTS` (smaller, same, larger); for keypoints
#: whose size means nothing (corners) at one fixed size
POOL_OCTAVES = 0.5
POOL_WEIGHTS = (0.25, 0.5, 0.25)


def blend_weights(confidence, gamma: float = BLEND_GAMMA) -> np.ndarray:
    """``(N, k)`` weights summing to 1 per keypoint: the candidates' peak masses ``confidence`` ``(N, k)``
    (:attr:`Poses.confidence <patchpose.Poses.confidence>` of a ``top_k=k`` read) to the power ``gamma``."""
    c = np.asarray(confidence, np.float64)
    if c.ndim != 2 or c.shape[1] < 1:
        raise InputError(
            f"confidence must be (N, k) candidate masses (estimate(..., top_k=k)), got shape {c.shape}"
        )
    if not (isinstance(gamma, (int, float)) and np.isfinite(gamma) and gamma >= 0):
        raise InputError(f"gamma must be a finite number >= 0, got {gamma!r}")
    if not (np.isfinite(c).all() and (c >= 0).all()):
        raise InputError("confidence must be finite and non-negative")
    w = np.power(np.maximum(c, 1e-12), float(gamma))
    return w / w.sum(1, keepdims=True)


def blend_descriptors(descriptors, weights) -> np.ndarray:
    """``(N, D)`` float32 unit-length descriptors: ``descriptors`` ``(N, k, D)`` (keypoint ``i``'s
    descriptor at its candidate ``j``, any float descriptor) averaged with ``weights`` ``(N, k)``
    (:func:`blend_weights`), then L2-normalised (a zero average stays zero)."""
    d = np.asarray(descriptors)
    if d.ndim != 3 or not np.issubdtype(d.dtype, np.floating) and not np.issubdtype(d.dtype, np.integer):
        raise InputError(f"descriptors must be a numeric (N, k, D) array, got shape {d.shape}")
    w = np.asarray(weights, np.float64)
    if w.shape != d.shape[:2]:
        raise InputError(f"weights must be (N, k) = {d.shape[:2]}, got {w.shape}")
    if not np.isfinite(d).all():
        raise InputError("descriptors must be finite")
    b = np.einsum("nk,nkd->nd", w, d.astype(np.float64))
    norm = np.linalg.norm(b, axis=1, keepdims=True)
    return (b / np.where(norm > 0, norm, 1.0)).astype(np.float32)


def gradient_peaks(
    pyramid: Pyramid, xy, frame, k: int = BLEND_K, shape=None
) -> tuple[np.ndarray, np.ndarray]:
    """The orientations ``(N, k)`` of the ``k`` strongest peaks of kornia's dominant-gradient histogram, read
    on the patch of radius ``16 · 2**frame`` px about each keypoint (``frame``: log2, ``(N,)``), and their
    blend weights ``(N, k)`` (:data:`GRADIENT_BLEND_GAMMA`;
    :func:`~patchpose.matching.gradient.dominant_gradient_candidates`).

    ``shape``: optional ``(N, 2, 2)`` upright affine shapes ``P`` (determinant 1, as :func:`affine_parts`
    gives them): the histogram is then read on the affine-normalised patch (frame ``16 · 2**frame · P``), and
    each orientation ``θ`` is one in that patch, the frame ``P · R(θ)`` (:func:`turned_shapes`)."""
    xy = np.asarray(xy, np.float64).reshape(-1, 2)
    patches = extract_patches(pyramid, xy, frame, np.zeros(len(xy)), ORI_PATCH, [1.0], shape=shape)
    ori, mass = dominant_gradient_candidates(patches, k)
    return ori, blend_weights(mass, GRADIENT_BLEND_GAMMA)


def affine_parts(frames, radius: float = REFERENCE_RADIUS) -> tuple[np.ndarray, np.ndarray]:
    """Affine frames ``(N, 2, 2)`` (the patch's ``[-1, 1]²`` to pixels, as kornia's LAFs and AffNet's
    frames) as a log2 scale ``σ`` ``(N,)`` (``radius · 2**σ = sqrt(det A)``) and a shape ``(N, 2, 2)`` of
    determinant 1 (``A / sqrt(det A)``). A frame that is not finite or whose determinant is not positive
    is an :class:`InputError`."""
    a = np.asarray(frames, np.float64)
    if a.ndim != 3 or a.shape[1:] != (2, 2):
        raise InputError(f"affine frames must be (N, 2, 2), got shape {a.shape}")
    if not np.isfinite(a).all() or not (np.linalg.det(a) > 0).all():
        raise InputError("affine frames must be finite with a positive determinant")
    root = np.sqrt(np.linalg.det(a))
    return np.log2(root / radius), a / root[:, None, None]


def turned_shapes(shape, orientation) -> np.ndarray:
    """``(N, k, 2, 2)`` the shapes ``P · R(θ_j)``: the affine-normalised patch of each shape ``P`` ``(N, 2, 2)``
    turned by each orientation ``θ_j`` ``(N, k)`` (radians, CCW as displayed) in its own frame; cut with
    orientation 0 (:func:`~patchpose.data.patches.extract_patches`' frame ``r · R(0) · shape``)."""
    return np.asarray(shape, np.float64)[:, None] @ rotation_matrix(orientation)


def check_pool_octaves(octaves) -> float:
    """``octaves`` as a float, or an :class:`InputError` unless it is a number in (0, 2]."""
    if not (isinstance(octaves, (int, float)) and np.isfinite(octaves) and 0 < octaves <= 2):
        raise InputError(f"octaves must be a number in (0, 2], got {octaves!r}")
    return float(octaves)


def pool_sizes(
    log2_scale, orientation, weights, octaves: float = POOL_OCTAVES
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blend candidates ``(N, k)`` (log2 window scales, orientations, weights) pooled over sizes: each also at
    ``log2_scale ± octaves``, as ``(N, 3k)`` arrays (the smaller windows first, then the given ones, then the
    larger), weights multiplied by :data:`POOL_WEIGHTS` (so they still sum to 1 per keypoint)."""
    s, o, w = (np.asarray(a, np.float64) for a in (log2_scale, orientation, weights))
    if s.ndim != 2 or o.shape != s.shape or w.shape != s.shape:
        raise InputError(
            f"pool_sizes takes (N, k) scales, orientations and weights, got {s.shape}, {o.shape}, {w.shape}"
        )
    d = check_pool_octaves(octaves)
    return (
        np.concatenate([s - d, s, s + d], 1),
        np.tile(o, (1, 3)),
        np.concatenate([f * w for f in POOL_WEIGHTS], 1),
    )


__all__ = [
    "affine_parts",
    "BLEND_GAMMA",
    "BLEND_K",
    "GRADIENT_BLEND_GAMMA",
    "POOL_OCTAVES",
    "POOL_WEIGHTS",
    "blend_descriptors",
    "blend_weights",
    "check_pool_octaves",
    "gradient_peaks",
    "pool_sizes",
    "turned_shapes",
]
