"""The conventions of patchpose, stated once. Every line here is pinned by ``tests/test_conventions.py``.

Image coordinates
    ``x`` to the right, ``y`` **down**; a keypoint is ``(x, y)`` in pixels with **pixel centres at
    integers** (OpenCV, kornia): the top-left pixel covers ``[-0.5, 0.5)²`` and its centre is ``(0, 0)``.
    COLMAP and hloc put that centre at ``(0.5, 0.5)``: use :func:`to_colmap_xy` / :func:`from_colmap_xy`.

Orientation
    Radians in ``[0, 2π)``, **counter-clockwise as displayed** (on screen, with ``y`` down). The unit
    vector of orientation ``θ`` is ``(cos θ, −sin θ)`` in image coordinates. Rotating the image content
    counter-clockwise (as displayed) by ``t`` about a keypoint **adds** ``t`` to its orientation.

Scale
    ``log2`` of a size, relative to the reference size of the model (:data:`REFERENCE_RADIUS` pixels of
    half-width at scale 0). Enlarging the image content by a factor ``s`` about a keypoint **adds**
    ``log2(s)`` to its scale. The characteristic radius in pixels is ``REFERENCE_RADIUS · 2**scale``.

Frames and patches
    A keypoint with pose ``(scale σ, orientation θ)`` defines the affine frame
    ``A = r · 2**σ · R(θ)`` with ``R(θ) = [[cos θ, sin θ], [−sin θ, cos θ]]`` (kornia's LAF layout,
    ``laf = [A | (x, y)]``). A ``PS×PS`` patch samples cell ``(row i, col j)`` at
    ``(x, y) + A · (u_j, u_i)`` with ``u_k = (2k + 1)/PS − 1``, so it covers ``±r·2**σ`` pixels. A patch
    cut at pose ``(σ, θ)`` shows the content as if the image were shrunk by ``2**σ`` and rotated by ``−θ``.

Log-polar grids (``polar-cnn`` models, :mod:`patchpose.data.polar`)
    At pose ``(σ, θ)``, ring ``k`` of ``K`` has radius ``REFERENCE_RADIUS · 2**(σ + (k − (K−1)/2)/R)`` pixels
    (``R`` rings per octave) and angle sample ``j`` of ``A`` is the direction ``2π j/A + θ``, i.e. the point
    ``(x, y) + radius · (cos, −sin)(2π j/A + θ)``: the frame's patch point ``(cos α, −sin α)``.
    Enlarging the content by ``2**Δs`` moves it ``R·Δs`` rings outwards; turning it counter-clockwise by
    ``Δo`` moves it ``Δo·A/2π`` samples to higher angle indices.

Histogram bins
    Orientation: ``B_o`` bins (36), bin ``i`` centred at ``2π i / B_o``. Scale: ``B_s`` bins (13),
    bin ``i`` centred at ``lo + i · (hi − lo)/(B_s − 1)`` with ``[lo, hi] = [−2, 2]`` (so ``−2 + i/3``).
    A model may use another range (its ``cfg.scale_range``; ``polar-cnn``: 25 bins over ``[−4, 4]``,
    still ``1/3`` octave apart). A pose difference ``Δ`` moves a histogram by ``Δ / bin_width`` bins
    towards higher indices.

OpenCV ``cv2.KeyPoint``
    ``size`` is a **diameter** in pixels, ``angle`` is in **degrees, clockwise as displayed**, in
    ``[0, 360)``. We map ``size = 2 · REFERENCE_RADIUS · 2**scale · size_factor`` and
    ``angle = (−degrees(θ)) mod 360``.

OpenCV SIFT's positions
    ``cv2.SIFT_create()`` (its default ``enable_precise_upscale=False``) reports every keypoint
    :data:`OPENCV_SIFT_XY_BIAS` = **0.25 px right of and below** the pixel-centre position of what it found:
    it doubles the image with ``INTER_LINEAR`` (pixel centres aligned: doubled pixel ``u`` lies at
    ``u/2 − 0.25``) and then halves coordinates as if pixel ``u`` lay at ``u/2``. Its own ``compute`` undoes
    the same shift, so its descriptors are consistent; anything else that reads the image at ``pt`` (our
    model, a patch, a ground-truth warp) must use ``pt − 0.25`` (:func:`from_opencv_sift_xy`). Turning the
    image by ``t`` turns the content but not the shift, so without the correction a keypoint found again
    moves by ``0.25·√2·2 sin(t/2)`` px against the content (0.71 px at 180°). ``enable_precise_upscale=True``
    has no shift (OpenCV added it in 4.8, pull request 23124, "prevents localization bias", and left it off by
    default, 23270); ``tests/test_conventions.py`` measures both against the installed OpenCV.

OpenCV ORB's positions
    ``cv2.ORB_create()`` finds keypoints on a pyramid whose level ``L`` is the image resized (pixel centres
    aligned, ``INTER_LINEAR_EXACT``) to ``round(W / s) × round(H / s)`` with ``s = scale_factor**L``, and reports
    level pixel ``u`` at ``pt = u·s``; the pixel-centre position of that pixel is ``(u + 0.5)·W/W_L − 0.5`` per
    axis (:func:`from_opencv_orb_xy`). Level 0 is exact; from level 1 up the report is off by up to about 3 px,
    depending on the level, the position and the image size, so under an exact half turn a keypoint found
    again does not land on itself at ``pt``, and does with both positions corrected. ORB's own ``compute``
    reads ``pt / s`` on the same level, so its descriptors are consistent. Its keypoints are known by their
    ``octave`` (the level, 0 to 31) and ``size = patch_size · scale_factor**octave``
    (:func:`~patchpose.interop.opencv_orb_scale_factor`); ``tests/test_conventions.py`` checks the formula
    against the installed OpenCV.

kornia LAF
    Orientation in **degrees**, CCW as displayed (same sign as ours); LAF scale = ``sqrt|det A|`` = the
    half-width of the region in pixels. We map ``laf_scale = REFERENCE_RADIUS · 2**scale · laf_factor``.
"""

from __future__ import annotations

import math

import numpy as np

TWO_PI = 2.0 * math.pi

#: Number of orientation bins (paper: 36, i.e. 10° per bin).
NUM_ORI_BINS = 36
#: Number of scale bins (paper: 13 over [-2, 2] in log2, i.e. 1/3 octave per bin).
NUM_SCALE_BINS = 13
#: Range of the scale histogram in log2 units.
SCALE_RANGE = (-2.0, 2.0)
#: Half-width in pixels of the region that has scale 0 (a 32×32 window at 1:1 has half-width 16).
REFERENCE_RADIUS = 16.0


# ----------------------------------------------------------------------------- angles and scales
def wrap_angle(theta):
    """Wrap radians into ``[0, 2π)`` (works on floats, numpy arrays and torch tensors)."""
    out = theta % TWO_PI
    # float rounding can give exactly 2π for tiny negative inputs
    if isinstance(out, float):
        return 0.0 if out >= TWO_PI else out
    return out * (out < TWO_PI)


def angle_diff(a, b):
    """Signed smallest difference ``a − b`` in ``[−π, π)`` (radians)."""
    return (a - b + math.pi) % TWO_PI - math.pi


def rotation_matrix(theta) -> np.ndarray:
    """2×2 matrix that rotates a vector by ``θ`` counter-clockwise **as displayed** (y down); for an array of
    angles of shape ``S``, the matrices ``S + (2, 2)``.

    ``R(θ) @ (1, 0) = (cos θ, −sin θ)``: a positive angle turns the x axis upwards on screen.
    """
    t = np.asarray(theta, dtype=np.float64)
    c, s = np.cos(t), np.sin(t)
    return np.stack([np.stack([c, s], -1), np.stack([-s, c], -1)], -2)


def similarity_about(center_xy, log2_scale: float, theta: float) -> np.ndarray:
    """3×3 matrix that enlarges image content by ``2**log2_scale`` and rotates it by ``θ`` (CCW as
    displayed) about ``center_xy``. Applying it to an image adds ``(log2_scale, θ)`` to every pose."""
    cx, cy = float(center_xy[0]), float(center_xy[1])
    M = np.eye(3)
    M[:2, :2] = (2.0**log2_scale) * rotation_matrix(theta)
    M[:2, 2] = np.array([cx, cy]) - M[:2, :2] @ np.array([cx, cy])
    return M


def frame_matrix(log2_scale, theta, radius: float = REFERENCE_RADIUS) -> np.ndarray:
    """The 2×2 part ``A = r · 2**σ · R(θ)`` of a keypoint frame (kornia LAF layout)."""
    return radius * (2.0 ** float(log2_scale)) * rotation_matrix(float(theta))


def patch_grid(patch_size: int) -> np.ndarray:
    """Normalised sampling positions ``u_k = (2k+1)/PS − 1`` of a ``PS``-pixel patch side."""
    k = np.arange(patch_size, dtype=np.float64)
    return (2.0 * k + 1.0) / patch_size - 1.0


# ----------------------------------------------------------------------------- histogram bins
def ori_bin_width(num_bins: int = NUM_ORI_BINS) -> float:
    return TWO_PI / num_bins


def scale_bin_width(num_bins: int = NUM_SCALE_BINS, scale_range=SCALE_RANGE) -> float:
    return (scale_range[1] - scale_range[0]) / (num_bins - 1)


def ori_bin_centers(num_bins: int = NUM_ORI_BINS) -> np.ndarray:
    """Bin ``i`` is centred at ``2π i / B``."""
    return np.arange(num_bins) * ori_bin_width(num_bins)


def scale_bin_centers(num_bins: int = NUM_SCALE_BINS, scale_range=SCALE_RANGE) -> np.ndarray:
    """Bin ``i`` is centred at ``lo + i·(hi−lo)/(B−1)`` (−2, −5/3, …, 2 for 13 bins)."""
    return scale_range[0] + np.arange(num_bins) * scale_bin_width(num_bins, scale_range)


def ori_to_bin(theta, num_bins: int = NUM_ORI_BINS):
    """Continuous bin coordinate of an angle (radians), in ``[0, B)``."""
    return wrap_angle(theta) / ori_bin_width(num_bins)


def bin_to_ori(b, num_bins: int = NUM_ORI_BINS):
    """Angle (radians, wrapped to ``[0, 2π)``) of a continuous bin coordinate."""
    return wrap_angle(b * ori_bin_width(num_bins))


def scale_to_bin(log2_scale, num_bins: int = NUM_SCALE_BINS, scale_range=SCALE_RANGE):
    """Continuous bin coordinate of a log2 scale (not clipped)."""
    return (log2_scale - scale_range[0]) / scale_bin_width(num_bins, scale_range)


def bin_to_scale(b, num_bins: int = NUM_SCALE_BINS, scale_range=SCALE_RANGE):
    """log2 scale of a continuous bin coordinate."""
    return scale_range[0] + b * scale_bin_width(num_bins, scale_range)


def ori_delta_to_bins(delta, num_bins: int = NUM_ORI_BINS):
    """An orientation change (radians) as a histogram shift in bins (``B·Δ/2π``, not wrapped)."""
    return delta / ori_bin_width(num_bins)


def scale_delta_to_bins(delta, num_bins: int = NUM_SCALE_BINS, scale_range=SCALE_RANGE):
    """A log2-scale change as a histogram shift in bins (``(B−1)·Δ/(hi−lo)``)."""
    return delta / scale_bin_width(num_bins, scale_range)


# ----------------------------------------------------------------------------- OpenCV keypoints
#: Default ratio between a cv2.KeyPoint's diameter and our region diameter (1 = the region itself).
CV2_SIZE_FACTOR = 1.0
#: OpenCV's SIFT descriptor covers a window of radius ``3σ·(d+1)·√2/2`` px with ``σ = size/2`` and ``d = 4``:
#: about 5.3 times a keypoint's ``size``
OPENCV_SIFT_WINDOW_PER_SIZE = 5.3


def to_cv2_size_angle(log2_scale, theta, size_factor: float = CV2_SIZE_FACTOR):
    """Our ``(log2 scale, θ radians CCW)`` → OpenCV ``(size diameter px, angle degrees CW in [0, 360))``."""
    size = 2.0 * REFERENCE_RADIUS * np.power(2.0, log2_scale) * size_factor
    angle = np.mod(-np.degrees(theta), 360.0)
    # below 360 also once stored as float32 (cv2.KeyPoint, hloc files): a θ under ~3e-7 rad would round up
    angle = np.where(np.float32(angle) >= np.float32(360.0), 0.0, angle)
    return size, angle


def from_cv2_size_angle(size, angle_deg, size_factor: float = CV2_SIZE_FACTOR):
    """OpenCV ``(size, angle)`` → our ``(log2 scale, θ)``. ``angle == −1`` (OpenCV's "none") maps to θ = 0;
    any other angle, negative ones included (kornia's (−180, 180], ``np.degrees(np.arctan2(...))``), is read
    modulo 360°, as OpenCV's descriptors read it."""
    size = np.asarray(size, dtype=np.float64)
    angle_deg = np.asarray(angle_deg, dtype=np.float64)
    log2_scale = np.log2(size / (2.0 * REFERENCE_RADIUS * size_factor))
    theta = np.where(angle_deg == -1.0, 0.0, np.mod(-np.radians(angle_deg), TWO_PI))
    return log2_scale, theta


#: px per axis that ``cv2.SIFT_create()``'s keypoints lie right of and below their pixel-centre position
#: (with its default ``enable_precise_upscale=False``; see the module's docstring).
OPENCV_SIFT_XY_BIAS = 0.25


def from_opencv_sift_xy(xy):
    """Positions reported by ``cv2.SIFT_create()`` (default settings) → pixel-centre positions (ours):
    ``xy − OPENCV_SIFT_XY_BIAS`` per axis."""
    return np.asarray(xy, dtype=np.float64) - OPENCV_SIFT_XY_BIAS


def to_opencv_sift_xy(xy):
    """Pixel-centre positions → where ``cv2.SIFT_create()`` (default settings) would report them, e.g. to
    describe them with its ``compute``: ``xy + OPENCV_SIFT_XY_BIAS``."""
    return np.asarray(xy, dtype=np.float64) + OPENCV_SIFT_XY_BIAS


#: OpenCV SIFT's layers per octave and the blur of its first layer (``SIFT_create()``'s ``nOctaveLayers``, ``sigma``)
OPENCV_SIFT_LAYERS = 3
OPENCV_SIFT_SIGMA = 1.6


def opencv_sift_octave(size) -> np.ndarray:
    """The ``cv2.KeyPoint.octave`` OpenCV's SIFT gives a keypoint of ``size`` (diameter px): its pyramid octave (from
    −1, the image doubled, as ``SIFT_create()`` builds it) and layer (1 to 3) packed as ``octave & 255 | layer << 8``,
    where its blur ``1.6·2**(layer/3)`` (octave px) is nearest ``size / 2``. ``SIFT.compute`` reads a keypoint's
    descriptor from that level of its pyramid, so another detector's keypoints need it (with the octave 0 of a bare
    ``cv2.KeyPoint`` a large keypoint is described on the finest level, aliased)."""
    sigma = np.maximum(np.asarray(size, np.float64) / 2.0, 1e-6)
    t = OPENCV_SIFT_LAYERS * np.log2(sigma / OPENCV_SIFT_SIGMA)  # octave · layers + layer
    octave = np.clip(np.floor((t - 0.5) / OPENCV_SIFT_LAYERS), -1, 30).astype(np.int64)
    layer = np.clip(np.round(t - OPENCV_SIFT_LAYERS * octave), 1, OPENCV_SIFT_LAYERS).astype(np.int64)
    return (octave & 255) | (layer << 8)


def _orb_level(level, image_shape, scale_factor: float) -> tuple[np.ndarray, np.ndarray]:
    """``s`` ``(N, 1)`` and ``(W / W_L, H / H_L)`` ``(N, 2)`` of ORB's pyramid level(s) ``level`` for an image of
    ``image_shape = (H, W)``, computed as OpenCV does (``s`` in float32, the level size rounded to nearest)."""
    s = np.power(float(scale_factor), np.asarray(level, np.float64)).astype(np.float32).reshape(-1, 1)
    hw = np.asarray(image_shape[:2], np.float32)[::-1]  # (W, H)
    return s.astype(np.float64), hw.astype(np.float64) / np.rint(hw / s)


def from_opencv_orb_xy(xy, level, image_shape, scale_factor: float = 1.2):
    """Positions reported by ``cv2.ORB_create(scaleFactor=scale_factor)`` (its keypoints' ``pt`` and ``octave``,
    for an image of ``image_shape = (H, W)``) → pixel-centre positions: ``(pt / s + 0.5) · W / W_L − 0.5`` per
    axis, ``s = scale_factor**level``, ``W_L = round(W / s)`` (see the module's docstring)."""
    s, f = _orb_level(level, image_shape, scale_factor)
    return (np.asarray(xy, np.float64).reshape(-1, 2) / s + 0.5) * f - 0.5


def to_opencv_orb_xy(xy, level, image_shape, scale_factor: float = 1.2):
    """The inverse of :func:`from_opencv_orb_xy`: pixel-centre positions → where ORB reports a keypoint found
    there on pyramid level ``level``."""
    s, f = _orb_level(level, image_shape, scale_factor)
    return ((np.asarray(xy, np.float64).reshape(-1, 2) + 0.5) / f - 0.5) * s


# ----------------------------------------------------------------------------- kornia LAFs
#: Default ratio between the kornia LAF half-width and our region half-width.
LAF_SCALE_FACTOR = 1.0


def to_laf_scale_ori(log2_scale, theta, laf_factor: float = LAF_SCALE_FACTOR):
    """Our pose → kornia ``(LAF scale = half-width px, orientation degrees CCW)``."""
    return REFERENCE_RADIUS * np.power(2.0, log2_scale) * laf_factor, np.degrees(theta)


def from_laf_scale_ori(laf_scale, ori_deg, laf_factor: float = LAF_SCALE_FACTOR):
    """kornia ``(LAF scale, orientation degrees)`` → our ``(log2 scale, θ in [0, 2π))``."""
    laf_scale = np.asarray(laf_scale, dtype=np.float64)
    return np.log2(laf_scale / (REFERENCE_RADIUS * laf_factor)), np.mod(np.radians(ori_deg), TWO_PI)


# ----------------------------------------------------------------------------- pixel centres
def to_colmap_xy(xy):
    """Integer-centred (OpenCV/kornia/ours) → half-integer-centred (COLMAP/hloc) coordinates."""
    return np.asarray(xy, dtype=np.float64) + 0.5


def from_colmap_xy(xy):
    """COLMAP/hloc coordinates (top-left pixel centre at 0.5) → ours (at 0)."""
    return np.asarray(xy, dtype=np.float64) - 0.5
