"""OpenCV: give ``cv2.KeyPoint``s our size and angle (``size`` a diameter in px, ``angle`` in degrees
clockwise as displayed, in [0, 360)), keeping their position, response, octave and class id (:func:`assign`: the
reader's poses as OpenCV keypoints), and the recipe ``blend`` for OpenCV's descriptors (:func:`compute_blended`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np
from numpy.typing import ArrayLike

from ..checks import flag
from ..conventions import (
    OPENCV_SIFT_WINDOW_PER_SIZE,
    REFERENCE_RADIUS,
    angle_diff,
    from_cv2_size_angle,
    opencv_sift_octave,
    to_cv2_size_angle,
    to_opencv_sift_xy,
)
from ..data.keypoints import as_uint8_gray
from ..data.patches import Pyramid, check_image, check_image_shape
from ..errors import InputError, is_int_in
from ..estimator import EstimatorLike, as_estimator, check_keypoints
from ..interop import check_cv2_keypoints, is_opencv_sift, keypoint_xy, opencv_orb_scale_factor
from ..matching.blend import (
    BLEND_GAMMA,
    BLEND_K,
    blend_descriptors,
    blend_weights,
    check_pool_octaves,
    gradient_peaks,
    pool_sizes,
)

#: the radius of OpenCV SIFT's descriptor window per unit of keypoint ``size``
SIFT_WINDOW_PER_SIZE = OPENCV_SIFT_WINDOW_PER_SIZE
#: the size factor (:func:`~patchpose.conventions.to_cv2_size_angle`) that makes a keypoint's SIFT window
#: radius equal to a radius of ours
SIFT_DESCRIPTOR_SIZE_FACTOR = 1.0 / (2.0 * SIFT_WINDOW_PER_SIZE)


def assign(
    image: np.ndarray,
    keypoints: Sequence[cv2.KeyPoint],
    estimator: EstimatorLike = None,
    *,
    top_k: int | None = None,
    keep_size: bool = False,
    xy_bias: ArrayLike | None = None,
) -> list[cv2.KeyPoint]:
    """New ``cv2.KeyPoint``s with our poses, sized for OpenCV's descriptors.

    Each keypoint's ``size`` is chosen so that ``cv2.SIFT.compute`` describes the window the model was
    calibrated with (:attr:`Poses.descriptor_radius <patchpose.Poses.descriptor_radius>`: radius
    :data:`SIFT_WINDOW_PER_SIZE` × ``size``), and its ``angle`` is ours (degrees, clockwise as displayed,
    :func:`~patchpose.conventions.to_cv2_size_angle`).

    Args:
        image: ``H×W×3`` uint8 RGB, or ``H×W`` gray (the same as :meth:`PatchPoseEstimator.estimate`).
        keypoints: a sequence of ``cv2.KeyPoint`` (e.g. from ``cv2.SIFT.detect``).
        estimator: a :class:`~patchpose.PatchPoseEstimator`, a bundled model's name or a weights file
            (default: the reader's, ``MODELS["estimate"]`` of :mod:`patchpose.recipes`).
        top_k: None for one keypoint per input; ``k`` for ``k`` keypoints per input (our top-k poses),
            in input order, strongest pose first.
        keep_size: keep each keypoint's size (the detector's scale) and estimate only the angle, read once
            in the frame of the window SIFT would describe at that size (the ``ours_at_sift_size`` row of
            ``patchpose eval rotation``).
        xy_bias: px per axis between a keypoint's ``pt`` and the pixel-centre position the model reads at
            (``pt − xy_bias``; a number, or ``(N, 2)``). None (default): where the detector found them
            (:func:`~patchpose.interop.keypoint_xy`): 0.25 px up-left of ``pt`` for OpenCV SIFT's keypoints,
            which ``cv2.SIFT_create()`` reports a quarter pixel off
            (:data:`~patchpose.conventions.OPENCV_SIFT_XY_BIAS`); for OpenCV ORB's above pyramid level 0, the
            centre of the level pixel they were found at (:func:`~patchpose.conventions.from_opencv_orb_xy`);
            ``pt`` for any other. Give 0 for SIFT made with ``enable_precise_upscale=True``. The returned
            keypoints keep their ``pt`` (what OpenCV's ``compute`` expects).

    For SIFT keypoints that will be described by SIFT, :func:`resolve_orientations` (SIFT's own pose, with
    our angle choosing only where SIFT found several orientations) matches better than our angle alone.
    """
    check_image_shape(image)  # a bad image is an error even without keypoints
    kps = check_cv2_keypoints(keypoints)
    keep_size = flag(keep_size, "keep_size")
    if not kps:
        return []
    est = as_estimator(estimator)
    xy = keypoint_xy(kps, xy_bias, check_image_shape(image))
    frame = None
    if keep_size:
        frame = _size_frames(kps)
        # the angle of the detector's region: one read (a second would leave the detector's frame)
        est = est.with_plan(passes=1)
    if top_k is not None and not is_int_in(top_k, 1):  # 0 was read as 1; the estimator checks the top
        raise InputError(
            f"top_k must be None (one keypoint per input) or a whole number from 1, got {top_k!r}"
        )
    out = est.estimate(image, xy, top_k=top_k or 1, detector_scale=frame)
    return keypoints_at_poses(kps, out, keep_size=keep_size)


def _size_frames(
    keypoints: Sequence[cv2.KeyPoint],
    needs: str = "keep_size=True",
    hint: str = ": use keep_size=False to estimate the size too",
) -> np.ndarray:
    """``(N,)`` log2 frames of the windows OpenCV's SIFT descriptor covers at the keypoints' own sizes (what
    ``keep_size=True`` reads in); an :class:`InputError` naming the first keypoint without a size > 0 (what
    ``needs`` them, and a ``hint``)."""
    sizes = np.array([k.size for k in keypoints], np.float64)
    bad = ~(np.isfinite(sizes) & (sizes > 0))
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        raise InputError(
            f"{needs} needs each keypoint's size > 0 (the detector's scale); keypoint #{i} has size {sizes[i]:g}{hint}"
        )
    return from_cv2_size_angle(sizes, np.zeros(len(sizes)), SIFT_DESCRIPTOR_SIZE_FACTOR)[0]


def keypoints_at_poses(
    keypoints: Sequence[cv2.KeyPoint], poses, keep_size: bool = False
) -> list[cv2.KeyPoint]:
    """``cv2.KeyPoint``s at ``poses`` (:class:`~patchpose.Poses` of these keypoints, ``(N,)`` or ``(N, k)``
    candidates), as :func:`assign` makes them: ``size`` for SIFT's window over the descriptor radius, our
    ``angle``; position, response, octave and class id kept; ``k`` per keypoint in input order."""
    kps = list(keypoints)
    scale, ori = np.atleast_2d(np.asarray(poses.scale).T).T, np.atleast_2d(np.asarray(poses.orientation).T).T
    size = np.atleast_2d(np.asarray(poses.descriptor_radius).T).T / SIFT_WINDOW_PER_SIZE
    _, angle = to_cv2_size_angle(scale, ori)
    if keep_size:
        size = np.broadcast_to(np.array([k.size for k in kps], np.float64)[:, None], size.shape)
    res = []
    for i, k in enumerate(kps):
        for j in range(size.shape[1]):
            res.append(
                cv2.KeyPoint(
                    k.pt[0], k.pt[1], float(size[i, j]), float(angle[i, j]), k.response, k.octave, k.class_id
                )
            )
    return res


def _refuse_binary(extractor) -> None:
    """A one-line :class:`InputError` for an OpenCV extractor of binary descriptors (ORB, BRISK, AKAZE: Hamming
    norm), asked before it computes anything: bits cannot be averaged, and ORB at SIFT-sized keypoints asks OpenCV for
    tens of gigabytes."""
    norm = getattr(extractor, "defaultNorm", None)
    try:
        binary = callable(norm) and norm() in (cv2.NORM_HAMMING, cv2.NORM_HAMMING2)
    except cv2.error:  # an extractor that cannot say: the check after compute stands
        binary = False
    if binary:
        raise InputError(
            f"{type(extractor).__name__} computes binary descriptors (Hamming norm): they cannot be blended; use a "
            "float descriptor such as cv2.SIFT_create()"
        )


def compute_blended(
    extractor: cv2.Feature2D,
    image: np.ndarray,
    keypoints: Sequence[cv2.KeyPoint],
    estimator: EstimatorLike = None,
    *,
    orientations: str = "gradient",
    keep_size: bool = True,
    pool_octaves: float = 0.0,
    xy_bias: ArrayLike | None = None,
) -> tuple[list[cv2.KeyPoint], np.ndarray]:
    """One **blended descriptor** per keypoint (:mod:`patchpose.matching.blend`): ``extractor.compute`` at
    :data:`~patchpose.matching.blend.BLEND_K` (4) orientations of each keypoint, averaged with weights from their peak masses, L2-normalised.

    A drop-in for ``extractor.compute(image, keypoints)`` that keeps one descriptor per keypoint and no
    longer depends on which of two near-equal orientations wins in each image. The defaults are the
    recommended use for keypoints with a scale of their own (SIFT, Key.Net: their size kept, a gradient
    histogram's peaks); for corners and grids, whose size means nothing, pass ``keep_size=False,
    orientations="ours"`` with ``patchpose-v10`` (our scale and peaks). Use it with mutual
    nearest neighbours: AdaLAM, given each keypoint's strongest peak as its orientation, rejects the very
    matches a blend wins (the benchmarks give AdaLAM each match's closest candidate pair instead,
    :func:`patchpose.evaluation.twoview.adalam_blend_matches`).

    Args:
        extractor: an OpenCV float descriptor with ``compute(image, keypoints)``, e.g. ``cv2.SIFT_create()``
            (not a binary one such as ORB: bits cannot be averaged).
        image: ``H×W`` gray or ``H×W×3`` RGB (uint8, or float in [0, 1]); ``extractor.compute`` gets the 8-bit gray
            image (a colour one turned gray as RGB, as the histograms read it: OpenCV alone would take it as BGR).
        keypoints: ``cv2.KeyPoint``s, one per location (``cv2.SIFT.detect`` gives a location once per
            orientation: keep one, e.g. the first, as every orientation is read here anyway).
        estimator: as for :func:`assign` (read only for ``orientations="ours"`` or ``keep_size=False``).
        orientations: ``"gradient"`` (default): the 4 strongest peaks of a gradient-orientation
            histogram (kornia's dominant gradient's, :func:`patchpose.matching.gradient.dominant_gradient_candidates`)
            read on the descriptor's window; ``"ours"``: our 4 strongest orientations.
        keep_size: True (default): keep each keypoint's size (its detector's scale, e.g. SIFT's) and estimate
            nothing about the scale (the model is not read unless ``orientations="ours"``); False: our scale
            sets the window (as :func:`assign`).
        pool_octaves: 0 (default): each candidate described once; > 0: also on windows ``2**±pool_octaves``
            times as large (domain-size pooling, :func:`~patchpose.matching.blend.pool_sizes`: 3 × 4
            descriptor computations per keypoint). For corners given one fixed size, where the photos do
            not zoom much: ``pool_octaves=POOL_OCTAVES`` (0.5).
        xy_bias: see :func:`assign`.

    Returns:
        ``(keypoints, descriptors)``: one ``cv2.KeyPoint`` per input (our or its size, the strongest
        candidate's angle) and ``(N, D)`` float32 unit-length descriptors (all zeros where every candidate's
        descriptor is zero, as SIFT's is on a flat patch).
    """
    shape = check_image_shape(image)
    k = BLEND_K
    if orientations not in ("gradient", "ours"):
        raise InputError(f"orientations must be 'gradient' or 'ours', got {orientations!r}")
    if pool_octaves != 0.0:
        check_pool_octaves(pool_octaves)
    if not callable(getattr(extractor, "compute", None)):
        raise InputError("extractor must have a compute(image, keypoints) method, e.g. cv2.SIFT_create()")
    _refuse_binary(extractor)
    kps = check_cv2_keypoints(keypoints)
    keep_size = flag(keep_size, "keep_size")
    if not kps:
        return [], np.zeros((0, max(int(getattr(extractor, "descriptorSize", lambda: 0)()), 0)), np.float32)
    xy = check_keypoints(keypoint_xy(kps, xy_bias, shape), shape)  # inside the image, even without the model
    n = len(kps)
    # the model is loaded only where it is read: not for the gradient's peaks at the keypoints' own size
    est = as_estimator(estimator) if orientations == "ours" or not keep_size else None
    if keep_size:
        window = _size_frames(kps)
        poses = None
        if orientations == "ours":
            poses = est.with_plan(passes=1).estimate(image, xy, top_k=k, detector_scale=window)
    else:
        poses = est.estimate(image, xy, top_k=k)
        window = np.log2(np.asarray(poses.descriptor_radius)[:, 0] / REFERENCE_RADIUS)
    if orientations == "ours":
        ori, w = np.asarray(poses.orientation), blend_weights(poses.confidence, BLEND_GAMMA)
    else:
        ori, w = gradient_peaks(Pyramid.compact(image), xy, window, k)
    frames = np.repeat(window[:, None], k, 1)
    if pool_octaves:
        frames, ori, w = pool_sizes(frames, ori, w, pool_octaves)
        k = frames.shape[1]
    size, angle = to_cv2_size_angle(frames, ori, SIFT_DESCRIPTOR_SIZE_FACTOR)
    cands = [
        cv2.KeyPoint(
            p.pt[0], p.pt[1], float(size[i, j]), float(angle[i, j]), p.response, p.octave, p.class_id
        )
        for i, p in enumerate(kps)
        for j in range(k)
    ]
    # OpenCV's extractors take 8-bit images: a float [0, 1] or 16-bit one is handed over as 8-bit gray, and so is
    # a colour one (RGB, as the histograms read it; OpenCV would take it as BGR and describe another gray)
    out_kps, desc = extractor.compute(
        image if image.dtype == np.uint8 and image.ndim == 2 else as_uint8_gray(check_image(image)), cands
    )
    if desc is not None and not isinstance(desc, np.ndarray):
        raise InputError(
            f"the extractor's compute gave descriptors as {type(desc).__name__}, not a numpy array"
        )
    if desc is None or len(out_kps) != len(cands) or len(desc) != len(cands):
        raise InputError(
            f"the extractor described {0 if desc is None else min(len(out_kps), len(desc))} of {len(cands)} candidates (it drops "
            "keypoints, e.g. near the border): a blend needs every candidate described"
        )
    if not np.issubdtype(desc.dtype, np.floating):
        raise InputError(
            f"the extractor gives {desc.dtype} descriptors: only float descriptors can be blended"
        )
    # the strongest candidate at the keypoint's own window (pooled candidates: the middle third)
    first = BLEND_K if pool_octaves else 0
    return cands[first::k], blend_descriptors(desc.reshape(n, k, -1), w)


def resolve_orientations(
    image: np.ndarray,
    keypoints: Sequence[cv2.KeyPoint],
    estimator: EstimatorLike = None,
    *,
    xy_bias: ArrayLike | None = None,
) -> list[cv2.KeyPoint]:
    """One ``cv2.KeyPoint`` per location: where the detector found several orientations, the one nearest ours.

    SIFT returns one keypoint per dominant orientation: every peak of its gradient histogram within 80 %
    of the highest, so a sizeable share of its locations come twice or more. A pipeline that keeps one
    keypoint per location must then pick one, and OpenCV gives no reason to prefer either (equal
    responses, listed in histogram-bin order), so the pick flips when the image turns. This keeps each
    location's keypoint whose angle is nearest to our orientation, read in that keypoint's frame
    (:func:`assign` with ``keep_size=True``): the detector's precise angle, our estimate to settle its
    ambiguity. Locations with one keypoint are returned unchanged, and only the others are read by the
    model.

    Args:
        image: as for :func:`assign`.
        keypoints: ``cv2.KeyPoint``s, e.g. straight from ``cv2.SIFT.detect``; keypoints with the same
            position and size are one location.
        estimator: as for :func:`assign`.
        xy_bias: see :func:`assign` (default: where the detector found them, e.g. 0.25 px up-left of ``pt``
            for OpenCV SIFT's keypoints).

    Returns:
        One keypoint per location, in the order of each location's first keypoint; every field is the
        detector's (an input keypoint itself).
    """
    shape = check_image_shape(image)  # a bad image is an error even without keypoints
    kps = check_cv2_keypoints(keypoints)
    if not kps:
        return []
    # every keypoint checked, read or not: inside the image, a size > 0, a finite angle
    xy_all = check_keypoints(keypoint_xy(kps, xy_bias, shape), shape)
    _size_frames(kps, "resolve_orientations", "")
    angles = np.array([k.angle for k in kps], np.float64)
    if not np.isfinite(angles).all():
        i = int(np.nonzero(~np.isfinite(angles))[0][0])
        raise InputError(f"keypoint #{i} has angle {angles[i]:g}: every keypoint needs a finite angle")
    groups: dict[tuple[float, float, float], list[cv2.KeyPoint]] = {}
    for k in kps:
        groups.setdefault((k.pt[0], k.pt[1], k.size), []).append(k)
    ambiguous = [g for g in groups.values() if len(g) > 1]
    chosen = {id(g[0]): g[0] for g in groups.values()}
    if ambiguous:
        # the detector's convention is told by all the keypoints, so the offsets are taken here for all of them
        pt = np.array([k.pt for k in kps], np.float64)
        bias = dict(zip(map(id, kps), pt - xy_all))
        first = [g[0] for g in ambiguous]
        ours = assign(
            image,
            first,
            estimator,
            keep_size=True,
            xy_bias=np.array([bias[id(k)] for k in first]),
        )
        for g, o in zip(ambiguous, ours):
            a = np.radians([k.angle for k in g])
            chosen[id(g[0])] = g[int(np.argmin(np.abs(angle_diff(a, math.radians(o.angle)))))]
    return [chosen[id(g[0])] for g in groups.values()]


def sift_descriptors(image, xy, scale, orientation) -> np.ndarray:
    """``(N, 128)`` RootSIFT descriptors (L2 norm 1) of OpenCV's SIFT at the keypoints ``xy`` (pixel centres) with
    radius ``16·2**scale`` px (half OpenCV's ``size``, COLMAP's σ) and ``orientation`` (radians CCW): each read from
    the level of SIFT's pyramid that its size picks (:func:`~patchpose.conventions.opencv_sift_octave`), then
    L1-normalised and square-rooted, as COLMAP normalises its own SIFT's."""
    xy = np.asarray(xy, np.float64).reshape(-1, 2)
    if len(xy) == 0:
        return np.zeros((0, 128), np.float32)
    size, angle = to_cv2_size_angle(np.asarray(scale, np.float64), np.asarray(orientation, np.float64))
    pt, octave = to_opencv_sift_xy(xy), opencv_sift_octave(size)
    kps = [
        cv2.KeyPoint(float(x), float(y), float(s), float(a), 0.0, int(o), i)
        for i, ((x, y), s, a, o) in enumerate(zip(pt, size, angle, octave))
    ]
    gray = as_uint8_gray(check_image(image))
    # OpenCV builds the pyramid from the lowest octave among the keypoints: one at octave −1 makes it the doubled
    # image its detection builds (its descriptor is left out)
    h, w = gray.shape
    kps.append(cv2.KeyPoint((w - 1) / 2, (h - 1) / 2, 3.2, 0.0, 0.0, int(opencv_sift_octave(3.2)), -1))
    kept, d = cv2.SIFT_create().compute(gray, kps)
    ids = np.array([k.class_id for k in kept], np.int64)
    if len(kept) != len(kps) or not np.array_equal(ids[:-1], np.arange(len(kps) - 1)):
        raise InputError(
            "OpenCV's SIFT left out keypoints it was given: their positions or sizes are out of range"
        )
    d = np.asarray(d[:-1], np.float32)
    return np.sqrt(d / np.maximum(d.sum(1, keepdims=True), 1e-12))


__all__ = [
    "assign",
    "compute_blended",
    "resolve_orientations",
    "sift_descriptors",
    "SIFT_WINDOW_PER_SIZE",
    "is_opencv_sift",
    "opencv_orb_scale_factor",
    "SIFT_DESCRIPTOR_SIZE_FACTOR",
]
