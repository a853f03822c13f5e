"""Homographies and the pose change they make at a point (units and signs per :mod:`patchpose.conventions`).

A homography ``H`` maps pixel coordinates of image 1 to image 2 (HPatches' ``H_1_k``). Near a point it is
the affine map ``A = ∂H/∂x`` (its Jacobian there), and a keypoint's pose changes by

* scale: ``Δσ = ½ · log2 |det A|`` (the area change, as an octave count);
* orientation: ``Δθ`` = the angle of the rotation in the polar factor of ``A`` (``A = R(Δθ) · P`` with
  ``P`` symmetric positive definite), counter-clockwise as displayed.

So :func:`pose_change` of :func:`~patchpose.conventions.similarity_about` ``(c, s, t)`` is exactly
``(s, t)`` everywhere. This is the *local* affine: the official code reads the global top-left 2×2 of
``H``, which is wrong wherever the perspective part matters.
"""

from __future__ import annotations

import numpy as np

from .checks import real_array
from .conventions import TWO_PI
from .errors import InputError


def check_homography(H, where: str = "the homography", invertible: bool = True) -> np.ndarray:
    """``H`` as a float64 3×3 array; a one-line :class:`~patchpose.errors.InputError` unless it is a finite
    3×3 matrix of real numbers, and with ``invertible`` (a map between two images) an invertible one."""
    a = real_array(H, where, "a 3×3 matrix of real numbers")
    if a.shape != (3, 3):
        raise InputError(f"{where} must be a finite 3×3 matrix, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError(f"{where} must be a finite 3×3 matrix, got NaN or infinite entries")
    top = np.abs(a).max()
    if (
        top > 1e100 or 0 < top < 1e-100
    ):  # a homography is one up to scale: huge or tiny entries would overflow
        a = a / top
    if invertible and abs(np.linalg.det(a)) < 1e-12:
        # a singular matrix, or one so ill-conditioned (diag(1e300, 1, 1)) that float64 cannot tell it from one
        raise InputError(
            f"{where} is not invertible in float64 (determinant {np.linalg.det(a):.3g} with its largest entry "
            f"scaled to 1; condition number {np.linalg.cond(a):.3g})"
        )
    return a


def _check_h(H) -> np.ndarray:
    """``H`` as a finite float64 3×3 array (invertible or not: a map of points may be singular)."""
    return check_homography(H, "a homography", invertible=False)


def apply_homography(H, xy) -> np.ndarray:
    """``(N, 2)`` points mapped by ``H`` (points that go to infinity come back as NaN)."""
    H = _check_h(H)
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    p = xy @ H[:, :2].T + H[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = p[:, :2] / p[:, 2:3]
    out[np.abs(p[:, 2]) < 1e-12] = np.nan
    return out


def homography_jacobian(H, xy) -> np.ndarray:
    """``(N, 2, 2)`` Jacobians ``∂H(x)/∂x`` at the points (rows: output x, y; columns: input x, y)."""
    H = _check_h(H)
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    p = xy @ H[:, :2].T + H[:, 2]  # (N, 3) homogeneous images
    w = p[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        # d(p_i / w)/dx_j = (H_ij · w − p_i · H_2j) / w²
        J = (H[None, :2, :2] * w[:, None, None] - p[:, :2, None] * H[None, 2:3, :2]) / (w**2)[:, None, None]
    return J


def pose_change(H, xy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pose change ``(Δ log2 scale, Δθ radians in [0, 2π), ok)`` that ``H`` makes at each point.

    ``ok`` is False where the local map is degenerate or mirrors the image (``det A ≤ 0``), or where the
    point lies on or behind the horizon of ``H``; ``Δσ`` and ``Δθ`` are NaN there. ``H`` and ``−H`` (any
    nonzero multiple) give the same result: the horizon is judged with ``H`` scaled so that ``H[2, 2] ≥ 0``,
    as HPatches' files are."""
    H = _check_h(H)
    if H[2, 2] < 0:  # −H is the same map; "in front" is told by w > 0 for H scaled to H[2, 2] > 0
        H = -H
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    w = xy @ H[2, :2] + H[2, 2]
    J = homography_jacobian(H, xy)
    det = np.linalg.det(np.nan_to_num(J))
    ok = (w > 1e-12) & np.isfinite(J).all(axis=(1, 2)) & (det > 1e-12)
    d_scale = np.full(len(xy), np.nan)
    d_theta = np.full(len(xy), np.nan)
    if ok.any():
        U, _, Vt = np.linalg.svd(J[ok])
        R = U @ Vt  # the rotation of the polar decomposition A = R·P (det R = +1 since det A > 0)
        d_scale[ok] = 0.5 * np.log2(det[ok])
        # R(θ) = [[cos θ, sin θ], [−sin θ, cos θ]] turns content CCW as displayed
        d_theta[ok] = np.mod(np.arctan2(R[:, 0, 1], R[:, 0, 0]), TWO_PI)
    return d_scale, d_theta, ok


def inside(xy, shape, margin: float = 0.0) -> np.ndarray:
    """Points at least ``margin`` px inside an image of ``shape = (H, W)`` (pixel centres at integers)."""
    xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    h, w = shape[:2]
    with np.errstate(invalid="ignore"):
        return (
            np.isfinite(xy).all(1)
            & (xy[:, 0] >= margin - 0.5)
            & (xy[:, 0] <= w - 0.5 - margin)
            & (xy[:, 1] >= margin - 0.5)
            & (xy[:, 1] <= h - 0.5 - margin)
        )


def reprojection_errors(H, xy1, xy2) -> np.ndarray:
    """``‖H·x1 − x2‖`` in pixels for matched points ``xy1``, ``xy2`` ``(L, 2)`` (inf where ``H`` sends the
    point to infinity)."""
    p = apply_homography(H, xy1)
    e = np.linalg.norm(p - np.asarray(xy2, np.float64).reshape(-1, 2), axis=1)
    return np.where(np.isfinite(e), e, np.inf)


__all__ = [
    "apply_homography",
    "check_homography",
    "homography_jacobian",
    "inside",
    "pose_change",
    "reprojection_errors",
]
