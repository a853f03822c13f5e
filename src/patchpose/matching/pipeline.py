"""The matching chain on two images: detect, assign poses, describe, match (one call: :func:`match_images`).

Pose rows (how each keypoint's descriptor patch is turned and sized):

=============== ==========================================================================================
``lower``       no pose: every patch upright, half-width ``REFERENCE_RADIUS`` px (16)
``sift``        the detector's own pose: OpenCV SIFT's angle, half-width ``SIFT_REGION · size`` (OpenCV's
                own descriptor window, on photos about as large as ours at σ = 0)
``ours``        our strongest pose: half-width ``REFERENCE_RADIUS · 2**σ · d`` (the models are centred on
                σ = 0; ``d`` the read plan's ``descriptor_region``, calibrated per model: :func:`ours_window`)
``ours_blend``  one **blended descriptor** per keypoint (:mod:`patchpose.matching.blend`): the descriptors cut
                at our scale and at each of our ``BLEND_K`` strongest orientations, averaged with weights
                from their peak masses, then normalised
``ours_scale_  our scale, and one descriptor blended over the ``BLEND_K`` strongest peaks of the gradient
gradient_blend`` histogram read on that patch (:func:`patchpose.baselines.dominant_gradient_candidates`)
``ours_angle``  our angle without our scale: the patch at the detector's scale (SIFT's, Key.Net's; 16 px
                for corners and keypoints from a file) and our orientation read in that frame
                (:meth:`~patchpose.PatchPoseEstimator.estimate` with ``detector_scale``, one read)
``ours_topK``   our top-K orientations (at the strongest scale, the same window as ``ours``): K patches per
                keypoint; two keypoints' distance is the smallest over their K × K descriptor pairs
``ours_         as ``ours_topK``, but only the candidates that SIFT's rule keeps (peaks at least 80 % as high
adaptive``      as the highest, :func:`patchpose.reading.strong_candidates`): as many patches per keypoint as its
                histogram has strong modes
``sift_all``    SIFT's own pose with every orientation SIFT found at the location, as users run SIFT (its
                extra detections for secondary orientations): about 1.2 patches per keypoint
``keynet``      Key.Net's own pose: its scale (the region kornia describes), upright
``sift_resolved SIFT's own pose, except where SIFT found several orientations at a location: the one
_by_ours``      nearest our angle in SIFT's frame (as :func:`patchpose.resolve_orientations` does)
``dominant_     hand-crafted, for keypoints that come without an orientation: the detector's scale (16 px
gradient``      without one) and kornia's dominant gradient orientation (``PatchDominantGradientOrientation``)
                on that patch
``dominant_     as ``dominant_gradient``, but one blended descriptor over the ``BLEND_K`` strongest peaks
gradient_blend`` of the gradient histogram (:func:`patchpose.baselines.dominant_gradient_candidates`)
``dominant_     as ``dominant_gradient_blend``, each peak also described on windows ``2**±0.5`` times as
gradient_pooled large (domain-size pooling, :func:`~.blend.pool_sizes`): only for keypoints without a scale of
_blend``        their own (corners, a file), at the fixed 16 px
``affnet_       AffNet's affine shape (kornia, as in ``affnet+orinet``) at the detector's scale (16 px without
pooled_blend``  one), and one descriptor blended over the ``BLEND_K`` strongest peaks of the gradient histogram
                read on the affine-normalised patch, each cut through the frame turned to the peak and also at
                ``2**±0.5`` times the size (:func:`~.blend.pool_sizes`): OriNet's place taken by a pooled blend
``log+dominant_ hand-crafted scale and orientation: a scale-normalised LoG scale selection at the keypoint
gradient``      (:func:`patchpose.baselines.log_scale_selection`, σ), a descriptor half-width of
                ``2·SIFT_REGION·σ`` (SIFT's window per σ), and the dominant gradient orientation over a
                radius of ``4.5·σ`` (SIFT's orientation window)
``orinet``      a peer, for keypoints that come without an orientation: the detector's scale (16 px without
                one) and OriNet's angle, as kornia reads it (``LAFOrienter(32, angle_detector=OriNet)``)
``affnet+       a peer: kornia's affine frame at the detector's scale (16 px without one): AffNet's shape
orinet``        (its scale kept), then OriNet's angle in that frame; the descriptor patch is cut through the
                frame (Key.Net → AffNet → OriNet is kornia's ``KeyNetAffNetHardNet``)
``pair_pose``   two photos at a time: every keypoint at one pose per photo, the turn and the zoom between the
                photos that our angles and scales vote for at tentative matches (:mod:`.zoom`): upright in
                photo 1, turned by the pair's turn in photo 2, at 16 px widened by the zoom where structures
                look larger, each at 3 sizes pooled (:func:`~.blend.pool_sizes`), and where the detector gives a
                size (SIFT, Key.Net) at 3 sizes about it too, blended half and half; photo 2 cut through the
                pair's affine map instead where the matches agree on one that slants the view; where the votes
                show no one turn, each keypoint at its own poses (:func:`pair_fallback_row`)
``upper``       the ground truth from a homography ``H``: upright at 16 px in image 1, and in image 2 the
                pose change that ``H`` makes at the keypoint's source point (:func:`patchpose.geometry.pose_change`)
``upper_        the same with ``H``'s whole local affine map (its Jacobian at the source point): in image 2 the
affine``        patch is cut through the frame that ``H`` makes of image 1's, shape included (the ceiling where
                photos are seen at a slant; elsewhere about ``upper``)
=============== ==========================================================================================

Keypoints are OpenCV SIFT
detections (``detector="sift"``, one per location: SIFT's extra detections for secondary orientations are
dropped so that every row matches the same keypoints), Harris corners (``detector="harris"``), Shi-Tomasi
corners (``"gftt"``: OpenCV's ``goodFeaturesToTrack`` with its own score), Key.Net keypoints (``"keynet"``,
kornia's ``KeyNetDetector``: a scale, no orientation), or any ``(N, 2)`` array (no pose). The rows that
keep a detector's scale (``ours_angle`` and the peers) keep SIFT's and Key.Net's, as users run them; rows
that need SIFT's pose (``sift``, ``sift_resolved_by_ours``) exist only for SIFT detections and ``keynet``
only for Key.Net's (:func:`pose_rows`). The peers (Key.Net, OriNet, AffNet) take their weights from a folder
the caller names (``peers``: :class:`~patchpose.matching.peers.Peers`); the library never needs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .. import checks
from ..baselines import (
    LOG_PATCH,
    LOG_SIGMA,
    LOG_WINDOWS,
    ORI_PATCH,
    dominant_gradient_orientation,
    log_scale_selection,
)
from ..conventions import OPENCV_SIFT_WINDOW_PER_SIZE, REFERENCE_RADIUS, angle_diff, rotation_matrix
from ..data.keypoints import MAX_KEYPOINTS, detect_gftt, detect_harris, detect_sift
from ..data.patches import Pyramid, check_image, extract_patches, to_gray
from ..errors import InputError, is_int_in
from ..geometry import apply_homography, homography_jacobian, pose_change
from ..interop import from_cv2_keypoints
from ..reading import MAX_FRAME, strong_candidates
from ..shape import shape_estimator
from .blend import (
    BLEND_GAMMA,
    BLEND_K,
    POOL_WEIGHTS,
    affine_parts,
    blend_descriptors,
    blend_weights,
    gradient_peaks,
    pool_sizes,
    turned_shapes,
)
from .describe import Describer
from .matcher import mutual_nn
from .peers import Peers, affnet_frames, keynet_frames, orinet_in_frames, orinet_orientations
from .zoom import MIN_SLANT, PairAffine, PairTurn, PairZoom, pair_affine, pair_turn, pair_zoom

#: SIFT's descriptor window per unit of keypoint size (:data:`~patchpose.conventions.OPENCV_SIFT_WINDOW_PER_SIZE`)
SIFT_REGION = OPENCV_SIFT_WINDOW_PER_SIZE
#: SIFT's orientation window (radius 3·1.5σ), in units of σ: where the hand-crafted row reads its gradients
SIFT_ORI_RADIUS = 4.5
#: the keypoint sources :func:`detect` knows; "sift" alone gives each keypoint a pose of its own
DETECTORS = ("sift", "harris", "gftt", "keynet")
#: detectors that need the peers' weights
PEER_DETECTORS = ("keynet",)
#: rows that read SIFT's own pose, so exist only for SIFT detections
SIFT_ROWS = ("sift", "sift_all", "sift_resolved_by_ours")
#: rows that read Key.Net's own scale, so exist only for Key.Net detections
KEYNET_ROWS = ("keynet",)
HANDCRAFTED_ROWS = ("dominant_gradient", "log+dominant_gradient")
#: rows of one blended descriptor per keypoint over several orientation candidates (:mod:`.blend`)
BLEND_ROWS = (
    "ours_blend",
    "ours_scale_gradient_blend",
    "dominant_gradient_blend",
    "dominant_gradient_pooled_blend",
    "affnet_pooled_blend",
    "shape_pooled_blend",
)
#: rows whose descriptors depend on both photos (:func:`pair_descriptors`): the pooled shape blend at one
#: fixed size for every keypoint, widened by the pair's zoom that our scales vote for (:mod:`.zoom`); and every
#: keypoint at one pose per photo, the pair's turn and zoom that our angles and scales vote for
PAIR_ROWS = ("shape_zoom_blend", "pair_pose")
#: the per-photo row whose candidates each pair row cuts at the pair's zoom
PAIR_BASE_ROWS = {"shape_zoom_blend": "shape_pooled_blend"}
#: rows that read our shape network (``shape_weights``)
SHAPE_ROWS = ("shape_pooled_blend", *PAIR_ROWS)
#: rows only for keypoints without a scale of their own (corners, a file): a fixed size pooled over sizes
NO_SCALE_ROWS = ("dominant_gradient_pooled_blend",)
#: blend rows cut through affine frames: AffNet's (the peers' weights) and our shape network's
AFFINE_BLEND_ROWS = ("affnet_pooled_blend", "shape_pooled_blend")
#: rows cut at our scale (besides ``ours_topK``): they need our poses and widen our window (:func:`ours_window`)
OUR_SCALE_ROWS = ("ours", "ours_adaptive", "ours_blend", "ours_scale_gradient_blend")
#: rows that need the peers' weights (:mod:`patchpose.matching.peers`)
PEER_ROWS = ("orinet", "affnet+orinet")
#: rows an evaluation computes only when asked for (by name, or every row with ``all``): variants of our own
#: poses and blends that docs/peers.md measures once. The rest are the default: the bounds, the detector's own
#: pose, ours and ours top-k (the paper's Table 4), the peers users run and :func:`match_pair`'s default
#: (``pair_pose``); half the descriptors per keypoint of every row
ABLATION_ROWS = (
    "sift_resolved_by_ours",
    "ours_adaptive",
    "ours_angle",
    "log+dominant_gradient",
    *BLEND_ROWS,
    "shape_zoom_blend",
    "upper_affine",
)


def default_rows(rows) -> tuple[str, ...]:
    """``rows`` less the :data:`ABLATION_ROWS`, in their order."""
    return tuple(r for r in rows if r not in ABLATION_ROWS)


def pose_rows(
    top_k: int = 4, sift: bool = True, handcrafted: bool = True, peers: bool = False, keynet: bool = False
) -> tuple[str, ...]:
    """Row names in report order: without ``sift`` (keypoints that come without a pose: corners, Key.Net, a
    file), the rows that read SIFT's pose are left out, and with ``keynet`` (Key.Net detections) the row of
    Key.Net's own scale is added; ``handcrafted`` adds the hand-crafted pose rows and ``peers`` those of the
    peers (:data:`PEER_ROWS` and ``affnet_pooled_blend``). ``shape_pooled_blend``, ``shape_zoom_blend`` (our
    bundled shape network) and ``pair_pose`` are always there. The :data:`NO_SCALE_ROWS` are only for keypoints
    without a scale (neither ``sift`` nor ``keynet``)."""
    rows = (
        "lower",
        "sift",
        "sift_all",
        "keynet",
        "ours",
        f"ours_top{top_k}",
        "ours_adaptive",
        "ours_blend",
        "ours_scale_gradient_blend",
        "ours_angle",
        "sift_resolved_by_ours",
        *((*HANDCRAFTED_ROWS, "dominant_gradient_blend", *NO_SCALE_ROWS) if handcrafted else ()),
        "shape_pooled_blend",
        "shape_zoom_blend",
        "pair_pose",
        *((*PEER_ROWS, "affnet_pooled_blend") if peers else ()),
        "upper",
        "upper_affine",
    )
    return tuple(
        r
        for r in rows
        if (sift or r not in SIFT_ROWS)
        and ((keynet and not sift) or r not in KEYNET_ROWS)
        and (not (sift or keynet) or r not in NO_SCALE_ROWS)
    )


@dataclass
class MatchConfig:
    max_keypoints: int = 2000
    descriptor: str = "sift"
    descriptor_weights: str | None = None
    top_k: int = 4
    detector: str = "sift"  # one of DETECTORS (when no keypoints are given)
    shape_weights: str | None = None  # the shape network of ``shape_pooled_blend`` (None: the bundled one)


@dataclass
class Features:
    """Keypoints of one image and what every row needs."""

    xy: np.ndarray  # (N, 2) pixel centres at integers
    sift_scale: np.ndarray  # (N,) log2 of SIFT's descriptor half-width / REFERENCE_RADIUS (NaN: none)
    sift_ori: np.ndarray  # (N,) radians CCW (NaN: none)
    pyramid: Pyramid
    image: np.ndarray  # float32 [0, 1], as given (gray or RGB)
    # per keypoint, every orientation SIFT found at its location (radians CCW, its own first); None: none
    sift_ori_candidates: list[np.ndarray] | None = None
    # (N,) log2 of the detector's own descriptor half-width / REFERENCE_RADIUS (SIFT's, Key.Net's); None:
    # the detector gives no scale
    detector_scale: np.ndarray | None = None
    # poses computed once per image and reused by every row that needs them (hand-crafted rows)
    memo: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.xy)

    @property
    def frame(self) -> np.ndarray:
        """``(N,)`` the log2 scale of the frame that the rows keeping the detector's scale read and cut
        in: the detector's own (:attr:`detector_scale`), 0 (16 px) where it gives none."""
        if self.detector_scale is None:
            return np.zeros(len(self))
        return np.asarray(self.detector_scale, np.float64)

    def at_frame(self, frame: float) -> Features:
        """These keypoints as if their detector gave each the log2 scale ``frame`` (the rows that keep the
        detector's scale then read and cut there; a scale of their own is set aside), with a memo of its own;
        one view per frame (kept in this memo), and the features themselves for frame 0 where they have no
        scale."""
        if self.detector_scale is None and frame == 0:
            return self
        key = ("at_frame", float(frame))
        if key not in self.memo:
            self.memo[key] = replace(self, detector_scale=np.full(len(self), float(frame)), memo={})
        return self.memo[key]


def check_detector(detector: str, peers: Peers | None = None) -> None:
    """:class:`InputError` unless ``detector`` is one of :data:`DETECTORS` and, for the
    :data:`PEER_DETECTORS`, ``peers`` is given."""
    if detector not in DETECTORS:
        raise InputError(f"detector must be one of {DETECTORS}, got {detector!r}")
    if detector in PEER_DETECTORS and peers is None:
        raise InputError(f"the {detector} detector needs the peers' weights folder (--peers DIR)")


def check_sizes(sizes, n: int) -> np.ndarray:
    """``sizes`` as an ``(n,)`` float64 array of region half-widths in pixels; a one-line :class:`InputError`
    unless there is one real, finite size per keypoint within 16·2**±:data:`~patchpose.reading.MAX_FRAME` px
    (the scales a read reaches)."""
    a = checks.real_array(sizes, "sizes", "real numbers, one per keypoint")
    a = a.reshape(-1) if a.ndim > 1 and a.size == n else a
    if a.shape != (n,):
        raise InputError(f"sizes must hold one size per keypoint ({n}), got shape {a.shape}")
    lo, hi = REFERENCE_RADIUS * 2.0**-MAX_FRAME, REFERENCE_RADIUS * 2.0**MAX_FRAME
    if not (np.isfinite(a).all() and (a >= lo).all() and (a <= hi).all()):
        raise InputError(
            f"sizes must be finite region half-widths from {lo:.3g} to {hi:g} pixels (16·2**±{MAX_FRAME:g})"
        )
    return a


def detect(
    image,
    max_keypoints: int = 2000,
    keypoints=None,
    detector: str = "sift",
    peers: Peers | None = None,
    sizes=None,
) -> Features:
    """OpenCV SIFT keypoints (strongest first, one per location), Harris or Shi-Tomasi corners
    (``detector="harris"`` / ``"gftt"``, strongest first, no pose), Key.Net keypoints (``"keynet"``, with
    the ``peers``' weights; strongest first, one per location, no pose), or the given ``(N, 2)`` keypoints
    (no pose; ``max_keypoints`` does not apply: the caller chose them), with ``sizes`` ``(N,)`` their
    detector's sizes if it gives them: the half-width of each keypoint's region in pixels, as kornia's
    ``get_laf_scale`` reads a LAF (what Key.Net's detections carry)."""
    img = check_image(image)
    gray = to_gray(img)
    given = keypoints is not None  # the caller's keypoints are checked; a detector's may be none at all
    if sizes is not None and not given:
        raise InputError("sizes are those of keypoints given with them: give the keypoints too")
    if keypoints is None:
        check_detector(detector, peers)
    if keypoints is None and not is_int_in(max_keypoints, 1, MAX_KEYPOINTS, integral_floats=True):
        raise InputError(
            f"max_keypoints must be an integer from 1 to {MAX_KEYPOINTS:,}, got {max_keypoints!r}"
        )
    if keypoints is None and detector == "harris":
        keypoints = detect_harris(img, int(max_keypoints))
    elif keypoints is None and detector == "gftt":
        keypoints = detect_gftt(img, int(max_keypoints))
    det_scale = None
    if keypoints is None and detector == "keynet":
        keypoints, radius = keynet_frames(peers, gray, int(max_keypoints))
        det_scale = np.log2(np.maximum(radius, 1e-6) / REFERENCE_RADIUS)
    if keypoints is None:
        xy, kps, cands = detect_sift(img, int(max_keypoints), candidates=True)
        _, s, o = from_cv2_keypoints(kps)
        cands = [np.mod(-np.radians(c), 2 * math.pi) for c in cands]
        # from_cv2_keypoints gives log2(size / (2·REFERENCE_RADIUS)); the window is SIFT_REGION·size
        s = s + math.log2(2.0 * SIFT_REGION)
        det_scale = np.asarray(s, np.float64)
    else:
        from ..estimator import check_keypoints

        xy = (
            check_keypoints(keypoints, gray.shape)
            if given
            else np.asarray(keypoints, np.float64).reshape(-1, 2)
        )
        s = o = np.full(len(xy), np.nan)
        cands = None
        if sizes is not None:
            det_scale = np.log2(check_sizes(sizes, len(xy)) / REFERENCE_RADIUS)
    return Features(
        xy.reshape(-1, 2),
        np.asarray(s, np.float64),
        np.asarray(o, np.float64),
        Pyramid(gray),
        img,
        cands,
        detector_scale=det_scale,
    )


def nearest_candidates(candidates: list[np.ndarray], orientation: np.ndarray) -> np.ndarray:
    """For each keypoint, the candidate orientation nearest ``orientation`` (radians, circular)."""
    return np.array(
        [c[int(np.argmin(np.abs(angle_diff(c, t))))] for c, t in zip(candidates, orientation)], np.float64
    ).reshape(-1)


def handcrafted_poses(feats: Features, scale: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Hand-crafted poses ``(log2 half-width of the descriptor patch, orientation)`` ``(N,)`` at the
    keypoints: with ``scale``, a LoG scale selection (σ) sets the patch to ``2·SIFT_REGION·σ`` and the
    orientation is kornia's dominant gradient over a radius of ``SIFT_ORI_RADIUS·σ``; without, the patch is
    the detector's (:attr:`Features.frame`: 16 px where it has none) and the orientation is read on it (the
    ``dominant_gradient`` row)."""
    n = len(feats)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    if ("handcrafted", scale) in feats.memo:
        return feats.memo[("handcrafted", scale)]
    xy, zero = feats.xy, np.zeros(n)
    if scale:
        stack = extract_patches(feats.pyramid, xy, zero, zero, LOG_PATCH, list(LOG_WINDOWS))
        # log_scale_selection gives log2 of the window w; the LoG's σ is LOG_SIGMA patch pixels, i.e.
        # LOG_SIGMA·2·w/LOG_PATCH reference radii
        sigma = log_scale_selection(stack) + math.log2(2.0 * LOG_SIGMA / LOG_PATCH)
        size = sigma + math.log2(2.0 * SIFT_REGION)
        ori_frame = sigma + math.log2(SIFT_ORI_RADIUS)
    else:
        size = ori_frame = feats.frame
    ori = dominant_gradient_orientation(extract_patches(feats.pyramid, xy, ori_frame, zero, ORI_PATCH, [1.0]))
    feats.memo[("handcrafted", scale)] = (np.asarray(size, np.float64), ori)
    return feats.memo[("handcrafted", scale)]


def peer_poses(feats: Features, peers: Peers | None, row: str) -> tuple[np.ndarray, np.ndarray | None]:
    """A peer row's orientations ``(N,)`` at the detector's scale (:attr:`Features.frame`:
    :data:`REFERENCE_RADIUS` px where it has none) and, for ``affnet+orinet``, its affine frames ``(N, 2,
    2)`` (the patch's ``[-1, 1]²`` to pixels; None for ``orinet``), computed once per image (``feats.memo``)."""
    if peers is None:
        raise InputError(f"row {row!r} needs the peers' weights folder (--peers DIR)")
    if row not in feats.memo:
        gray = feats.pyramid.image()
        radius = REFERENCE_RADIUS * np.exp2(feats.frame)
        if row == "orinet":
            feats.memo[row] = (orinet_orientations(peers, gray, feats.xy, radius), None)
        else:  # OriNet in AffNet's frames, which the affine blend rows share (affnet_frames_of)
            frames, ori = orinet_in_frames(peers, gray, feats.xy, affnet_frames_of(feats, peers))
            feats.memo[row] = (ori, frames)
    return feats.memo[row]


def affine_shapes(
    row: str, feats: Features, peers: Peers | None, shape_weights: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """An :data:`AFFINE_BLEND_ROWS` row's upright affine frames at the detector's scale (:attr:`Features.frame`;
    16 px without one) as log2 scales ``(N,)`` and shapes of determinant 1 ``(N, 2, 2)``
    (:func:`~.blend.affine_parts`): AffNet's (``affnet_pooled_blend``, ``peers``) or our shape network's
    (``shape_pooled_blend``: ``shape_weights``, None for the bundled one; :mod:`patchpose.shape`)."""
    if row == "affnet_pooled_blend":
        return affine_parts(affnet_frames_of(feats, peers))
    if row != "shape_pooled_blend":
        raise InputError(f"row {row!r} is not an affine row; they are {AFFINE_BLEND_ROWS}")
    key = (row, shape_weights)
    if key not in feats.memo:
        radius = REFERENCE_RADIUS * np.exp2(feats.frame)
        feats.memo[key] = affine_parts(shape_estimator(shape_weights).frames(feats.pyramid, feats.xy, radius))
    return feats.memo[key]


def affnet_frames_of(feats: Features, peers: Peers | None) -> np.ndarray:
    """AffNet's upright affine frames ``(N, 2, 2)`` at the detector's scale (16 px without one), computed once
    per image (``feats.memo``) for every row that needs them."""
    if peers is None:
        raise InputError("the affine rows need the peers' weights folder (--peers DIR)")
    if "affnet" not in feats.memo:
        radius = REFERENCE_RADIUS * np.exp2(feats.frame)
        feats.memo["affnet"] = affnet_frames(peers, feats.pyramid.image(), feats.xy, radius)
    return feats.memo["affnet"]


def framed_poses(est, feats: Features):
    """The estimator's :class:`~patchpose.Poses` at the features' keypoints read in the detector's own frame
    (``detector_scale`` = :attr:`Features.frame`, one read, so the angle is that of the detector's region):
    what the rows that keep the detector's scale use (memoised per estimator in ``feats.memo``)."""
    key = ("framed", id(est))
    if key not in feats.memo:
        feats.memo[key] = est.with_plan(passes=1).estimate(feats.image, feats.xy, detector_scale=feats.frame)
    return feats.memo[key]


def candidate_counts(row: str, feats: Features, ours=None) -> np.ndarray:
    """``(N,)`` how many descriptors a row makes at each keypoint: SIFT's orientations at the location
    (``sift_all``), our strong candidates (``ours_adaptive``; ``ours``: a top-k read), k for ``ours_topK``,
    else 1 (none for no keypoints)."""
    n = len(feats)
    if n == 0:
        return np.zeros(0, np.int64)
    if row == "sift_all":
        if feats.sift_ori_candidates is None:
            raise InputError("the 'sift_all' row needs SIFT detections")
        return np.array([len(c) for c in feats.sift_ori_candidates], np.int64).reshape(n)
    if row == "ours_adaptive":
        if ours is None:
            raise InputError("the 'ours_adaptive' row needs the estimator's top-k poses")
        return strong_candidates(ours).sum(1).astype(np.int64)
    if row.startswith("ours_top"):
        return np.full(n, int(row[len("ours_top") :]), np.int64)
    return np.ones(n, np.int64)


def keypoint_poses(
    row: str, feats: Features, ours=None, H_from_1=None, top_k: int = 4, peers: Peers | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Poses ``(scale (N, k), orientation (N, k))`` of a row (k = 1 except for ``ours_topK``).

    ``ours``: the estimator's :class:`~patchpose.Poses` at ``feats.xy`` with ``top_k`` candidates (for
    ``ours_angle`` and ``sift_resolved_by_ours``: read in the detector's frame, :func:`framed_poses`); ``H_from_1``: for
    ``upper``, the homography from image 1 to this image (None or the identity for image 1 itself);
    ``peers``: for the peer rows (``affnet+orinet`` gives its frame's orientation; its shape is in
    :func:`peer_poses`)."""
    n = len(feats)
    zeros = np.zeros((n, 1))
    if row == "lower":
        return zeros, zeros
    if row == "sift":
        if not np.isfinite(feats.sift_scale).all():
            raise InputError(
                "the 'sift' row needs SIFT detections (keypoints given from a file have no pose)"
            )
        return feats.sift_scale[:, None], feats.sift_ori[:, None]
    if row == "sift_all":  # every orientation SIFT found; a keypoint with fewer repeats its first
        counts = candidate_counts(row, feats)
        k = int(counts.max(initial=1))
        o = np.array(
            [np.concatenate([c, np.full(k - len(c), c[0])]) for c in feats.sift_ori_candidates], np.float64
        ).reshape(n, k)
        return np.repeat(feats.sift_scale[:, None], k, 1), o
    if row == "keynet":
        if feats.detector_scale is None or np.isfinite(feats.sift_ori).all():
            raise InputError("the 'keynet' row needs Key.Net detections")
        return feats.frame[:, None], zeros
    if row == "sift_resolved_by_ours":
        if ours is None or not np.isfinite(feats.sift_scale).all() or feats.sift_ori_candidates is None:
            raise InputError(f"row {row!r} needs the estimator's poses and SIFT detections")
        o = nearest_candidates(feats.sift_ori_candidates, np.asarray(ours.orientation).reshape(n, -1)[:, 0])
        return feats.sift_scale[:, None], o[:, None]
    if row in ("ours", "ours_angle", "ours_adaptive") or row.startswith("ours_top"):
        if ours is None:
            raise InputError(f"row {row!r} needs the estimator's poses")
        scale, ori = ours.scale.reshape(n, -1), ours.orientation.reshape(n, -1)
        if row == "ours":
            return scale[:, :1], ori[:, :1]
        if row == "ours_adaptive":  # the strong candidates; a keypoint with fewer repeats its first
            keep = strong_candidates(ours)
            return np.repeat(scale[:, :1], ori.shape[1], 1), np.where(keep, ori, ori[:, :1])
        if row == "ours_angle":
            return feats.frame[:, None], ori[:, :1]
        k = int(row[len("ours_top") :])
        return np.repeat(scale[:, :1], k, 1), ori[:, :k]
    if row in HANDCRAFTED_ROWS:
        s, o = handcrafted_poses(feats, scale=row == "log+dominant_gradient")
        return s[:, None], o[:, None]
    if row in PEER_ROWS:
        return feats.frame[:, None], peer_poses(feats, peers, row)[0][:, None]
    if row == "upper":
        if H_from_1 is None:
            return zeros, zeros
        src = apply_homography(np.linalg.inv(H_from_1), feats.xy)
        ds, dt, ok = pose_change(H_from_1, src)
        return np.where(ok, ds, 0.0)[:, None], np.where(ok, dt, 0.0)[:, None]
    raise InputError(f"unknown pose row {row!r}; rows are {pose_rows(top_k)}")


def affine_upper_descriptors(feats: Features, describer: Describer, H_from_1=None) -> np.ndarray:
    """``(N, D)`` descriptors of the ``upper_affine`` row: upright patches of half-width 16 px in image 1
    (``H_from_1`` None), and in this image the patches cut through ``H_from_1``'s Jacobian at each keypoint's
    source point times that frame (upright at 16 px where the local map is degenerate or mirrors)."""
    n, zero = len(feats), np.zeros(len(feats))
    if H_from_1 is None:
        return describer.describe(feats.pyramid, feats.xy, zero, zero)
    J = homography_jacobian(H_from_1, apply_homography(np.linalg.inv(H_from_1), feats.xy))
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(J).all(axis=(1, 2)) & (np.linalg.det(np.nan_to_num(J)) > 1e-12)
    scale, shape = affine_parts(REFERENCE_RADIUS * np.where(ok[:, None, None], J, np.eye(2)))
    return describer.describe(feats.pyramid, feats.xy, scale, np.zeros(n), shape=shape)


def affine_descriptors(feats: Features, describer: Describer, peers: Peers | None) -> np.ndarray:
    """``(N, D)`` descriptors of the patches cut through AffNet + OriNet's affine frames at the features'
    keypoints (the ``affnet+orinet`` row; :func:`peer_poses`)."""
    frames = peer_poses(feats, peers, "affnet+orinet")[1]
    zero = np.zeros(len(feats))
    return describer.describe(feats.pyramid, feats.xy, zero, zero, shape=frames / REFERENCE_RADIUS)


def blend_candidates(
    row: str,
    feats: Features,
    ours=None,
    descriptor_region: float = 1.0,
    peers: Peers | None = None,
    shape_weights: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidates a blend row describes at each keypoint: log2 patch scales, orientations and blend
    weights, each ``(N, BLEND_K)``. ``ours_blend``: our strongest scale (its window, :func:`ours_window`) and
    the first ``BLEND_K`` of ``ours``' top-k candidates (a read of fewer is an error), weighted by
    :func:`~.blend.blend_weights` (:data:`~.blend.BLEND_GAMMA`); ``dominant_gradient_blend``: the detector's
    scale and the gradient histogram's peaks there (:func:`~.blend.gradient_peaks`);
    ``ours_scale_gradient_blend``: the same at our scale's window; ``dominant_gradient_pooled_blend``: the
    ``dominant_gradient_blend`` candidates each at three sizes, ``(N, 3·BLEND_K)`` (:func:`~.blend.pool_sizes`);
    ``affnet_pooled_blend``: the gradient histogram's peaks on AffNet's affine-normalised patch (``peers``;
    :func:`affine_shapes`; the orientations are in that patch's frame), each at three sizes;
    ``shape_pooled_blend``: the same on our shape network's (``shape_weights``)."""
    k = BLEND_K
    if row == "ours_blend":
        if ours is None or np.ndim(ours.orientation) != 2:
            raise InputError("the 'ours_blend' row needs the estimator's top-k poses")
        if ours.orientation.shape[1] < k:
            raise InputError(
                f"the 'ours_blend' row blends our top-{k} orientations: read them with top_k of at least {k} "
                f"(--top-k), got {ours.orientation.shape[1]}"
            )
        scale = np.asarray(ours.scale)[:, :1] + ours_window(row, descriptor_region)
        w = blend_weights(ours.confidence[:, :k], BLEND_GAMMA)
        return np.repeat(scale, k, 1), ours.orientation[:, :k], w
    if row == "dominant_gradient_pooled_blend":
        return pool_sizes(*blend_candidates("dominant_gradient_blend", feats, ours, descriptor_region))
    if row in AFFINE_BLEND_ROWS:
        frame, shape = affine_shapes(row, feats, peers, shape_weights)
        key = (row, "peaks", shape_weights)  # one per network (AffNet's: one per image)
        if key not in feats.memo:
            feats.memo[key] = gradient_peaks(feats.pyramid, feats.xy, frame, shape=shape)
        ori, w = feats.memo[key]
        return pool_sizes(np.repeat(frame[:, None], k, 1), ori, w)
    if row == "dominant_gradient_blend":
        frame = feats.frame
    elif row == "ours_scale_gradient_blend":
        if ours is None:
            raise InputError(f"the {row!r} row needs the estimator's poses")
        frame = np.asarray(ours.scale).reshape(len(feats), -1)[:, 0] + ours_window(row, descriptor_region)
    else:
        raise InputError(f"row {row!r} is not a blend row; they are {BLEND_ROWS}")
    key = (row, np.asarray(frame, np.float64).tobytes())  # ours' frames may differ between calls
    if key not in feats.memo:
        feats.memo[key] = gradient_peaks(feats.pyramid, feats.xy, frame)
    ori, w = feats.memo[key]
    return np.repeat(frame[:, None], k, 1), ori, w


def candidate_descriptors(
    row: str,
    feats: Features,
    describer: Describer,
    ours=None,
    descriptor_region: float = 1.0,
    peers: Peers | None = None,
    shape_weights: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A blend row's :func:`blend_candidates` (scales, orientations, weights, each ``(N, k)``) and
    ``describer``'s descriptor at each of them, ``(N, k, D)`` (the :data:`AFFINE_BLEND_ROWS` cut through
    their affine frames turned to each orientation, :func:`~.blend.turned_shapes`)."""
    s, o, w = blend_candidates(row, feats, ours, descriptor_region, peers, shape_weights)
    xy = np.repeat(feats.xy, s.shape[1], 0)
    if row in AFFINE_BLEND_ROWS:
        shape = turned_shapes(affine_shapes(row, feats, peers, shape_weights)[1], o).reshape(-1, 2, 2)
        d = describer.describe(feats.pyramid, xy, s.reshape(-1), np.zeros(o.size), shape=shape)
    else:
        d = describer.describe(feats.pyramid, xy, s.reshape(-1), o.reshape(-1))
    return s, o, w, d.reshape(len(feats), s.shape[1], -1)


def blended_descriptors(
    row: str,
    feats: Features,
    describer: Describer,
    ours=None,
    descriptor_region: float = 1.0,
    peers: Peers | None = None,
    shape_weights: str | None = None,
) -> np.ndarray:
    """``(N, D)`` one blended descriptor per keypoint for a blend row: ``describer`` at each of
    :func:`blend_candidates`, averaged with their weights (:func:`~.blend.blend_descriptors`)."""
    _, _, w, d = candidate_descriptors(row, feats, describer, ours, descriptor_region, peers, shape_weights)
    return blend_descriptors(d, w)


def ours_window(row: str, descriptor_region: float) -> float:
    """``log2`` of the factor by which a row's descriptor window is widened: ``descriptor_region`` (the
    estimator's read plan) for the rows cut at our scale (``ours``, ``ours_topK``, ``ours_adaptive``,
    ``ours_blend``, ``ours_scale_gradient_blend``), 0 for every other row.
    Self-supervised training fixes only relative scale, so where a model puts σ = 0 on a structure, and so
    the window a descriptor needs about it, is calibrated per model
    (:func:`patchpose.weights.recommended_descriptor_region`)."""
    if not (row in OUR_SCALE_ROWS or row.startswith("ours_top")):
        return 0.0
    return math.log2(descriptor_region)


def describe_rows(
    feats: Features,
    rows,
    describer: Describer,
    est=None,
    H_from_1=None,
    cfg: MatchConfig | None = None,
    ours=None,
    peers: Peers | None = None,
) -> dict[str, np.ndarray]:
    """``{row: (N, k, D) descriptors}`` for one image (``ours``: the estimator's output at ``feats.xy`` with
    ``cfg.top_k`` candidates, if already computed; the rows cut at our scale take their window from
    ``est``, :func:`ours_window`; ``peers``: for the peer rows, :data:`PEER_ROWS`)."""
    cfg = cfg or MatchConfig()
    if ours is None and any(r in OUR_SCALE_ROWS or r.startswith("ours_top") for r in rows) and len(feats):
        if est is None:
            raise InputError("rows 'ours'/'ours_topK' need an estimator")
        ours = est.estimate(feats.image, feats.xy, top_k=cfg.top_k)
    pair = [r for r in rows if r in PAIR_ROWS]
    if pair:
        raise InputError(
            f"rows {pair} describe a pair of photos together: pair_descriptors, not describe_rows"
        )
    region = est.plan.descriptor_region if est is not None else 1.0  # our window (ours_window)
    out = {}
    for row in rows:
        if len(feats) == 0:
            out[row] = np.zeros((0, 1, describer.dim), np.float32)
            continue
        if row in ("ours_angle", "sift_resolved_by_ours"):  # our angle read in the detector's frame
            if est is None:
                raise InputError(f"row {row!r} needs an estimator")
            s, o = keypoint_poses(row, feats, framed_poses(est, feats))
        elif row == "affnet+orinet":  # cut through the affine frame itself
            out[row] = affine_descriptors(feats, describer, peers).reshape(len(feats), 1, -1)
            continue
        elif row == "upper_affine":
            out[row] = affine_upper_descriptors(feats, describer, H_from_1).reshape(len(feats), 1, -1)
            continue
        elif row == "ours_blend" and est is not None:  # kept: the pair rows' zoom votes read it too
            out[row] = ours_blend_descriptors(feats, describer, est, cfg, ours)[2][:, None]
            continue
        elif row == f"ours_top{BLEND_K}" and est is not None and np.ndim(ours.orientation) == 2:
            # the same patches as ours_blend's candidates (our strongest scale, our top angles): described once
            out[row] = ours_blend_candidates(feats, describer, est, cfg, ours)[3]
            continue
        elif row in BLEND_ROWS:
            out[row] = blended_descriptors(row, feats, describer, ours, region, peers, cfg.shape_weights)[
                :, None
            ]
            continue
        else:
            s, o = keypoint_poses(row, feats, ours, H_from_1, cfg.top_k, peers)
            s = s + ours_window(row, region)
        k = s.shape[1]
        d = describer.describe(feats.pyramid, np.repeat(feats.xy, k, 0), s.reshape(-1), o.reshape(-1))
        out[row] = d.reshape(len(feats), k, -1)
    return out


def pair_pose_of(
    feats1: Features, feats2: Features, describer: Describer, est, cfg: MatchConfig, ours1=None, ours2=None
) -> tuple[PairZoom, PairTurn]:
    """The zoom and the turn from image 1 to image 2 (:func:`~.zoom.pair_zoom`, :func:`~.zoom.pair_turn`) that our
    strongest scales and angles vote for at the mutual nearest neighbours of the ``ours_blend`` descriptors (our
    scale and top angles: a description that follows zoom and turn). ``ours1``/``ours2``: the estimator's top-k
    poses at the features' keypoints, if already read; each image's ``ours_blend`` descriptors are kept in its
    memo (image 1 of a sequence is read once)."""
    if est is None:
        raise InputError("the pair's zoom is voted by our scales: it needs an estimator")
    if len(feats1) == 0 or len(feats2) == 0:
        return PairZoom(0.0, 0, 0), PairTurn(0.0, 0, 0)
    s1, o1, s2, o2, m = tentative_matches(feats1, feats2, describer, est, cfg, ours1, ours2)
    return pair_zoom(s1, s2, m), pair_turn(o1, o2, m)


def tentative_matches(
    feats1: Features, feats2: Features, describer: Describer, est, cfg: MatchConfig, ours1=None, ours2=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the pair's votes read: our strongest scales and orientations in each photo (``s1``, ``o1``, ``s2``,
    ``o2``) and the mutual nearest neighbours ``(L, 2)`` of their ``ours_blend`` descriptors
    (:func:`ours_blend_descriptors`), kept in photo 2's memo for photo 1 (the turn, the zoom and the affine map
    read the same matches)."""
    key = ("tentative", describer, est, cfg.top_k)
    kept = feats2.memo.get(key)
    if kept is None or kept[0] is not feats1:
        s1, o1, d1 = ours_blend_descriptors(feats1, describer, est, cfg, ours1)
        s2, o2, d2 = ours_blend_descriptors(feats2, describer, est, cfg, ours2)
        kept = feats2.memo[key] = (feats1, (s1, o1, s2, o2, mutual_nn(d1, d2)[0]))
    return kept[1]


def pair_affine_of(
    feats1: Features,
    feats2: Features,
    describer: Describer,
    est,
    cfg: MatchConfig,
    radians: float,
    ours1=None,
    ours2=None,
) -> PairAffine | None:
    """The affine map from image 1 to image 2 (:func:`~.zoom.pair_affine`) that those tentative matches of
    :func:`pair_pose_of` agree on whose angles voted for a turn of ``radians``; None where there is none."""
    if len(feats1) == 0 or len(feats2) == 0:
        return None
    _, o1, _, o2, m = tentative_matches(feats1, feats2, describer, est, cfg, ours1, ours2)
    size = max(float(np.hypot(*f.image.shape[:2])) for f in (feats1, feats2))
    return pair_affine(feats1.xy, feats2.xy, m, radians, o1, o2, size)


def ours_blend_descriptors(
    feats: Features, describer: Describer, est, cfg: MatchConfig, ours=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Our strongest scales and orientations ``(N,)`` and the ``ours_blend`` row's ``(N, D)`` descriptors at the
    features' keypoints (``ours``: the estimator's top-k poses there, if already read), computed once per
    describer, estimator and top-k and kept in the features' memo: the row and the pair rows' votes share them."""
    s, o, w, d = ours_blend_candidates(feats, describer, est, cfg, ours)
    return s[:, 0] - ours_window("ours_blend", est.plan.descriptor_region), o[:, 0], blend_descriptors(d, w)


def ours_blend_candidates(
    feats: Features, describer: Describer, est, cfg: MatchConfig, ours=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ``ours_blend`` row's candidates at the features' keypoints as :func:`candidate_descriptors` gives
    them (scales in the descriptor's window, orientations, weights ``(N, k)``, descriptors ``(N, k, D)``),
    computed once per describer, estimator and top-k and kept in the features' memo."""
    key = ("ours_blend", describer, est, cfg.top_k)
    if key not in feats.memo:
        ours = ours if ours is not None else est.estimate(feats.image, feats.xy, top_k=cfg.top_k)
        feats.memo[key] = candidate_descriptors(
            "ours_blend", feats, describer, ours, est.plan.descriptor_region
        )
    return feats.memo[key]


def pair_candidate_descriptors(
    row: str,
    feats1: Features,
    feats2: Features,
    describer: Describer,
    est,
    cfg: MatchConfig | None = None,
    ours1=None,
    ours2=None,
    peers: Peers | None = None,
) -> tuple[tuple, tuple, PairZoom, PairTurn]:
    """A :data:`PAIR_ROWS` row's candidates in each photo and the pair's zoom and turn: ``((s, o, w, d) of photo
    1, (s, o, w, d) of photo 2, zoom, turn)`` as :func:`candidate_descriptors` gives them (log2 scales, orientations,
    weights ``(N, k)``, descriptors ``(N, k, D)``). ``shape_zoom_blend``: ``shape_pooled_blend``'s candidates
    (our shape network, the gradient peaks on its patch, each at 3 sizes) at the fixed 16 px window widened
    by the zoom (:func:`pair_pose_of`) in the photo where structures look larger
    (:attr:`~.zoom.PairZoom.frames`), for every keypoint: a detector's own scale (SIFT's, Key.Net's) is set
    aside. ``pair_pose``: every keypoint at one pose per photo, upright in photo 1 and turned by the pair's turn
    (:func:`pair_pose_of`) in photo 2, or cut through the affine map that the matches which voted for the turn
    agree on (:func:`one_pose_pair`; it is then the returned turn's :attr:`~.zoom.PairTurn.affine`), at the same
    fixed window, each at 3 sizes (:func:`~.blend.pool_sizes`),
    and where the detector gives a size (SIFT, Key.Net) also at 3 sizes about it, the two halves weighed alike
    (on 15 viewpoint sequences at Key.Net keypoints +34 correct matches per pair over the fixed window alone, at
    SIFT keypoints −4, a tie);
    where the votes show no one turn (:attr:`~.zoom.PairTurn.found`: too few tentative matches agree, as between
    photos that hardly overlap, or a slant hides it), each keypoint at its own poses instead, the candidates of
    :func:`pair_fallback_row`: a turn nobody voted for would describe photo 2 upright, whatever its turn;
    where the turn + π stands out of the votes too (:attr:`~.zoom.PairTurn.ambiguous`: a texture alike half a turn
    round, bricks, tiles), photo 2 is described at both and the one whose matches one homography explains more of
    is kept (:func:`homography_support`; the turn returned is the one kept): a texture alike half a turn round
    matches about as often either way, but only the right turn's matches agree on where they lie."""
    cfg = cfg or MatchConfig()
    if row not in PAIR_ROWS:
        raise InputError(f"row {row!r} is not a pair row; they are {PAIR_ROWS}")
    zoom, turn = pair_pose_of(feats1, feats2, describer, est, cfg, ours1, ours2)
    if row == "pair_pose":
        if not turn.found and len(feats1) and len(feats2):  # no one turn: each keypoint at its own poses
            if pair_fallback_row(feats1, feats2) == "shape_pooled_blend":
                c1, c2 = (
                    candidate_descriptors(
                        "shape_pooled_blend", f, describer, None, 1.0, peers, cfg.shape_weights
                    )
                    for f in (feats1, feats2)
                )
                return c1, c2, zoom, turn
            c1 = ours_blend_candidates(feats1, describer, est, cfg, ours1)
            return c1, ours_blend_candidates(feats2, describer, est, cfg, ours2), zoom, turn
        c1, c2, affine = one_pose_pair(feats1, feats2, describer, est, cfg, zoom, turn.radians, ours1, ours2)
        if turn.ambiguous:  # the turn + π stands out too: keep whichever matches more
            radians = float(np.mod(turn.radians + math.pi, 2.0 * math.pi))
            f1, f2, flip = one_pose_pair(feats1, feats2, describer, est, cfg, zoom, radians, ours1, ours2)

            def support(a, b) -> int:
                return homography_support(
                    feats1.xy, feats2.xy, blend_descriptors(a[3], a[2]), blend_descriptors(b[3], b[2])
                )

            if support(f1, f2) > support(c1, c2):
                c1, c2, affine = f1, f2, flip
                turn = replace(turn, radians=radians, votes=turn.opposite, opposite=turn.votes)
        turn = replace(turn, affine=affine)
        return c1, c2, zoom, turn
    out = []
    for feats, frame in zip((feats1, feats2), zoom.frames):
        if len(feats) == 0:
            k = len(POOL_WEIGHTS) * BLEND_K  # each peak at each size (pool_sizes)
            out.append((*(np.zeros((0, k)) for _ in range(3)), np.zeros((0, k, describer.dim), np.float32)))
            continue
        view = feats.at_frame(frame)
        out.append(
            candidate_descriptors(PAIR_BASE_ROWS[row], view, describer, None, 1.0, peers, cfg.shape_weights)
        )
    return out[0], out[1], zoom, turn


def pair_fallback_row(feats1: Features, feats2: Features) -> str:
    """The row whose candidates ``pair_pose`` describes each photo with where the votes show no one turn: where
    the detector gives both photos' keypoints a size (SIFT, Key.Net), ``shape_pooled_blend`` (our affine shape
    at that size, the gradient's peaks in its frame: where a slant is what hid the turn, as on the hardest
    slanted pairs of grass and gravel, 0.84 to 0.91 MMA@3 at Key.Net keypoints against ``ours_blend``'s 0 to
    0.08); else ``ours_blend`` (our scale and top angles: a fixed size would not follow a zoom)."""
    sized = feats1.detector_scale is not None and feats2.detector_scale is not None
    return "shape_pooled_blend" if sized else "ours_blend"


def one_pose_pair(
    feats1: Features,
    feats2: Features,
    describer: Describer,
    est,
    cfg: MatchConfig,
    zoom: PairZoom,
    radians: float,
    ours1=None,
    ours2=None,
) -> tuple[tuple, tuple, PairAffine | None]:
    """``pair_pose``'s candidates in each photo (:func:`one_pose_candidates`) for a turn of ``radians`` and the
    affine map they were cut through: where the tentative matches that voted for the turn agree on one
    (:func:`pair_affine_of`) that slants the view (:data:`~.zoom.MIN_SLANT`), photo 1 upright, its window widened so that photo 2's is narrowed in no direction,
    and photo 2 through the map (a slant as well as the turn and zoom); else photo 1 upright and photo 2 turned by
    ``radians``, the fixed window widened by ``zoom`` (:attr:`~.zoom.PairZoom.frames`). On 15 slanted sequences
    at Key.Net keypoints the map gave 511 correct matches per pair against 391 for the turn and zoom alone; on
    viewpoint pairs, whose perspective one affine map fits only roughly, 377 against 371 (docs/peers.md)."""
    affine = pair_affine_of(feats1, feats2, describer, est, cfg, radians, ours1, ours2)
    if affine is None or affine.anisotropy < MIN_SLANT:
        c1 = one_pose_candidates(feats1, describer, zoom.frames[0], 0.0)
        return c1, one_pose_candidates(feats2, describer, zoom.frames[1], radians), None
    frame1, frame2 = affine.frames
    c1 = one_pose_candidates(feats1, describer, frame1, 0.0)
    return c1, one_pose_candidates(feats2, describer, frame2, 0.0, affine.shape), affine


#: px: the reprojection error within which a match supports a homography (:func:`homography_support`)
SUPPORT_PX = 5.0


def homography_support(xy1, xy2, d1, d2) -> int:
    """How many mutual nearest neighbours of descriptors ``d1`` ``(N, D)`` and ``d2`` ``(M, D)`` of keypoints
    ``xy1``, ``xy2`` one homography explains within :data:`SUPPORT_PX` (OpenCV's RANSAC; 0 below 4 matches)."""
    import cv2

    m = mutual_nn(d1, d2)[0]
    if len(m) < 4:
        return 0
    p1, p2 = (np.ascontiguousarray(xy[i], np.float32) for xy, i in ((xy1, m[:, 0]), (xy2, m[:, 1])))
    H, mask = cv2.findHomography(p1, p2, cv2.RANSAC, SUPPORT_PX)
    return 0 if H is None or mask is None else int(mask.sum())


def one_pose_candidates(
    feats: Features, describer: Describer, frame: float, angle: float, shape=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``pair_pose``'s candidates in one photo (as :func:`candidate_descriptors` gives them): every keypoint
    turned by ``angle`` (radians), at 3 sizes about the fixed window widened by ``frame`` (log2), and where the
    detector gives a size (SIFT, Key.Net) at 3 sizes about it too, the two halves weighed alike; each half is
    kept in the features' memo per describer, frame and angle."""
    n = len(feats)

    P = None if shape is None else np.asarray(shape, np.float64).reshape(2, 2)

    def at(scale: np.ndarray, what: str) -> tuple[np.ndarray, ...]:
        # each half kept in the memo: photo 1 of a sequence is described at the same pose in most of its pairs
        key = ("one_pose", what, describer, float(frame) if what == "fixed" else None, float(angle))
        key += (None if P is None else P.tobytes(),)
        if key not in feats.memo:
            s, o, w = pool_sizes(scale[:, None], np.full((n, 1), angle), np.ones((n, 1)))
            k = s.shape[1]
            xy = np.repeat(feats.xy, k, 0)
            A = None if P is None else np.broadcast_to(P, (n * k, 2, 2))
            d = describer.describe(feats.pyramid, xy, s.reshape(-1), o.reshape(-1), shape=A)
            feats.memo[key] = (s, o, w, d.reshape(n, k, describer.dim))
        return feats.memo[key]

    s, o, w, d = at(np.full(n, float(frame)), "fixed")
    if feats.detector_scale is not None:
        s2, o2, w2, d2 = at(feats.frame, "detector")
        s, o, w = np.concatenate([s, s2], 1), np.concatenate([o, o2], 1), np.concatenate([w, w2], 1) / 2
        d = np.concatenate([d, d2], 1)
    return s, o, w, d


def candidate_lafs(
    row: str,
    feats: Features,
    log2_scale: np.ndarray,
    orientation: np.ndarray,
    peers: Peers | None = None,
    shape_weights: str | None = None,
) -> np.ndarray:
    """``(N, k, 2, 3)`` kornia LAFs ``[A | xy]`` of the patches a blend row's candidates are cut in
    (:func:`candidate_descriptors`): ``A = REFERENCE_RADIUS·2**s·R(θ)``, times the keypoint's affine shape
    for the :data:`AFFINE_BLEND_ROWS` and :data:`PAIR_ROWS` (read in ``feats``, the view the candidates were
    cut in). kornia's ``get_laf_orientation`` and ``get_laf_scale`` then read each candidate's orientation and
    size in the image, as AdaLAM reads them."""
    s, o = np.asarray(log2_scale, np.float64), np.asarray(orientation, np.float64)
    row = PAIR_BASE_ROWS.get(row, row)
    if row in AFFINE_BLEND_ROWS:
        A = turned_shapes(affine_shapes(row, feats, peers, shape_weights)[1], o)
    else:
        A = rotation_matrix(o)
    A = (REFERENCE_RADIUS * np.exp2(s))[..., None, None] * A
    xy = np.broadcast_to(np.asarray(feats.xy, np.float64)[:, None, :, None], (*s.shape, 2, 1))
    return np.concatenate([A, xy], -1)


def pair_candidate_lafs(
    row: str,
    feats1: Features,
    feats2: Features,
    c1: tuple,
    c2: tuple,
    zoom: PairZoom,
    turn: PairTurn,
    peers: Peers | None = None,
    shape_weights: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`candidate_lafs` of a :data:`PAIR_ROWS` row's candidates ``c1``, ``c2`` in each photo, as
    :func:`pair_candidate_descriptors` cut them (its ``zoom`` and ``turn``): each photo's view at the pair's zoom;
    where ``pair_pose`` fell back on our affine shape (no turn, :func:`pair_fallback_row`), each photo at its
    detector's own sizes; where it cut photo 2 through the pair's affine map, photo 2's frames ``A·P``, ``P`` the
    map's :attr:`~.zoom.PairAffine.shape` (the turn is in ``P``, not in the candidates' orientations)."""
    own = row == "pair_pose" and not turn.found and pair_fallback_row(feats1, feats2) == "shape_pooled_blend"
    out = []
    for f, c, frame in zip((feats1, feats2), (c1, c2), zoom.frames):
        view, laf_row = (f, "shape_pooled_blend") if own else (f.at_frame(frame), row)
        empty = np.zeros((*np.shape(c[0]), 2, 3))  # no keypoints
        out.append(candidate_lafs(laf_row, view, c[0], c[1], peers, shape_weights) if len(f) else empty)
    if turn.affine is not None:
        out[1] = np.concatenate([out[1][..., :2] @ turn.affine.shape, out[1][..., 2:]], -1)
    return out[0], out[1]


def pair_descriptors(
    row: str,
    feats1: Features,
    feats2: Features,
    describer: Describer,
    est,
    cfg: MatchConfig | None = None,
    ours1=None,
    ours2=None,
    peers: Peers | None = None,
) -> tuple[np.ndarray, np.ndarray, PairZoom, PairTurn]:
    """A :data:`PAIR_ROWS` row's ``(N, 1, D)`` and ``(M, 1, D)`` descriptors of two photos' keypoints and the
    pair's zoom and turn: each keypoint's candidates (:func:`pair_candidate_descriptors`) blended with their
    weights (:func:`~.blend.blend_descriptors`)."""
    c1, c2, zoom, turn = pair_candidate_descriptors(
        row, feats1, feats2, describer, est, cfg, ours1, ours2, peers
    )
    return blend_descriptors(c1[3], c1[2])[:, None], blend_descriptors(c2[3], c2[2])[:, None], zoom, turn


def match_images(
    image1,
    image2,
    est=None,
    cfg: MatchConfig | None = None,
    rows=("ours",),
    H=None,
    keypoints1=None,
    keypoints2=None,
    describer: Describer | None = None,
    peers: Peers | None = None,
    sizes1=None,
    sizes2=None,
) -> dict:
    """Match two images under each pose row (``peers``: for the Key.Net detector, the peer rows and
    descriptors; :class:`~patchpose.matching.peers.Peers`; ``sizes1``/``sizes2``: the sizes of the given
    keypoints, :func:`detect`).

    Returns ``{"xy1": (N, 2), "xy2": (M, 2), "rows": {row: {"matches": (L, 2), "distances": (L,),
    "error_px": (L,) reprojection error under H (None without H)}}}``; a :data:`PAIR_ROWS` row's entry also
    holds the pair's ``"zoom"`` and ``"turn"`` (:class:`~.zoom.PairZoom`, :class:`~.zoom.PairTurn`)."""
    cfg = cfg or MatchConfig()
    describer = describer or Describer(cfg.descriptor, cfg.descriptor_weights, peers=peers)
    if H is None and {"upper", "upper_affine"} & set(rows):
        raise InputError("the 'upper' rows need the ground-truth homography H")
    f1 = detect(image1, cfg.max_keypoints, keypoints1, cfg.detector, peers, sizes1)
    f2 = detect(image2, cfg.max_keypoints, keypoints2, cfg.detector, peers, sizes2)
    single = [r for r in rows if r not in PAIR_ROWS]
    d1 = describe_rows(f1, single, describer, est, None, cfg, peers=peers)
    d2 = describe_rows(f2, single, describer, est, H, cfg, peers=peers)
    votes = {}
    for row in rows:
        if row in PAIR_ROWS:
            d1[row], d2[row], *votes[row] = pair_descriptors(row, f1, f2, describer, est, cfg, peers=peers)
    out = {"xy1": f1.xy, "xy2": f2.xy, "rows": {}}
    for row in rows:
        m, dist = mutual_nn(d1[row], d2[row])
        err = reprojection_errors(H, f1.xy[m[:, 0]], f2.xy[m[:, 1]]) if H is not None else None
        out["rows"][row] = {"matches": m, "distances": dist, "error_px": err}
        if row in votes:
            out["rows"][row]["zoom"], out["rows"][row]["turn"] = votes[row]
    return out


def reprojection_errors(H, xy1, xy2) -> np.ndarray:
    """``‖H·x1 − x2‖`` in pixels (inf where ``H`` sends the point to infinity)."""
    p = apply_homography(H, xy1)
    e = np.linalg.norm(p - np.asarray(xy2, np.float64).reshape(-1, 2), axis=1)
    return np.where(np.isfinite(e), e, np.inf)


__all__ = [
    "SIFT_REGION",
    "DETECTORS",
    "PEER_DETECTORS",
    "PEER_ROWS",
    "pose_rows",
    "default_rows",
    "framed_poses",
    "affine_descriptors",
    "peer_poses",
    "handcrafted_poses",
    "MatchConfig",
    "Features",
    "detect",
    "check_detector",
    "keypoint_poses",
    "candidate_counts",
    "describe_rows",
    "ours_window",
    "match_images",
    "reprojection_errors",
]
