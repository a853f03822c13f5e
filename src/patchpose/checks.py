"""Input checks shared by the integrations and file readers: each returns the value in a plain form
(float64 arrays, ints, paths) or raises a one-line :class:`~patchpose.errors.InputError` that names the
argument and what it must be.

Arrays may be numpy arrays, sequences or torch tensors (detached: a tensor that requires grad is read, not
differentiated). Booleans, strings, complex numbers and arrays of Python objects are refused where numbers
are wanted (numpy would read ``"12"`` or ``True`` as a number, or fail with its own error)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .errors import InputError, is_int_in

#: log2 scales (ours) that the integrations take and read: within this many octaves of 0 (radius
#: 16 · 2**±12 px), the range the estimator reads frames in (:data:`patchpose.reading.MAX_FRAME`)
SCALE_LIMIT = 12.0


def _describe(value) -> str:
    shape = getattr(value, "shape", None)
    if shape is None:
        return type(value).__name__
    return f"{type(value).__name__} of shape {tuple(shape)} and dtype {getattr(value, 'dtype', '?')}"


def _tensor_values(t, name: str) -> np.ndarray:
    """A torch tensor's values as numpy: detached (one that requires grad too), on the CPU, half and bfloat16 as
    float32; a tensor without values (the meta device) is a one-line :class:`InputError`."""
    if getattr(getattr(t, "device", None), "type", None) == "meta":
        raise InputError(f"{name} is a tensor on the meta device: it holds no values")
    t = t.detach().cpu()
    if str(t.dtype) in ("torch.bfloat16", "torch.float16"):
        t = t.float()
    return t.numpy()


def real_array(value, name: str, what: str) -> np.ndarray:
    """``value`` as a float64 array, or an :class:`InputError` naming ``name`` and ``what`` it must be,
    for None, strings, booleans, complex numbers and objects that are not numbers."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        value = _tensor_values(value, name)
    bad = InputError(f"{name} must be {what}, got {_describe(value)}")
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise bad
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged sequences
        raise bad from None
    if raw.dtype.kind not in "iuf":  # bool, complex, strings, objects, datetimes
        raise bad
    return raw.astype(np.float64)


def points(value, name: str = "keypoints") -> np.ndarray:
    """``(N, 2)`` finite x, y coordinates (N may be 0); no reshaping of other shapes."""
    xy = real_array(value, name, "an (N, 2) array of x, y pixel coordinates")
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise InputError(f"{name} must be an (N, 2) array of x, y pixel coordinates, got shape {xy.shape}")
    if not np.isfinite(xy).all():
        raise InputError(f"{name} contain NaN or infinite values")
    return xy


def per_point(value, n: int, name: str, what: str, lo: float = -np.inf, hi: float = np.inf) -> np.ndarray:
    """``(n,)`` finite values within ``[lo, hi]``: one per point, or one number for all (broadcast)."""
    v = real_array(value, name, f"a number or {n} numbers ({what})")
    if v.ndim > 1 or (v.ndim == 1 and len(v) != n):
        raise InputError(
            f"{name} must be a number or {n} numbers, one per keypoint ({what}), got shape {v.shape}"
        )
    v = np.broadcast_to(v, (n,)).copy()
    if not np.isfinite(v).all():
        raise InputError(f"{name} contain NaN or infinite values ({what})")
    if (v < lo).any() or (v > hi).any():
        i = int(np.nonzero((v < lo) | (v > hi))[0][0])
        raise InputError(f"{name} must lie within [{lo:g}, {hi:g}] ({what}); #{i} is {v[i]:g}")
    return v


def positive_number(value, name: str) -> float:
    """A finite number > 0 (not a boolean)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a positive number, got {value!r}")
    if not (np.isfinite(value) and value > 0):
        raise InputError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def flag(value, name: str) -> bool:
    """True or False (a Python or numpy boolean; ``"no"`` or ``0`` are not flags)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def image_size(value, name: str = "image_size") -> tuple[int, int]:
    """``(width, height)``: two whole numbers ≥ 1."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise InputError(f"{name} must be (width, height), two whole numbers >= 1, got {value!r}")
    if not all(is_int_in(v, 1, integral_floats=True) for v in value):
        raise InputError(f"{name} must be (width, height), two whole numbers >= 1, got {value!r}")
    return int(value[0]), int(value[1])


#: the most threads a command or a training run takes (torch's, COLMAP's): past it a typo, not a machine
MAX_THREADS = 1024


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def poses(xy, scale, orientation, ori_name: str = "orientation") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``xy (N, 2)``, ``scale (N,)`` log2 within ±:data:`SCALE_LIMIT` and ``orientation (N,)`` radians (a
    number each is broadcast), finite; an :class:`InputError` otherwise (the orientation called
    ``ori_name`` in its messages)."""
    xy = points(xy, "xy")
    scale = per_point(scale, len(xy), "scale", "log2 scales", -SCALE_LIMIT, SCALE_LIMIT)
    return xy, scale, per_point(orientation, len(xy), ori_name, "radians")


def workers(value, name: str = "workers", lo: int = 1) -> int:
    """A worker-process count from ``lo`` (1, or 0 where 0 means "in this process") to 4 × :func:`cores`."""
    hi = 4 * cores()
    if not is_int_in(value, lo, hi, integral_floats=True):
        raise InputError(
            f"{name} must be a whole number from {lo} to {hi} (4 × {cores()} cores), got {value!r}"
        )
    return int(value)


def input_file(path, what: str) -> Path:
    """An existing file (not a folder) to read ``what`` from."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise InputError(f"{what}: a file path is needed, got {path!r}")
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what}: {p} is a folder, not a file")
    if not p.is_file():
        raise InputError(f"{what} not found: {p}")
    return p


def output_file(path, what: str) -> Path:
    """A path to write ``what`` to: its folder exists and it is not a folder itself."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise InputError(f"{what}: a file path is needed, got {path!r}")
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what}: {p} is a folder, not a file")
    if not p.parent.is_dir():
        raise InputError(f"{what}: the folder {p.parent} does not exist (create it first)")
    return p


__all__ = [
    "MAX_THREADS",
    "SCALE_LIMIT",
    "poses",
    "real_array",
    "points",
    "per_point",
    "positive_number",
    "flag",
    "image_size",
    "cores",
    "workers",
    "input_file",
    "output_file",
]
