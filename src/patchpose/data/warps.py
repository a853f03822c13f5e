"""Viewpoint changes of a photo: random homographies about its centre, a warp that anti-aliases where it
shrinks, and the 3×3 homography files of the HPatches layout (``H_1_k``: pixel coordinates of image 1 to image
k, pixel centres at integers, as everywhere in patchpose).

Training pairs (:mod:`patchpose.data.pairs`) cut their second views from such warps; ``patchpose generate
hpatches`` writes sequences of them (:mod:`patchpose.evaluation.datasets.hpatches`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..errors import InputError
from ..geometry import check_homography


@dataclass
class ViewpointConfig:
    """The viewpoint change of a random homography per step (:func:`random_viewpoint_homography`)."""

    max_rotation_deg: float = 36.0  # per step k − 1: image 6 turns by up to ±180°
    max_zoom_octaves: float = 0.25  # per step: image 6 is zoomed by up to 2^±1.25
    perspective: float = 0.03  # per step: corners move by up to this share of the image side
    # True: image k is zoomed by exactly 2^±max_zoom_octaves·(k−1) (in or out, drawn), not by up to it
    zoom_exact: bool = False
    # True: image k is turned by exactly ±max_rotation_deg·(k−1) (either way, drawn), not by up to it
    turn_exact: bool = False
    # > 0: image k is also seen at a slant: squeezed by exactly 2**(tilt_octaves·(k−1)) across a drawn direction
    # (an affine tilt, as a plane turned away from the camera by arccos(2**−tilt_octaves·(k−1)) looks from afar)
    tilt_octaves: float = 0.0


def read_homography(path: str | Path) -> np.ndarray:
    """A 3×3 whitespace-separated ASCII matrix (HPatches ``H_1_k``), as float64."""
    path = Path(path)
    try:
        with warnings.catch_warnings():  # an empty file: numpy warns, then the shape check says why
            warnings.simplefilter("ignore", UserWarning)
            H = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except UnicodeDecodeError:
        raise InputError(
            f"cannot read homography {path}: not a text file (a 3×3 matrix of numbers)"
        ) from None
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read homography {path}: {e}") from None
    return check_homography(H, str(path))


def write_homography(path: str | Path, H: np.ndarray) -> None:
    np.savetxt(path, np.asarray(H, np.float64), fmt="%.10g")


def random_viewpoint_homography(
    rng: np.random.Generator, shape, step: int, cfg: ViewpointConfig
) -> np.ndarray:
    """A homography about the image centre: rotation, zoom and perspective that grow with ``step`` (the zoom
    exactly ``2**±(max_zoom_octaves · step)`` with ``cfg.zoom_exact``, the turn exactly ``±max_rotation_deg · step``
    with ``cfg.turn_exact``); with ``cfg.tilt_octaves``, first a squeeze by exactly ``2**(tilt_octaves · step)``
    across a direction drawn uniformly."""
    h, w = shape[:2]
    c = np.array([(w - 1) / 2.0, (h - 1) / 2.0])
    turn = rng.choice([-1.0, 1.0]) if cfg.turn_exact else rng.uniform(-1, 1)
    ang = np.radians(turn * cfg.max_rotation_deg * step)
    sign = rng.choice([-1.0, 1.0]) if cfg.zoom_exact else rng.uniform(-1, 1)
    zoom = 2.0 ** (sign * cfg.max_zoom_octaves * step)
    R = zoom * np.array([[np.cos(ang), np.sin(ang)], [-np.sin(ang), np.cos(ang)]])  # CCW as displayed
    if cfg.tilt_octaves > 0:  # drawn only then, so that the other presets' sequences stay as they were
        phi = rng.uniform(0.0, np.pi)
        u = np.array([np.cos(phi), np.sin(phi)])  # the direction squeezed
        R = R @ (np.eye(2) - (1.0 - 2.0 ** -(cfg.tilt_octaves * step)) * np.outer(u, u))
    src = np.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], np.float64)
    dst = (src - c) @ R.T + c
    dst += rng.uniform(-1, 1, size=(4, 2)) * cfg.perspective * step * min(h, w)
    return cv2.getPerspectiveTransform(src.astype(np.float32), dst.astype(np.float32)).astype(np.float64)


def warp_image(img: np.ndarray, H: np.ndarray) -> np.ndarray:
    """``img`` warped by ``H`` into a canvas of the same size, pre-blurred where ``H`` shrinks it."""
    from ..geometry import pose_change

    h, w = img.shape[:2]
    corners = np.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1], [(w - 1) / 2, (h - 1) / 2]])
    ds, _, ok = pose_change(H, corners)
    shrink = 2.0 ** -np.nanmin(np.where(ok, ds, np.nan)) if ok.any() else 1.0
    src = img
    if shrink > 1.0:  # anti-alias: a Gaussian of σ ≈ 0.5·sqrt(shrink² − 1) before sampling
        sigma = 0.5 * np.sqrt(shrink**2 - 1.0)
        src = cv2.GaussianBlur(img, (0, 0), sigma)
    return cv2.warpPerspective(src, H, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)


__all__ = [
    "ViewpointConfig",
    "random_viewpoint_homography",
    "read_homography",
    "warp_image",
    "write_homography",
]
