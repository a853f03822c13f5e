"""Two photos matched in one call: :func:`match_pair` detects keypoints, describes them with a recipe
(:data:`patchpose.recipes.RECIPES`) and matches them (mutual nearest neighbours).

* ``"rectify"`` (the default at SIFT's own detections): the photo whose structures look smaller warped into the
  other's frame through the affine map that SIFT's ratio-test matches agree on, SIFT detected again there and both
  photos described upright (:mod:`.rectify`; the warped photo's keypoints are the new ones; no network);
* ``"pair-pose"`` (the default at corners and your own keypoints): every keypoint of a photo at one pose, the turn,
  zoom or slant between the two photos that the keypoints' poses vote for (ours where they have no scale; SIFT's at
  SIFT's own detections, the gradient's at keypoints with sizes: :mod:`.pairpose`);
* ``"pose"``: each keypoint at the detector's scale, or ours where it gives none (corners, your own keypoints
  without sizes), and the dominant gradient's angle there, one photo at a time (what a collection gets);
* ``"blend"``: each keypoint at its gradient histogram's 4 strongest orientations blended, one photo at a
  time, no model (:func:`patchpose.compute_blended`'s default).

The descriptor is RootSIFT on patches cut at those poses (:class:`~.describe.Describer`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from ..errors import InputError
from ..estimator import PatchPoseEstimator
from ..geometry import check_homography, reprojection_errors
from ..recipes import MODELS, RECIPES
from .blend import blend_descriptors
from .candidates import gradient_blend_candidates, pose_descriptors, pose_needs_network
from .describe import Describer
from .features import detect
from .matcher import mutual_nn, short_repr
from .pairpose import pair_pose_descriptors, pair_pose_needs_network
from .rectify import rectified_pair

#: what :func:`match_pair` and ``patchpose match`` describe keypoints with unless told otherwise, at SIFT's own
#: detections and elsewhere (:func:`default_recipe`): ``rectify`` detects one photo's keypoints again, which only
#: the detector can do
DEFAULT_RECIPES = MappingProxyType({"sift": "rectify", "other": "pair-pose"})
#: px: a match is correct within this of where the homography maps its first keypoint, unless told otherwise
CORRECT_PX = 3.0


@dataclass(frozen=True, repr=False)
class PairMatches:
    """Mutual nearest-neighbour matches between two images' keypoints, described with one recipe.

    Attributes:
        recipe: the recipe the keypoints were described with (a key of :data:`patchpose.recipes.RECIPES`).
        xy1: ``(N, 2)`` keypoints of image 1, pixels (``rectify``: found again if ``redetected`` is 1).
        xy2: ``(M, 2)`` keypoints of image 2 (found again if ``redetected`` is 2).
        matches: ``(L, 2)`` indices into ``xy1``, ``xy2``.
        distances: ``(L,)`` descriptor distances.
        error_px: ``(L,)`` reprojection error under the homography; None without one.
        correct: ``(L,)`` error within the threshold; None without a homography.
        threshold: px: a match is correct within this.
        seconds: detection, poses, description and matching.
        zoom: ``pair-pose``: the pair's zoom (log2: structures in image 2 look ``2**zoom`` times as large) that
            the keypoints' scales voted (ours; at SIFT's detections SIFT's); None for the other recipes, and where
            too few votes agreed on one (:attr:`~patchpose.matching.zoom.PairZoom.found`).
        turn: ``pair-pose``: the pair's turn (degrees, CCW as displayed, in [0, 360)) that their angles voted;
            None for the other recipes, and where the votes showed no one turn (each keypoint then at its own poses).
        affine: ``pair-pose``: the ``(2, 2)`` affine map from image 1 to image 2 (pixels, y down) that the matches
            which voted for the turn agree on, where it cut photo 2 through it (a slant besides the turn and zoom);
            ``rectify``: the ``(2, 3)`` map from image 1 to image 2 that a photo was warped through (None: none
            found, each photo matched as SIFT with all its orientations); else None.
        redetected: ``rectify``: which image's keypoints were detected again in its view warped into the other's
            frame (1 or 2; None: none, no map found); else None.
    """

    recipe: str
    xy1: np.ndarray
    xy2: np.ndarray
    matches: np.ndarray
    distances: np.ndarray
    error_px: np.ndarray | None
    correct: np.ndarray | None
    threshold: float
    seconds: float
    zoom: float | None = None
    turn: float | None = None
    affine: np.ndarray | None = None
    redetected: int | None = None

    __repr__ = short_repr

    def with_threshold(self, threshold: float) -> PairMatches:
        """These matches with a match correct within ``threshold`` px (:func:`check_threshold`) instead."""
        threshold = check_threshold(threshold)
        correct = None if self.error_px is None else self.error_px <= threshold
        return replace(self, threshold=float(threshold), correct=correct)

    def summary(self) -> dict:
        """Counts for a report: keypoints per image, matches, and with ground truth the correct ones and
        their share (``mma@Tpx``, 0 when there is no match)."""
        doc = {
            "recipe": self.recipe,
            "keypoints": [len(self.xy1), len(self.xy2)],
            "matches": int(len(self.matches)),
            "seconds": round(self.seconds, 3),
        }
        if self.recipe == "rectify":
            doc["affine"] = None if self.affine is None else (np.round(self.affine, 4) + 0.0).tolist()
            doc["redetected"] = self.redetected
        if self.recipe == "pair-pose":
            doc["zoom_octaves"] = None if self.zoom is None else round(self.zoom, 3) + 0.0  # never -0.0
            doc["turn_deg"] = None if self.turn is None else round(self.turn, 2) % 360.0
            doc["affine"] = None if self.affine is None else (np.round(self.affine, 4) + 0.0).tolist()
        if self.correct is not None:
            doc[f"correct@{self.threshold:g}px"] = int(self.correct.sum())
            doc[f"mma@{self.threshold:g}px"] = float(self.correct.mean()) if len(self.matches) else 0.0
        return doc


def check_threshold(threshold) -> float:
    """``threshold`` as a float, or a one-line :class:`InputError` unless it is a positive number of pixels."""
    if isinstance(threshold, bool) or not (
        isinstance(threshold, (int, float)) and np.isfinite(threshold) and threshold > 0
    ):
        raise InputError(f"the match threshold must be a positive number of pixels, got {threshold!r}")
    return float(threshold)


def _pair(value, what: str) -> tuple | None:
    """``value`` as a pair ``(for image 1, for image 2)``, None as None; a one-line error otherwise."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise InputError(f"{what} must be a pair (one for each image), got {type(value).__name__}")
    return tuple(value)


def default_recipe(detector: str = "sift", keypoints=None) -> str:
    """The recipe :func:`match_pair` takes unless told: ``rectify`` where it detects SIFT's keypoints itself,
    ``pair-pose`` at corners and at your own keypoints (:data:`DEFAULT_RECIPES`)."""
    return DEFAULT_RECIPES["sift" if detector == "sift" and keypoints is None else "other"]


def match_pair(
    image1: np.ndarray,
    image2: np.ndarray,
    *,
    recipe: str | None = None,
    detector: str = "sift",
    max_keypoints: int = 2000,
    keypoints: tuple[np.ndarray, np.ndarray] | None = None,
    sizes: tuple[np.ndarray, np.ndarray] | None = None,
    homography: np.ndarray | None = None,
) -> PairMatches:
    """Detect keypoints (or take ``keypoints``), describe them with ``recipe`` and match them (mutual nearest
    neighbours).

    Args:
        image1, image2: ``H×W×3`` uint8 RGB or ``H×W`` gray arrays.
        recipe: ``"rectify"``, ``"pair-pose"``, ``"pose"`` or ``"blend"`` (the module docstring;
            :data:`patchpose.recipes.RECIPES` says what each costs and reads); None: :func:`default_recipe`
            (``rectify`` at SIFT's own detections, else ``pair-pose``). ``rectify`` needs ``detector="sift"``
            and no ``keypoints``.
        detector, max_keypoints: the keypoints detected per image: ``"sift"`` (OpenCV SIFT), ``"gftt"``
            (Shi-Tomasi corners) or ``"harris"``.
        keypoints: ``(xy1, xy2)``, each ``(N, 2)`` x, y pixels: your own keypoints instead; ``sizes``:
            ``(r1, r2)``, each ``(N,)``, their detector's sizes if it gives any (the half-width of each
            region in pixels, as ``kornia.feature.get_laf_scale`` reads Key.Net's LAFs): ``pair-pose`` then
            describes each keypoint about its size too, and ``blend`` and ``pose`` at it.
        homography: the 3×3 map from image 1 to image 2, if known: each match then gets its reprojection
            error and is correct within :data:`CORRECT_PX` px (:meth:`PairMatches.with_threshold` for another).

    Returns:
        :class:`PairMatches`: ``xy1[matches[:, 0]]`` ↔ ``xy2[matches[:, 1]]`` (``rectify``: the warped photo's
        keypoints are the ones detected again, not those detected first)."""
    if recipe is None:
        recipe = default_recipe(detector, keypoints)
    if not isinstance(recipe, str) or recipe not in RECIPES:
        raise InputError(f"recipe must be one of {sorted(RECIPES)}, got {recipe!r}")
    if recipe == "rectify" and (detector != "sift" or keypoints is not None):
        raise InputError(
            "recipe 'rectify' detects keypoints again with SIFT: use detector 'sift' (--detector sift) and no "
            "keypoints of your own (pair-pose takes them)"
        )
    if homography is not None:
        homography = check_homography(homography)
    kp = _pair(keypoints, "keypoints") or (None, None)
    sz = _pair(sizes, "sizes") or (None, None)
    t0 = time.time()
    f1, f2 = (detect(im, max_keypoints, k, detector, s) for im, k, s in zip((image1, image2), kp, sz))
    describer = Describer()
    zoom = turn = affine = redetected = None
    xy1, xy2 = f1.xy, f2.xy
    if recipe == "rectify":  # no network
        r = rectified_pair(f1, f2, describer, max_keypoints)
        d1, d2, xy1, xy2, affine = r.descriptors1, r.descriptors2, r.xy1, r.xy2, r.affine
        redetected = r.warped or None
    elif recipe == "pair-pose":  # our network only for the votes where keypoints have no scale
        est = PatchPoseEstimator.load(MODELS["pair-pose"]) if pair_pose_needs_network(f1, f2) else None
        d1, d2, zoom, turn = pair_pose_descriptors(f1, f2, describer, est)
    elif recipe == "pose":
        # our network only where the detector gives no scale
        est = (
            PatchPoseEstimator.load(MODELS["pose"])
            if pose_needs_network(f1) or pose_needs_network(f2)
            else None
        )
        d1, d2 = (pose_descriptors(f, describer, est) for f in (f1, f2))
    else:
        d1, d2 = (_gradient_blend(f, describer) for f in (f1, f2))
    m, dist = mutual_nn(d1, d2)
    err = None if homography is None else reprojection_errors(homography, xy1[m[:, 0]], xy2[m[:, 1]])
    if turn is not None and turn.affine is not None:
        affine = turn.affine.matrix.copy()
    return PairMatches(
        recipe=recipe,
        xy1=xy1,
        xy2=xy2,
        matches=m,
        distances=dist,
        error_px=err,
        correct=None if err is None else err <= CORRECT_PX,
        threshold=CORRECT_PX,
        seconds=time.time() - t0,
        zoom=None if zoom is None or not zoom.found else zoom.log2,
        turn=None if turn is None or not turn.found else float(np.degrees(turn.radians)),
        affine=None if affine is None else np.array(affine),
        redetected=redetected,
    )


def _gradient_blend(feats, describer: Describer) -> np.ndarray:
    """``(N, D)``: one descriptor per keypoint blended over the gradient's peaks at the detector's size."""
    _, _, w, d = gradient_blend_candidates(feats, describer)
    return blend_descriptors(d, w)


__all__ = ["CORRECT_PX", "DEFAULT_RECIPES", "PairMatches", "check_threshold", "default_recipe", "match_pair"]
