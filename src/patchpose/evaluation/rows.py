"""The benchmarks' matching rows, by name: one registry (:data:`ROWS`) of every way a row describes keypoints,
the library's recipes among them, the bounds, the peers and the ablations.

A row describes each keypoint of a photo at some pose (``Row.poses``), by blending descriptors at several
(``Row.candidates``), with a description of its own (``Row.describe``), or with both photos together
(``Row.pair``); :func:`describe_rows` and :func:`pair_descriptors` compute them, :func:`match_images` matches
two images under several. :func:`pose_rows` lists the rows a run allows (its keypoints, its peers), in report
order; :func:`default_rows` leaves out the ablations (``Row.ablation``). The report's label of each row, what
it needs and what it costs (``Row.count``: descriptor computations per keypoint that are matched) are the
row's own.

Keypoints come from :func:`detect`: the library's detectors (:func:`patchpose.matching.features.detect`) and
Key.Net (``detector="keynet"``, the peers' weights). The peers (Key.Net, OriNet, AffNet, TFeat, HardTFeat)
take their weights from a folder the caller names (:class:`~patchpose.evaluation.peers.Peers`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..conventions import REFERENCE_RADIUS, angle_diff, rotation_matrix
from ..data.patches import check_image, to_gray
from ..errors import InputError
from ..geometry import apply_homography, pose_change, reprojection_errors
from ..matching import features as library_features
from ..matching.blend import BLEND_K, POOL_WEIGHTS, affine_parts, blend_descriptors, pool_sizes, turned_shapes
from ..matching.candidates import (
    describe_candidates,
    framed_blend_candidates,
    gradient_angles,
    gradient_blend_candidates,
    gradient_peaks_of,
    ours_blend_candidates,
    ours_window,
    pose_needs_network,
    recipe_poses,
    shape_blend_candidates,
    shape_frames,
    sift_all_counts,
    sift_all_descriptors,
    sift_all_poses,
)
from ..matching.describe import Describer
from ..matching.features import Features, features_at
from ..matching.matcher import mutual_nn
from ..matching.pairpose import (
    GradientVotes,
    OurVotes,
    Votes,
    pair_fallback,
    pair_pose_candidates,
    pair_pose_needs_network,
    pair_votes,
    recipe_votes,
)
from ..matching.rectify import rectified_pair
from ..matching.zoom import PairTurn, PairZoom
from ..reading import strong_candidates
from .peers import (
    Peers,
    affnet_frames,
    aliked_keypoints,
    keynet_frames,
    orinet_in_frames,
    orinet_orientations,
    scale_space_corners,
)
from .second_pass import second_pass

#: the keypoint sources :func:`detect` knows: the library's, Key.Net's (the peers' weights) and Shi-Tomasi corners
#: in a scale space, each with its scale (kornia's ``ScaleSpaceDetector``, as its corner pipeline runs it)
DETECTORS = (*library_features.DETECTORS, "keynet", "gftt_scale", "aliked")
#: detectors that need the peers' weights
PEER_DETECTORS = ("keynet", "aliked")
#: how a run matches each row's descriptors: mutual nearest neighbours, or Lowe's ratio test with a cross check
#: (:func:`~patchpose.matching.matcher.ratio_matches`, as COLMAP matches and most users run SIFT)
MATCHERS = ("mnn", "ratio")


@dataclass
class MatchConfig:
    """How a run describes keypoints: the keypoints per image, the descriptor, our top-k read, the detector
    and the shape network of the shape rows."""

    max_keypoints: int = 2000
    descriptor: str = "sift"
    top_k: int = 4
    detector: str = "sift"  # one of DETECTORS (when no keypoints are given)
    shape_weights: str | None = None  # the shape network of the shape rows (None: the bundled one)
    matcher: str = "mnn"  # the final matching of every row: one of MATCHERS


@dataclass
class Run:
    """What every row of a run reads: the describer, our estimator (None: the rows that read it fail), the
    config and the peers' weights (None: the peer rows fail)."""

    describer: Describer
    est: object = None
    cfg: MatchConfig = field(default_factory=MatchConfig)
    peers: Peers | None = None
    #: the window of the rows cut at our scale, in our radii (None: the estimator's ``descriptor_region``)
    descriptor_region: float | None = None


@dataclass
class Image:
    """One photo of a run: its keypoints, our top-k poses there (None: not read) and the homography from image
    1 to it (None for image 1 itself)."""

    feats: Features
    ours: object = None
    H: np.ndarray | None = None


# ----------------------------------------------------------------------------- what rows read
def detect(
    image,
    max_keypoints: int = 2000,
    keypoints=None,
    detector: str = "sift",
    peers: Peers | None = None,
    sizes=None,
) -> Features:
    """:func:`patchpose.matching.features.detect`, Key.Net keypoints (``detector="keynet"``, with the ``peers``'
    weights) and scale-space corners (``"gftt_scale"``, :func:`~patchpose.evaluation.peers.scale_space_corners`):
    strongest first, one per location, their region's scale, no orientation; or ALIKED-n16's keypoints
    (``"aliked"``, the ``peers``' weights, :func:`~patchpose.evaluation.peers.aliked_keypoints`): strongest
    first, no scale and no orientation, as corners."""
    if keypoints is None:
        check_detector(detector, peers)
    if keypoints is not None or detector not in ("keynet", "gftt_scale", "aliked"):
        return library_features.detect(image, max_keypoints, keypoints, detector, sizes)
    n = library_features.check_max_keypoints(max_keypoints)
    img = check_image(image)
    if detector == "aliked":
        return features_at(img, aliked_keypoints(peers, img, n))
    gray = to_gray(img)
    xy, radius = keynet_frames(peers, gray, n) if detector == "keynet" else scale_space_corners(gray, n)
    return features_at(img, xy, np.log2(np.maximum(radius, 1e-6) / REFERENCE_RADIUS))


def check_detector(detector: str, peers: Peers | None = None) -> None:
    """:class:`InputError` unless ``detector`` is one of :data:`DETECTORS` and, for the
    :data:`PEER_DETECTORS`, ``peers`` is given."""
    if detector not in DETECTORS:
        raise InputError(f"detector must be one of {DETECTORS}, got {detector!r}")
    if detector in PEER_DETECTORS and peers is None:
        raise InputError(f"the {detector} detector needs the peers' weights folder (--peers DIR)")


def nearest_candidates(candidates: list[np.ndarray], orientation: np.ndarray) -> np.ndarray:
    """For each keypoint, the candidate orientation nearest ``orientation`` (radians, circular)."""
    return np.array(
        [c[int(np.argmin(np.abs(angle_diff(c, t))))] for c, t in zip(candidates, orientation)], np.float64
    ).reshape(-1)


def handcrafted_poses(feats: Features) -> tuple[np.ndarray, np.ndarray]:
    """The hand-crafted pose ``(log2 half-width of the descriptor patch, orientation)`` ``(N,)`` at the keypoints
    (the ``dominant_gradient`` row): the detector's patch (:attr:`Features.frame`: 16 px where it has none) and
    kornia's dominant gradient orientation read on it."""
    if len(feats) == 0:
        return np.zeros(0), np.zeros(0)
    if "handcrafted" not in feats.memo:
        size = feats.frame
        feats.memo["handcrafted"] = (np.asarray(size, np.float64), gradient_angles(feats, size))
    return feats.memo["handcrafted"]


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
        else:  # OriNet in AffNet's frames, which the AffNet blend shares (affnet_frames_of)
            frames, ori = orinet_in_frames(peers, gray, feats.xy, affnet_frames_of(feats, peers))
            feats.memo[row] = (ori, frames)
    return feats.memo[row]


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


def _ours(run: Run, im: Image, row: str):
    if im.ours is None:
        if run.est is None:
            raise InputError(f"row {row!r} needs our estimator")
        im.ours = run.est.estimate(im.feats.image, im.feats.xy, top_k=run.cfg.top_k)
    return im.ours


def _region(run: Run) -> float:
    """The descriptor window at our scale: the run's, else the estimator's (1 without an estimator)."""
    if run.descriptor_region is not None:
        return run.descriptor_region
    return run.est.plan.descriptor_region if run.est is not None else 1.0


def _needs_est(run: Run, row: str):
    if run.est is None:
        raise InputError(f"row {row!r} needs our estimator")
    return run.est


# ----------------------------------------------------------------------------- the rows
Poses2 = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Row:
    """One matching row of the benchmarks.

    One of ``poses`` (``(run, image) -> (scale, orientation)``, each ``(N, k)``: one descriptor per
    candidate, a keypoint's distance the smallest over its candidates'), ``candidates`` (``(run, image) -> (s,
    o, w, d)``: blended into one descriptor), ``describe`` (``(run, image) -> (N, D)``), ``pair`` (``(run,
    image1, image2) -> (candidates1, candidates2, zoom, turn)``: both photos together, blended) or ``redetect``
    (``(run, image1, image2) -> (descriptors1, descriptors2, xy1, xy2, cost)``: both photos together, one photo's
    keypoints detected again, its own) says how it describes keypoints."""

    name: str
    label: str
    poses: Callable[[Run, Image], Poses2] | None = None
    candidates: Callable[[Run, Image], tuple] | None = None
    describe: Callable[[Run, Image], np.ndarray] | None = None
    pair: Callable[[Run, Image, Image], tuple] | None = None
    redetect: Callable[[Run, Image, Image], tuple] | None = None
    #: only at SIFT detections (it reads SIFT's pose) / only at Key.Net's
    sift: bool = False
    keynet: bool = False
    #: which rows a run adds by a switch: "peers" (a peers folder), "handcrafted", or "" (always)
    group: str = ""
    #: an ablation: computed only when asked for by name or with ``--rows all``
    ablation: bool = False
    #: whether it reads our shape network (``MatchConfig.shape_weights``)
    shape: bool = False
    #: ``(run, image) -> (N,)`` descriptors matched per keypoint (None: 1)
    count: Callable[[Run, Image], np.ndarray] | None = None
    #: ``poses`` at our scale: the descriptor window is widened by :func:`~patchpose.matching.candidates.ours_window`
    #: (the poses themselves, as AdaLAM reads them, are not)
    widen: bool = False
    #: ``(run, image) -> (N, 2, 2)``: the upright affine shapes (determinant 1) a blend row's candidates are cut
    #: through, turned to each candidate (None: discs); its candidates' LAFs carry them (:func:`candidate_lafs`)
    affine: Callable[[Run, Image], np.ndarray] | None = None
    #: ``(run, image) -> (N, 2, 2)``: the whole affine frames (pixels) a row cuts its one patch through, which
    #: AdaLAM reads as they are (None: the row's poses)
    frames: Callable[[Run, Image], np.ndarray] | None = None
    #: a pair row's per-image row: the one whose candidates it cuts at the pair's zoom (None: candidates of its own)
    base: str | None = None
    #: the library's recipe this row computes (:data:`patchpose.recipes.RECIPES`), read with the model the recipe
    #: reads (``--weights`` of that model); None: a benchmark's own row
    recipe: str | None = None
    #: whether it reads our pose network's top-k read of each image (``Image.ours``, read once for every row that
    #: does): its cost includes that read; a callable ``(features) -> bool`` for a recipe that reads it only at
    #: some keypoints (:meth:`reads_model_at`)
    reads_model: bool | Callable[[Features], bool] = False
    #: a pair row's first pass (a :class:`~patchpose.matching.pairpose.Votes` class; None: not a pair row)
    votes: type | None = None

    @property
    def is_pair(self) -> bool:
        """Whether the row describes both photos together (``pair`` or ``redetect``)."""
        return self.pair is not None or self.redetect is not None

    def reads_model_at(self, feats: Features) -> bool:
        """Whether the row reads our pose network at these keypoints (:attr:`reads_model`)."""
        return bool(self.reads_model(feats) if callable(self.reads_model) else self.reads_model)


def _zeros(run: Run, im: Image) -> Poses2:
    z = np.zeros((len(im.feats), 1))
    return z, z


def _sift(run: Run, im: Image) -> Poses2:
    f = im.feats
    if not np.isfinite(f.sift_scale).all():
        raise InputError("the 'sift' row needs SIFT detections (keypoints given from a file have no pose)")
    return f.sift_scale[:, None], f.sift_ori[:, None]


def _sift_counts(run: Run, im: Image) -> np.ndarray:
    return sift_all_counts(im.feats)


def _sift_all(run: Run, im: Image) -> Poses2:
    """Every orientation SIFT found at the location; a keypoint with fewer repeats its first."""
    return sift_all_poses(im.feats)


def _sift_all_describe(run: Run, im: Image) -> np.ndarray:
    return sift_all_descriptors(im.feats, run.describer)


def _keynet(run: Run, im: Image) -> Poses2:
    f = im.feats
    if f.detector_scale is None or np.isfinite(f.sift_ori).all():
        raise InputError(
            "the 'keynet' row needs detections with a scale and no angle (Key.Net's, gftt_scale's)"
        )
    return f.frame[:, None], np.zeros((len(f), 1))


def _our_arrays(run: Run, im: Image, row: str) -> Poses2:
    ours, n = _ours(run, im, row), len(im.feats)
    return np.asarray(ours.scale).reshape(n, -1), np.asarray(ours.orientation).reshape(n, -1)


def _ours_pose(run: Run, im: Image) -> Poses2:
    s, o = _our_arrays(run, im, "ours")
    return s[:, :1], o[:, :1]


def _ours_top(k: int):
    def poses(run: Run, im: Image) -> Poses2:
        s, o = _our_arrays(run, im, f"ours_top{k}")
        return np.repeat(s[:, :1], k, 1), o[:, :k]

    def describe(run: Run, im: Image) -> np.ndarray:
        ours = _ours(run, im, f"ours_top{k}")
        if k == BLEND_K and run.est is not None and np.ndim(ours.orientation) == 2:
            # the same patches as ours_blend's candidates (our strongest scale, our top angles): described once
            return ours_blend_candidates(im.feats, run.describer, run.est, run.cfg.top_k, ours)[3]
        s, o = poses(run, im)
        return describe_candidates(im.feats, run.describer, s + ours_window(_region(run)), o)

    return poses, describe


def _ours_adaptive_counts(run: Run, im: Image) -> np.ndarray:
    return strong_candidates(_ours(run, im, "ours_adaptive")).sum(1).astype(np.int64)


def _ours_adaptive(run: Run, im: Image) -> Poses2:
    """Our strong candidates (SIFT's 80 % rule); a keypoint with fewer repeats its first."""
    s, o = _our_arrays(run, im, "ours_adaptive")
    keep = strong_candidates(_ours(run, im, "ours_adaptive"))
    return np.repeat(s[:, :1], o.shape[1], 1), np.where(keep, o, o[:, :1])


def _ours_blend(run: Run, im: Image) -> tuple:
    return ours_blend_candidates(
        im.feats, run.describer, _needs_est(run, "ours_blend"), run.cfg.top_k, _ours(run, im, "ours_blend")
    )


def _ours_scale_gradient_blend(run: Run, im: Image) -> tuple:
    s, _ = _our_arrays(run, im, "ours_scale_gradient_blend")
    return gradient_blend_candidates(im.feats, run.describer, s[:, 0] + ours_window(_region(run)))


def _ours_scale_gradient(run: Run, im: Image) -> Poses2:
    """Our scale, and the dominant gradient's angle read on the descriptor window at it (the network only for the
    scale)."""
    s, _ = _our_arrays(run, im, "ours_scale_gradient")
    return s[:, :1], gradient_angles(im.feats, s[:, 0] + ours_window(_region(run)))[:, None]


def _pose_recipe(run: Run, im: Image) -> Poses2:
    """The ``pose`` recipe, as the library computes it (:func:`~patchpose.matching.candidates.recipe_poses`): the
    detector's scale where it gives one (as the ``dominant_gradient`` row), else our scale (its window from the
    estimator's own descriptor region; as ``ours_scale_gradient``), and the gradient's angle there."""
    f = im.feats
    p = recipe_poses(f, _ours(run, im, "pose") if pose_needs_network(f) else None)
    return np.log2(np.maximum(p.descriptor_radius, 1e-12) / REFERENCE_RADIUS)[:, None], p.orientation[:, None]


def _ours_angle(run: Run, im: Image) -> Poses2:
    framed = framed_poses(_needs_est(run, "ours_angle"), im.feats)
    return im.feats.frame[:, None], np.asarray(framed.orientation).reshape(len(im.feats), -1)[:, :1]


def _sift_resolved(run: Run, im: Image) -> Poses2:
    f = im.feats
    if not np.isfinite(f.sift_scale).all() or f.sift_ori_candidates is None:
        raise InputError("row 'sift_resolved_by_ours' needs SIFT detections")
    ours = framed_poses(_needs_est(run, "sift_resolved_by_ours"), f)
    o = nearest_candidates(f.sift_ori_candidates, np.asarray(ours.orientation).reshape(len(f), -1)[:, 0])
    return f.sift_scale[:, None], o[:, None]


def _handcrafted(run: Run, im: Image) -> Poses2:
    s, o = handcrafted_poses(im.feats)
    return s[:, None], o[:, None]


def _gradient_blend(run: Run, im: Image) -> tuple:
    return gradient_blend_candidates(im.feats, run.describer)


def _gradient_pooled_blend(run: Run, im: Image) -> tuple:
    """The gradient's peaks at the detector's scale, each also at 2**±0.5 times the size (:func:`pool_sizes`)."""
    frame = im.feats.frame
    o, w = gradient_peaks_of(im.feats, frame)
    s, o, w = pool_sizes(np.repeat(frame[:, None], o.shape[1], 1), o, w)
    return s, o, w, describe_candidates(im.feats, run.describer, s, o)


def _shape_blend(run: Run, im: Image) -> tuple:
    return shape_blend_candidates(im.feats, run.describer, run.cfg.shape_weights)


def _our_shapes(run: Run, im: Image) -> np.ndarray:
    return shape_frames(im.feats, run.cfg.shape_weights)[1]


def _affnet_blend(run: Run, im: Image) -> tuple:
    frame, shape = affine_parts(affnet_frames_of(im.feats, run.peers))
    return framed_blend_candidates(im.feats, run.describer, frame, shape, ("affnet peaks",))


def _affnet_shapes(run: Run, im: Image) -> np.ndarray:
    return affine_parts(affnet_frames_of(im.feats, run.peers))[1]


def _affnet_orinet_frames(run: Run, im: Image) -> np.ndarray:
    return peer_poses(im.feats, run.peers, "affnet+orinet")[1]


def _orinet(run: Run, im: Image) -> Poses2:
    return im.feats.frame[:, None], peer_poses(im.feats, run.peers, "orinet")[0][:, None]


def affine_descriptors(feats: Features, describer: Describer, peers: Peers | None) -> np.ndarray:
    """``(N, D)`` descriptors of the patches cut through AffNet + OriNet's affine frames at the features'
    keypoints (the ``affnet+orinet`` row; :func:`peer_poses`)."""
    frames = peer_poses(feats, peers, "affnet+orinet")[1]
    zero = np.zeros(len(feats))
    return describer.describe(feats.pyramid, feats.xy, zero, zero, shape=frames / REFERENCE_RADIUS)


def _affnet_orinet(run: Run, im: Image) -> np.ndarray:
    return affine_descriptors(im.feats, run.describer, run.peers)


def _upper(run: Run, im: Image) -> Poses2:
    """Upright at 16 px in image 1; in image k the pose change ``H`` makes at the keypoint's source point."""
    if im.H is None:
        return _zeros(run, im)
    src = apply_homography(np.linalg.inv(im.H), im.feats.xy)
    ds, dt, ok = pose_change(im.H, src)
    return np.where(ok, ds, 0.0)[:, None], np.where(ok, dt, 0.0)[:, None]


def _pair_pose(run: Run, im1: Image, im2: Image) -> tuple:
    est = _needs_est(run, "pair_pose") if pair_pose_needs_network(im1.feats, im2.feats) else None
    return pair_pose_candidates(
        im1.feats, im2.feats, run.describer, est, run.cfg.top_k, im1.ours, im2.ours, run.cfg.shape_weights
    )


def row_votes(row: Row, run: Run, feats1: Features, feats2: Features) -> Votes:
    """A pair row's first pass for this run and pair (ours: the run's estimator, its top-k, the shape network; the
    recipe's row: the recipe's, :func:`~patchpose.matching.pairpose.recipe_votes`)."""
    if row.recipe == "pair-pose":
        return recipe_votes(feats1, feats2, run.describer, run.est, run.cfg.top_k, run.cfg.shape_weights)
    if row.votes is OurVotes:
        return OurVotes(run.describer, _needs_est(run, row.name), run.cfg.top_k, run.cfg.shape_weights)
    return row.votes(run.describer)


def _pair_pose_with(name: str) -> Callable[[Run, Image, Image], tuple]:
    """``pair-pose`` with the first pass of row ``name`` (:func:`row_votes`: its ``votes`` class) instead of the
    recipe's."""

    def pair(run: Run, im1: Image, im2: Image) -> tuple:
        votes = row_votes(ROWS[name], run, im1.feats, im2.feats)
        return pair_pose_candidates(
            im1.feats, im2.feats, run.describer, None, ours1=im1.ours, ours2=im2.ours, votes=votes
        )

    return pair


def _second_pass(run: Run, im1: Image, im2: Image) -> tuple:
    """#60's model-free second pass (:func:`~patchpose.evaluation.second_pass.second_pass`): both photos'
    descriptors and keypoints (one photo's detected again in its view warped by the first pass's affine map) and the
    :class:`Cost` (computations per keypoint of the run's; the descriptors matched per keypoint matched)."""
    p = second_pass(im1.feats, im2.feats, run.describer, run.cfg.max_keypoints)
    n = len(im1.feats) + len(im2.feats)
    cost = Cost(p.computed / max(n, 1), p.matched / max(len(p.xy1) + len(p.xy2), 1), 2, 1)
    return p.descriptors1, p.descriptors2, p.xy1, p.xy2, cost


def _rectify(run: Run, im1: Image, im2: Image) -> tuple:
    """The recipe ``rectify`` (:func:`~patchpose.matching.rectify.rectified_pair`): both photos' descriptors and
    keypoints (one photo's detected again in its view warped into the other's frame) and the :class:`Cost`."""
    p = rectified_pair(im1.feats, im2.feats, run.describer, run.cfg.max_keypoints)
    n = len(im1.feats) + len(im2.feats)
    if p.warped:  # one descriptor per keypoint
        matched = len(p.xy1) + len(p.xy2)
    else:  # no map: SIFT with all its orientations, the repeats of a keypoint's first left out
        matched = int(sift_all_counts(im1.feats).sum() + sift_all_counts(im2.feats).sum())
    cost = Cost(p.computed / max(n, 1), matched / max(len(p.xy1) + len(p.xy2), 1), 2, 1)
    return p.descriptors1, p.descriptors2, p.xy1, p.xy2, cost


def _shape_zoom_blend(run: Run, im1: Image, im2: Image) -> tuple:
    """Our shape blend at the fixed 16 px window widened by the pair's zoom in the photo where structures look
    larger (:attr:`~patchpose.matching.zoom.PairZoom.frames`), for every keypoint: a detector's own scale is set
    aside."""
    zoom, turn = pair_votes(
        im1.feats,
        im2.feats,
        row_votes(ROWS["shape_zoom_blend"], run, im1.feats, im2.feats),
        im1.ours,
        im2.ours,
    )
    out = []
    for feats, frame in zip((im1.feats, im2.feats), zoom.frames):
        if len(feats) == 0:
            k = len(POOL_WEIGHTS) * BLEND_K  # each peak at each size
            out.append(
                (*(np.zeros((0, k)) for _ in range(3)), np.zeros((0, k, run.describer.dim), np.float32))
            )
            continue
        out.append(shape_blend_candidates(feats.at_frame(frame), run.describer, run.cfg.shape_weights))
    return out[0], out[1], zoom, turn


def _top_k_rows(k: int) -> Row:
    poses, describe = _ours_top(k)
    return Row(
        f"ours_top{k}",
        f"ours (top-{k})",
        poses=poses,
        describe=describe,
        count=lambda run, im: np.full(len(im.feats), k, np.int64),
        widen=True,
        reads_model=True,
    )


#: every row, in report order (``ours_topK`` stands for the family :func:`row` makes for any k ≥ 2)
ROWS: dict[str, Row] = {
    r.name: r
    for r in (
        Row("lower", "lower (no pose)", poses=_zeros),
        Row("sift", "SIFT's own pose", poses=_sift, sift=True),
        Row(
            "sift_all",
            "SIFT's own pose, all its orientations",
            poses=_sift_all,
            describe=_sift_all_describe,
            sift=True,
            count=_sift_counts,
        ),
        Row(
            "keynet",
            "the detector's own pose (Key.Net's or a scale space's scale, upright)",
            poses=_keynet,
            keynet=True,
        ),
        Row("ours", "ours (argmax): our scale and our angle", poses=_ours_pose, widen=True, reads_model=True),
        _top_k_rows(4),
        Row(
            "ours_adaptive",
            "ours, strong candidates (SIFT's 80 % rule)",
            poses=_ours_adaptive,
            ablation=True,
            count=_ours_adaptive_counts,
            widen=True,
            reads_model=True,
        ),
        Row(
            "ours_blend",
            "ours, one descriptor blended over our top-4 orientations",
            candidates=_ours_blend,
            ablation=True,
            reads_model=True,
        ),
        Row(
            "ours_scale_gradient_blend",
            "our scale, one descriptor blended over the gradient histogram's top-4 peaks",
            candidates=_ours_scale_gradient_blend,
            ablation=True,
            reads_model=True,
        ),
        Row(
            "ours_scale_gradient",
            "our scale, the dominant gradient's angle (kornia) on the window at it",
            poses=_ours_scale_gradient,
            ablation=True,
            widen=True,
            reads_model=True,
        ),
        Row(
            "pose",
            "the pose recipe: the detector's scale (ours where it gives none), the gradient's angle (kornia)",
            poses=_pose_recipe,
            ablation=True,
            recipe="pose",
            reads_model=pose_needs_network,
        ),
        Row(
            "ours_angle",
            "our angle in the detector's frame (its scale; 16 px without one)",
            poses=_ours_angle,
            ablation=True,
        ),
        Row(
            "sift_resolved_by_ours",
            "SIFT's own pose, its orientations resolved by ours",
            poses=_sift_resolved,
            sift=True,
            ablation=True,
        ),
        Row(
            "dominant_gradient",
            "dominant gradient orientation (kornia), detector's scale",
            poses=_handcrafted,
            group="handcrafted",
        ),
        Row(
            "dominant_gradient_blend",
            "dominant gradient, one descriptor blended over its top-4 peaks, detector's scale",
            candidates=_gradient_blend,
            group="handcrafted",
            ablation=True,
            recipe="blend",
        ),
        Row(
            "dominant_gradient_pooled_blend",
            "dominant gradient, one descriptor blended over its top-4 peaks, each at 3 sizes (±0.5 octave) about "
            "the detector's scale (16 px without one)",
            candidates=_gradient_pooled_blend,
            group="handcrafted",
            ablation=True,
        ),
        Row(
            "shape_pooled_blend",
            "our affine shape, one descriptor blended over the gradient's top-4 peaks in its frame, each at 3 sizes",
            candidates=_shape_blend,
            ablation=True,
            shape=True,
            affine=_our_shapes,
        ),
        Row(
            "shape_zoom_blend",
            "our affine shape blend (as above) at the fixed size widened by the pair's zoom, voted by our scales",
            pair=_shape_zoom_blend,
            ablation=True,
            shape=True,
            base="shape_pooled_blend",
            reads_model=True,
            votes=OurVotes,
        ),
        Row(
            "pair_pose",
            "one pose per photo: the pair's turn and zoom voted by the keypoints' angles and scales (ours without a "
            "scale, SIFT's or the gradient's with one), or the affine map their matches agree on; 3 sizes pooled",
            pair=_pair_pose,
            shape=True,
            recipe="pair-pose",
            reads_model=pose_needs_network,
        ),
        Row(
            "pair_pose_ours",
            "pair-pose with our poses voting at keypoints with a scale too (the recipe takes SIFT's or the gradient's)",
            pair=_pair_pose_with("pair_pose_ours"),
            ablation=True,
            shape=True,
            reads_model=True,
            votes=OurVotes,
        ),
        Row(
            "pair_pose_gradient",
            "pair-pose with the gradient's poses voting (the detector's scale, the gradient's peaks), no network",
            pair=_pair_pose_with("pair_pose_gradient"),
            group="handcrafted",
            votes=GradientVotes,
        ),
        Row(
            "second_pass",
            "model-free second pass: SIFT with all its orientations matched by the ratio test, one affine map "
            "(RANSAC), the photo that looks smaller warped through it, SIFT detected and described again there",
            redetect=_second_pass,
            sift=True,
            group="handcrafted",
        ),
        Row(
            "rectify",
            "rectify: the photo whose structures look smaller warped into the other's frame through the affine map "
            "SIFT's ratio-test matches agree on, SIFT detected again there, both described upright at one pose",
            redetect=_rectify,
            sift=True,
            recipe="rectify",
        ),
        Row("orinet", "OriNet orientation (kornia), detector's scale", poses=_orinet, group="peers"),
        Row(
            "affnet+orinet",
            "AffNet shape + OriNet orientation (kornia), detector's scale",
            describe=_affnet_orinet,
            group="peers",
            frames=_affnet_orinet_frames,
        ),
        Row(
            "affnet_pooled_blend",
            "AffNet shape (kornia), one descriptor blended over the gradient's top-4 peaks in its frame, each at "
            "3 sizes",
            candidates=_affnet_blend,
            group="peers",
            ablation=True,
            affine=_affnet_shapes,
        ),
        Row("upper", "upper (pose from H)", poses=_upper),
    )
}


#: the per-image row whose candidates ``pair-pose`` describes each photo with where no turn is found, by the kind
#: :func:`~patchpose.matching.pairpose.pair_fallback` gives
FALLBACK_ROWS = {"shape": "shape_pooled_blend", "ours": "ours_blend"}


def get_row(name: str) -> Row:
    """The row called ``name`` (``ours_topK`` for any whole ``K`` ≥ 2 too); a one-line error for another name."""
    if name in ROWS:
        return ROWS[name]
    k = name[len("ours_top") :] if name.startswith("ours_top") else ""
    if k.isdigit() and int(k) >= 2:
        return _top_k_rows(int(k))
    raise InputError(f"unknown row {name!r}; rows are {', '.join(ROWS)}")


def label(name: str) -> str:
    """The report's label of a row (a name that is no row: itself)."""
    try:
        return get_row(name).label
    except InputError:
        return name


def pose_rows(
    top_k: int = 4, sift: bool = True, handcrafted: bool = True, peers: bool = False, keynet: bool = False
) -> tuple[str, ...]:
    """Row names in report order: without ``sift`` (keypoints that come without a pose: corners, Key.Net, a
    file), the rows that read SIFT's pose are left out, and with ``keynet`` (Key.Net detections) the row of
    Key.Net's own scale is added; ``handcrafted`` adds the hand-crafted rows and ``peers`` those of the peers."""
    out = []
    for name, r in ROWS.items():
        name = f"ours_top{top_k}" if name == "ours_top4" else name
        if (r.sift and not sift) or (r.keynet and (sift or not keynet)):
            continue
        if (r.group == "handcrafted" and not handcrafted) or (r.group == "peers" and not peers):
            continue
        out.append(name)
    return tuple(out)


def default_rows(rows) -> tuple[str, ...]:
    """``rows`` less the ablations, in their order."""
    return tuple(r for r in rows if not get_row(r).ablation)


def pair_rows(rows) -> tuple[str, ...]:
    """The rows of ``rows`` that describe both photos together."""
    return tuple(r for r in rows if get_row(r).is_pair)


# ----------------------------------------------------------------------------- describing and matching
def candidate_counts(name: str, run: Run, im: Image) -> np.ndarray:
    """``(N,)`` how many descriptors a row matches at each keypoint (none for no keypoints)."""
    if len(im.feats) == 0:
        return np.zeros(0, np.int64)
    r = get_row(name)
    return np.ones(len(im.feats), np.int64) if r.count is None else r.count(run, im)


def row_descriptors(name: str, run: Run, im: Image) -> np.ndarray:
    """``(N, k, D)``: one image's descriptors under a per-image row."""
    r = get_row(name)
    f = im.feats
    if r.is_pair:
        raise InputError(
            f"row {name!r} describes a pair of photos together: pair_descriptors, not describe_rows"
        )
    if len(f) == 0:
        return np.zeros((0, 1, run.describer.dim), np.float32)
    if r.candidates is not None:
        _, _, w, d = r.candidates(run, im)
        f.memo[("candidates", name)] = w.shape[1]
        return blend_descriptors(d, w)[:, None]
    if r.describe is not None:
        d = r.describe(run, im)
        return d if d.ndim == 3 else d.reshape(len(f), 1, -1)
    s, o = r.poses(run, im)
    s = s + ours_window(_region(run)) if r.widen else s
    k = s.shape[1]
    d = run.describer.describe(f.pyramid, np.repeat(f.xy, k, 0), s.reshape(-1), o.reshape(-1))
    return d.reshape(len(f), k, -1)


@dataclass(frozen=True)
class Cost:
    """What a row spends on a pair of photos: descriptor computations per keypoint (both photos' keypoints
    together), the descriptors per keypoint it matches, matching passes and geometric fits (RANSAC)."""

    computations: float
    descriptors: float
    passes: int = 1
    fits: int = 0


def row_cost(name: str, run: Run, im1: Image, im2: Image, c1=None, c2=None, turn=None) -> Cost:
    """A row's :class:`Cost` on a pair: a poses row computes and matches its descriptors per keypoint
    (:func:`candidate_counts`); a blend row computes its candidates and matches one; a pair row (``c1``, ``c2``:
    its candidates, ``turn``: the pair's) computes the votes' candidates (our top-4 angles blended) and then its own
    (twice for photo 2, with two more passes and fits, where the turn was ambiguous), and fits the pair's affine
    map where it found a turn."""
    r = get_row(name)
    if r.redetect is not None:
        raise InputError(f"row {name!r} gives its own cost with its descriptors (Row.redetect)")

    def mean(a: np.ndarray, b: np.ndarray) -> float:
        both = np.concatenate([a, b]).astype(np.float64)
        return float(both.mean()) if len(both) else 0.0

    n1, n2 = len(im1.feats), len(im2.feats)
    if not r.is_pair:
        counts = mean(candidate_counts(name, run, im1), candidate_counts(name, run, im2))
        if r.candidates is None:
            return Cost(counts, counts)
        # the candidates each keypoint was described at (row_descriptors notes them)
        k = [im.feats.memo.get(("candidates", name), 0) for im in (im1, im2)]
        return Cost(mean(np.full(n1, k[0]), np.full(n2, k[1])), 1.0)
    k1, k2 = np.shape(c1[0])[1], np.shape(c2[0])[1]
    votes = row_votes(r, run, im1.feats, im2.feats)
    ambiguous = int(turn.ambiguous)
    found = r.base is None and turn.found
    # where no turn is found, a fallback on the votes' own candidates describes nothing more
    own = 0 if r.base is None and not turn.found and votes.reuses(im1.feats, im2.feats) else 1
    comp = mean(
        votes.computations(im1.feats) + own * k1, votes.computations(im2.feats) + own * k2 * (1 + ambiguous)
    )
    return Cost(comp, 1.0, 2 + 2 * ambiguous, int(found) * (1 + 3 * ambiguous))


def describe_rows(rows, run: Run, im: Image) -> dict[str, np.ndarray]:
    """``{row: (N, k, D) descriptors}`` of one image under per-image rows."""
    return {name: row_descriptors(name, run, im) for name in rows}


def pair_descriptors(
    name: str, run: Run, im1: Image, im2: Image
) -> tuple[np.ndarray, np.ndarray, PairZoom, PairTurn]:
    """A pair row's ``(N, 1, D)`` and ``(M, 1, D)`` descriptors of two photos' keypoints (each keypoint's
    candidates blended with their weights) and the pair's zoom and turn."""
    r = get_row(name)
    if r.redetect is not None:
        raise InputError(
            f"row {name!r} detects a photo's keypoints again: match_images, not pair_descriptors"
        )
    c1, c2, zoom, turn = r.pair(run, im1, im2)
    return blend_descriptors(c1[3], c1[2])[:, None], blend_descriptors(c2[3], c2[2])[:, None], zoom, turn


def candidate_lafs(
    name: str, run: Run, im: Image, log2_scale: np.ndarray, orientation: np.ndarray
) -> np.ndarray:
    """``(N, k, 2, 3)`` kornia LAFs ``[A | xy]`` of the patches a blend row's candidates are cut in:
    ``A = REFERENCE_RADIUS·2**s·R(θ)``, times the keypoint's affine shape for the rows cut through one (our shape
    network's, AffNet's). kornia's ``get_laf_orientation`` and ``get_laf_scale`` then read each candidate's
    orientation and size in the image, as AdaLAM reads them."""
    s, o = np.asarray(log2_scale, np.float64), np.asarray(orientation, np.float64)
    affine = get_row(name).affine
    A = rotation_matrix(o) if affine is None else turned_shapes(affine(run, im), o)
    A = (REFERENCE_RADIUS * np.exp2(s))[..., None, None] * A
    xy = np.broadcast_to(np.asarray(im.feats.xy, np.float64)[:, None, :, None], (*s.shape, 2, 1))
    return np.concatenate([A, xy], -1)


def pair_candidate_lafs(
    name: str, run: Run, im1: Image, im2: Image, c1: tuple, c2: tuple, zoom: PairZoom, turn: PairTurn
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`candidate_lafs` of a pair row's candidates ``c1``, ``c2`` in each photo, as the row cut them (its
    ``zoom`` and ``turn``): each photo's view at the pair's zoom; where ``pair_pose`` fell back on our affine
    shape (no turn), each photo at its detector's own sizes; where it cut photo 2 through the pair's affine map,
    photo 2's frames ``A·P``, ``P`` the map's shape (the turn is in ``P``, not in the candidates' orientations)."""
    # where pair-pose found no turn, each photo is described at its own poses (a per-image row's candidates): our
    # votes' fallback (FALLBACK_ROWS), or the model-free votes' own (discs at their poses: any row without a shape)
    fallback = None
    if not turn.found and not get_row(name).base:
        ours = isinstance(row_votes(get_row(name), run, im1.feats, im2.feats), OurVotes)
        fallback = FALLBACK_ROWS[pair_fallback(im1.feats, im2.feats)] if ours else "dominant_gradient_blend"
    out = []
    for im, c, frame in zip((im1, im2), (c1, c2), zoom.frames):
        f = im.feats
        if len(f) == 0:
            out.append(np.zeros((*np.shape(c[0]), 2, 3)))
            continue
        view = Image(f) if fallback else Image(f.at_frame(frame))
        # pair-pose's own candidates are upright or turned in the plain frame; a base row's through its shapes
        out.append(candidate_lafs(fallback or get_row(name).base or name, run, view, c[0], c[1]))
    if turn.affine is not None:
        out[1] = np.concatenate([out[1][..., :2] @ turn.affine.shape, out[1][..., 2:]], -1)
    return out[0], out[1]


def match_images(
    image1,
    image2,
    run: Run,
    rows=("ours",),
    H=None,
    keypoints1=None,
    keypoints2=None,
    sizes1=None,
    sizes2=None,
) -> dict:
    """Match two images under each row (keypoints: ``run.cfg``'s detector, or the given ones with their
    ``sizes``, :func:`detect`).

    Returns ``{"xy1": (N, 2), "xy2": (M, 2), "rows": {row: {"matches": (L, 2), "distances": (L,),
    "error_px": (L,) reprojection error under H (None without H)}}}``; a pair row's entry also holds the pair's
    ``"zoom"`` and ``"turn"``, a row that detects a photo's keypoints again (``Row.redetect``) its own ``"xy1"`` and
    ``"xy2"``."""
    cfg = run.cfg
    if H is None and "upper" in rows:
        raise InputError("the 'upper' row needs the ground-truth homography H")
    im1 = Image(detect(image1, cfg.max_keypoints, keypoints1, cfg.detector, run.peers, sizes1))
    im2 = Image(detect(image2, cfg.max_keypoints, keypoints2, cfg.detector, run.peers, sizes2), H=H)
    d1 = describe_rows([r for r in rows if not get_row(r).is_pair], run, im1)
    d2 = describe_rows([r for r in rows if not get_row(r).is_pair], run, im2)
    votes, own_xy = {}, {}
    for name in pair_rows(rows):
        if get_row(name).redetect is not None:
            d1[name], d2[name], *own_xy[name], _ = get_row(name).redetect(run, im1, im2)
        else:
            d1[name], d2[name], *votes[name] = pair_descriptors(name, run, im1, im2)
    out = {"xy1": im1.feats.xy, "xy2": im2.feats.xy, "rows": {}}
    for name in rows:
        m, dist = mutual_nn(d1[name], d2[name])
        xy1, xy2 = own_xy.get(name, (im1.feats.xy, im2.feats.xy))
        err = reprojection_errors(H, xy1[m[:, 0]], xy2[m[:, 1]]) if H is not None else None
        out["rows"][name] = {"matches": m, "distances": dist, "error_px": err}
        if name in own_xy:
            out["rows"][name]["xy1"], out["rows"][name]["xy2"] = xy1, xy2
        if name in votes:
            out["rows"][name]["zoom"], out["rows"][name]["turn"] = votes[name]
    return out


__all__ = [
    "Cost",
    "row_cost",
    "DETECTORS",
    "PEER_DETECTORS",
    "ROWS",
    "Image",
    "MATCHERS",
    "MatchConfig",
    "Row",
    "Run",
    "affine_descriptors",
    "candidate_counts",
    "candidate_lafs",
    "check_detector",
    "default_rows",
    "describe_rows",
    "detect",
    "framed_poses",
    "handcrafted_poses",
    "label",
    "match_images",
    "pair_candidate_lafs",
    "pair_descriptors",
    "pair_rows",
    "peer_poses",
    "pose_rows",
    "get_row",
    "row_descriptors",
]
