"""Images, anti-aliased pyramids and patch extraction at a keypoint frame.

Geometry follows :mod:`patchpose.conventions` (kornia's LAF sampling, pixel centres at integers). The
sampling is done with OpenCV's ``warpAffine`` on a pyramid of 3 levels per octave built with
``INTER_AREA`` (so shrinking is anti-aliased; the residual step between levels is < 2^(1/3)), which is
faster than kornia's ``extract_patches_from_pyramid`` on a CPU and samples the same points (pinned by
``tests/data/test_patches.py``).
"""

from __future__ import annotations

import contextlib
import math
import threading
from pathlib import Path

import cv2
import numpy as np

from ..checks import SCALE_LIMIT
from ..conventions import REFERENCE_RADIUS, patch_grid, rotation_matrix
from ..errors import InputError
from .image_header import check_image_file, check_pixels

MIN_IMAGE_SIDE = 16
#: the longest side an image may have: OpenCV's warps (``remap``, ``warpAffine``), which cut the patches, take
#: images under ``SHRT_MAX`` (32,767) pixels a side
MAX_IMAGE_SIDE = 32_766
LEVELS_PER_OCTAVE = 3


def load_image(
    path: str | Path, exif_orientation: bool = True, *, data: list[bytes] | None = None
) -> np.ndarray:
    """Read an image file as ``H×W×3`` uint8 RGB; raise :class:`InputError` if it cannot be read, or if it
    has more pixels than :func:`~patchpose.data.image_header.max_image_pixels` (read from its header first,
    before anything is decoded). ``exif_orientation``: turn the pixels as the file's EXIF orientation says (as
    photo viewers show them); False keeps them as stored, as COLMAP reads them.

    A 16-bit file is brought to 8 bits by its *bit depth* (:func:`uint16_white`), so that 10- or 12-bit data
    stored in 16 bits (cameras, scientific images) keeps its contrast instead of being cut to its top 8 of 16
    bits; a uint16 array given to the library is read by the same rule.

    ``data``: the file's bytes, read already (``[path.read_bytes()]``, e.g. hashed first: ``patchpose extract``),
    decoded as the file's would be, the file not read again; a one-item list, which is emptied, so that the bytes
    are let go once decoded (as the file's own)."""
    path = Path(path)
    if data is None:
        if path.is_dir():
            raise InputError(f"{path} is a folder, not an image file")
        if not path.is_file():
            raise InputError(f"image not found: {path}")
        check_image_file(path)  # more pixels than the limit: refused before decoding
        data = np.fromfile(str(path), dtype=np.uint8)
    else:
        raw = data.pop()
        check_image_file(path, raw)  # from the bytes' header, as the file's
        data = np.frombuffer(raw, dtype=np.uint8)  # no copy (read-only: imdecode only reads it)
        del raw
    try:
        flags = cv2.IMREAD_COLOR | cv2.IMREAD_ANYDEPTH
        if not exif_orientation:
            flags |= cv2.IMREAD_IGNORE_ORIENTATION
        with _opencv_quiet():  # a failed decode is said once, below, not also in OpenCV's log lines
            img = cv2.imdecode(data, flags) if data.size else None
            if img is None and bytes(data[:4]) in (b"II*\0", b"MM\0*"):  # a TIFF: a one-channel float one is
                one = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)  # read by OpenCV only as it is, not as colour
                if one is not None and one.dtype.kind == "f" and (one.ndim == 2 or one.shape[2] == 1):
                    img = cv2.cvtColor(one.reshape(one.shape[:2]), cv2.COLOR_GRAY2BGR)
        del data  # the file's bytes: not needed once decoded
    except cv2.error as e:  # e.g. over OpenCV's own pixel limit (OPENCV_IO_MAX_IMAGE_PIXELS)
        raise InputError(f"cannot decode image {path}: {' '.join(str(e).split())[-160:]}") from None
    if img is None:
        raise InputError(f"cannot decode image (unreadable or not an image): {path}")
    check_pixels(img.shape[1], img.shape[0], path)  # formats whose header is not read before
    if img.dtype == np.uint16:
        img = np.clip(np.rint(img.astype(np.float64) * (255.0 / uint16_white(img))), 0, 255).astype(np.uint8)
    elif img.dtype.kind == "f":  # float files (e.g. TIFF, EXR) are taken as [0, 1], as float arrays are
        try:
            f = _checked_float(img)
        except InputError as e:  # the array's message speaks of uint8 arrays: a file is told what is read
            raise InputError(
                f"{path}: a float image file is read as values in [0, 1] (0 black, 1 white); this one holds values "
                f"in [{float(np.nanmin(img)):.4g}, {float(np.nanmax(img)):.4g}]: save it scaled to [0, 1], or as 8 or 16 bits"
                if np.isfinite(img).all()
                else f"{e}: {path}"
            ) from None
        img = np.clip(np.rint(f * 255.0), 0, 255).astype(np.uint8)
    elif img.dtype != np.uint8:
        raise InputError(f"unsupported pixel type {img.dtype} (8 or 16 bits, or float in [0, 1]): {path}")
    # in place, in strips: OpenCV copies a whole image it converts in place, so no second copy of a large
    # photo is made at once
    step = max(1, _STRIP_PIXELS // img.shape[1])
    for i in range(0, len(img), step):
        strip = img[i : i + step]
        cv2.cvtColor(strip, cv2.COLOR_BGR2RGB, dst=strip)
    return img


_OPENCV_LOG = threading.Lock()


@contextlib.contextmanager
def _opencv_quiet():
    """OpenCV's log silenced while the block runs (its level is the process's: one block at a time, the level put
    back after)."""
    with _OPENCV_LOG:
        level = cv2.utils.logging.getLogLevel()
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
        try:
            yield
        finally:
            cv2.utils.logging.setLogLevel(level)


def uint16_white(image: np.ndarray) -> float:
    """The value at which a uint16 image is white, for 16-bit files (:func:`load_image`) and uint16 arrays alike:
    ``2**b − 1`` for its *bit depth* ``b``, the smallest ``b ≥ 8`` with ``2**b − 1`` at least its largest value
    (a 4th channel, alpha, not counted). 12-bit data (values up to 4095) is white at 4095, not 65535 (where it
    read nearly black and gave almost no keypoints); a uint16 array of 8-bit values reads as the uint8 array."""
    if image.ndim == 3 and image.shape[2] == 4:
        image = image[:, :, :3]
    return float(2 ** max(8, int(image.max(initial=0)).bit_length()) - 1)


def check_image_shape(image) -> tuple[int, int]:
    """``(H, W)`` of a user image, checked as :func:`check_image` checks it (a numpy array, ``H×W`` or
    ``H×W×{1,3,4}``, both sides at least ``MIN_IMAGE_SIDE``), without reading its pixels. (A side past
    ``MAX_IMAGE_SIDE`` is refused where the whole image is warped: :func:`check_warp_size`.)"""
    if not isinstance(image, np.ndarray):
        raise InputError(f"image must be a numpy array (H×W or H×W×3), got {type(image).__name__}")
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] not in (1, 3, 4)):
        raise InputError(f"image must have shape H×W or H×W×3, got {image.shape}")
    h, w = image.shape[:2]
    if min(h, w) < MIN_IMAGE_SIDE:
        raise InputError(f"image is too small ({w}×{h}); both sides must be at least {MIN_IMAGE_SIDE} px")
    return int(h), int(w)


def check_warp_size(shape) -> None:
    """A one-line :class:`InputError` where an image of ``shape`` ``(H, W, ...)`` has a side past
    :data:`MAX_IMAGE_SIDE`: OpenCV's ``remap`` (the model's log-polar read) and ``warpAffine`` into an image of its
    size (``rectify``'s warp, an un-turned canvas) take sides under ``SHRT_MAX``. SIFT's keypoints described where
    they are, and the gradient's angle, cut small patches and take panoramas of any width."""
    h, w = int(shape[0]), int(shape[1])
    if max(h, w) > MAX_IMAGE_SIDE:
        raise InputError(
            f"image is too large ({w}×{h}): OpenCV's warps take sides of at most {MAX_IMAGE_SIDE:,} px "
            "(under SHRT_MAX); resize or crop it"
        )


def _checked_float(image: np.ndarray) -> np.ndarray:
    """A float image as float32, refused unless finite and in [0, 1] (to 1e-3)."""
    out = image.astype(np.float32)
    if not np.isfinite(out).all():
        raise InputError("image contains NaN or infinite values")
    if out.min() < -1e-3 or out.max() > 1.0 + 1e-3:
        raise InputError(
            f"float images must be in [0, 1], got values in [{out.min():.3g}, {out.max():.3g}]; "
            "pass uint8 for 0–255 data"
        )
    return out


def check_image(image) -> np.ndarray:
    """Validate a user image and return it as float32 ``H×W`` (gray) or ``H×W×3`` (RGB) in [0, 1].

    Accepts uint8 (0–255), uint16 (white at its bit depth's largest value, :func:`uint16_white`, as
    :func:`load_image` reads a 16-bit file) or float arrays (assumed in [0, 1]); ``H×W``, ``H×W×1``, ``H×W×3``
    or ``H×W×4`` (alpha dropped).
    """
    check_image_shape(image)
    return _as_float(image)


#: pixels per strip of :func:`check_gray`
_STRIP_PIXELS = 1 << 20


def check_gray(image) -> np.ndarray:
    """``to_gray(check_image(image))``, the same numbers and the same errors, converted in strips of rows: a
    colour image is never held as float32 in every channel (an 8,000 × 6,000 RGB photo: about 220 MB, where
    the float RGB copy alone is 576 MB)."""
    check_image_shape(image)
    if image.ndim == 2 or image.shape[2] == 1:
        return _as_float(image)
    return _gray_strips(image, np.float32, lambda g: g)


#: a compact pyramid (:meth:`Pyramid.compact`) holds a gray value ``v`` as the uint16 code
#: ``round(v / GRAY_STEP) + GRAY_ZERO``: 0, 1 and every 8-bit value ``k/255`` are codes exactly
#: (``128 + 256·k``), the codes cover the [−1e-3, 1 + 1e-3] :func:`check_image` lets through, and a value
#: is kept to within half a step (7.7e-6)
GRAY_STEP = 1.0 / (255 * 256)
GRAY_ZERO = 128


def gray_codes(image) -> np.ndarray:
    """:func:`check_gray`'s gray image (same checks, same errors) as uint16 codes (:data:`GRAY_STEP`),
    converted in strips: never a float copy of the whole image (an 8,000 × 6,000 photo: 92 MiB, where the
    float gray image is 183 MiB)."""
    check_image_shape(image)
    return _gray_strips(
        image, np.uint16, lambda g: np.rint(g * np.float32(1.0 / GRAY_STEP) + np.float32(GRAY_ZERO))
    )


def _gray_strips(image: np.ndarray, dtype, convert) -> np.ndarray:
    """``convert(to_gray(_as_float(strip)))`` for strips of rows of a shape-checked image, written into one
    ``H×W`` array of ``dtype``; an error names the whole image's values."""
    out = np.empty(image.shape[:2], dtype)
    step = max(1, _STRIP_PIXELS // image.shape[1])
    white = uint16_white(image) if image.dtype == np.uint16 else None  # the whole image's, not a strip's
    try:
        for i in range(0, len(out), step):
            out[i : i + step] = convert(to_gray(_as_float(image[i : i + step], white)))
    except InputError:
        _as_float(image)  # the whole image's message (a strip's would name the strip's values)
        raise
    return out


def _as_float(image: np.ndarray, white: float | None = None) -> np.ndarray:
    """An image of a checked shape as float32 ``H×W`` or ``H×W×3`` in [0, 1] (its dtype checked); a uint16 one
    divided by ``white`` (default: its own :func:`uint16_white`)."""
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim == 3 and image.shape[2] == 4:
        image = image[:, :, :3]
    # divided in place by a float32: ``image.astype(np.float32) / 255.0`` gives the same numbers 7 × slower
    # (3.5 ms for a 1024×768 RGB photo, numpy 2.4)
    if image.dtype == np.uint8:
        out = image.astype(np.float32)
        out /= np.float32(255.0)
    elif image.dtype == np.uint16:
        out = image.astype(np.float32)
        out /= np.float32(uint16_white(image) if white is None else white)
    elif np.issubdtype(image.dtype, np.floating):
        out = _checked_float(image)
    else:
        raise InputError(f"unsupported image dtype {image.dtype}; use uint8 or float in [0, 1]")
    return np.ascontiguousarray(out)


def to_gray(image: np.ndarray) -> np.ndarray:
    """float32 RGB → gray (ITU-R 601 luma, as OpenCV)."""
    if image.ndim == 2:
        return image
    return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)


def load_photo(path: str | Path, long_side: int | None = None, name: str | None = None) -> np.ndarray:
    """A photo for dataset generation: :func:`load_image`, checked by :func:`check_image` (an error names
    the photo, as ``name`` or its path), and resized by :func:`resize_long_side`."""
    img = load_image(path)
    try:
        check_image(img)
    except InputError as e:
        raise InputError(f"{name or f'photo {path}'}: {e}") from None
    return resize_long_side(img, long_side)[0]


def resize_long_side(
    image: np.ndarray, long_side: int | None, upscale: bool = False
) -> tuple[np.ndarray, float]:
    """Resize so that the longer side is ``long_side`` (anti-aliased); smaller images are left alone
    unless ``upscale``. Returns the image and the factor applied."""
    if not long_side:
        return image, 1.0
    h, w = image.shape[:2]
    f = long_side / max(h, w)
    if abs(f - 1.0) < 1e-6 or (f > 1 and not upscale):
        return image, 1.0
    size = (max(1, round(w * f)), max(1, round(h * f)))
    interp = cv2.INTER_AREA if f < 1 else cv2.INTER_CUBIC
    return cv2.resize(image, size, interpolation=interp), f


class Pyramid:
    """Levels at scale factors ``2^(−k/3)``, each made with ``INTER_AREA`` from the level one octave up.

    The levels hold ``image``'s values as they are, or, in a compact pyramid (:meth:`compact`), as uint16
    codes ``(v − zero)·step`` decodes: readers sample the codes and decode what they sampled
    (:meth:`decode`); outside the image a constant border is the code of 0 (:attr:`zero`)."""

    def __init__(self, image: np.ndarray, min_side: int = 8, *, zero: int = 0, step: float = 1.0) -> None:
        self.zero, self.step = zero, step
        self.levels: list[np.ndarray] = [image]
        self.shape = image.shape[:2]
        h, w = self.shape
        k = 1
        while True:
            f = 2.0 ** (-k / LEVELS_PER_OCTAVE)
            size = (round(w * f), round(h * f))
            if min(size) < min_side:
                break
            src = self.levels[k - LEVELS_PER_OCTAVE] if k >= LEVELS_PER_OCTAVE else image
            self.levels.append(cv2.resize(src, size, interpolation=cv2.INTER_AREA))
            k += 1
        # per-axis factors (sizes are rounded)
        self.factors = [(lv.shape[1] / w, lv.shape[0] / h) for lv in self.levels]

    @classmethod
    def compact(cls, image, min_side: int = 8) -> Pyramid:
        """The pyramid of :func:`check_gray`'s gray image (same checks) in half the memory, as uint16 codes
        (:func:`gray_codes`): an 8,000 × 6,000 photo's takes 249 MiB instead of 495, and OpenCV samples
        it about twice as fast. Level 0 is within half a step (7.7e-6) of the gray image, and each smaller
        level rounds once more: a sample is within a few steps of the float pyramid's (tested: 3)."""
        return cls.of_codes(gray_codes(image), min_side)

    @classmethod
    def of_codes(cls, codes: np.ndarray, min_side: int = 8) -> Pyramid:
        """The compact pyramid of gray codes :func:`gray_codes` made."""
        return cls(codes, min_side, zero=GRAY_ZERO, step=GRAY_STEP)

    def decode(self, samples: np.ndarray) -> np.ndarray:
        """Float32 samples of the levels decoded in place into values (a no-op unless compact)."""
        if self.zero or self.step != 1.0:
            samples -= np.float32(self.zero)
            samples *= np.float32(self.step)
        return samples

    def image(self) -> np.ndarray:
        """Level 0 as float32 values: the level itself if it is float32, else a decoded float32 copy."""
        base = self.levels[0]
        return self.decode(base.astype(np.float32)) if base.dtype != np.float32 else base


def as_frames(xy, log2_scale, theta) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keypoints ``(N, 2)`` and per-keypoint pose arrays ``(N,)`` (scalars broadcast), all float64."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    n = len(xy)
    s = np.broadcast_to(np.asarray(log2_scale, dtype=np.float64), (n,))
    t = np.broadcast_to(np.asarray(theta, dtype=np.float64), (n,))
    return xy, s, t


def sampling_matrix(xy, log2_scale: float, theta: float, radius: float, patch_size: int) -> np.ndarray:
    """2×3 matrix mapping patch pixel ``(col, row)`` to level-0 image coordinates (kornia LAF sampling)."""
    c, s = math.cos(theta), math.sin(theta)
    r = radius * 2.0**log2_scale
    A = r * np.array([[c, s], [-s, c]])
    u0 = 1.0 / patch_size - 1.0
    M = np.empty((2, 3))
    M[:, :2] = A * (2.0 / patch_size)
    M[:, 2] = A @ np.array([u0, u0]) + np.asarray(xy, dtype=np.float64)
    return M


#: octaves past :data:`~patchpose.checks.SCALE_LIMIT` that :func:`extract_patches` still cuts (descriptor regions
#: and pooled sizes reach beyond the frames a read returns)
PATCH_SCALE_MARGIN = 4.0


def extract_patches(
    pyramid: Pyramid,
    xy: np.ndarray,
    log2_scale: np.ndarray,
    theta: np.ndarray,
    patch_size: int = 32,
    windows=(1.0,),
    radius: float = REFERENCE_RADIUS,
    border: str = "reflect",
    shape: np.ndarray | None = None,
) -> np.ndarray:
    """Patches ``(N, C·len(windows), PS, PS)`` float32 at frames ``(xy, log2_scale, theta)``.

    Window ``w`` covers ``±radius·w·2**log2_scale`` pixels. ``border`` is ``"reflect"`` (OpenCV
    ``BORDER_REFLECT_101``) or ``"constant"`` (zeros) for samples outside the image. ``shape``: optional
    ``(N, 2, 2)`` matrices ``P`` that make the frame ``A = r·R(θ)·P`` (an affine view; with ``P``
    symmetric positive definite of determinant 1 the pose of the frame is still ``(σ, θ)``, see
    :func:`patchpose.geometry.pose_change`).
    """
    xy, log2_scale, theta = as_frames(xy, log2_scale, theta)
    n = len(xy)
    # OpenCV reflects a sample back into the image one image width at a time: a window millions of pixels
    # wide ran for minutes (1e12 px: for ever), so scales are bounded a little past those a read reaches
    reach = np.abs(log2_scale).max(initial=0.0) + max(abs(math.log2(w)) for w in windows)
    if not (np.isfinite(log2_scale).all() and reach <= SCALE_LIMIT + PATCH_SCALE_MARGIN):
        raise InputError(
            f"patch scales must be finite log2 scales within ±{SCALE_LIMIT + PATCH_SCALE_MARGIN:g} "
            f"(a window of 16·2**s px), got {np.abs(log2_scale).max(initial=0.0):g}"
        )
    base = pyramid.levels[0]
    chans = 1 if base.ndim == 2 else base.shape[2]
    out = np.empty((n, len(windows) * chans, patch_size, patch_size), dtype=np.float32)
    mode = cv2.BORDER_REFLECT_101 if border == "reflect" else cv2.BORDER_CONSTANT
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    nlev = len(pyramid.levels)
    factors = np.asarray(pyramid.factors)  # (L, 2)
    u0 = 1.0 / patch_size - 1.0
    rot = rotation_matrix(theta)  # (n, 2, 2)
    for j, w in enumerate(windows):
        # all frames of this window at once: A = r·R(θ), M = [A·2/PS | A·(u0, u0) + xy] (level 0)
        sc = log2_scale + math.log2(w)
        r = radius * np.exp2(sc)
        A = r[:, None, None] * rot
        if shape is not None:
            A = A @ np.asarray(shape, np.float64).reshape(n, 2, 2)
        M = np.empty((n, 2, 3))
        M[:, :, :2] = A * (2.0 / patch_size)
        M[:, :, 2] = A.sum(2) * u0 + xy
        step = r * 2.0 / patch_size  # level-0 pixels per output pixel
        lev = np.floor(LEVELS_PER_OCTAVE * np.log2(np.maximum(step, 1e-9)) + 1e-6)
        lev = np.clip(lev, 0, nlev - 1).astype(int)
        f = factors[lev]  # (n, 2): per-axis factors of each patch's level
        M *= f[:, :, None]
        M[:, :, 2] += 0.5 * f - 0.5
        for i in range(n):
            p = cv2.warpAffine(
                pyramid.levels[lev[i]],
                M[i],
                (patch_size, patch_size),
                flags=flags,
                borderMode=mode,
                borderValue=pyramid.zero,
            )
            if p.ndim == 2:
                out[i, j] = p
            else:
                out[i, j * chans : (j + 1) * chans] = p.transpose(2, 0, 1)
    return pyramid.decode(out)


def grid_points(
    xy, log2_scale: float, theta: float, patch_size: int, radius: float = REFERENCE_RADIUS
) -> np.ndarray:
    """Image coordinates ``(PS, PS, 2)`` sampled by each patch cell (for tests and plots)."""
    u = patch_grid(patch_size)
    uu, vv = np.meshgrid(u, u)  # uu varies along columns (x), vv along rows (y)
    M = sampling_matrix(xy, log2_scale, theta, radius, patch_size)
    A = M[:, :2] * patch_size / 2.0
    pts = np.stack([uu, vv], -1) @ A.T + np.asarray(xy, dtype=np.float64)
    return pts


def window_margin(windows, max_log2_scale: float = 0.0, radius: float = REFERENCE_RADIUS) -> float:
    """Distance from the border a keypoint needs so that every window at scales ≤ ``max_log2_scale`` and
    any rotation lies inside the image."""
    return math.sqrt(2.0) * radius * max(windows) * 2.0**max_log2_scale
