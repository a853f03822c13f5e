"""Un-turning a collection (#63): each photo's turn from the turns our network votes between pairs of photos
(:func:`~.upright.upright_pair`'s), so that every photo can be extracted once, un-turned, by a feature trained
upright.

* :func:`collection_turns` — in-plane rotation averaging: the turn of each photo that best explains the pairwise
  turns (phase synchronisation, the leading eigenvector of the pairs' Hermitian matrix, reweighted a few times
  against pairs that disagree; closed form, no start), one answer per connected group of photos.
* :func:`upright_collection` — the pairwise turns of a folder's worth of photos (each photo's corners detected and
  described once; every pair, or the pairs given) averaged by :func:`collection_turns`.

The turns fix the photos relative to one another only: upright is taken as the mean of the largest set of photos
within :data:`AGREE_DEG` of one photo (most photos are taken upright); where sets tie (as many photos sideways as
upright), the set under which the photos look upright by :func:`upright_cue` (lighter above than below, summed over
the photos; no network), and where that ties too, the set that holds the earliest photo.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..data.patches import _as_float, check_image, check_image_shape, to_gray
from ..errors import InputError, is_int_in
from .matcher import short_repr
from .retrieval import nearest_pairs, vlad
from .upright import VOTE_KEYPOINTS, UprightTurn, _check_degrees, turn_between, voters

if TYPE_CHECKING:
    from ..estimator import EstimatorLike

#: degrees: the scale of the reweighting (a pair whose turn disagrees by this with the photos' counts half) and the
#: agreement of :attr:`CollectionTurns.consistent` and of the choice of upright (set before any run, not tuned: a
#: voted turn is within 0.2° of the truth at the median, a wrong one tens of degrees off)
AGREE_DEG = 10.0
#: reweighting rounds of :func:`collection_turns`
ROUNDS = 10


@dataclass(frozen=True, repr=False)
class CollectionTurns:
    """Each photo's turn: :func:`~.upright.turn_image` of photo ``i`` by ``degrees[i]`` shows it as the collection's
    upright photos are shown.

    Attributes:
        degrees: ``(N,)`` degrees counter-clockwise as displayed, in [0, 360) (0 where not ``found``).
        found: ``(N,)`` bool: the photo is joined to others by found pairwise turns.
        pairs: ``(P, 2)`` the pairs whose turn was found (photo indices).
        pair_degrees: ``(P,)`` their turns, degrees (photo j shows photo i's structures turned by this).
        residual: ``(P,)`` degrees in (−180, 180]: each pair's turn minus the one the photos' turns make.
        group: ``(N,)`` which connected group of found pairs each photo is in (−1: none); turns are relative
            within a group (photos of two groups share no found pair, so no turn relates them).
    """

    degrees: np.ndarray
    found: np.ndarray
    pairs: np.ndarray
    pair_degrees: np.ndarray
    residual: np.ndarray
    group: np.ndarray

    __repr__ = short_repr

    @property
    def consistent(self) -> np.ndarray:
        """(P,) bool: the pairs whose turn agrees with the photos' within :data:`AGREE_DEG`."""
        return np.abs(self.residual) <= AGREE_DEG


def _wrap(degrees: np.ndarray) -> np.ndarray:
    """Degrees into (−180, 180]."""
    return -(np.mod(-np.asarray(degrees, np.float64) + 180.0, 360.0) - 180.0)


def upright_cue(image: np.ndarray) -> np.ndarray:
    """How much ``image`` looks upright when turned by 0, 90, 180 and 270° counter-clockwise: ``(4,)``, the mean gray
    of its top third minus its bottom third (sky and lights above, ground below), on a 128 px wide copy. Weak for one
    photo (the upright turn scores highest for 40 % of the train and val photos, 80–88 % of the shared sets'), useful
    summed over a collection's photos, where :func:`collection_turns` breaks a tie between as many photos sideways as
    upright with it."""
    import cv2

    h, w = check_image_shape(image)
    a = image[:, :, :3] if image.ndim == 3 and image.shape[2] == 4 else image
    a = a[:, :, 0] if a.ndim == 3 and a.shape[2] == 1 else a
    if a.dtype not in (np.uint8, np.uint16, np.float32, np.float64):
        a = a.astype(np.float32)  # OpenCV resizes these four; _as_float refuses what is no image
    # shrunk first, in the photo's own type (a full-size float copy of a 24-megapixel photo is 290 MB), then read
    # as float in [0, 1] (uint16 as uint8 alike; NaN refused) and as gray
    small = cv2.resize(
        np.ascontiguousarray(a), (128, max(3, round(128 * h / w))), interpolation=cv2.INTER_AREA
    )
    small = to_gray(_as_float(small)) * 255.0

    def cue(a: np.ndarray) -> float:
        t = max(1, a.shape[0] // 3)
        return float(a[:t].mean() - a[-t:].mean())

    return np.array([cue(np.rot90(small, q)) for q in range(4)])


def collection_turns(
    count: int, pair_turns: Sequence[tuple[int, int, float]], up: np.ndarray | None = None
) -> CollectionTurns:
    """The turn of each of ``count`` photos from pairwise turns ``(i, j, degrees)`` (photo ``j`` shows photo ``i``'s
    structures turned by ``degrees`` counter-clockwise, :attr:`UprightTurn.degrees`): the angles ``u`` with
    ``u[j] − u[i] ≈ −degrees`` (mod 360) for most pairs, by phase synchronisation (the leading eigenvector of the
    Hermitian matrix of the pairs' turns, weights ``1 / (1 + (r / AGREE_DEG)²)`` of each pair's residual ``r``, in
    :data:`ROUNDS` rounds). Within each connected group upright is the mean of the largest set of photos within
    :data:`AGREE_DEG` of one photo; where sets tie (as many photos sideways as upright), the set under which the
    photos look most upright by ``up`` (``(count, 4)``: each photo's :func:`upright_cue` at the quarter turns; its
    turn taken to the nearest quarter), and without ``up`` or where that ties too, the set that holds the earliest
    photo. Photos in no pair keep 0."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise InputError(f"count must be an integer >= 0, got {count!r}")
    if isinstance(pair_turns, (str, bytes)) or not isinstance(pair_turns, Sequence):
        raise InputError(f"pair_turns must be a sequence of (i, j, degrees), got {type(pair_turns).__name__}")
    rows = []
    for p in pair_turns:
        if not isinstance(p, (tuple, list)) or len(p) != 3:
            raise InputError(f"each pair turn must be (i, j, degrees), got {p!r}")
        i, j, d = p
        if not all(
            not isinstance(k, bool) and isinstance(k, (int, np.integer)) and 0 <= k < count for k in (i, j)
        ):
            raise InputError(f"photo indices must be integers from 0 to {count - 1}, got {(i, j)!r}")
        if i == j:
            raise InputError(f"a pair turn needs two photos, got ({i}, {j})")
        rows.append((int(i), int(j), _check_degrees(d)))
    if up is not None:
        up = np.asarray(up, np.float64) if not isinstance(up, (str, bytes)) else np.zeros(0)
        if up.shape != (count, 4) or not np.isfinite(up).all():
            raise InputError(
                f"up must be ({count}, 4) finite scores (upright_cue of each photo), got {up.shape}"
            )
    u = np.zeros(count)
    group = np.full(count, -1, np.int64)
    pairs = np.array([(i, j) for i, j, _ in rows], np.int64).reshape(-1, 2)
    turns = np.array([d for *_, d in rows], np.float64)
    parent = list(range(count))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in pairs:
        parent[root(int(i))] = root(int(j))
    joined = sorted({int(k) for k in pairs.ravel()})
    for g, r in enumerate(
        sorted({root(k) for k in joined}, key=lambda r: min(k for k in joined if root(k) == r))
    ):
        nodes = np.array([k for k in joined if root(k) == r])
        index = np.full(count, -1)
        index[nodes] = np.arange(len(nodes))
        sel = index[pairs[:, 0]] >= 0
        a, b, d = index[pairs[sel, 0]], index[pairs[sel, 1]], np.radians(turns[sel])
        w = np.ones(len(d))
        for _ in range(ROUNDS):
            H = np.zeros((len(nodes), len(nodes)), np.complex128)
            np.add.at(H, (b, a), w * np.exp(-1j * d))
            np.add.at(H, (a, b), w * np.exp(1j * d))
            v = np.linalg.eigh(H)[1][:, -1]
            angles = np.degrees(np.angle(v))
            res = _wrap(angles[b] - angles[a] + np.degrees(d))
            w = 1.0 / (1.0 + (res / AGREE_DEG) ** 2)
        # upright: the mean of the largest set of photos within AGREE_DEG of one photo (ties: the upright cue, then
        # the set that holds the earliest photo)
        near = np.abs(_wrap(angles[None, :] - angles[:, None])) <= AGREE_DEG
        means = [angles[k] + float(np.mean(_wrap(angles[near[k]] - angles[k]))) for k in range(len(nodes))]

        # the photos' upright cue, each turned as upright at set k would turn it (its turn to the nearest quarter)
        looks = np.zeros(len(nodes))
        if up is not None:
            for k in range(len(nodes)):
                quarter = np.round(np.mod(angles - means[k], 360.0) / 90.0).astype(int) % 4
                looks[k] = up[nodes, quarter].sum()
        k = min(range(len(nodes)), key=lambda k: (-int(near[k].sum()), -looks[k], int(np.argmax(near[k])), k))
        upright = means[k]
        # angles[i] = c − (photo i's structures' direction): turning photo i by u[i] shows it as they are upright
        u[nodes] = np.mod(angles - upright, 360.0)
        group[nodes] = g
    residual = _wrap(turns - (u[pairs[:, 0]] - u[pairs[:, 1]])) if len(pairs) else np.zeros(0)
    return CollectionTurns(
        degrees=np.mod(u, 360.0) + 0.0,
        found=group >= 0,
        pairs=pairs,
        pair_degrees=turns,
        residual=residual,
        group=group,
    )


def upright_collection(
    images: Sequence[np.ndarray],
    pairs: Sequence[tuple[int, int]] | None = None,
    *,
    max_keypoints: int = VOTE_KEYPOINTS,
    estimator: EstimatorLike = None,
    progress: bool = False,
    retrieval: int | None = None,
) -> CollectionTurns:
    """Each photo's turn in ``images`` (a sequence of ``H×W×3`` uint8 RGB or ``H×W`` gray arrays): the turns our
    votes find between the photos of ``pairs`` (None: every pair; each photo's corners detected and described
    once, each pair then matched and voted as :func:`~.upright.upright_pair` votes one), averaged by
    :func:`collection_turns`, ties between as many photos sideways as upright broken by each photo's
    :func:`upright_cue`. Pairs whose votes show no turn do not count. ``estimator``: as
    :func:`~.upright.upright_pair`'s. ``progress``: a bar per photo and per pair on stderr. ``retrieval``: instead
    of ``pairs``, each photo paired with its ``retrieval`` most similar photos (:func:`~.retrieval.nearest_pairs`
    by :func:`~.retrieval.vlad` of the votes' own descriptors: no more reading), for an unordered collection."""
    from tqdm import tqdm

    from ..estimator import as_estimator

    if isinstance(images, np.ndarray) or not isinstance(images, Sequence):
        raise InputError(f"images must be a list of photos (arrays), got {type(images).__name__}")
    n = len(images)
    if retrieval is not None:
        if pairs is not None:
            raise InputError("retrieval chooses the pairs: give it or pairs, not both")
        if not is_int_in(retrieval, 1):
            raise InputError(f"retrieval must be a whole number >= 1, got {retrieval!r}")
        pairs = []  # every photo votes; the pairs are chosen once the votes' descriptors are there
    elif pairs is None:
        pairs = list(itertools.combinations(range(n), 2))
    else:
        if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
            raise InputError(f"pairs must be a sequence of (i, j), got {type(pairs).__name__}")
        pairs = [tuple(p) if isinstance(p, (tuple, list)) else (p,) for p in pairs]
        for p in pairs:
            if (
                len(p) != 2
                or not all(
                    not isinstance(k, bool) and isinstance(k, (int, np.integer)) and 0 <= k < n for k in p
                )
                or p[0] == p[1]
            ):
                raise InputError(f"pairs must be two different photo indices from 0 to {n - 1}, got {p!r}")
    est = as_estimator(estimator, "upright")
    used = set(range(n)) if retrieval is not None else {int(k) for p in pairs for k in p}
    bar = dict(disable=not progress, file=sys.stderr)
    votes = {}
    up = np.zeros((n, 4))
    for k in tqdm(range(n), desc="turn votes: photos", unit="photo", **bar):
        im = images[k]  # each photo read once (a sequence may load it from a file here)
        try:
            check_image(im)
        except InputError as e:
            raise InputError(f"photo {k}: {e}") from None
        if k in used:
            votes[k] = voters(im, max_keypoints, est)
            up[k] = upright_cue(im)
    if retrieval is not None:
        pairs = nearest_pairs(vlad([votes[k][2] for k in range(n)]), retrieval) if n > 1 else []
    found = []
    for i, j in tqdm(pairs, desc="turn votes: pairs", unit="pair", **bar):
        t: UprightTurn = turn_between(votes[int(i)], votes[int(j)])
        if t.found:
            found.append((int(i), int(j), t.degrees))
    return collection_turns(n, found, up)


def unturn_settings(estimator: EstimatorLike = None, canvas: bool = False) -> dict:
    """What a reconstruction's or an extraction's settings record of un-turning (the vote model and every constant
    of the turns; with ``canvas``, where a learned feature runs on the turned photos, also the turned canvas's
    :data:`~.upright.CANVAS_PIXELS` and :data:`~.upright.INTERPOLATION`), so that a finished output made under other
    rules is not reused."""
    from ..estimator import as_estimator
    from . import upright

    est = as_estimator(estimator, "upright")
    out = {
        "model": est.name,
        "model_fingerprint": est.fingerprint,
        "vote_keypoints": upright.VOTE_KEYPOINTS,
        "snap_deg": upright.SNAP_DEG,
        "agree_deg": AGREE_DEG,
        "rounds": ROUNDS,
        "upright": "largest agreeing set; ties: the upright cue summed, then the set of the first photo",
    }
    if canvas:
        out.update(canvas_pixels=upright.CANVAS_PIXELS, interpolation_cv2=int(upright.INTERPOLATION))
    return out


def neighbour_pairs(n: int, window: int | None, unturn: bool = True) -> list[tuple[int, int]] | None:
    """The pairs of ``n`` photos at most ``window`` apart in their order (a sequence's neighbours), for
    :func:`upright_collection`'s ``pairs``; None where ``window`` is None (every pair). A ``window`` below 1, or one
    given without ``unturn``, is a one-line :class:`InputError` (``--unturn-window``)."""
    if window is None:
        return None
    if unturn is not True or not is_int_in(window, 1):
        raise InputError(
            f"--unturn-window must be a whole number >= 1 with --unturn, got {window!r}"
            + ("" if unturn is True else " without --unturn")
        )
    return [(i, j) for i in range(n) for j in range(i + 1, min(n, i + int(window) + 1))]


__all__ = [
    "AGREE_DEG",
    "ROUNDS",
    "CollectionTurns",
    "collection_turns",
    "unturn_settings",
    "upright_collection",
    "neighbour_pairs",
]
