"""Two-view relative pose: keypoints → poses → descriptors → AdaLAM → robust essential matrix → (R, t).

AdaLAM (kornia's ``match_adalam``) filters matches by the local consistency of keypoint *frames*: within a
neighbourhood, matches must agree on the orientation change (``orientation_difference_threshold``,
degrees) and on the scale ratio (``scale_rate_threshold``). It reads both from kornia LAFs, so the poses
we feed it decide what "consistent" means. Every stage has a switch (:class:`TwoViewConfig`):

* ``describe_pose``: the pose at which descriptor patches are cut (``"sift"``, ``"ours"``, ``"resolved"``:
  SIFT's, with our angle choosing where SIFT found several orientations, ``"none"``);
* ``adalam_pose``: the pose in AdaLAM's LAFs (default: the same as ``describe_pose``);
* ``adalam_checks``: False disables AdaLAM's orientation and scale checks (thresholds set to None);
* ``matcher``: ``"adalam"`` or plain ``"mnn"`` (mutual nearest neighbours);
* ``estimator``: OpenCV's ``USAC_MAGSAC`` (default) or ``USAC_ACCURATE`` / ``RANSAC`` for the essential
  matrix, on keypoints normalised by their own intrinsics.

A pure rotation (zero baseline) makes the essential matrix degenerate; the pose is then taken from a
homography when it explains as many matches as the essential matrix does (:func:`relative_pose`).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import torch

from ..errors import InputError
from .describe import Describer
from .matcher import mutual_nn
from .pipeline import Features, keypoint_poses

ESTIMATORS = {"magsac": cv2.USAC_MAGSAC, "accurate": cv2.USAC_ACCURATE, "ransac": cv2.RANSAC}


#: pose sources → rows of :func:`patchpose.matching.pipeline.keypoint_poses`
_ROW = {"sift": "sift", "ours": "ours", "resolved": "sift_resolved_by_ours", "none": "lower"}


@dataclass
class TwoViewConfig:
    max_keypoints: int = 2048
    # sift | ours | resolved (SIFT's, resolved by ours: ours must be read in SIFT's frame) | none
    describe_pose: str = "sift"
    adalam_pose: str | None = None  # None: the same as describe_pose
    adalam_checks: bool = True
    matcher: str = "adalam"  # adalam | mnn
    estimator: str = "magsac"
    threshold_px: float = 1.0  # inlier threshold of the robust fit, in pixels
    confidence: float = 0.9999
    max_iters: int = 10_000
    descriptor: str = "sift"
    descriptor_weights: str | None = None

    def validate(self) -> None:
        for name in ("describe_pose", "adalam_pose"):
            v = getattr(self, name)
            if v is not None and v not in _ROW:
                raise InputError(f"{name} must be one of {sorted(_ROW)}, got {v!r}")
        if self.matcher not in ("adalam", "mnn"):
            raise InputError(f"matcher must be 'adalam' or 'mnn', got {self.matcher!r}")
        if self.estimator not in ESTIMATORS:
            raise InputError(f"estimator must be one of {sorted(ESTIMATORS)}, got {self.estimator!r}")


def frame_poses(feats: Features, pose: str, ours: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """``(log2 scale (N,), orientation (N,))`` of a pose source at the features' keypoints."""
    s, o = keypoint_poses(_ROW[pose], feats, ours)
    return s[:, 0], o[:, 0]


def to_lafs(xy: np.ndarray, log2_scale: np.ndarray, theta: np.ndarray) -> torch.Tensor:
    """kornia LAFs ``(1, N, 2, 3)``: scale = half-width ``REFERENCE_RADIUS·2**σ`` px, orientation in degrees
    counter-clockwise as displayed (our convention, see :mod:`patchpose.conventions`)."""
    from ..interop import to_laf

    return to_laf(xy, log2_scale, theta)


def adalam_matches(d1, d2, lafs1, lafs2, hw1, hw2, checks: bool = True) -> np.ndarray:
    """kornia AdaLAM on ``(N, D)`` descriptors; ``(M, 2)`` index pairs."""
    import kornia.feature as KF
    from kornia.feature.adalam import get_adalam_default_config

    if len(d1) < 2 or len(d2) < 2:
        return np.zeros((0, 2), np.int64)
    cfg = get_adalam_default_config()
    cfg["device"] = torch.device("cpu")
    if not checks:
        cfg["orientation_difference_threshold"] = None
        cfg["scale_rate_threshold"] = None
    with torch.inference_mode():
        _, idx = KF.match_adalam(
            torch.from_numpy(np.ascontiguousarray(d1, np.float32)),
            torch.from_numpy(np.ascontiguousarray(d2, np.float32)),
            lafs1,
            lafs2,
            config=cfg,
            hw1=tuple(int(v) for v in hw1),
            hw2=tuple(int(v) for v in hw2),
        )
    return idx.numpy().astype(np.int64).reshape(-1, 2)


def _normalise(xy: np.ndarray, K: np.ndarray) -> np.ndarray:
    p = np.concatenate([xy, np.ones((len(xy), 1))], 1) @ np.linalg.inv(K).T
    return p[:, :2] / p[:, 2:3]


def relative_pose(
    xy0: np.ndarray, xy1: np.ndarray, K0: np.ndarray, K1: np.ndarray, cfg: TwoViewConfig | None = None
) -> dict:
    """Robust relative pose from matched pixels: ``{"R", "t" (unit or zeros), "inliers" (int), "model"}``;
    ``R`` is None when there are too few matches or the fit fails.

    The essential matrix is fitted on normalised coordinates (threshold ``threshold_px`` divided by the
    mean focal length) and decomposed by ``cv2.recoverPose``. A homography is fitted too; when it has at
    least as many inliers as the essential matrix the scene is (close to) a pure rotation or a plane, and
    for zero baseline ``R = K1⁻¹·H·K0`` projected onto the rotations is returned with ``t = 0``."""
    cfg = cfg or TwoViewConfig()
    fail = {"R": None, "t": None, "inliers": 0, "model": "none"}
    if len(xy0) < 5:
        return fail
    n0, n1 = _normalise(xy0, K0), _normalise(xy1, K1)
    f = np.mean([K0[0, 0], K0[1, 1], K1[0, 0], K1[1, 1]])
    E, mask = cv2.findEssentialMat(
        n0,
        n1,
        np.eye(3),
        method=ESTIMATORS[cfg.estimator],
        prob=cfg.confidence,
        threshold=cfg.threshold_px / f,
        maxIters=cfg.max_iters,
    )
    e_in = 0
    R = t = None
    if E is not None and E.shape == (3, 3):
        e_in, R, t, _ = cv2.recoverPose(E, n0, n1, np.eye(3), mask=mask.copy())
        t = t.ravel() / max(np.linalg.norm(t), 1e-12)
        e_in = int(e_in)
    Hm, hmask = cv2.findHomography(
        xy0,
        xy1,
        ESTIMATORS[cfg.estimator],
        cfg.threshold_px,
        maxIters=cfg.max_iters,
        confidence=cfg.confidence,
    )
    h_in = int(hmask.sum()) if hmask is not None else 0
    if Hm is not None and h_in >= max(e_in, 8):
        M = np.linalg.inv(K1) @ Hm @ K0
        U, _, Vt = np.linalg.svd(M)
        Rh = U @ np.diag([1.0, 1.0, np.linalg.det(U @ Vt)]) @ Vt
        return {"R": Rh, "t": np.zeros(3), "inliers": h_in, "model": "homography"}
    if R is None:
        return fail
    return {"R": R, "t": t, "inliers": e_in, "model": "essential"}


def match_two_views(
    f0: Features,
    f1: Features,
    describer: Describer,
    cfg: TwoViewConfig,
    ours0: dict | None = None,
    ours1: dict | None = None,
) -> np.ndarray:
    """``(M, 2)`` filtered matches between two feature sets under ``cfg``'s switches."""
    cfg.validate()
    dpose = cfg.describe_pose
    apose = cfg.adalam_pose or dpose
    s0, o0 = frame_poses(f0, dpose, ours0)
    s1, o1 = frame_poses(f1, dpose, ours1)
    d0 = describer.describe(f0.pyramid, f0.xy, s0, o0)
    d1 = describer.describe(f1.pyramid, f1.xy, s1, o1)
    if cfg.matcher == "mnn":
        m, _ = mutual_nn(d0, d1)
        return m
    if apose != dpose:
        s0, o0 = frame_poses(f0, apose, ours0)
        s1, o1 = frame_poses(f1, apose, ours1)
    lafs0, lafs1 = to_lafs(f0.xy, s0, o0), to_lafs(f1.xy, s1, o1)
    return adalam_matches(d0, d1, lafs0, lafs1, f0.pyramid.shape, f1.pyramid.shape, checks=cfg.adalam_checks)


__all__ = [
    "TwoViewConfig",
    "ESTIMATORS",
    "to_lafs",
    "adalam_matches",
    "relative_pose",
    "match_two_views",
]
