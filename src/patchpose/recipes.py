"""What patchpose ships, by name, and the bundled model each reads: the one table of default models.

Every entry point takes its default model from :data:`MODELS`; where it takes a ``weights``/``estimator`` argument
or a ``--weights`` option, that reads another (e.g. one you trained); :func:`patchpose.match_pair` and ``patchpose
match`` read only the bundled ones. The recipes (:data:`RECIPES`) are named alike in the Python API, the command
line and ``extract`` (``colmap`` runs COLMAP's own description: none of ours beats it there).
"""

from __future__ import annotations

from dataclasses import dataclass

#: the bundled model each use reads unless told otherwise
MODELS: dict[str, str] = {
    # the reader, poses in your library's types: PatchPoseEstimator.from_pretrained(), `patchpose estimate` and
    # `demo`, patchpose.assign and resolve_orientations (OpenCV keypoints), compute_blended where it reads our poses,
    # the kornia modules (LAFs)
    "estimate": "patchpose-fast-v1",
    # the affine shape network: AffineShapeEstimator, LAFAffineShape
    "shape": "patchpose-shape-v1",
    # the recipe "pose" where the detector gives no scale: `patchpose extract --detector harris`,
    # match_pair(recipe="pose") at corners or keypoints without sizes
    "pose": "patchpose-v10",
    # the recipe "pair-pose": the votes of the pair's turn, zoom and slant where keypoints have no scale (corners)
    "pair-pose": "patchpose-v10",
    # upright_pair, match_upright, upright_collection and `patchpose colmap --aliked FILE --unturn`: the votes of the
    # turns by which photos are un-turned for a learned feature
    "upright": "patchpose-v10",
}


@dataclass(frozen=True)
class Recipe:
    """A way to describe keypoints for matching, and what it costs per keypoint."""

    name: str
    what: str
    #: the bundled pose network it reads (as :data:`MODELS` names it), None: none
    model: str | None
    #: descriptor computations per keypoint
    computations: str
    #: matching passes per pair of photos
    passes: int | str
    #: geometric fits per pair of photos before the final matching
    fits: str
    #: final descriptors per keypoint
    descriptors: int = 1
    #: one photo at a time (a collection can use it), or two photos together
    per_image: bool = True


#: the recipes, by the name every entry point uses
RECIPES: dict[str, Recipe] = {
    "pose": Recipe(
        "pose",
        "each keypoint described once at the detector's scale (SIFT's, or sizes given with your keypoints) or, "
        "where it gives none (corners, keypoints without sizes), at our scale; the angle the dominant gradient's "
        "there (the network sets only a scale the detector does not give)",
        MODELS["pose"],
        computations="1 after one gradient histogram (and, where the detector gives no scale, one read of the "
        "model: its plan samples each keypoint 3 times)",
        passes=1,
        fits="0",
    ),
    "blend": Recipe(
        "blend",
        "each keypoint described at the 4 strongest peaks of its gradient-orientation histogram at the "
        "detector's size (16 px for corners), blended into one descriptor",
        None,
        computations="4",
        passes=1,
        fits="0",
    ),
    "pair-pose": Recipe(
        "pair-pose",
        "two photos: poses vote the turn, zoom and slant between them at tentative matches (ours where keypoints have "
        "no scale; SIFT's at SIFT's detections, the gradient's at keypoints with sizes), then every keypoint is "
        "described at the pose of its photo",
        MODELS["pair-pose"],
        computations="4 for the votes (ours after one read of the model, or the gradient's; SIFT's: 1 per "
        "orientation it found, 1.2), then 3 at the photo's pose, 6 where the detector gives sizes (twice that for "
        "photo 2 where the turn is ambiguous); where no turn is found, none more (each keypoint at the first "
        "pass's own poses: at SIFT's detections SIFT's own pose)",
        passes="2 (4 where the turn is ambiguous)",
        fits="1 affine (2, and 2 homographies, where the turn is ambiguous)",
        per_image=False,
    ),
    "rectify": Recipe(
        "rectify",
        "two photos, at SIFT's own detections: the photo whose structures look smaller warped into the other's "
        "frame through the affine map that SIFT's ratio-test matches agree on, SIFT detected again there (its "
        "keypoints are the new ones), both photos described upright at 3 sizes about 16 px; no network",
        None,
        computations="1.2 for the first pass (SIFT with all its orientations), then one more SIFT detection of "
        "the warped photo and 3 for the final description (where no map is found, none more: SIFT with all its "
        "orientations matched)",
        passes=2,
        fits="1 affine",
        per_image=False,
    ),
}

__all__ = ["MODELS", "RECIPES", "Recipe"]
