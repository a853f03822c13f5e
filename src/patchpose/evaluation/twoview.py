"""Two-view relative pose: keypoints → poses → descriptors → AdaLAM → robust essential matrix → (R, t).

AdaLAM (kornia's ``match_adalam``) filters matches by the local consistency of keypoint *frames*: within a
neighbourhood, matches must agree on the orientation change (``orientation_difference_threshold``,
degrees) and on the scale ratio (``scale_rate_threshold``). It reads both from kornia LAFs, so the poses
we feed it decide what "consistent" means. Every stage has a switch (:class:`TwoViewConfig`):

* ``describe_pose``: the row (:data:`TWO_VIEW_ROWS`, names of :data:`~patchpose.evaluation.rows.ROWS`) whose poses
  the descriptor patches are cut at: SIFT's own (``sift``), ours (``ours``), SIFT's resolved by ours
  (``sift_resolved_by_ours``), none (``lower``); the peers ``dominant_gradient``, and ``orinet`` and
  ``affnet+orinet`` with a peers folder; a blend over the gradient histogram's peaks (``dominant_gradient_blend``,
  ``ours_scale_gradient_blend``); the pair rows ``shape_zoom_blend`` and ``pair_pose`` (both photos together, their
  matches made one-to-one, :func:`one_to_one`);
* ``adalam_pose``: the pose in AdaLAM's LAFs (default: the same as ``describe_pose``; for a blend, each
  putative match then carries the orientations of its two keypoints' closest candidates,
  :func:`adalam_blend_matches`, since the argmax orientations disagree wherever the blend helps);
* ``adalam_checks``: False disables AdaLAM's orientation and scale checks (thresholds set to None);
* ``matcher``: ``"adalam"`` or plain ``"mnn"`` (mutual nearest neighbours).

The essential matrix is fitted by OpenCV's ``USAC_ACCURATE`` (:data:`ROBUST_FIT`), on keypoints normalised by their
own intrinsics.

A pure rotation (zero baseline) makes the essential matrix degenerate; the pose is then a rotation when one
explains nearly as many matches as the essential matrix fits, or more than lie in front of both its cameras
(:func:`relative_pose`).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import torch

from ..errors import InputError, is_int_in, require
from ..matching.blend import blend_descriptors
from ..matching.describe import Describer
from ..matching.features import Features
from ..matching.matcher import mutual_nn
from ..weights import check_descriptor_region
from .peers import Peers
from .rows import (
    Image,
    MatchConfig,
    Run,
    get_row,
    pair_candidate_lafs,
    row_descriptors,
)

#: OpenCV's robust fit of the essential matrix and of the rotation's homography
ROBUST_FIT = cv2.USAC_ACCURATE
#: the rows (:data:`~patchpose.evaluation.rows.ROWS`) a two-view pipeline can describe keypoints at and give
#: AdaLAM the frames of
TWO_VIEW_ROWS = (
    "sift",
    "ours",
    "sift_resolved_by_ours",
    "dominant_gradient",  # a peer: the detector's scale, kornia's dominant gradient in its frame
    # one descriptor blended over the gradient histogram's peaks, at the detector's scale or at ours (AdaLAM:
    # adalam_blend_matches)
    "dominant_gradient_blend",
    "ours_scale_gradient_blend",
    # peers with weights from a peers folder: the detector's scale, OriNet's angle in its frame; AffNet's
    # affine frame there, turned by OriNet (descriptor patches and AdaLAM's LAFs through that frame)
    "orinet",
    "affnet+orinet",
    # pair rows: both photos together; AdaLAM reads each match's closest candidate pair
    "shape_zoom_blend",
    "pair_pose",
    "lower",
)


@dataclass
class TwoViewConfig:
    max_keypoints: int = 2048
    # one of TWO_VIEW_ROWS (sift_resolved_by_ours: ours must be read in SIFT's frame; the peers need the peers
    # folder; the pair rows describe both photos together and need our estimator, whose poses vote)
    describe_pose: str = "sift"
    adalam_pose: str | None = None  # None: the same as describe_pose
    adalam_checks: bool = True
    matcher: str = "adalam"  # adalam | mnn
    threshold_px: float = 1.0  # inlier threshold of the robust fit, in pixels
    confidence: float = 0.9999
    max_iters: int = 10_000
    descriptor: str = "sift"
    # the descriptor window of the rows cut at our scale, in units of our characteristic radius: the
    # estimator's descriptor_region (:func:`patchpose.matching.candidates.ours_window`)
    descriptor_region: float = 1.0

    def validate(self) -> None:
        """:class:`InputError` for a setting that cannot be used (names, budgets, thresholds)."""
        k = self.max_keypoints
        if not is_int_in(k, 1):
            raise InputError(f"max_keypoints must be a positive integer, got {k!r}")
        if not (np.isfinite(self.threshold_px) and self.threshold_px > 0):
            raise InputError(f"threshold_px must be a positive number of pixels, got {self.threshold_px!r}")
        if not 0.0 < self.confidence < 1.0:
            raise InputError(f"confidence must be in (0, 1), got {self.confidence!r}")
        if not is_int_in(self.max_iters, 1):
            raise InputError(f"max_iters must be a positive integer, got {self.max_iters!r}")
        for name in ("describe_pose", "adalam_pose"):  # adalam_pose alone may be None (describe_pose's)
            v = getattr(self, name)
            if not (v is None and name == "adalam_pose") and v not in TWO_VIEW_ROWS:
                raise InputError(f"{name} must be one of {sorted(TWO_VIEW_ROWS)}, got {v!r}")
        pair = [v for v in (self.describe_pose, self.adalam_pose) if v is not None and get_row(v).is_pair]
        if pair and self.adalam_pose not in (None, self.describe_pose):
            raise InputError(
                f"{pair[0]!r} describes both photos together: it is a describe_pose whose own frames AdaLAM "
                "reads (adalam_pose None or the same)"
            )
        if self.matcher not in ("adalam", "mnn"):
            raise InputError(f"matcher must be 'adalam' or 'mnn', got {self.matcher!r}")
        check_descriptor_region(self.descriptor_region)  # the estimator's own rule


def frame_poses(run: Run, im: Image, pose: str) -> tuple[np.ndarray, np.ndarray]:
    """``(log2 scale (N,), orientation (N,))`` of a row at an image's keypoints (a blend row gives its strongest
    candidate, read in the descriptor's window)."""
    r = get_row(pose)
    if r.is_pair:
        raise InputError(f"{pose!r} describes two photos together: match_two_views, not frame_poses")
    s, o = (r.candidates(run, im) if r.candidates is not None else r.poses(run, im))[:2]
    return s[:, 0], o[:, 0]


def _frame_lafs(frames: np.ndarray, xy: np.ndarray) -> torch.Tensor:
    """kornia LAFs ``(1, N, 2, 3)`` of affine frames ``(N, 2, 2)`` (pixels) at the keypoints ``xy``."""
    laf = np.concatenate([frames, xy[:, :, None]], 2)[None]
    return torch.from_numpy(laf.astype(np.float32))


def to_lafs(xy: np.ndarray, log2_scale: np.ndarray, theta: np.ndarray) -> torch.Tensor:
    """kornia LAFs ``(1, N, 2, 3)``: scale = half-width ``REFERENCE_RADIUS·2**σ`` px, orientation in degrees
    counter-clockwise as displayed (our convention, see :mod:`patchpose.conventions`)."""
    from ..interop import to_laf

    return to_laf(xy, log2_scale, theta)


def _adalam_config(checks: bool) -> dict:
    """kornia AdaLAM's default config on the CPU; ``checks=False``: its orientation and scale checks off."""
    cfg = require("kornia.feature.adalam", "kornia").get_adalam_default_config()
    cfg["device"] = torch.device("cpu")
    if not checks:
        cfg["orientation_difference_threshold"] = None
        cfg["scale_rate_threshold"] = None
    return cfg


def adalam_matches(d1, d2, lafs1, lafs2, hw1, hw2, checks: bool = True) -> np.ndarray:
    """kornia AdaLAM on ``(N, D)`` descriptors; ``(M, 2)`` index pairs."""
    KF = require("kornia.feature", "kornia")

    if len(d1) < 2 or len(d2) < 2:
        return np.zeros((0, 2), np.int64)
    cfg = _adalam_config(checks)
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


def closest_candidates(descriptors0, descriptors1, match) -> tuple[np.ndarray, np.ndarray]:
    """For each keypoint ``i`` of image 0 and its putative match ``match[i]`` in image 1, the candidates
    ``(a[i], b[i])`` whose descriptors agree best (largest dot product): ``descriptors0`` ``(N0, k, D)`` and
    ``descriptors1`` ``(N1, k, D)`` are the per-candidate descriptors a blend averages. Their orientations
    are the pair's orientations as the descriptors see them: where two near-equal peaks won differently in
    the two images, the argmax orientations disagree and these do not, which is what a matcher that checks
    orientation changes (AdaLAM) needs."""
    c0, c1 = np.asarray(descriptors0, np.float32), np.asarray(descriptors1, np.float32)
    j = np.asarray(match, np.int64).reshape(-1)
    if c0.ndim != 3 or c1.ndim != 3 or c0.shape[1:] != c1.shape[1:] or len(j) != len(c0):
        raise InputError(
            f"closest_candidates takes (N0, k, D) and (N1, k, D) descriptors and N0 matches, got shapes "
            f"{c0.shape}, {c1.shape} and {len(j)} matches"
        )
    if len(j) and (j.min() < 0 or j.max() >= len(c1)):
        raise InputError(f"matches must index image 1's {len(c1)} keypoints")
    k = c0.shape[1]
    sim = np.einsum("nad,nbd->nab", c0, c1[j]).reshape(len(j), k * k)
    best = sim.argmax(1) if len(j) else np.zeros(0, np.int64)
    return best // k, best % k


def adalam_blend_matches(
    candidates0: np.ndarray,
    candidates1: np.ndarray,
    weights0: np.ndarray,
    weights1: np.ndarray,
    xy0: np.ndarray,
    xy1: np.ndarray,
    ori0: np.ndarray,
    ori1: np.ndarray,
    log2_scale0: np.ndarray,
    log2_scale1: np.ndarray,
    hw0,
    hw1,
    checks: bool = True,
) -> np.ndarray:
    """kornia AdaLAM on blended descriptors; ``(M, 2)`` index pairs.

    ``candidatesI`` ``(N, k, D)``: each keypoint's descriptors at its ``k`` candidates (orientations
    ``oriI`` ``(N, k)`` radians, blend weights ``weightsI`` ``(N, k)``, log2 patch scale ``log2_scaleI``
    ``(N,)``, or ``(N, k)`` where the candidates differ in size). Matching is on the blended descriptors
    (:func:`~.blend.blend_descriptors`), as ``match_adalam`` matches: nearest neighbour, ratio score, mutual
    seeds. AdaLAM's orientation check then reads, for each putative match, the orientations of the candidate pair whose descriptors agree best
    (:func:`closest_candidates`), not each keypoint's strongest peak: a blend's gain is the matches
    whose strongest peaks differ between the images, and with those AdaLAM rejected them (on the 39
    two-view pairs, 1–3 pairs lost to SIFT's own pose; with the pair's orientations, a tie)."""
    adalam = require("kornia.feature.adalam", "kornia")

    d0, d1 = blend_descriptors(candidates0, weights0), blend_descriptors(candidates1, weights1)
    if len(d0) < 2 or len(d1) < 2:
        return np.zeros((0, 2), np.int64)
    cfg = _adalam_config(checks)
    with torch.inference_mode():
        dist = torch.cdist(torch.from_numpy(d0), torch.from_numpy(d1)).square()
        dd, nn = torch.topk(dist, 2, dim=1, largest=False)
        j = nn[:, 0].numpy()
        scores = dd[:, 0] / dd[:, 1].clamp_min(1e-3)
        mnn = (
            torch.from_numpy(dist.argmin(0).numpy()[j] == np.arange(len(d0)))
            if cfg["force_seed_mnn"]
            else None
        )
        a, b = closest_candidates(candidates0, candidates1, j)
        n = np.arange(len(d0))

        def t(x) -> torch.Tensor:
            return torch.as_tensor(np.ascontiguousarray(x), dtype=torch.float32)

        # image 1's side as one entry per putative match (AdaLAM reads it only through the matches), so that
        # each match carries its own pair's orientations
        idx = adalam.AdalamFilter(cfg).filter_matches(
            t(xy0),
            t(np.asarray(xy1)[j]),
            torch.arange(len(d0)),
            scores,
            mnn,
            tuple(int(v) for v in hw0),
            tuple(int(v) for v in hw1),
            t(np.degrees(np.asarray(ori0)[n, a])),
            t(np.degrees(np.asarray(ori1)[j, b])),
            t(np.exp2(_per_candidate(log2_scale0, ori0)[n, a])),
            t(np.exp2(_per_candidate(log2_scale1, ori1)[j, b])),
        )
    idx = idx.numpy().astype(np.int64).reshape(-1, 2)
    return np.stack([idx[:, 0], j[idx[:, 1]]], 1)


def _per_candidate(log2_scale, ori) -> np.ndarray:
    """``(N, k)`` log2 scales: as given, or a keypoint's one scale ``(N,)`` for each of its candidates."""
    s, o = np.asarray(log2_scale, np.float64), np.asarray(ori)
    return s if s.ndim == 2 else np.repeat(s[:, None], o.shape[1], 1)


def _laf_poses(lafs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log2 scale, orientation in radians)`` ``(N, k)`` that kornia reads from candidate LAFs ``(N, k, 2, 3)``
    (:func:`patchpose.interop.from_laf`: ``get_laf_scale``, ``get_laf_orientation``), what AdaLAM checks."""
    from ..interop import from_laf

    n, k = lafs.shape[:2]
    _, scale, ori = from_laf(torch.as_tensor(lafs.reshape(1, n * k, 2, 3), dtype=torch.float32))
    return scale.reshape(n, k), ori.reshape(n, k)


def _normalise(xy: np.ndarray, K: np.ndarray) -> np.ndarray:
    p = np.concatenate([xy, np.ones((len(xy), 1))], 1) @ np.linalg.inv(K).T
    return p[:, :2] / p[:, 2:3]


def _bearings(xy: np.ndarray, K: np.ndarray) -> np.ndarray:
    b = np.concatenate([xy, np.ones((len(xy), 1))], 1) @ np.linalg.inv(K).T
    return b / np.linalg.norm(b, axis=1, keepdims=True)


def fit_rotation(
    xy0: np.ndarray, xy1: np.ndarray, K0: np.ndarray, K1: np.ndarray, cfg: TwoViewConfig | None = None
) -> tuple[np.ndarray | None, int]:
    """The zero-baseline model: a camera rotation ``R`` with ``x1 ~ K1·R·K0⁻¹·x0``, and how many matches it
    explains within ``threshold_px`` (pixels of image 1).

    A homography is fitted robustly first (OpenCV, :data:`ROBUST_FIT`); ``R`` is then the rotation that best
    aligns the bearing vectors of its inliers (orthogonal Procrustes), so it is a rotation by construction
    and not a general homography: a plane seen from two places is *not* explained by it."""
    cfg = cfg or TwoViewConfig()
    Hm, hmask = cv2.findHomography(
        xy0,
        xy1,
        ROBUST_FIT,
        cfg.threshold_px,
        maxIters=cfg.max_iters,
        confidence=cfg.confidence,
    )
    if Hm is None or hmask is None or int(hmask.sum()) < 3:
        return None, 0
    i = hmask.ravel().astype(bool)
    U, _, Vt = np.linalg.svd(_bearings(xy1[i], K1).T @ _bearings(xy0[i], K0))
    R = U @ np.diag([1.0, 1.0, np.linalg.det(U @ Vt)]) @ Vt
    p = np.concatenate([xy0, np.ones((len(xy0), 1))], 1) @ (K1 @ R @ np.linalg.inv(K0)).T
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.linalg.norm(p[:, :2] / p[:, 2:3] - xy1, axis=1)
    return R, int(np.sum(err <= cfg.threshold_px))


def _fit_essential(n0, n1, f: float, cfg: TwoViewConfig, subset=None) -> dict | None:
    """An essential matrix fitted to the matches ``subset`` (all when None) and scored on *all* of them:
    ``fit`` = matches within the threshold (Sampson distance), ``front`` = those of them in front of both
    cameras for the decomposition ``cv2.recoverPose`` picks."""
    s = slice(None) if subset is None else subset
    E, mask = cv2.findEssentialMat(
        n0[s],
        n1[s],
        np.eye(3),
        method=ROBUST_FIT,
        prob=cfg.confidence,
        threshold=cfg.threshold_px / f,
        maxIters=cfg.max_iters,
    )
    if E is None or E.shape != (3, 3) or mask is None:
        return None
    h0, h1 = np.concatenate([n0, np.ones((len(n0), 1))], 1), np.concatenate([n1, np.ones((len(n1), 1))], 1)
    Ex0, Etx1 = h0 @ E.T, h1 @ E
    with np.errstate(divide="ignore", invalid="ignore"):
        d2 = np.sum(h1 * Ex0, 1) ** 2 / (Ex0[:, 0] ** 2 + Ex0[:, 1] ** 2 + Etx1[:, 0] ** 2 + Etx1[:, 1] ** 2)
    inl = (np.nan_to_num(d2, nan=np.inf) <= (cfg.threshold_px / f) ** 2).astype(np.uint8)[:, None]
    if inl.sum() < 5:
        return None
    front, R, t, _ = cv2.recoverPose(E, n0, n1, np.eye(3), mask=inl.copy())
    return {
        "R": R,
        "t": t.ravel() / max(np.linalg.norm(t), 1e-12),
        "fit": int(inl.sum()),
        "front": int(front),
    }


#: a rotation is taken for the scene's motion when it explains this share of the essential matrix's inliers
ROTATION_INLIER_RATIO = 0.8
#: an essential matrix whose inliers lie in front of both cameras less often than this is fitted again
CHEIRALITY_RATIO = 0.8
#: how many random halves of the matches the fit is repeated on then (seeded, so a run is repeatable)
RETRY_SUBSETS = 20


def relative_pose(
    xy0: np.ndarray, xy1: np.ndarray, K0: np.ndarray, K1: np.ndarray, cfg: TwoViewConfig | None = None
) -> dict:
    """Robust relative pose from matched pixels: ``{"R", "t", "inliers" (int), "model"}`` (``model``:
    ``"essential"``, ``"rotation"`` or ``"none"``); ``t`` is a unit vector for ``"essential"`` and zeros for
    ``"rotation"``; ``R`` and ``t`` are None (``"none"``) when there are too few matches or every fit fails.

    1. The essential matrix is fitted on normalised coordinates (threshold ``threshold_px`` divided by the
       mean focal length) and decomposed by ``cv2.recoverPose``, which also counts its inliers *in front of
       both cameras*.
    2. Model selection (as COLMAP's two-view geometry does, with a rotation in place of a homography): when
       a pure camera rotation (:func:`fit_rotation`) explains at least ``ROTATION_INLIER_RATIO`` of the
       essential matrix's inliers, the baseline is taken as zero: that ``R`` with ``t = 0``. Under a pure
       rotation every translation fits the epipolar constraint, so the essential matrix's inliers say nothing
       of ``t``; a plane seen from two places fits a homography but not a rotation, and stays essential.
    3. An essential matrix whose inliers mostly fail the cheirality check (fewer than ``CHEIRALITY_RATIO``
       of them in front of both cameras) is a wrong solution of a near-degenerate fit (a plane, or little
       parallax); the fit is repeated on ``RETRY_SUBSETS`` random halves of the matches (seeded), each scored
       on all of them, and the solution with most inliers in front of both cameras is kept.
    4. The rotation is compared again, now with the inliers *in front of both cameras* of the essential
       matrix kept: under a pure rotation every ``t`` fits the epipolar constraint, and its one-dimensional
       Sampson distance admits noisier matches than the rotation's two-dimensional transfer error, so the
       essential matrix can *fit* more matches than the rotation explains while almost none of them lie in
       front of both cameras (a camera turned and zoomed with 0.7 px of noise: fit 350, in front 2, rotation
       230). The rotation is taken when it explains more matches than lie in front (a small baseline whose
       essential matrix keeps only some of its inliers in front stays essential when those are more).
    ``inliers`` counts the rotation's inliers, or the essential matrix's inliers in front of both cameras."""
    cfg = cfg or TwoViewConfig()
    fail = {"R": None, "t": None, "inliers": 0, "model": "none"}
    if len(xy0) < 5:
        return fail
    xy0, xy1 = np.asarray(xy0, np.float64), np.asarray(xy1, np.float64)
    n0, n1 = _normalise(xy0, K0), _normalise(xy1, K1)
    f = float(np.mean([K0[0, 0], K0[1, 1], K1[0, 0], K1[1, 1]]))
    best = _fit_essential(n0, n1, f, cfg)
    R_rot, rot_in = fit_rotation(xy0, xy1, K0, K1, cfg)
    e_fit = best["fit"] if best is not None else 0
    if R_rot is not None and rot_in >= max(ROTATION_INLIER_RATIO * e_fit, 8):
        return {"R": R_rot, "t": np.zeros(3), "inliers": rot_in, "model": "rotation"}
    if best is None or best["front"] < CHEIRALITY_RATIO * best["fit"]:
        rng = np.random.default_rng(0)
        for _ in range(RETRY_SUBSETS):
            half = rng.random(len(n0)) < 0.5
            if half.sum() < 5:
                continue
            fit = _fit_essential(n0, n1, f, cfg, half)
            if fit is not None and (best is None or fit["front"] > best["front"]):
                best = fit
    e_front = best["front"] if best is not None else 0
    if R_rot is not None and rot_in >= 8 and rot_in > e_front:
        return {"R": R_rot, "t": np.zeros(3), "inliers": rot_in, "model": "rotation"}
    if best is None or best["front"] < 5:
        return fail
    return {"R": best["R"], "t": best["t"], "inliers": best["front"], "model": "essential"}


def match_two_views(
    f0: Features,
    f1: Features,
    describer: Describer,
    cfg: TwoViewConfig,
    ours0=None,
    ours1=None,
    peers: Peers | None = None,
    est=None,
) -> np.ndarray:
    """``(M, 2)`` filtered matches between two feature sets under ``cfg``'s switches (``ours0``/``ours1``: our
    poses at their keypoints, if read; ``peers``: the peers folder's networks, for the rows ``orinet`` and
    ``affnet+orinet``; ``est``: our estimator, for the rows that read it, the pair rows among them)."""
    cfg.validate()
    dpose = cfg.describe_pose
    apose = cfg.adalam_pose or dpose
    run = Run(describer, est, MatchConfig(max_keypoints=cfg.max_keypoints), peers, cfg.descriptor_region)
    im0, im1 = Image(f0, ours0), Image(f1, ours1)
    if get_row(dpose).is_pair:
        return _match_pair_row(run, im0, im1, cfg)

    def lafs(im: Image) -> torch.Tensor:
        frames = get_row(apose).frames
        if frames is not None:  # an affine frame of the row's own (AffNet + OriNet's): AdaLAM reads it
            return _frame_lafs(frames(run, im), im.feats.xy)
        return to_lafs(im.feats.xy, *frame_poses(run, im, apose))

    if get_row(dpose).candidates is not None and apose == dpose and cfg.matcher == "adalam":
        s0, o0, w0, c0 = get_row(dpose).candidates(run, im0)
        s1, o1, w1, c1 = get_row(dpose).candidates(run, im1)
        return adalam_blend_matches(
            c0,
            c1,
            w0,
            w1,
            f0.xy,
            f1.xy,
            o0,
            o1,
            s0[:, 0],
            s1[:, 0],
            f0.pyramid.shape,
            f1.pyramid.shape,
            checks=cfg.adalam_checks,
        )
    d0, d1 = (row_descriptors(dpose, run, im)[:, 0] for im in (im0, im1))
    if cfg.matcher == "mnn":
        m, _ = mutual_nn(d0, d1)
        return m
    return adalam_matches(
        d0, d1, lafs(im0), lafs(im1), f0.pyramid.shape, f1.pyramid.shape, checks=cfg.adalam_checks
    )


def _match_pair_row(run: Run, im0: Image, im1: Image, cfg: TwoViewConfig) -> np.ndarray:
    """:func:`match_two_views` for a pair row: each photo's candidates at the pair's pose, blended; AdaLAM reads,
    for each putative match, the size and orientation of its closest candidate pair's patch frames (affine: read
    from their LAFs by kornia, :func:`~patchpose.evaluation.rows.pair_candidate_lafs`)."""
    if run.est is None:
        raise InputError(f"{cfg.describe_pose!r} needs our estimator: our poses vote the pair's pose")
    f0, f1 = im0.feats, im1.feats
    # the pair rows read our poses themselves (their top-k), as match_pair does
    bare0, bare1 = Image(f0), Image(f1)
    c0, c1, zoom, turn = get_row(cfg.describe_pose).pair(run, bare0, bare1)
    d0, d1 = blend_descriptors(c0[3], c0[2]), blend_descriptors(c1[3], c1[2])
    if cfg.matcher == "mnn":
        return mutual_nn(d0, d1)[0]
    lafs = pair_candidate_lafs(cfg.describe_pose, run, bare0, bare1, c0, c1, zoom, turn)
    # no keypoints: the empty (0, k) arrays
    poses = [_laf_poses(la) if len(f) else (c[0], c[1]) for f, c, la in zip((f0, f1), (c0, c1), lafs)]
    (s0, o0), (s1, o1) = poses
    m = adalam_blend_matches(
        c0[3],
        c1[3],
        c0[2],
        c1[2],
        f0.xy,
        f1.xy,
        o0,
        o1,
        s0,
        s1,
        f0.pyramid.shape,
        f1.pyramid.shape,
        checks=cfg.adalam_checks,
    )
    return one_to_one(m, d0, d1)


def one_to_one(matches: np.ndarray, d0: np.ndarray, d1: np.ndarray) -> np.ndarray:
    """``matches`` ``(M, 2)`` with each keypoint of image 1 kept once: where several keypoints of image 0
    matched it, the one whose descriptor ``d0`` is nearest its ``d1`` (ties: the first). AdaLAM matches each
    keypoint of image 0 to its nearest neighbour in image 1, so at the pair's zoom, where the photo that
    looks larger is described in a window widened by the zoom, keypoints closer together there than that
    window resolves share one descriptor and one match, a few pixels off (on the 54 zoomed posed pairs,
    mAA@5° at 1,024 SIFT keypoints 0.815 with them, 0.833 without)."""
    m = np.asarray(matches, np.int64).reshape(-1, 2)
    if len(m) == 0:
        return m
    dist = np.linalg.norm(np.asarray(d0)[m[:, 0]] - np.asarray(d1)[m[:, 1]], axis=1)
    order = np.argsort(dist, kind="stable")
    _, first = np.unique(m[order, 1], return_index=True)
    return m[np.sort(order[first])]


__all__ = [
    "TWO_VIEW_ROWS",
    "TwoViewConfig",
    "adalam_blend_matches",
    "closest_candidates",
    "ROBUST_FIT",
    "to_lafs",
    "adalam_matches",
    "fit_rotation",
    "one_to_one",
    "relative_pose",
    "match_two_views",
]
