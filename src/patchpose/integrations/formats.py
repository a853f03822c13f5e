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
from ..errors import InputError


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
        "oris": torch.from_numpy(np.radians(angle_deg)[None]).float(),
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
    import h5py

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
        g.create_dataset("oris", data=np.mod(-np.degrees(ori), 360.0).astype(np.float32))
        if scores is not None:
            g.create_dataset("scores", data=np.asarray(scores, np.float32))
        if image_size is not None:
            g.create_dataset("image_size", data=np.asarray(image_size, np.int64))


def read_hloc_features(path, name: str) -> dict:
    """``{"xy", "scale" (log2), "ori" (radians CCW), "descriptors" (N, D)}`` of one image of an hloc file."""
    import h5py

    with h5py.File(path, "r") as f:
        if name not in f:
            raise InputError(f"{path} has no image {name!r}")
        g = f[name]
        return {
            "xy": g["keypoints"][()].astype(np.float64),
            "scale": np.log2(g["scales"][()].astype(np.float64) / REFERENCE_RADIUS),
            "ori": np.mod(-np.radians(g["oris"][()].astype(np.float64)), TWO_PI),
            "descriptors": g["descriptors"][()].T,
        }


def write_colmap_keypoints(path, xy, scale, ori, descriptors=None) -> None:
    """COLMAP's text feature import: a header ``N D`` and one line ``x y scale orientation d1 … dD`` per
    keypoint (x, y with the top-left pixel centre at 0.5; scale = radius px; orientation radians clockwise
    as displayed). COLMAP expects D = 128 uint8 descriptors; without descriptors, D = 0."""
    xy, scale, ori, descriptors = _check(xy, scale, ori, descriptors)
    c = to_colmap_xy(xy)
    r = radius_px(scale)
    a = np.mod(-ori + np.pi, TWO_PI) - np.pi  # clockwise, in (−π, π]
    d = 0 if descriptors is None else descriptors.shape[1]
    lines = [f"{len(xy)} {d}"]
    for i in range(len(xy)):
        row = [f"{c[i, 0]:.4f}", f"{c[i, 1]:.4f}", f"{r[i]:.4f}", f"{a[i]:.6f}"]
        if descriptors is not None:
            row += [str(int(v)) for v in descriptors[i]]
        lines.append(" ".join(row))
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def read_colmap_keypoints(path) -> dict:
    """Inverse of :func:`write_colmap_keypoints`: ``{"xy", "scale", "ori", "descriptors" or None}``."""
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
