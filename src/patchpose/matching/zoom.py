"""The zoom and the turn between two photos, voted by our scales and angles at tentative matches.

A fixed window covers other content in a photo that zoomed; our per-keypoint scale follows the zoom, but with
noise. The *difference* of our scales across the tentative matches of a scale-invariant description (our scale
and angles) is one vote per match for the pair's zoom: wrong matches spread their votes, right ones pile them
up, and a few dozen right ones pin the zoom down. Widen the fixed window by that much in the photo where things
look larger (:func:`pair_zoom`, :attr:`PairZoom.frames`), and a fixed size serves under any zoom. The angles vote
the turn the same way (:func:`pair_turn`), and the matches that voted for it, fitted one affine map
(:func:`pair_affine`), give the slant a turn and a zoom cannot. The recipe ``pair-pose``
(:mod:`patchpose.matching.pairpose`) reads all three.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError

#: octaves: the width of the vote's histogram bins (half the model's scale bins, 1/3 octave)
ZOOM_BIN = 1.0 / 6.0
#: octaves: the votes within this of the winning bin's centre are the estimate's (their median)
ZOOM_BAND = 0.25
#: fewer votes than this within :data:`ZOOM_BAND` of the winner: no evidence of a zoom, 0 is returned
MIN_VOTES = 5
#: octaves: the largest zoom voted for (two scales within the models' ±4 octaves differ by at most 8)
MAX_ZOOM = 8.0
#: radians: the width of the turn's vote bins (10°, the models' orientation bins)
TURN_BIN = 2.0 * math.pi / 36
#: radians: the votes within this of the winning bin's centre are the estimate's (their median offset)
TURN_BAND = math.radians(15.0)
#: standard deviations: the winner's votes must exceed what as many votes spread evenly round the circle would
#: put within :data:`TURN_BAND` of it by this much, else the photos give no evidence of one turn
TURN_SIGNIFICANCE = 8.0


@dataclass(frozen=True)
class PairZoom:
    """The zoom from image 1 to image 2 that :func:`pair_zoom` found."""

    log2: float  #: structures in image 2 look ``2**log2`` times as large as in image 1 (0: no evidence)
    votes: int  #: tentative matches within :data:`ZOOM_BAND` octaves of the estimate
    matches: int  #: tentative matches that voted

    @property
    def frames(self) -> tuple[float, float]:
        """``(frame1, frame2)``: log2 factors for a fixed window in image 1 and in image 2 that cover the same
        content: the window is widened in the photo where structures look larger, never narrowed (a narrowed
        window would be read below the photo's resolution)."""
        return max(0.0, -self.log2), max(0.0, self.log2)

    @property
    def found(self) -> bool:
        """Whether the votes show a zoom: at least :data:`MIN_VOTES` of them within :data:`ZOOM_BAND` of the winner
        (else :attr:`log2` is 0, no evidence)."""
        return self.votes >= MIN_VOTES


def _votes(values1, values2, matches, what: str) -> np.ndarray | None:
    """``values2[j] − values1[i]`` for each tentative match ``(i, j)`` (None for no match), the arguments checked:
    ``(N,)`` and ``(M,)`` arrays (``what`` names them in the errors) and ``(L, 2)`` integer indices into them."""
    v1 = np.asarray(values1, np.float64)
    v2 = np.asarray(values2, np.float64)
    m = np.asarray(matches)
    if v1.ndim != 1 or v2.ndim != 1:
        raise InputError(f"{what} must be (N,) arrays, got shapes {v1.shape} and {v2.shape}")
    if m.size == 0:
        return None
    if m.ndim != 2 or m.shape[1] != 2 or not np.issubdtype(m.dtype, np.integer):
        raise InputError(f"matches must be an (L, 2) integer array, got {m.dtype} of shape {m.shape}")
    if m.min() < 0 or m[:, 0].max() >= len(v1) or m[:, 1].max() >= len(v2):
        raise InputError(f"matches index keypoints outside the {len(v1)} and {len(v2)} {what} given")
    return v2[m[:, 1]] - v1[m[:, 0]]


def pair_zoom(scale1, scale2, matches) -> PairZoom:
    """The zoom between two photos from the log2 scales of their keypoints (``scale1`` ``(N,)``, ``scale2``
    ``(M,)``, e.g. :attr:`patchpose.Poses.scale` of the strongest candidate) and tentative matches ``(L, 2)``
    (indices into them, e.g. mutual nearest neighbours of scale-invariant descriptors).

    Each match votes ``scale2[j] − scale1[i]`` into bins of :data:`ZOOM_BIN` octaves; the histogram is smoothed
    by ``[1, 2, 1]``, and the median of the votes within :data:`ZOOM_BAND` octaves of the highest bin's centre
    is the zoom. With fewer than :data:`MIN_VOTES` such votes the photos give no evidence of a zoom: 0.
    Non-finite scales do not vote."""
    d = _votes(scale1, scale2, matches, "scales")
    if d is None:
        return PairZoom(0.0, 0, 0)
    d = d[np.isfinite(d) & (np.abs(d) <= MAX_ZOOM)]
    edges = np.linspace(-MAX_ZOOM, MAX_ZOOM, int(round(2 * MAX_ZOOM / ZOOM_BIN)) + 1)
    hist = np.convolve(np.histogram(d, edges)[0], [1, 2, 1], "same")
    best = int(np.argmax(hist))
    near = d[np.abs(d - 0.5 * (edges[best] + edges[best + 1])) <= ZOOM_BAND]
    if len(near) < MIN_VOTES:
        return PairZoom(0.0, int(len(near)), int(len(d)))
    return PairZoom(float(np.median(near)), int(len(near)), int(len(d)))


#: of the larger photo's diagonal: the reprojection error within which a tentative match fits the pair's affine
#: map (:func:`pair_affine`); loose, for one affine map fits a slanted plane's perspective only roughly
AFFINE_TOLERANCE = 0.03
#: inliers the pair's affine map needs (three matches fix one; :data:`MIN_VOTES` per degree of freedom pair)
AFFINE_MIN_INLIERS = 15
#: the largest ratio of the affine map's two singular values taken as a slant (past it: a poor fit). 3, not 4: on the
#: dev set's real pairs (Sacré-Cœur, 90 ordered pairs at corners) each of the 6 maps past 3 (3.2–4.0) kept 18–95
#: matches, where the photos swapped kept 171–357 without a map (one pair had a map past 3 both ways); on val's
#: generated pairs (200) no map passed 2.4 (CHANGELOG, 2026-11-30, night)
MAX_ANISOTROPY = 3.0
#: the ratio of the affine map's singular values from which ``pair-pose`` cuts photo 2 through the map; below it
#: the voted turn and zoom serve (a map fitted to noisy matches costs accuracy where the view is hardly slanted)
MIN_SLANT = 1.15


@dataclass(frozen=True, eq=False)
class PairAffine:
    """The affine map from image 1 to image 2 that :func:`pair_affine` found (None where it found none)."""

    matrix: np.ndarray  #: ``(2, 2)`` its linear part, pixels of image 1 to pixels of image 2 (y down)
    inliers: int  #: tentative matches it explains within :data:`AFFINE_TOLERANCE`
    matches: int  #: tentative matches it was fitted to

    @property
    def anisotropy(self) -> float:
        """The ratio of the map's larger to its smaller singular value: 1 for a turn and zoom, more for a slant."""
        sv = np.linalg.svd(self.matrix, compute_uv=False)
        return float(sv[0] / sv[1])

    @property
    def shape(self) -> np.ndarray:
        """``(2, 2)``: the map scaled to determinant 1 (its turn and slant, without its zoom)."""
        return self.matrix / math.sqrt(float(np.linalg.det(self.matrix)))

    @property
    def frames(self) -> tuple[float, float]:
        """``(frame1, frame2)``: log2 factors for a fixed window in image 1 (upright) and in image 2 (cut through
        :attr:`shape`) that cover the same content, as :attr:`PairZoom.frames`: image 1's widened so that the map
        narrows image 2's in no direction (never below the photo's resolution), image 2's by the map's zoom more."""
        frame1 = max(0.0, -math.log2(float(np.linalg.svd(self.matrix, compute_uv=False)[1])))
        return frame1, frame1 + 0.5 * math.log2(float(np.linalg.det(self.matrix)))


@dataclass(frozen=True)
class PairTurn:
    """The in-plane turn from image 1 to image 2 that :func:`pair_turn` found."""

    radians: float  #: image 2 shows image 1's structures turned by this, CCW as displayed, in [0, 2π) (0: no evidence)
    votes: int  #: tentative matches within :data:`TURN_BAND` of the estimate
    matches: int  #: tentative matches that voted
    #: tentative matches within :data:`TURN_BAND` of the opposite turn (the estimate + π): where a texture looks
    #: alike turned by half a turn (bricks, tiles), our angles may vote for either
    opposite: int = 0
    #: the affine map from image 1 to image 2 that the matches which voted for this turn agree on, where
    #: ``pair_pose`` cut photo 2 through one (:func:`pair_affine`); None otherwise
    affine: PairAffine | None = field(default=None, compare=False)

    @property
    def found(self) -> bool:
        """Whether the votes show one turn: at least :data:`MIN_VOTES` of them within :data:`TURN_BAND` of the
        winner, and :data:`TURN_SIGNIFICANCE` standard deviations more than votes spread evenly round the circle
        would put there (wrong matches of a description that turns with the photo vote anywhere)."""
        return _stands_out(self.votes, self.matches)

    @property
    def ambiguous(self) -> bool:
        """Whether the opposite turn stands out of evenly spread votes as well (the test of :attr:`found`): the
        photos may be turned by the estimate or by the estimate + π, and only matching can tell."""
        return self.found and _stands_out(self.opposite, self.matches)


def pair_affine(
    xy1, xy2, matches, radians: float, orientation1, orientation2, size: float
) -> PairAffine | None:
    """The affine map from image 1 to image 2 that the tentative matches ``(L, 2)`` between keypoints ``xy1``
    ``(N, 2)`` and ``xy2`` ``(M, 2)`` agree on: those whose turn (``orientation2[j] − orientation1[i]``) lies within
    :data:`TURN_BAND` of the pair's voted turn ``radians`` (:func:`pair_turn`; the others are wrong matches or the
    opposite turn's) are fitted by OpenCV's RANSAC (``estimateAffine2D``, :data:`AFFINE_TOLERANCE` of ``size``,
    the larger photo's diagonal in pixels). A :class:`PairAffine`, or None where fewer
    than :data:`AFFINE_MIN_INLIERS` fit, or the map flips or is no plausible view (a singular value outside
    ``2**±MAX_ZOOM``, or their ratio past :data:`MAX_ANISOTROPY`)."""
    import cv2

    d = _votes(orientation1, orientation2, matches, "orientations")
    if d is None:
        return None
    m = np.asarray(matches)[np.abs(np.angle(np.exp(1j * (d - radians)))) <= TURN_BAND]
    if len(m) < AFFINE_MIN_INLIERS:
        return None
    p1 = np.ascontiguousarray(np.asarray(xy1, np.float64)[m[:, 0]], np.float32)
    p2 = np.ascontiguousarray(np.asarray(xy2, np.float64)[m[:, 1]], np.float32)
    A, mask = cv2.estimateAffine2D(p1, p2, method=cv2.RANSAC, ransacReprojThreshold=AFFINE_TOLERANCE * size)
    if A is None or mask is None or int(mask.sum()) < AFFINE_MIN_INLIERS:
        return None
    M = np.asarray(A[:, :2], np.float64)
    sv = np.linalg.svd(M, compute_uv=False)
    if (
        np.linalg.det(M) <= 0
        or sv[1] < 2.0**-MAX_ZOOM
        or sv[0] > 2.0**MAX_ZOOM
        or sv[0] > MAX_ANISOTROPY * sv[1]
    ):
        return None
    return PairAffine(M, int(mask.sum()), int(len(m)))


def _stands_out(votes: int, matches: int) -> bool:
    """At least :data:`MIN_VOTES` ``votes`` within :data:`TURN_BAND` of an angle, and :data:`TURN_SIGNIFICANCE`
    standard deviations more than ``matches`` votes spread evenly round the circle would put there."""
    p = 2.0 * TURN_BAND / (2.0 * math.pi)
    even = matches * p
    return votes >= MIN_VOTES and votes >= even + TURN_SIGNIFICANCE * math.sqrt(even * (1.0 - p))


def pair_turn(orientation1, orientation2, matches) -> PairTurn:
    """The turn between two photos from the orientations (radians, CCW as displayed) of their keypoints
    (``orientation1`` ``(N,)``, ``orientation2`` ``(M,)``, e.g. :attr:`patchpose.Poses.orientation` of the
    strongest candidate) and tentative matches ``(L, 2)``, as :func:`pair_zoom` finds the zoom: each match votes
    ``orientation2[j] − orientation1[i]`` (mod 2π) into bins of :data:`TURN_BIN`, the circular histogram is
    smoothed by ``[1, 2, 1]``, and the winning bin's centre moved by the median offset of the votes within
    :data:`TURN_BAND` of it is the turn; unless the votes show one (:attr:`PairTurn.found`: at least
    :data:`MIN_VOTES` there, and :data:`TURN_SIGNIFICANCE` standard deviations more than evenly spread votes
    would put there), 0. The votes within :data:`TURN_BAND` of the turn + π are counted too
    (:attr:`PairTurn.opposite`, :attr:`PairTurn.ambiguous`). Non-finite orientations do not vote."""
    d = _votes(orientation1, orientation2, matches, "orientations")
    if d is None:
        return PairTurn(0.0, 0, 0)
    d = np.mod(d[np.isfinite(d)], 2.0 * math.pi)
    bins = int(round(2.0 * math.pi / TURN_BIN))
    hist = np.histogram(d, bins, (0.0, 2.0 * math.pi))[0]
    hist = 2 * hist + np.roll(hist, 1) + np.roll(hist, -1)
    centre = (int(np.argmax(hist)) + 0.5) * TURN_BIN
    offset = np.angle(np.exp(1j * (d - centre)))
    near = offset[np.abs(offset) <= TURN_BAND]
    if not _stands_out(len(near), len(d)):
        return PairTurn(0.0, int(len(near)), int(len(d)))
    turn = float(np.mod(centre + np.median(near), 2.0 * math.pi))
    opposite = int((np.abs(np.angle(np.exp(1j * (d - turn - math.pi)))) <= TURN_BAND).sum())
    return PairTurn(turn, int(len(near)), int(len(d)), opposite)


__all__ = [
    "AFFINE_MIN_INLIERS",
    "AFFINE_TOLERANCE",
    "MAX_ANISOTROPY",
    "MAX_ZOOM",
    "MIN_SLANT",
    "MIN_VOTES",
    "PairAffine",
    "PairTurn",
    "PairZoom",
    "TURN_BAND",
    "TURN_BIN",
    "TURN_SIGNIFICANCE",
    "ZOOM_BAND",
    "ZOOM_BIN",
    "pair_affine",
    "pair_turn",
    "pair_zoom",
]
