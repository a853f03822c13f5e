"""Un-turning photos for features trained upright (#63): our network votes the turn between two photos, and a
learned feature (ALIKED, SuperPoint, DISK: any extractor) runs on photo 1 turned by it, so that both photos show
their structures the same way up.

* :func:`upright_pair` — the turn (and zoom) from photo 1 to photo 2, voted at tentative matches of corners
  described at our poses (our network's scale and its strongest orientations, blended: a description that turns
  with the photo, ``pair-pose``'s first pass, :class:`~.pairpose.OurVotes`), with how far the votes stand out
  (:attr:`UprightTurn.confidence`; :attr:`UprightTurn.found`: past :data:`~.zoom.TURN_SIGNIFICANCE`).
* :func:`turn_image` — a photo turned on a canvas that holds all of it (or at most some multiple of its
  pixels), and the map back.
* :func:`extract_turned` — an extractor's keypoints and descriptors of a photo turned by some degrees, the
  keypoints mapped back into the photo.
* :func:`match_upright` — the three together: photo 1 extracted once at the voted turn and matched with photo 2
  (mutual nearest neighbours); where the votes show no turn, the four quarter turns tried and the one whose
  matches one fundamental matrix explains most kept (:data:`QUARTER_TURNS`).

An extractor is any callable ``image -> (xy, descriptors)``: ``image`` the photo as it was given (of the dtype and
channels given: ``H×W×3`` uint8 RGB or ``H×W`` gray for :func:`~patchpose.integrations.kornia.aliked_extractor`),
turned where it is un-turned; ``xy`` ``(N, 2)`` pixels in that image (x right, y down, pixel centres at integers:
keypoints outside it are a one-line error), ``descriptors`` ``(N, D)`` compared by Euclidean distance. kornia's
ALIKED with weights of one's own: :func:`patchpose.integrations.kornia.aliked_extractor`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import cv2
import numpy as np

from ..data.patches import check_image, check_warp_size
from ..errors import InputError
from ..geometry import inside
from .describe import Describer
from .features import detect
from .matcher import mutual_nn, short_repr
from .pairpose import OurVotes
from .zoom import TURN_BAND, pair_turn, pair_zoom

#: corners (Shi-Tomasi) per photo that vote the turn (set before any run, not tuned): the votes of a pair take about
#: a third of one ALIKED extraction's time on 2 cores (0.19 s against 0.54 s at 640 × 425)
VOTE_KEYPOINTS = 500
#: corners per photo :func:`upright_pair` votes again with where :data:`VOTE_KEYPOINTS` corners show no turn: on large
#: photos of one place by different cameras too few of 500 corners match. Chosen on the dev set's real pairs (git tag
#: `lab-vote-retry-2026-11-30`, CHANGELOG: the 45 Sacré-Cœur pairs, photo 2 turned by a random angle; val's 640 × 480
#: pairs find every turn with 500): a turn found in 44 of 45 pairs (1,000: 33; 500: 22), ALIKED's correct matches
#: +17.7 [+2.4, +40.8] a pair (1,000: +13.0), 100.0 % of the turn applied's (500: 92.6 %); the two photos voted again
#: in 1.2 s on one thread, where the four quarter turns cost three more extractions. Not in
#: :func:`~.collection.upright_collection`, where a pair without a turn is only left out of the average: there the
#: retried pairs' rougher turns cost 0.6–4.5 % of ALIKED's points in COLMAP on 8 of 9 sets (one within the seeds'
#: spread), 28 % on one (Sacré-Cœur turned: the turned photos became the largest agreeing set; same tag)
VOTE_RETRY_KEYPOINTS = 2000
#: the turns (degrees) tried where the votes show none
QUARTER_TURNS = (0.0, 90.0, 180.0, 270.0)
#: degrees: a turn this close to a quarter turn is made as that quarter turn, exactly: a photo a few degrees off is left
#: as it is rather than resampled. Chosen on val (ALIKED-n16, the 8 val photos turned by ±r against themselves,
#: correct matches of about 776 at small r; `lab/upright/snap.py`, CHANGELOG): as it comes beats un-turned at r = 2–7°
#: (by 11–27), ties at 8° (−3.6, 8 of 16 wins), loses from 10° (+9.4 for un-turning; +44.5 at 15°)
SNAP_DEG = 8.0
#: how a photo is resampled at other turns (OpenCV's flag). On val (git tag `lab-unturn-val-2026-11-30`, CHANGELOG)
#: cubic gains +4.3 [+0.0, +9.3] correct matches a pair of ~790 (0.5 %) on the canvas below, −0.8 on a whole canvas,
#: Lanczos +2.3 [−2.4, +7.1]: kept bilinear, as every table was measured
INTERPOLATION = cv2.INTER_LINEAR
#: the most pixels, as a multiple of the photo's, of the canvas a turned photo is extracted on (:func:`extract_turned`;
#: a whole photo turned by 45° needs up to 2.1×, so its extraction took up to 2.3× one): the canvas is cropped about
#: its centre and the photo's far corners are cut off. Chosen on val and the two shared real sets (git tags
#: `lab-unturn-val-2026-11-30`, `lab-canvas-cap-2026-11-30`; CHANGELOG): on val +9.1 [−1.1, +21.9] correct matches a
#: pair over the whole canvas (the keypoint budget no longer spent on the black corners), 1.31× an extraction against
#: 2.05×; 1.2× −4.8 [−7.8, −1.8] against 1.3×; on real turned pairs −4.7 % (TUM) and +4.5 % (Sacré-Cœur)
CANVAS_PIXELS = 1.3
#: px: the epipolar distance within which a match supports a fundamental matrix (choosing among quarter turns;
#: not chosen on val, where our votes found every turn: at 3 px wrong matches of a turn 150° off reached the
#: support of a turn 30° off, at 1 px a third of it)
SUPPORT_PX = 1.0

if TYPE_CHECKING:
    from ..estimator import EstimatorLike

Extractor = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
#: a photo's voting scales (log2), orientations (radians) and descriptors (:func:`voters`)
Voters = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class UprightTurn:
    """The turn from photo 1 to photo 2 that :func:`upright_pair` found.

    Attributes:
        degrees: photo 2 shows photo 1's structures turned by this, degrees counter-clockwise as displayed, in
            [0, 360) (0 where the votes show no turn).
        zoom: log2: structures in photo 2 look ``2**zoom`` times as large as in photo 1 (0: no evidence).
        votes: tentative matches within ±15° of the turn.
        matches: tentative matches that voted.
        found: whether the votes show one turn (``confidence`` past the threshold, enough votes).
        retried: whether these are the votes of :data:`VOTE_RETRY_KEYPOINTS` corners, taken where fewer showed no
            turn.
    """

    degrees: float
    zoom: float
    votes: int
    matches: int
    found: bool
    retried: bool = False

    @classmethod
    def known(cls, degrees: float) -> UprightTurn:
        """A turn known otherwise (a phone's gravity sensor, EXIF orientation): ``degrees`` counter-clockwise as
        displayed, found, no votes."""
        return cls(_check_degrees(degrees), 0.0, 0, 0, True)

    @property
    def confidence(self) -> float:
        """How far the votes stand out: standard deviations of ``matches`` votes spread evenly round the circle
        by which more lie within ±15° of the turn than such votes would put there (0 without votes). The turn is
        :attr:`found` past :data:`~patchpose.matching.zoom.TURN_SIGNIFICANCE` (8) with at least
        :data:`~patchpose.matching.zoom.MIN_VOTES` votes."""
        if self.matches == 0:
            return 0.0
        p = 2.0 * TURN_BAND / (2.0 * math.pi)
        even = self.matches * p
        return float((self.votes - even) / math.sqrt(even * (1.0 - p)))


@dataclass(frozen=True, repr=False)
class UprightMatches:
    """Matches of two photos' features, photo 1 extracted turned by ``degrees`` (its keypoints mapped back).

    Attributes:
        xy1: ``(N, 2)`` photo 1's keypoints, pixels of photo 1 as given.
        xy2: ``(M, 2)`` photo 2's keypoints.
        matches: ``(L, 2)`` indices into ``xy1``, ``xy2`` (mutual nearest neighbours).
        distances: ``(L,)`` descriptor distances.
        turn: what the votes found (:class:`UprightTurn`).
        degrees: the turn photo 1 was extracted for (the voted or known one, or the best quarter turn); within
            :data:`SNAP_DEG` of a quarter turn photo 1 is turned by that quarter turn: :attr:`applied`.
        tried: the turns extracted for (one where the votes found a turn).
        seconds: votes, extractions and matching.
    """

    xy1: np.ndarray
    xy2: np.ndarray
    matches: np.ndarray
    distances: np.ndarray
    turn: UprightTurn
    degrees: float
    tried: tuple[float, ...] = field(default=())
    seconds: float = 0.0

    __repr__ = short_repr

    @property
    def extractions(self) -> int:
        """How many times the extractor ran: photo 2 once, photo 1 once per turn tried."""
        return 1 + len(self.tried)

    @property
    def applied(self) -> float:
        """The turn photo 1 was actually turned by (degrees in [0, 360), :func:`applied_turn`): within
        :data:`SNAP_DEG` of a quarter turn that quarter turn, exactly (``UprightTurn.known(4.7)``: 0, photo 1 as it
        is), else :attr:`degrees`; what ``patchpose extract --unturn`` records as ``patchpose_turn_applied``."""
        return applied_turn(self.degrees)


def _check_extracted(out, what: str, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """An extractor's ``(xy, descriptors)`` of an image of ``shape`` as float arrays, or a one-line
    :class:`InputError` (also for keypoints more than a pixel outside that image, or 8 or more all within 1.5 px of
    its corner, as normalised coordinates are: not x, y pixel coordinates in the image it was given, which would
    otherwise be dropped or matched without a word)."""
    if not isinstance(out, tuple) or len(out) != 2:
        raise InputError(f"the extractor must return (xy, descriptors) for {what}, got {type(out).__name__}")
    xy, d = (np.asarray(a, np.float64) for a in out)
    if xy.ndim != 2 or xy.shape[1] != 2 or d.ndim != 2 or len(d) != len(xy):
        got = " and ".join("None" if a is None else str(b.shape) for a, b in zip(out, (xy, d)))
        none = " (no keypoints: empty arrays, (0, 2) and (0, D))" if any(a is None for a in out) else ""
        raise InputError(
            f"the extractor must return xy (N, 2) and descriptors (N, D) for {what}, got {got}{none}"
        )
    if not (np.isfinite(xy).all() and np.isfinite(d).all()):
        raise InputError(f"the extractor returned non-finite keypoints or descriptors for {what}")
    h, w = shape[:2]
    out_of = ~inside(xy, shape, margin=-1.0)  # more than a pixel past the outermost pixel centres
    if out_of.any():
        x, y = xy[np.argmax(out_of)]
        raise InputError(
            f"the extractor returned {int(out_of.sum())} keypoints outside the {w}×{h} image it was given for {what}, "
            f"e.g. ({x:.1f}, {y:.1f}): xy must be x, y pixel coordinates in that image"
        )
    if len(xy) >= 8 and min(h, w) > 16 and np.abs(xy).max() <= 1.5:  # coordinates in [-1, 1] or [0, 1]
        raise InputError(
            f"the extractor's {len(xy)} keypoints for {what} all lie within 1.5 px of the corner of the {w}×{h} image "
            "it was given: normalised coordinates? xy must be x, y pixel coordinates in that image"
        )
    return xy, d.astype(np.float32)


def _is_number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.floating, np.integer))


def _check_degrees(degrees) -> float:
    if not _is_number(degrees):
        raise InputError(f"degrees must be a number, got {type(degrees).__name__}")
    if not math.isfinite(degrees):
        raise InputError(f"degrees must be finite, got {degrees!r}")
    return float(degrees) % 360.0


def applied_turn(degrees: float) -> float:
    """The turn (degrees in [0, 360)) a photo is actually turned by for ``degrees`` (:func:`turn_image`): the
    quarter turn within :data:`SNAP_DEG`, else ``degrees``."""
    d = _check_degrees(degrees)
    q = _quarter(d)
    return d if q is None else 90.0 * q


def _quarter(degrees: float) -> int | None:
    """0–3: the quarter turn within :data:`SNAP_DEG` of ``degrees`` (in [0, 360)), or None."""
    quarter = int(round(degrees / 90.0))
    return quarter % 4 if abs(degrees - 90.0 * quarter) <= SNAP_DEG else None


def turn_image(
    image: np.ndarray, degrees: float, *, max_pixels: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``image`` turned by ``degrees`` counter-clockwise as displayed about its centre, on a canvas just large enough
    to hold all of it (black around it; quarter turns exactly, without resampling), and the ``(2, 3)`` map ``M``
    from the turned canvas's pixels to the image's: ``xy_image = xy_turned @ M[:, :2].T + M[:, 2]``.
    ``max_pixels``: where that canvas has more than this many times the image's pixels, it is cropped about its
    centre, both sides by one factor, to at most that many (the turned image's corners cut off; at least 1;
    :func:`extract_turned` uses :data:`CANVAS_PIXELS`)."""
    check_image(image)
    d = _check_degrees(degrees)
    if max_pixels is not None and not (_is_number(max_pixels) and max_pixels >= 1.0):
        raise InputError(
            f"max_pixels must be a number of at least 1 (times the image's pixels), got {max_pixels!r}"
        )
    h, w = image.shape[:2]
    quarter = _quarter(d)
    exact = quarter is not None  # (nearly) a quarter turn: made exactly, no resampling
    if exact:
        d = 90.0 * quarter
    a = math.radians(d)
    # turned = R·(x − c) + c', R turning CCW as displayed (y down): [[cos, sin], [−sin, cos]]
    R = np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])
    if exact:
        turned = np.ascontiguousarray(np.rot90(image, quarter))
        H, W = turned.shape[:2]
    else:
        W = int(math.ceil(abs(w * math.cos(a)) + abs(h * math.sin(a)) - 1e-6))
        H = int(math.ceil(abs(w * math.sin(a)) + abs(h * math.cos(a)) - 1e-6))
        if max_pixels is not None and W * H > max_pixels * h * w:
            f = math.sqrt(max_pixels * h * w / (W * H))
            W, H = max(1, int(W * f)), max(1, int(H * f))
    c = np.array([(w - 1) / 2.0, (h - 1) / 2.0])
    c2 = np.array([(W - 1) / 2.0, (H - 1) / 2.0])
    if not exact:
        check_warp_size(image.shape)
        check_warp_size((H, W))
        forward = np.hstack([R, (c2 - R @ c)[:, None]])
        src = image.astype(np.float32) if image.dtype == np.float16 else image  # OpenCV has no float16 warp
        turned = cv2.warpAffine(
            src, forward, (W, H), flags=INTERPOLATION, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        ).astype(image.dtype, copy=False)
        if image.ndim == 3 and turned.ndim == 2:  # OpenCV drops a single channel
            turned = turned[:, :, None]
    back = np.hstack([R.T, (c - R.T @ c2)[:, None]])
    return turned, back


def extract_turned(image: np.ndarray, extract: Extractor, degrees: float) -> tuple[np.ndarray, np.ndarray]:
    """``extract``'s ``(xy, descriptors)`` of ``image`` turned by ``degrees`` (:func:`turn_image`, on a canvas of at
    most :data:`CANVAS_PIXELS` times its pixels), the keypoints mapped back into ``image`` and those that fall outside
    it (the canvas's corners) left out. Keypoints on the edge
    of the black canvas are kept: dropping those within 8 px of the photo's edge lost 15.6 correct matches per pair
    on val (CHANGELOG.md)."""
    turned, M = turn_image(image, degrees, max_pixels=CANVAS_PIXELS)
    xy, d = _check_extracted(extract(turned), f"a photo turned by {degrees:g}°", turned.shape)
    xy = xy @ M[:, :2].T + M[:, 2]
    h, w = image.shape[:2]
    inside = (xy[:, 0] > -0.5) & (xy[:, 0] < w - 0.5) & (xy[:, 1] > -0.5) & (xy[:, 1] < h - 0.5)
    return xy[inside], d[inside]


def voters(image: np.ndarray, max_keypoints: int = VOTE_KEYPOINTS, estimator: EstimatorLike = None) -> Voters:
    """What a photo brings to the votes of :func:`upright_pair`: its ``max_keypoints`` Shi-Tomasi corners' voting
    scales (log2), orientations (radians) and blended descriptors at our poses (:meth:`~.pairpose.OurVotes.strongest`);
    computed once per photo where a photo is in several pairs (:func:`~.collection.upright_collection`)."""
    from ..estimator import as_estimator

    est = as_estimator(estimator, "upright")
    feats = detect(image, max_keypoints, detector="gftt")
    if len(feats) == 0:
        return np.zeros(0), np.zeros(0), np.zeros((0, 1), np.float32)
    return OurVotes(Describer(), est).strongest(feats)


def turn_between(voters1: Voters, voters2: Voters) -> UprightTurn:
    """The turn (and zoom) from photo 1 to photo 2 that the :func:`voters` of the two photos vote for: their mutual
    nearest neighbours, each voting the difference of its keypoints' angles (:func:`~.zoom.pair_turn`) and scales
    (:func:`~.zoom.pair_zoom`)."""
    (s1, o1, d1), (s2, o2, d2) = voters1, voters2
    if len(s1) == 0 or len(s2) == 0:
        return UprightTurn(0.0, 0.0, 0, 0, False)
    m = mutual_nn(d1, d2)[0]
    zoom, turn = pair_zoom(s1, s2, m), pair_turn(o1, o2, m)
    found = turn.found
    return UprightTurn(
        degrees=float(np.degrees(turn.radians)) % 360.0 if found else 0.0,
        zoom=float(zoom.log2) + 0.0,
        votes=int(turn.votes),
        matches=int(turn.matches),
        found=bool(found),
    )


def upright_pair(
    image1: np.ndarray,
    image2: np.ndarray,
    *,
    max_keypoints: int = VOTE_KEYPOINTS,
    estimator: EstimatorLike = None,
) -> UprightTurn:
    """The turn from ``image1`` to ``image2`` (and the zoom) that our poses vote for (the module docstring):
    ``max_keypoints`` Shi-Tomasi corners per photo described at our scale and 4 strongest orientations, blended,
    matched (mutual nearest neighbours), each match voting the difference of its keypoints' strongest angles
    (:func:`~.zoom.pair_turn`) and scales (:func:`~.zoom.pair_zoom`). Where they show no turn and
    ``max_keypoints`` is under :data:`VOTE_RETRY_KEYPOINTS`, the photos vote again with that many corners
    (:attr:`UprightTurn.retried`). ``estimator``: the model that reads the poses (None: the bundled one
    :data:`patchpose.recipes.MODELS` names for ``"upright"``)."""
    from ..estimator import as_estimator

    est = as_estimator(estimator, "upright")
    turn = turn_between(voters(image1, max_keypoints, est), voters(image2, max_keypoints, est))
    if turn.found or max_keypoints >= VOTE_RETRY_KEYPOINTS:
        return turn
    again = turn_between(voters(image1, VOTE_RETRY_KEYPOINTS, est), voters(image2, VOTE_RETRY_KEYPOINTS, est))
    return replace(again, retried=True)


def fundamental_support(xy1: np.ndarray, xy2: np.ndarray, matches: np.ndarray) -> int:
    """How many ``matches`` one fundamental matrix explains within :data:`SUPPORT_PX` (OpenCV's MAGSAC; 0 below 8
    matches): which quarter turn matched, where the votes found none."""
    if len(matches) < 8:
        return 0
    p1, p2 = (
        np.ascontiguousarray(xy[i], np.float64) for xy, i in ((xy1, matches[:, 0]), (xy2, matches[:, 1]))
    )
    F, mask = cv2.findFundamentalMat(p1, p2, cv2.USAC_MAGSAC, SUPPORT_PX, 0.999, 10000)
    return 0 if F is None or mask is None else int(mask.sum())


def match_upright(
    image1: np.ndarray,
    image2: np.ndarray,
    extract: Extractor,
    *,
    turn: UprightTurn | None = None,
    estimator: EstimatorLike = None,
) -> UprightMatches:
    """Match two photos with ``extract`` (the module docstring), photo 1 extracted turned by the turn our votes
    find (:func:`upright_pair`; or ``turn``, found before, or known: :meth:`UprightTurn.known`), so that it shows its
    structures as photo 2 does (within :data:`SNAP_DEG` of a quarter turn, that quarter turn, exactly); where
    the votes show no turn, photo 1 at each of :data:`QUARTER_TURNS` and the one whose mutual nearest neighbours
    one fundamental matrix explains most (:func:`fundamental_support`) kept: 4 extractions of photo 1 instead of
    one. Photo 2 is extracted once, as it is."""
    t0 = time.perf_counter()
    check_image(image1)
    check_image(image2)
    if not callable(extract):
        raise InputError(
            f"extract must be a callable image -> (xy, descriptors), got {type(extract).__name__}"
        )
    if turn is not None and not isinstance(turn, UprightTurn):
        raise InputError(f"turn must be an UprightTurn (upright_pair's), got {type(turn).__name__}")
    # photo 2 first: an extractor that refuses the photos (ALIKED a float image, say) says so before the votes
    xy2, d2 = _check_extracted(extract(image2), "photo 2", np.shape(image2))
    if turn is None:
        turn = upright_pair(image1, image2, estimator=estimator)
    tries = (turn.degrees,) if turn.found else QUARTER_TURNS
    best = None
    for degrees in tries:
        xy1, d1 = extract_turned(image1, extract, degrees)
        if d1.shape[1:] != d2.shape[1:] and len(d1) and len(d2):
            raise InputError(f"the extractor gave descriptors of {d1.shape[1]} and {d2.shape[1]} dimensions")
        m, dist = mutual_nn(d1, d2)
        score = fundamental_support(xy1, xy2, m) if len(tries) > 1 else len(m)
        if best is None or score > best[0]:
            best = (score, degrees, xy1, m, dist)
    _, degrees, xy1, m, dist = best
    return UprightMatches(
        xy1=xy1,
        xy2=xy2,
        matches=m,
        distances=dist,
        turn=turn,
        degrees=float(degrees),
        tried=tuple(float(t) for t in tries),
        seconds=time.perf_counter() - t0,
    )


__all__ = [
    "CANVAS_PIXELS",
    "SNAP_DEG",
    "applied_turn",
    "QUARTER_TURNS",
    "SUPPORT_PX",
    "VOTE_KEYPOINTS",
    "VOTE_RETRY_KEYPOINTS",
    "Extractor",
    "UprightMatches",
    "UprightTurn",
    "extract_turned",
    "fundamental_support",
    "match_upright",
    "turn_between",
    "turn_image",
    "upright_pair",
    "voters",
]
