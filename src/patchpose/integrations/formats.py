"""Feature files and dicts of other tools, with our poses in their units.

=========== ============================ ====================================== ===========================
tool        keypoint centre              scale                                  orientation
=========== ============================ ====================================== ===========================
ours        top-left pixel at (0, 0)     log2; radius ``16·2**σ`` px            radians, CCW as displayed
LightGlue   (0, 0) (OpenCV)              ``scales``: OpenCV size = diameter px  ``oris``: radians of OpenCV's
            (its SIFT/DoG extractors)                                           angle (clockwise as displayed)
hloc h5     (0, 0); hloc adds 0.5 when   ``scales``: radius px                  ``oris``: degrees, clockwise
            importing into COLMAP                                               as displayed (as its DoG)
COLMAP txt  top-left pixel at (0.5, 0.5) radius px                              radians, clockwise as
                                                                                displayed (image y down)
=========== ============================ ====================================== ===========================

"Clockwise as displayed" is the sign of an angle measured in image coordinates with y down, which
OpenCV, COLMAP and hloc all use; ours is the opposite sign (:mod:`patchpose.conventions`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..conventions import REFERENCE_RADIUS, TWO_PI, from_colmap_xy, to_colmap_xy, to_cv2_size_angle
from ..errors import InputError, require

#: descriptor values per keypoint that COLMAP's text feature import reads (SIFT's, as uint8)
COLMAP_DESCRIPTOR_DIM = 128


def _check(xy, scale, ori, descriptors=None):
    xy = np.asarray(xy, np.float64).reshape(-1, 2)
    n = len(xy)
    scale = np.broadcast_to(np.asarray(scale, np.float64), (n,))
    ori = np.broadcast_to(np.asarray(ori, np.float64), (n,))
    if not (np.isfinite(xy).all() and np.isfinite(scale).all() and np.isfinite(ori).all()):
        raise InputError("keypoints, scales and orientations must be finite")
    if descriptors is not None:
        descriptors = np.asarray(descriptors)
        if descriptors.ndim != 2 or len(descriptors) != n:
            raise InputError(f"descriptors must be (N, D) with N = {n}, got {descriptors.shape}")
    return xy, scale, ori, descriptors


def _below_float32(v: np.ndarray, top: float) -> np.ndarray:
    """``v`` in ``[0, top)``, with what float32 would round up to ``top`` set to 0 (the same angle)."""
    return np.where(np.float32(v) >= np.float32(top), 0.0, v)


def radius_px(log2_scale) -> np.ndarray:
    """Characteristic radius in pixels of a log2 scale."""
    return REFERENCE_RADIUS * np.power(2.0, np.asarray(log2_scale, np.float64))


def to_lightglue(xy, scale, ori, descriptors=None, scores=None, image_size=None) -> dict:
    """A LightGlue feature dict (batched, ``torch.float32``) with the conventions of LightGlue's own
    SIFT/DoG extractors (OpenCV backend): ``keypoints (1, N, 2)``, ``scales (1, N)`` = OpenCV size
    (diameter px), ``oris (1, N)`` = OpenCV angle in radians (clockwise as displayed), and if given
    ``descriptors (1, N, D)``, ``keypoint_scores (1, N)``, ``image_size (1, 2)`` as (width, height)."""
    import torch

    xy, scale, ori, descriptors = _check(xy, scale, ori, descriptors)
    size, angle_deg = to_cv2_size_angle(scale, ori)
    out = {
        "keypoints": torch.from_numpy(xy[None]).float(),
        "scales": torch.from_numpy(np.asarray(size, np.float64)[None]).float(),
        "oris": torch.from_numpy(_below_float32(np.radians(angle_deg), TWO_PI)[None]).float(),
    }
    if descriptors is not None:
        out["descriptors"] = torch.from_numpy(np.asarray(descriptors, np.float32)[None])
    if scores is not None:
        out["keypoint_scores"] = torch.as_tensor(np.asarray(scores, np.float32)[None])
    if image_size is not None:
        out["image_size"] = torch.tensor([list(image_size)], dtype=torch.float32)
    return out


def write_hloc_features(path, name: str, xy, scale, ori, descriptors, scores=None, image_size=None) -> None:
    """Add (or replace) image ``name`` in an hloc features file: a group with ``keypoints (N, 2)`` (centre
    of the top-left pixel at 0, as hloc stores them), ``descriptors (D, N)``, ``scales (N,)`` radius px,
    ``oris (N,)`` degrees clockwise as displayed, and ``scores``/``image_size`` if given."""
    h5py = require("h5py", "hloc")

    xy, scale, ori, descriptors = _check(xy, scale, ori, descriptors)
    if descriptors is None:
        raise InputError("hloc features need descriptors")
    path = Path(path)
    with h5py.File(path, "a", libver="latest") as f:
        if name in f:
            del f[name]
        g = f.create_group(name)
        g.create_dataset("keypoints", data=xy.astype(np.float32))
        g.create_dataset("descriptors", data=np.ascontiguousarray(descriptors.T))
        g.create_dataset("scales", data=radius_px(scale).astype(np.float32))
        g.create_dataset("oris", data=to_cv2_size_angle(scale, ori)[1].astype(np.float32))
        if scores is not None:
            g.create_dataset("scores", data=np.asarray(scores, np.float32))
        if image_size is not None:
            g.create_dataset("image_size", data=np.asarray(image_size, np.int64))


def read_hloc_features(path, name: str) -> dict:
    """``{"xy", "scale" (log2), "ori" (radians CCW), "descriptors" (N, D)}`` of one image of an hloc file.

    hloc writes ``scales`` and ``oris`` only for detectors that have them (its DoG); for the others
    (SuperPoint, DISK, ALIKED, …) ``scale`` and ``ori`` are None, which is where our poses come in, and
    ``descriptors`` is None where the group has none."""
    h5py = require("h5py", "hloc")

    with h5py.File(path, "r") as f:
        if name not in f:
            raise InputError(f"{path} has no image {name!r}")
        g = f[name]
        if not isinstance(g, h5py.Group) or "keypoints" not in g:
            raise InputError(f"{path}: {name!r} is not an hloc features group (it has no 'keypoints')")
        xy = g["keypoints"][()].astype(np.float64)
        if xy.ndim != 2 or xy.shape[1] != 2:
            raise InputError(f"{path}: {name!r}/keypoints must be (N, 2), got {xy.shape}")
        return {
            "xy": xy,
            "scale": np.log2(g["scales"][()].astype(np.float64) / REFERENCE_RADIUS)
            if "scales" in g
            else None,
            "ori": np.mod(-np.radians(g["oris"][()].astype(np.float64)), TWO_PI) if "oris" in g else None,
            "descriptors": g["descriptors"][()].T if "descriptors" in g else None,
        }


def write_colmap_keypoints(path, xy, scale, ori, descriptors=None) -> None:
    """COLMAP's text feature import: a header ``N 128`` and one line ``x y scale orientation d1 … d128`` per
    keypoint (x, y with the top-left pixel centre at 0.5; scale = radius px; orientation radians clockwise
    as displayed, in [−π, π)).

    COLMAP's reader takes exactly 128 descriptor values per keypoint, each an integer in [0, 255]; other
    descriptors are refused with an :class:`InputError` rather than written in a form COLMAP refuses or
    misreads (float SIFT descriptors, e.g. kornia's, convert as COLMAP converts its own:
    ``np.clip(np.round(512 * d), 0, 255)``). Without descriptors every keypoint gets 128 zeros (for matches
    imported by COLMAP's custom matching, which does not read them)."""
    xy, scale, ori, descriptors = _check(xy, scale, ori, descriptors)
    if descriptors is None:
        descriptors = np.zeros((len(xy), COLMAP_DESCRIPTOR_DIM), np.uint8)
    if descriptors.shape[1] != COLMAP_DESCRIPTOR_DIM:
        raise InputError(
            f"COLMAP's text import needs 128 descriptor values per keypoint, got {descriptors.shape[1]}"
        )
    d = np.asarray(descriptors, np.float64)
    if not (np.isfinite(d).all() and (d == np.round(d)).all() and (d >= 0).all() and (d <= 255).all()):
        raise InputError(
            "COLMAP's descriptors are integers in [0, 255]; convert float SIFT descriptors as COLMAP does, "
            "np.clip(np.round(512 * d), 0, 255)"
        )
    c = to_colmap_xy(xy)
    r = radius_px(scale)
    a = np.mod(-ori + np.pi, TWO_PI) - np.pi  # clockwise, in [−π, π)
    lines = [f"{len(xy)} {COLMAP_DESCRIPTOR_DIM}"]
    for i in range(len(xy)):
        row = [f"{c[i, 0]:.4f}", f"{c[i, 1]:.4f}", f"{r[i]:.4f}", f"{a[i]:.6f}"]
        row += [str(int(v)) for v in d[i]]
        lines.append(" ".join(row))
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def read_colmap_keypoints(path) -> dict:
    """Inverse of :func:`write_colmap_keypoints`: ``{"xy", "scale", "ori", "descriptors"}`` (descriptors
    None for a file without descriptor columns, ``N 0``)."""
    if not Path(path).is_file():
        raise InputError(f"COLMAP keypoint file not found: {path}")
    rows = Path(path).read_text().split("\n")
    try:
        n, d = (int(v) for v in rows[0].split())
        data = np.array([[float(v) for v in r.split()] for r in rows[1 : 1 + n]], np.float64).reshape(
            n, 4 + d
        )
    except ValueError:
        raise InputError(f"{path} is not a COLMAP keypoint text file") from None
    return {
        "xy": from_colmap_xy(data[:, :2]),
        "scale": np.log2(data[:, 2] / REFERENCE_RADIUS),
        "ori": np.mod(-data[:, 3], TWO_PI),
        "descriptors": data[:, 4:].astype(np.uint8) if d else None,
    }


__all__ = [
    "to_lightglue",
    "write_hloc_features",
    "read_hloc_features",
    "write_colmap_keypoints",
    "read_colmap_keypoints",
    "radius_px",
]
