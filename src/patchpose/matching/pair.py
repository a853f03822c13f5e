"""Two photos matched in one call: detect, describe each keypoint at a pose, mutual nearest neighbours.

:func:`match_pair` is what ``patchpose match`` runs; its default description, :data:`DEFAULT_POSE`, is the one
docs/peers.md recommends for matching two photos at SIFT keypoints and corners: every keypoint at one pose per
photo, the turn and the zoom between the two photos that our angles and scales vote for at tentative matches
(:func:`~patchpose.matching.zoom.pair_turn`, :func:`~patchpose.matching.zoom.pair_zoom`), each keypoint
described at three sizes.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError, is_int_in
from ..estimator import PatchPoseEstimator
from ..geometry import check_homography

#: the poses ``match_pair`` can describe keypoints at, by name, and the row of
#: :func:`~patchpose.matching.pipeline.match_images` that computes each
MATCH_POSES: dict[str, str] = {
    "ours": "ours",
    "ours-topk": "ours_top{k}",
    "ours-angle": "ours_angle",
    "sift": "sift",
    # SIFT as users run it: a descriptor at every orientation SIFT found at the location (about 1.2 per keypoint;
    # a pair's distance is that of its closest descriptors)
    "sift-all": "sift_all",
    "sift-resolved": "sift_resolved_by_ours",
    "dominant-gradient": "dominant_gradient",
    "log-dominant-gradient": "log+dominant_gradient",
    # one descriptor per keypoint blended over 4 orientation peaks (patchpose.matching.blend): ours (for
    # corners), or a gradient histogram's at the detector's scale (SIFT, Key.Net): docs/peers.md
    "ours-blend": "ours_blend",
    "gradient-blend": "dominant_gradient_blend",
    # the same read on the affine shape of our shape network (patchpose.shape), each peak at 3 sizes: for
    # photos seen at a slant (docs/peers.md)
    "shape-blend": "shape_pooled_blend",
    # the same at a fixed size widened by the pair's zoom, which our scales vote for (patchpose.matching.zoom):
    # for corners, and at SIFT keypoints with their size set aside (docs/peers.md)
    "shape-zoom-blend": "shape_zoom_blend",
    # every keypoint at one pose per photo: the turn and the zoom between the two photos that our angles and scales
    # vote for (patchpose.matching.zoom), or the affine map their matches agree on where it slants the view, each
    # keypoint described at 3 sizes (docs/peers.md)
    "pair-pose": "pair_pose",
    "none": "lower",
}
#: the model whose scales vote for the pair's zoom (``shape-zoom-blend``) where none is named: the one
#: fine-tuned at re-detected corners, whose ``ours_blend`` matches corners best (docs/peers.md)
ZOOM_VOTE_MODEL = "patchpose-v10"


#: the poses that read SIFT's own (its angle, or every orientation it found): SIFT's detections only
SIFT_POSES = ("sift", "sift-all", "sift-resolved")
#: what :func:`match_pair` and ``patchpose match`` describe keypoints at unless told otherwise
DEFAULT_POSE = "pair-pose"


@dataclass(frozen=True)
class PairMatches:
    """Mutual nearest-neighbour matches between two images' keypoints, described at one kind of pose."""

    pose: str  #: the pose the descriptors were cut at (a key of :data:`MATCH_POSES`)
    xy1: np.ndarray  #: (N, 2) keypoints of image 1, pixels
    xy2: np.ndarray  #: (M, 2) keypoints of image 2
    matches: np.ndarray  #: (L, 2) indices into xy1, xy2
    distances: np.ndarray  #: (L,) descriptor distances
    error_px: np.ndarray | None  #: (L,) reprojection error under the homography; None without one
    correct: np.ndarray | None  #: (L,) error within the threshold; None without a homography
    threshold: float  #: px: a match is correct within this
    seconds: float  #: detection, poses, description and matching
    #: the pair's zoom (log2: structures in image 2 look ``2**zoom`` times as large) that our scales voted, for
    #: the poses that vote it (``pair-pose``, ``shape-zoom-blend``); else None
    zoom: float | None = None
    #: the pair's turn (degrees, CCW as displayed, in [0, 360)) that our angles voted, for ``pair-pose``; None
    #: for the other poses, and where the votes showed no one turn (each keypoint then at its own poses)
    turn: float | None = None
    #: ``(2, 2)``: the affine map from image 1 to image 2 (pixels, y down) that the matches which voted for the
    #: turn agree on, where ``pair-pose`` cut photo 2 through it (a slant besides the turn and zoom); else None
    affine: np.ndarray | None = None

    def summary(self) -> dict:
        """Counts for a report: keypoints per image, matches, and with ground truth the correct ones and
        their share (``mma@Tpx``, 0 when there is no match)."""
        doc = {
            "pose": self.pose,
            "keypoints": [len(self.xy1), len(self.xy2)],
            "matches": int(len(self.matches)),
            "seconds": round(self.seconds, 3),
        }
        if self.zoom is not None:
            doc["zoom_octaves"] = round(self.zoom, 3) + 0.0  # never -0.0
        if self.pose == "pair-pose":
            doc["turn_deg"] = None if self.turn is None else round(self.turn, 2) % 360.0
            doc["affine"] = None if self.affine is None else np.round(self.affine, 4).tolist()
        if self.correct is not None:
            doc[f"correct@{self.threshold:g}px"] = int(self.correct.sum())
            doc[f"mma@{self.threshold:g}px"] = float(self.correct.mean()) if len(self.matches) else 0.0
        return doc


def match_pair(
    image1: np.ndarray,
    image2: np.ndarray,
    *,
    pose: str = DEFAULT_POSE,
    weights: str | Path | None = None,
    read_plan: Mapping[str, float] | None = None,
    top_k: int = 4,
    homography: np.ndarray | None = None,
    threshold: float = 3.0,
    max_keypoints: int = 2000,
    detector: str = "sift",
    keypoints1: np.ndarray | None = None,
    keypoints2: np.ndarray | None = None,
    sizes1: np.ndarray | None = None,
    sizes2: np.ndarray | None = None,
    descriptor: str = "sift",
    descriptor_weights: str | Path | None = None,
    peers: str | Path | None = None,
) -> PairMatches:
    """Detect keypoints (or take ``keypoints1``/``keypoints2``), give them a ``pose`` (a key of
    :data:`MATCH_POSES`), describe the patches cut at those poses and match them (mutual nearest neighbours).

    Args:
        image1, image2: ``H×W×3`` uint8 RGB or ``H×W`` gray arrays.
        pose: :data:`DEFAULT_POSE` (the recommended description, docs/peers.md) or another key of
            :data:`MATCH_POSES`.
        weights, read_plan: the model read for the poses that use it (a bundled name or a file; None: the
            default model, and :data:`ZOOM_VOTE_MODEL` for ``shape-zoom-blend``), and changes to its read plan.
        top_k: candidates per keypoint for ``pose="ours-topk"`` (at least 2).
        homography: the 3×3 map from image 1 to image 2, if known: each match then gets its reprojection
            error and is correct within ``threshold`` px.
        max_keypoints, detector: the keypoints detected per image (``"sift"``, ``"harris"`` or ``"gftt"``;
            ``"keynet"``, kornia's Key.Net, with ``peers``), unless ``keypoints1`` and ``keypoints2``
            (``(N, 2)`` x, y) are given; ``sizes1``, ``sizes2`` ``(N,)``: their detector's sizes, if it gives
            any (the half-width of each region in pixels, as ``kornia.feature.get_laf_scale`` reads Key.Net's
            LAFs): the default describes each keypoint about its size too.
        descriptor, descriptor_weights: the descriptor cut at each pose (``"sift"``: RootSIFT; ``"hardnet"``,
            ``"sosnet"`` with a local state dict; ``"tfeat"``, ``"hardtfeat"`` with ``peers``).
        peers: the folder of the peers' weights (docs/peers.md), for Key.Net and TFeat/HardTFeat: for
            comparison only, never bundled.

    Returns:
        :class:`PairMatches`: ``xy1[matches[:, 0]]`` ↔ ``xy2[matches[:, 1]]``."""
    from .peers import Peers
    from .pipeline import PAIR_ROWS, MatchConfig, check_detector, match_images

    if not isinstance(pose, str) or pose not in MATCH_POSES:
        raise InputError(f"pose must be one of {sorted(MATCH_POSES)}, got {pose!r}")
    if isinstance(threshold, bool) or not (
        isinstance(threshold, numbers.Real) and math.isfinite(threshold) and threshold > 0
    ):
        raise InputError(
            f"the match threshold (--threshold) must be a positive number of pixels, got {threshold}"
        )
    if not is_int_in(top_k, 2):
        raise InputError(
            f"top_k (--top-k, the candidates of pose ours-topk) must be an integer of at least 2, got {top_k!r}"
        )
    if read_plan is not None and not isinstance(read_plan, Mapping):
        raise InputError(
            f"read_plan must be a mapping of read-plan settings to values, got {type(read_plan).__name__}"
        )
    if homography is not None:
        homography = check_homography(homography)
    if (keypoints1 is None) != (keypoints2 is None):
        raise InputError("give keypoints for both images (--keypoints1 and --keypoints2) or for none")
    if (sizes1 is None) != (sizes2 is None):
        raise InputError("give sizes for both images' keypoints (sizes1 and sizes2) or for none")
    if pose in SIFT_POSES and (detector != "sift" or keypoints1 is not None):
        raise InputError(
            f"--pose {pose} needs SIFT's own detections (--detector sift, no --keypoints1/2): it reads SIFT's pose"
        )
    if peers is not None and not isinstance(peers, Peers):
        peers = Peers(peers)
    if keypoints1 is None:
        check_detector(detector, peers)
    row = MATCH_POSES[pose].format(k=top_k)
    if weights is None and row in PAIR_ROWS:
        weights = ZOOM_VOTE_MODEL
    # only the rows that read our model load it
    est = (
        PatchPoseEstimator.load(weights).with_plan(**(read_plan or {}))
        if row not in ("lower", "sift", "sift_all", "shape_pooled_blend")
        else None
    )
    cfg = MatchConfig(
        max_keypoints=max_keypoints,
        descriptor=descriptor,
        descriptor_weights=descriptor_weights,
        # the candidates of ours-topk; the other rows read what they need (the blends: MatchConfig's default)
        top_k=top_k if pose == "ours-topk" else MatchConfig.top_k,
        detector=detector,
    )
    t0 = time.time()
    res = match_images(
        image1,
        image2,
        est,
        cfg,
        rows=(row,),
        H=homography,
        keypoints1=keypoints1,
        keypoints2=keypoints2,
        peers=peers,
        sizes1=sizes1,
        sizes2=sizes2,
    )
    r = res["rows"][row]
    err = r["error_px"]
    turn = r.get("turn")
    return PairMatches(
        pose=pose,
        xy1=res["xy1"],
        xy2=res["xy2"],
        matches=r["matches"],
        distances=r["distances"],
        error_px=err,
        correct=None if err is None else err <= threshold,
        threshold=float(threshold),
        seconds=time.time() - t0,
        zoom=r["zoom"].log2 if "zoom" in r else None,
        turn=math.degrees(turn.radians) if row == "pair_pose" and turn.found else None,
        affine=None if turn is None or turn.affine is None else turn.affine.matrix.copy(),
    )


__all__ = ["DEFAULT_POSE", "MATCH_POSES", "PairMatches", "ZOOM_VOTE_MODEL", "match_pair"]
