"""The two-photo recipe ``pair-pose``: every keypoint of a photo at one pose, the pose of the photo.

1. **Votes** (:func:`recipe_votes`). Each photo's keypoints are described at our scale and our 4 strongest
   orientations, blended (:func:`~.candidates.ours_blend_candidates`: a description that turns and zooms with the
   photo), and matched (mutual nearest neighbours); at SIFT's own detections SIFT with all its orientations instead
   (:class:`SiftVotes`), at keypoints with sizes of their own the gradient's peaks at them (:class:`GradientVotes`):
   no network where the keypoints have a scale, ours adding too little there. At those tentative matches the scales vote
   the pair's zoom and the angles its turn (:func:`~.zoom.pair_zoom`, :func:`~.zoom.pair_turn`); the matches that
   voted for the turn are fitted one affine map (:func:`~.zoom.pair_affine`).
2. **One pose per photo.** Photo 1 upright and photo 2 turned by the turn, each keypoint at a fixed window
   (16 px) widened by the zoom in the photo where things look larger, at 3 sizes about it
   (:func:`~.blend.pool_sizes`), and where the detector gives a size (SIFT, a region) also at 3 sizes about
   that, the two halves weighed alike (:func:`one_pose_candidates`); where the map slants the view
   (:data:`~.zoom.MIN_SLANT`), photo 2 is cut through it instead (:func:`one_pose_pair`).
3. **Where the votes show no one turn** (:attr:`~.zoom.PairTurn.found`: photos that hardly overlap, or a slant
   that hides it), each keypoint at its own poses instead (:meth:`Votes.fallback`): at SIFT's detections SIFT's own
   (:class:`SiftVotes`), where the keypoints have a scale the gradient's peaks at it (:class:`GradientVotes`); else our scale and strongest orientations (our votes at
   keypoints with sizes, the benchmark's ``pair_pose_ours``: the gradient's peaks in our affine shape,
   :func:`pair_fallback`).
4. **Where the turn + π stands out too** (:attr:`~.zoom.PairTurn.ambiguous`: a texture alike half a turn round),
   photo 2 is described at both and the turn whose matches one homography explains more of is kept
   (:func:`homography_support`).

Each keypoint then has one blended descriptor (:func:`pair_pose_descriptors`); the cost per keypoint is 4
descriptor computations for our and the gradient's votes (SIFT's: 1.2, one per orientation it found) and 3 (6 with a
detector's size) for the final description, two
matching passes and, where the votes found a turn, one affine fit (two for an ambiguous turn, and a
homography fit for each).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InputError
from .blend import BLEND_K, blend_descriptors, pool_sizes
from .candidates import (
    Candidates,
    gradient_blend_candidates,
    ours_blend_candidates,
    ours_window,
    shape_blend_candidates,
    sift_all_counts,
    sift_all_descriptors,
    sift_detections,
)
from .describe import Describer
from .features import Features
from .matcher import mutual_nn
from .zoom import MIN_SLANT, PairAffine, PairTurn, PairZoom, pair_affine, pair_turn, pair_zoom

#: px: the reprojection error within which a match supports a homography (:func:`homography_support`)
SUPPORT_PX = 5.0


@dataclass(frozen=True)
class Votes:
    """The first pass of ``pair-pose``: how each photo is described for the tentative matches whose poses vote the
    pair's zoom, turn and affine map (:meth:`strongest`), and how each keypoint is described where the votes show
    no one turn (:meth:`fallback`). The recipe takes :class:`OurVotes` where keypoints have no scale, else
    :class:`SiftVotes` or :class:`GradientVotes` (:func:`recipe_votes`); the benchmarks try each anywhere to show what
    the network adds."""

    describer: Describer

    def strongest(self, feats: Features, ours=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each keypoint's scale (log2, ``(N,)``) and orientation (radians, ``(N,)``) that vote, and the descriptors
        ``(N, D)`` or ``(N, k, D)`` of the tentative matches (``ours``: our poses there, if read already)."""
        raise NotImplementedError

    def fallback(
        self, feats1: Features, feats2: Features, ours1=None, ours2=None
    ) -> tuple[Candidates, Candidates]:
        """Each photo's candidates where the votes show no one turn: each keypoint at its own poses."""
        raise NotImplementedError

    def computations(self, feats: Features) -> np.ndarray:
        """``(N,)`` descriptor computations per keypoint of the first pass."""
        return np.full(len(feats), BLEND_K)

    def reuses(self, feats1: Features, feats2: Features) -> bool:
        """Whether :meth:`fallback`'s candidates are the first pass's own (no more computations)."""
        return False


@dataclass(frozen=True)
class OurVotes(Votes):
    """Our poses vote: each keypoint at our scale and :data:`~.blend.BLEND_K` strongest orientations, blended
    (:func:`~.candidates.ours_blend_candidates`: a description that turns and zooms with the photo; ``est``'s
    top-``top_k`` read); where no turn shows, :func:`pair_fallback`'s description (``shape_weights``: the shape
    network's file, None: the bundled one)."""

    est: object = None
    top_k: int = BLEND_K
    shape_weights: str | None = None

    def strongest(self, feats: Features, ours=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s, o, w, d = ours_blend_candidates(feats, self.describer, self.est, self.top_k, ours)
        return s[:, 0] - ours_window(self.est.plan.descriptor_region), o[:, 0], blend_descriptors(d, w)

    def fallback(
        self, feats1: Features, feats2: Features, ours1=None, ours2=None
    ) -> tuple[Candidates, Candidates]:
        if pair_fallback(feats1, feats2) == "shape":
            c1, c2 = (shape_blend_candidates(f, self.describer, self.shape_weights) for f in (feats1, feats2))
            return c1, c2
        c1, c2 = (
            ours_blend_candidates(f, self.describer, self.est, self.top_k, o)
            for f, o in ((feats1, ours1), (feats2, ours2))
        )
        return c1, c2

    def reuses(self, feats1: Features, feats2: Features) -> bool:
        return pair_fallback(feats1, feats2) == "ours"


@dataclass(frozen=True)
class GradientVotes(Votes):
    """``pair-pose``'s first pass without a network: each keypoint at the detector's scale (16 px for corners, so
    no zoom is voted there) and the gradient histogram's strongest peaks, blended; where no turn shows, the same."""

    def strongest(self, feats: Features, ours=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s, o, w, d = gradient_blend_candidates(feats, self.describer)
        return s[:, 0], o[:, 0], blend_descriptors(d, w)

    def fallback(self, feats1: Features, feats2: Features, ours1=None, ours2=None) -> tuple:
        return gradient_blend_candidates(feats1, self.describer), gradient_blend_candidates(
            feats2, self.describer
        )

    def reuses(self, feats1: Features, feats2: Features) -> bool:
        return True


@dataclass(frozen=True)
class SiftVotes(GradientVotes):
    """``pair-pose``'s first pass on SIFT's own poses (the recipe's at SIFT's detections): SIFT's scale and first
    orientation vote, at the tentative matches of SIFT with all its orientations (a keypoint's distance the smallest
    over its descriptor pairs); where no turn shows, each keypoint at SIFT's own pose, the first pass's descriptor
    at its first orientation (no more computations). That fallback was chosen on val over the gradient's blend,
    which it ties (−0.0 to +0.2 correct matches per pair, MMA@3 −0.002 to +0.025) at a quarter of the cost."""

    def strongest(self, feats: Features, ours=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return feats.sift_scale, feats.sift_ori, sift_all_descriptors(feats, self.describer)

    def fallback(self, feats1: Features, feats2: Features, ours1=None, ours2=None) -> tuple:
        return tuple(
            (f.sift_scale[:, None], f.sift_ori[:, None], np.ones((len(f), 1)),
             sift_all_descriptors(f, self.describer)[:, :1])
            for f in (feats1, feats2)
        )  # fmt: skip

    def computations(self, feats: Features) -> np.ndarray:
        return sift_all_counts(feats)

    def reuses(self, feats1: Features, feats2: Features) -> bool:
        return True


def pair_pose_needs_network(feats1: Features, feats2: Features) -> bool:
    """Whether ``pair-pose`` reads our network for this pair: only where a photo's keypoints have no scale of their
    own (:func:`recipe_votes`)."""
    return feats1.detector_scale is None or feats2.detector_scale is None


def recipe_votes(
    feats1: Features,
    feats2: Features,
    describer: Describer,
    est=None,
    top_k: int = BLEND_K,
    shape_weights=None,
) -> Votes:
    """The recipe's first pass for a pair: SIFT's own poses where both photos' keypoints are SIFT's detections
    (:class:`SiftVotes`), the gradient's where they come with sizes of their own (:class:`GradientVotes`), and ours
    only where a photo's keypoints have no scale (:class:`OurVotes`: ``est``'s top-``top_k``, the shape network
    ``shape_weights``). Chosen on the val photos (2,000 keypoints; CHANGELOG.md 1.0.0) by #60's rule (ours must add 5 %
    correct matches): at SIFT's detections ours added −0.2 to +4.2 correct matches per pair over SIFT's (under 2 %),
    at Key.Net's with their sizes −0.2 to +14.4 over the gradient's (under 4 %); at corners (no scale) ours stay (on
    the test photos 59 to 150 more than the gradient's but on turned pairs)."""
    if sift_detections(feats1) and sift_detections(feats2):
        return SiftVotes(describer)
    if not pair_pose_needs_network(feats1, feats2):
        return GradientVotes(describer)
    if est is None:
        raise InputError("pair-pose at keypoints without a scale needs our estimator for its votes")
    return OurVotes(describer, est, top_k, shape_weights)


def tentative_matches(
    feats1: Features, feats2: Features, votes: Votes, ours1=None, ours2=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What the pair's votes read: each photo's voting scales and orientations (``s1``, ``o1``, ``s2``, ``o2``,
    :meth:`Votes.strongest`) and the mutual nearest neighbours ``(L, 2)`` of its descriptors, kept in photo 2's memo
    for photo 1 (the turn, the zoom and the affine map read the same matches)."""
    key = ("tentative", votes)
    kept = feats2.memo.get(key)
    if kept is None or kept[0] is not feats1:
        (s1, o1, d1), (s2, o2, d2) = (
            votes.strongest(f, ours) for f, ours in ((feats1, ours1), (feats2, ours2))
        )
        kept = feats2.memo[key] = (feats1, (s1, o1, s2, o2, mutual_nn(d1, d2)[0]))
    return kept[1]


def pair_votes(
    feats1: Features, feats2: Features, votes: Votes, ours1=None, ours2=None
) -> tuple[PairZoom, PairTurn]:
    """The zoom and the turn from image 1 to image 2 that the scales and angles of ``votes`` vote for at the
    :func:`tentative_matches` (:func:`~.zoom.pair_zoom`, :func:`~.zoom.pair_turn`); no votes without keypoints."""
    if len(feats1) == 0 or len(feats2) == 0:
        return PairZoom(0.0, 0, 0), PairTurn(0.0, 0, 0)
    s1, o1, s2, o2, m = tentative_matches(feats1, feats2, votes, ours1, ours2)
    return pair_zoom(s1, s2, m), pair_turn(o1, o2, m)


def pair_affine_of(
    feats1: Features, feats2: Features, votes: Votes, radians: float, ours1=None, ours2=None
) -> PairAffine | None:
    """The affine map from image 1 to image 2 (:func:`~.zoom.pair_affine`) that those :func:`tentative_matches`
    agree on whose angles voted for a turn of ``radians``; None where there is none."""
    if len(feats1) == 0 or len(feats2) == 0:
        return None
    _, o1, _, o2, m = tentative_matches(feats1, feats2, votes, ours1, ours2)
    size = max(float(np.hypot(*f.image.shape[:2])) for f in (feats1, feats2))
    return pair_affine(feats1.xy, feats2.xy, m, radians, o1, o2, size)


def one_pose_candidates(
    feats: Features, describer: Describer, frame: float, angle: float, shape=None
) -> Candidates:
    """One photo's candidates at one pose: every keypoint turned by ``angle`` (radians; or cut through the
    ``(2, 2)`` affine ``shape``), at 3 sizes about the fixed window widened by ``frame`` (log2), and where the
    detector gives a size (SIFT, a region) at 3 sizes about it too, the two halves weighed alike; each half is
    kept in the features' memo per describer, frame and angle."""
    n = len(feats)
    P = None if shape is None else np.asarray(shape, np.float64).reshape(2, 2)

    def at(scale: np.ndarray, what: str) -> Candidates:
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


def one_pose_pair(
    feats1: Features, feats2: Features, votes: Votes, zoom: PairZoom, radians: float, ours1=None, ours2=None
) -> tuple[Candidates, Candidates, PairAffine | None]:
    """Each photo's :func:`one_pose_candidates` for a turn of ``radians`` and the affine map they were cut
    through: where the tentative matches that voted for the turn agree on one (:func:`pair_affine_of`) that
    slants the view (:data:`~.zoom.MIN_SLANT`), photo 1 upright, its window widened so that photo 2's is
    narrowed in no direction, and photo 2 through the map (a slant as well as the turn and zoom); else photo 1
    upright and photo 2 turned by ``radians``, the fixed window widened by ``zoom``
    (:attr:`~.zoom.PairZoom.frames`)."""
    describer = votes.describer
    affine = pair_affine_of(feats1, feats2, votes, radians, ours1, ours2)
    if affine is None or affine.anisotropy < MIN_SLANT:
        c1 = one_pose_candidates(feats1, describer, zoom.frames[0], 0.0)
        return c1, one_pose_candidates(feats2, describer, zoom.frames[1], radians), None
    frame1, frame2 = affine.frames
    c1 = one_pose_candidates(feats1, describer, frame1, 0.0)
    return c1, one_pose_candidates(feats2, describer, frame2, 0.0, affine.shape), affine


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


def pair_fallback(feats1: Features, feats2: Features) -> str:
    """How ``pair-pose`` describes each photo where the votes show no one turn: ``"shape"`` where the detector
    gives both photos' keypoints a size (our affine shape at that size, the gradient's peaks in its frame,
    :func:`~.candidates.shape_blend_candidates`: where a slant is what hid the turn), else ``"ours"`` (our
    scale and strongest orientations, :func:`~.candidates.ours_blend_candidates`: a fixed size would not
    follow a zoom)."""
    return "shape" if feats1.detector_scale is not None and feats2.detector_scale is not None else "ours"


def pair_pose_candidates(
    feats1: Features,
    feats2: Features,
    describer: Describer,
    est,
    top_k: int = BLEND_K,
    ours1=None,
    ours2=None,
    shape_weights=None,
    votes: Votes | None = None,
) -> tuple[Candidates, Candidates, PairZoom, PairTurn]:
    """Each photo's candidates (the module docstring's steps 1 to 4) and the pair's zoom and turn
    (:attr:`~.zoom.PairTurn.affine`: the map photo 2 was cut through, if any). ``votes``: the first pass (None: the
    recipe's, :func:`recipe_votes`: ``est``'s top-``top_k`` poses, ``ours1``/``ours2`` that read if made already,
    where keypoints have no scale; ``shape_weights``: the shape network of the fallback, None: the bundled one)."""
    votes = votes or recipe_votes(feats1, feats2, describer, est, top_k, shape_weights)
    zoom, turn = pair_votes(feats1, feats2, votes, ours1, ours2)
    if not turn.found and len(feats1) and len(feats2):  # no one turn: each keypoint at its own poses
        c1, c2 = votes.fallback(feats1, feats2, ours1, ours2)
        return c1, c2, zoom, turn
    c1, c2, affine = one_pose_pair(feats1, feats2, votes, zoom, turn.radians, ours1, ours2)
    if turn.ambiguous:  # the turn + π stands out too: keep whichever matches more
        radians = float(np.mod(turn.radians + math.pi, 2.0 * math.pi))
        f1, f2, flip = one_pose_pair(feats1, feats2, votes, zoom, radians, ours1, ours2)

        def support(a, b) -> int:
            return homography_support(
                feats1.xy, feats2.xy, blend_descriptors(a[3], a[2]), blend_descriptors(b[3], b[2])
            )

        if support(f1, f2) > support(c1, c2):
            c1, c2, affine = f1, f2, flip
            turn = replace(turn, radians=radians, votes=turn.opposite, opposite=turn.votes)
    return c1, c2, zoom, replace(turn, affine=affine)


def pair_pose_descriptors(
    feats1: Features,
    feats2: Features,
    describer: Describer,
    est,
    top_k: int = BLEND_K,
    ours1=None,
    ours2=None,
    shape_weights=None,
) -> tuple[np.ndarray, np.ndarray, PairZoom, PairTurn]:
    """``(N, 1, D)`` and ``(M, 1, D)``: each keypoint's :func:`pair_pose_candidates` blended with their weights
    (:func:`~.blend.blend_descriptors`), and the pair's zoom and turn."""
    c1, c2, zoom, turn = pair_pose_candidates(
        feats1, feats2, describer, est, top_k, ours1, ours2, shape_weights
    )
    return blend_descriptors(c1[3], c1[2])[:, None], blend_descriptors(c2[3], c2[2])[:, None], zoom, turn


__all__ = [
    "SUPPORT_PX",
    "GradientVotes",
    "OurVotes",
    "SiftVotes",
    "Votes",
    "homography_support",
    "one_pose_candidates",
    "one_pose_pair",
    "pair_affine_of",
    "pair_fallback",
    "pair_pose_candidates",
    "pair_pose_descriptors",
    "pair_pose_needs_network",
    "pair_votes",
    "recipe_votes",
    "tentative_matches",
]
