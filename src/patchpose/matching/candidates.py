"""The descriptions of one photo's keypoints that the recipes build on, each computed once per photo (kept in
:attr:`Features.memo <patchpose.matching.features.Features.memo>`):

* :func:`pose_descriptors`: one descriptor per keypoint at the detector's scale (ours where it gives none) and the
  dominant gradient's angle there (the ``pose`` recipe, :func:`recipe_poses`);
* :func:`ours_blend_candidates`: descriptors at our scale and each of our :data:`~.blend.BLEND_K` strongest
  orientations, and their blend weights (what the two-photo recipe's votes match);
* :func:`gradient_blend_candidates`: the same at the detector's scale and the gradient histogram's strongest
  peaks (the ``blend`` recipe, :func:`patchpose.compute_blended`'s default);
* :func:`shape_blend_candidates`: the gradient's peaks read in our shape network's affine frame at the
  detector's scale, each at three sizes (the two-photo recipe's description where no turn is found).

Candidates come as ``(s, o, w, d)``: log2 window scales, orientations (radians), blend weights, each ``(N, k)``,
and descriptors ``(N, k, D)``; :func:`~.blend.blend_descriptors` makes one descriptor per keypoint of them.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ..conventions import REFERENCE_RADIUS
from ..data.patches import extract_patches
from ..errors import InputError
from ..shape import shape_estimator
from .blend import (
    BLEND_GAMMA,
    BLEND_K,
    affine_parts,
    blend_weights,
    gradient_peaks,
    pool_sizes,
    turned_shapes,
)
from .describe import Describer
from .features import SIFT_REGION, Features
from .gradient import (
    ORI_PATCH,
    as_orientation_hist,
    dominant_gradient_histograms,
    dominant_gradient_orientation,
    histogram_candidates,
)

if TYPE_CHECKING:
    from ..reading import Poses

Candidates = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def ours_window(descriptor_region: float) -> float:
    """``log2`` of the factor by which a descriptor window cut at our scale is widened: the estimator's
    ``descriptor_region`` (its read plan). Self-supervised training fixes only relative scale, so where a model
    puts σ = 0 on a structure, and so the window a descriptor needs about it, is calibrated per model
    (:func:`patchpose.weights.recommended_descriptor_region`)."""
    return math.log2(descriptor_region)


def our_poses(feats: Features, est, top_k: int = BLEND_K):
    """The estimator's top-``top_k`` :class:`~patchpose.Poses` at the features' keypoints, read once per
    estimator and ``top_k``."""
    key = ("ours", est, top_k)
    if key not in feats.memo:
        feats.memo[key] = est.estimate(feats.image, feats.xy, top_k=top_k)
    return feats.memo[key]


def describe_candidates(
    feats: Features, describer: Describer, s: np.ndarray, o: np.ndarray, shape: np.ndarray | None = None
) -> np.ndarray:
    """``(N, k, D)``: ``describer`` at each keypoint's ``k`` candidates (log2 scales ``s`` and orientations ``o``,
    ``(N, k)``); with ``shape`` ``(N, k, 2, 2)`` each patch is cut through that affine shape instead, turned by
    nothing more (:func:`~.blend.turned_shapes` puts the orientation in it)."""
    xy = np.repeat(feats.xy, s.shape[1], 0)
    if shape is None:
        d = describer.describe(feats.pyramid, xy, s.reshape(-1), o.reshape(-1))
    else:
        d = describer.describe(
            feats.pyramid, xy, s.reshape(-1), np.zeros(o.size), shape=shape.reshape(-1, 2, 2)
        )
    return d.reshape(len(feats), s.shape[1], -1)


def ours_blend_candidates(
    feats: Features, describer: Describer, est, top_k: int = BLEND_K, ours=None
) -> Candidates:
    """Our strongest scale (its window widened by :func:`ours_window`) and the first :data:`~.blend.BLEND_K` of our
    top-``top_k`` orientations (``ours``: that read, if made already), weighted by their peak masses
    (:func:`~.blend.blend_weights`, :data:`~.blend.BLEND_GAMMA`), and their descriptors; once per describer,
    estimator and ``top_k``."""
    key = ("ours_blend", describer, est, top_k)
    if key not in feats.memo:
        ours = ours if ours is not None else our_poses(feats, est, top_k)
        k = BLEND_K
        if np.ndim(ours.orientation) != 2 or ours.orientation.shape[1] < k:
            raise InputError(
                f"a blend of our orientations reads our top-{k}: read them with top_k of at least {k}"
            )
        s = np.repeat(np.asarray(ours.scale)[:, :1] + ours_window(est.plan.descriptor_region), k, 1)
        o, w = ours.orientation[:, :k], blend_weights(ours.confidence[:, :k], BLEND_GAMMA)
        feats.memo[key] = (s, o, w, describe_candidates(feats, describer, s, o))
    return feats.memo[key]


def _window_patches(feats: Features, frame: np.ndarray) -> np.ndarray:
    """The :data:`~.gradient.ORI_PATCH` px patches on the windows of log2 scale ``frame`` ``(N,)``, upright, kept in
    the memo per window (the gradient's angle and histogram read the same ones)."""
    key = ("gradient window", frame.tobytes())
    if key not in feats.memo:
        feats.memo[key] = extract_patches(
            feats.pyramid, feats.xy, frame, np.zeros(len(feats)), ORI_PATCH, [1.0]
        )
    return feats.memo[key]


def gradient_angles(feats: Features, frame) -> np.ndarray:
    """kornia's dominant-gradient orientation (``PatchDominantGradientOrientation``: radians in [0, 2π), CCW as
    displayed, :func:`~.gradient.dominant_gradient_orientation`) read on the window of log2 scale ``frame`` (a
    scalar or ``(N,)``) about each keypoint, kept in the memo per window."""
    frame = np.broadcast_to(np.asarray(frame, np.float64), (len(feats),))
    key = ("gradient angle", frame.tobytes())
    if key not in feats.memo:
        feats.memo[key] = dominant_gradient_orientation(_window_patches(feats, frame))
    return feats.memo[key]


def _gradient_histograms(feats: Features, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The share of the dominant-gradient histogram within one bin of its peak ``(N,)`` and the histogram as
    :attr:`~patchpose.Poses.orientation_hist` holds one ``(N, 36)``, on the windows of :func:`gradient_angles`."""
    h = dominant_gradient_histograms(_window_patches(feats, frame))
    return histogram_candidates(h, 1)[1][:, 0], as_orientation_hist(h)


def _detector_region(feats: Features) -> np.ndarray:
    """``(N,)`` the descriptor window of each keypoint over its detector's characteristic radius: OpenCV's SIFT
    window (:data:`~.features.SIFT_REGION` × its size, i.e. 2 × :data:`~.features.SIFT_REGION` radii) at SIFT's
    detections, 1 at sizes given with keypoints (the region's half-width is the window, as kornia cuts a LAF)."""
    return np.where(np.isfinite(feats.sift_scale), 2.0 * SIFT_REGION, 1.0)


def sift_detections(feats: Features) -> bool:
    """Whether ``feats`` are SIFT's own detections (each with SIFT's scale and every orientation it found there)."""
    return feats.sift_ori_candidates is not None and bool(np.isfinite(feats.sift_scale).all())


def sift_all_counts(feats: Features) -> np.ndarray:
    """``(N,)`` how many orientations SIFT found at each of its detections' locations."""
    if not sift_detections(feats):
        raise InputError(
            "SIFT with all its orientations needs SIFT detections (keypoints given have no pose)"
        )
    return np.array([len(c) for c in feats.sift_ori_candidates], np.int64).reshape(len(feats))


def sift_all_poses(feats: Features) -> tuple[np.ndarray, np.ndarray]:
    """``(N, k)`` log2 window scales and orientations: every orientation SIFT found at each location, at SIFT's
    scale; a keypoint with fewer repeats its first (``k`` the most any has)."""
    n, k = len(feats), int(sift_all_counts(feats).max(initial=1))
    o = np.array(
        [np.concatenate([c, np.full(k - len(c), c[0])]) for c in feats.sift_ori_candidates], np.float64
    ).reshape(n, k)
    return np.repeat(feats.sift_scale[:, None], k, 1), o


def sift_all_descriptors(feats: Features, describer: Describer) -> np.ndarray:
    """``(N, k, D)``: each keypoint described at every orientation SIFT found at its location (once each, as SIFT
    itself computes them), a keypoint with fewer repeating its first descriptor (which leaves its smallest distance
    as it is); kept in the memo per describer."""
    key = ("sift_all", describer)
    if key not in feats.memo:
        s, o = sift_all_poses(feats)
        real = np.arange(o.shape[1])[None, :] < sift_all_counts(feats)[:, None]
        xy = np.repeat(feats.xy[:, None], o.shape[1], 1)[real]
        out = np.empty((len(feats), o.shape[1], describer.dim), np.float32)
        out[real] = describer.describe(feats.pyramid, xy, s[real], o[real])
        feats.memo[key] = np.where(real[..., None], out, np.broadcast_to(out[:, :1], out.shape))
    return feats.memo[key]


def _recipe_window(feats: Features, ours) -> np.ndarray:
    """``(N,)`` log2 of the ``pose`` recipe's descriptor window: the detector's (:attr:`Features.frame`) where it gives
    a scale, else our strongest scale's (``ours``' ``descriptor_radius``)."""
    if feats.detector_scale is not None:
        return feats.frame
    if ours is None:
        raise InputError("keypoints without a size of their own take our scale: give our poses at them")
    if len(ours) != len(feats):
        raise InputError(f"our poses are of {len(ours)} keypoints, the features of {len(feats)}")
    radius = np.asarray(ours.descriptor_radius)
    radius = radius if radius.ndim == 1 else radius[:, 0]
    return np.log2(np.maximum(radius, 1e-12) / REFERENCE_RADIUS)


def recipe_poses(feats: Features, ours: Poses | None = None, orientation: np.ndarray | None = None) -> Poses:
    """The ``pose`` recipe's poses (:data:`patchpose.recipes.RECIPES`), one per keypoint of ``feats``: the
    detector's scale where it gives one (:attr:`Features.detector_scale`: SIFT's, or sizes given with the
    keypoints; no network read), else our strongest scale (``ours``: the estimator's poses at the keypoints, its
    ``descriptor_radius`` kept); and kornia's dominant gradient read on the descriptor window at that scale
    (``confidence``: its histogram's share within one bin of it, ``orientation_hist``: that histogram, 36 bins).
    ``descriptor_radius`` is the window cut in every case; ``scale`` is the detector's own radius where it gives one
    (SIFT's: half its size, its window being :data:`~.features.SIFT_REGION` sizes; a size given: the window itself),
    and ``valid`` says whether that window lies inside the image.

    Chosen on the val photos (≤ 1,000 keypoints, viewpoint, zoomed, turned; CHANGELOG.md 1.0.0): where the detector
    gives a scale (SIFT, Key.Net's, scale-space corners) its own finds more correct matches than ours in every cell
    (at Key.Net's at a lower MMA@3), and the gradient's angle beats ours at SIFT's scale; where it gives none our
    scale is what follows a zoom. ``orientation`` ``(N,)`` (radians CCW): that angle instead of the gradient's, which
    is then not read (``extract --unturn``: each photo's keypoints upright in the collection)."""
    from ..reading import Poses

    n = len(feats)
    frame = _recipe_window(feats, ours)
    if feats.detector_scale is not None:
        radius = REFERENCE_RADIUS * np.exp2(frame)
        h, w = feats.image.shape[:2]
        x, y = feats.xy[:, 0], feats.xy[:, 1]
        inside = (
            (x - radius >= -0.5) & (y - radius >= -0.5) & (x + radius <= w - 0.5) & (y + radius <= h - 0.5)
        )
        base = Poses(
            orientation=np.zeros(n),
            scale=frame - np.log2(_detector_region(feats)),
            confidence=np.ones(n),
            scale_confidence=np.ones(n),  # the detector's scale, taken as given
            descriptor_radius=radius,
            orientation_hist=np.zeros((n, 36)),
            scale_hist=np.zeros((n, 0)),
            valid=inside,
        )
    else:

        def first(a) -> np.ndarray:  # (N,) or the strongest of (N, k)
            a = np.asarray(a)
            return a if a.ndim == 1 else a[:, 0]

        base = replace(
            ours,
            orientation=first(ours.orientation),
            scale=first(ours.scale),
            confidence=first(ours.confidence),
            scale_confidence=first(ours.scale_confidence),
            descriptor_radius=first(ours.descriptor_radius),
        )
    if orientation is not None:  # an angle given (upright in the collection): no gradient read
        return replace(base, orientation=np.asarray(orientation, np.float64).reshape(n))
    mass, hist = _gradient_histograms(feats, frame)
    return replace(base, orientation=gradient_angles(feats, frame), confidence=mass, orientation_hist=hist)


def pose_needs_network(feats: Features) -> bool:
    """Whether the ``pose`` recipe reads our network at these keypoints: only where the detector gives no scale."""
    return feats.detector_scale is None


def pose_descriptors(feats: Features, describer: Describer, est=None, ours=None) -> np.ndarray:
    """``(N, 1, D)``: one descriptor per keypoint at the ``pose`` recipe's poses (:func:`recipe_poses`; ``est`` is
    read only where the detector gives no scale; ``ours``: its poses there, if read already)."""
    if ours is None and pose_needs_network(feats):
        if est is None:
            raise InputError("keypoints without a size of their own need our estimator for their scale")
        ours = est.estimate(feats.image, feats.xy)
    frame = _recipe_window(feats, ours)  # the poses' window and angle, without recipe_poses' histograms
    return describe_candidates(feats, describer, frame[:, None], gradient_angles(feats, frame)[:, None])


def gradient_peaks_of(feats: Features, frame, shape=None, key=None) -> tuple[np.ndarray, np.ndarray]:
    """The gradient histogram's :data:`~.blend.BLEND_K` strongest peaks (orientations, weights ``(N, k)``) read on
    the window of log2 scale ``frame`` ``(N,)`` about each keypoint (through ``shape``, ``(N, 2, 2)`` affine
    shapes, if given: :func:`~.blend.gradient_peaks`), kept in the memo under ``key`` (None: the frame's own)."""
    key = ("peaks", np.asarray(frame, np.float64).tobytes()) if key is None else key
    if key not in feats.memo:
        feats.memo[key] = gradient_peaks(feats.pyramid, feats.xy, frame, shape=shape)
    return feats.memo[key]


def gradient_blend_candidates(feats: Features, describer: Describer, frame=None) -> Candidates:
    """The gradient histogram's strongest peaks at the detector's scale (``frame``, log2 ``(N,)``: another
    window; None: :attr:`Features.frame`, 16 px where the detector gives none) and their descriptors."""
    frame = feats.frame if frame is None else np.asarray(frame, np.float64)
    o, w = gradient_peaks_of(feats, frame)
    s = np.repeat(frame[:, None], o.shape[1], 1)
    return s, o, w, describe_candidates(feats, describer, s, o)


def shape_frames(feats: Features, shape_weights=None) -> tuple[np.ndarray, np.ndarray]:
    """Our shape network's upright affine frames at the detector's scale (:attr:`Features.frame`; 16 px
    without one) as log2 scales ``(N,)`` and shapes of determinant 1 ``(N, 2, 2)`` (:func:`~.blend.affine_parts`;
    ``shape_weights``: a bundled name or a file, None for the bundled one, :mod:`patchpose.shape`)."""
    key = ("shape", shape_weights)
    if key not in feats.memo:
        radius = REFERENCE_RADIUS * np.exp2(feats.frame)
        feats.memo[key] = affine_parts(shape_estimator(shape_weights).frames(feats.pyramid, feats.xy, radius))
    return feats.memo[key]


def framed_blend_candidates(
    feats: Features, describer: Describer, frame: np.ndarray, shape: np.ndarray, key
) -> Candidates:
    """The gradient histogram's strongest peaks read on the affine-normalised patches ``16·2**frame·shape``
    (``frame`` ``(N,)``, ``shape`` ``(N, 2, 2)``; the peaks kept in the memo under ``key``), each at three
    sizes (:func:`~.blend.pool_sizes`), and their descriptors cut through the frame turned to each peak."""
    o, w = gradient_peaks_of(feats, frame, shape=shape, key=key)
    s, o, w = pool_sizes(np.repeat(frame[:, None], o.shape[1], 1), o, w)
    return s, o, w, describe_candidates(feats, describer, s, o, turned_shapes(shape, o))


def shape_blend_candidates(feats: Features, describer: Describer, shape_weights=None) -> Candidates:
    """:func:`framed_blend_candidates` in our shape network's frames (:func:`shape_frames`)."""
    frame, shape = shape_frames(feats, shape_weights)
    return framed_blend_candidates(feats, describer, frame, shape, ("shape peaks", shape_weights))


__all__ = [
    "Candidates",
    "describe_candidates",
    "framed_blend_candidates",
    "gradient_angles",
    "gradient_blend_candidates",
    "gradient_peaks_of",
    "our_poses",
    "ours_blend_candidates",
    "ours_window",
    "pose_needs_network",
    "pose_descriptors",
    "recipe_poses",
    "shape_blend_candidates",
    "shape_frames",
    "sift_all_counts",
    "sift_all_descriptors",
    "sift_all_poses",
    "sift_detections",
]
