"""``patchpose.match_pair`` (``patchpose match``): its recipes, its default, its arguments."""

from __future__ import annotations

import inspect

import cv2
import numpy as np
import pytest

pytest.importorskip("kornia")

import patchpose  # noqa: E402
from patchpose.data.patches import load_photo, to_gray  # noqa: E402
from patchpose.data.photos import demo_photo  # noqa: E402
from patchpose.matching.pair import DEFAULT_RECIPES, default_recipe  # noqa: E402
from patchpose.matching.zoom import MIN_VOTES  # noqa: E402
from patchpose.recipes import MODELS, RECIPES  # noqa: E402


@pytest.fixture(scope="module")
def photo():
    return to_gray(load_photo(demo_photo(), 480))


def turned(photo: np.ndarray, degrees: float, zoom: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The photo turned by ``degrees`` and enlarged ``zoom`` times about its centre (same canvas), and that
    homography."""
    h, w = photo.shape
    c = np.array([(w - 1) / 2, (h - 1) / 2])
    a = np.radians(degrees)
    A = zoom * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    M = np.concatenate([A, (c - A @ c)[:, None]], 1)
    return cv2.warpAffine(photo, M, (w, h), flags=cv2.INTER_LINEAR), np.vstack([M, [0, 0, 1]])


def test_the_default_is_the_recommended_recipe_everywhere():
    """``match_pair`` and ``patchpose match`` describe with :func:`default_recipe` unless told (``rectify`` where
    they detect SIFT's keypoints, which it detects again; ``pair-pose`` at corners and at your own keypoints),
    recipes of the one table (:data:`patchpose.recipes.RECIPES`), whose model the table names; ``match_pair`` takes
    at most 8 parameters and ``patchpose match`` at most 10 options."""
    from patchpose.cli.main import build_parser

    assert DEFAULT_RECIPES == {"sift": "rectify", "other": "pair-pose"}
    assert set(RECIPES) == {"rectify", "pair-pose", "pose", "blend"}
    assert default_recipe() == "rectify" and default_recipe("gftt") == "pair-pose" == default_recipe("harris")
    assert default_recipe("sift", keypoints=(np.zeros((1, 2)), np.zeros((1, 2)))) == "pair-pose"
    params = inspect.signature(patchpose.match_pair).parameters
    assert params["recipe"].default is None and len(params) <= 8
    args = build_parser().parse_args(["match", "a.png", "b.png"])
    assert args.recipe is None
    match = next(a for a in build_parser()._actions if a.dest == "command").choices["match"]
    options = [a for a in match._actions if a.option_strings and a.dest != "help"]
    assert len(options) <= 10, [a.option_strings for a in options]
    assert RECIPES["blend"].model is None and {r.model for r in RECIPES.values()} - {None} <= set(
        MODELS.values()
    )


def test_the_default_matches_corners_across_a_zoom_where_a_fixed_size_fails(photo):
    """Harris corners of the photo and of its copy turned by 60° and enlarged 2×: the default recipe (none given)
    finds several times the correct matches of the gradient's blend at the corners' fixed 16 px, and more than
    each corner at our own pose."""
    img2, H = turned(photo, 60, 2.0)
    correct = {}
    for recipe in (None, "blend", "pose"):
        kw = {} if recipe is None else {"recipe": recipe}
        res = patchpose.match_pair(photo, img2, homography=H, detector="harris", max_keypoints=300, **kw)
        assert res.recipe == (recipe or "pair-pose")
        correct[recipe] = int(res.correct.sum())
    assert correct[None] > 3 * correct["blend"], correct
    assert correct[None] > correct["pose"], correct


def test_the_pair_pose_reports_the_turn_and_zoom_and_a_threshold_of_ones_own(photo):
    """``pair-pose`` reports the pair's turn and zoom (a photo turned by 40° CCW and enlarged 1.25×: within 2° and
    0.1 octave); ``with_threshold`` counts the matches within another distance of the truth."""
    img2, H = turned(photo, -40.0, 1.25)  # cv2's positive angle turns counter-clockwise as displayed
    res = patchpose.match_pair(photo, img2, recipe="pair-pose", homography=H, max_keypoints=300)
    assert abs((res.turn - 40.0 + 180.0) % 360.0 - 180.0) < 2.0, res.turn
    assert res.zoom == pytest.approx(np.log2(1.25), abs=0.1) and res.affine is None
    loose = res.with_threshold(10.0)
    assert loose.threshold == 10.0 and loose.correct.sum() >= res.correct.sum()
    np.testing.assert_array_equal(loose.correct, res.error_px <= 10.0)
    summary = res.summary()
    assert summary["recipe"] == "pair-pose" and summary["correct@3px"] == int(res.correct.sum())
    assert (
        patchpose.match_pair(photo, img2, recipe="blend", max_keypoints=50)
        .summary()
        .keys()
        .isdisjoint({"turn_deg", "zoom_octaves"})
    )
    with pytest.raises(patchpose.InputError, match="positive number of pixels"):
        res.with_threshold(0)


def test_the_pair_pose_reports_no_zoom_where_none_was_voted(photo):
    """Too few matches to vote a zoom (4 SIFT keypoints: fewer than ``MIN_VOTES`` matches): ``zoom`` is None, as
    the turn, and ``summary.json``'s ``zoom_octaves`` null (it was 0.0, a zoom of 1× nobody voted)."""
    res = patchpose.match_pair(photo, photo[::-1].copy(), recipe="pair-pose", max_keypoints=4)
    assert len(res.matches) < MIN_VOTES
    assert res.zoom is None and res.turn is None
    summary = res.summary()
    assert summary["zoom_octaves"] is None and summary["turn_deg"] is None


def test_pair_pose_reads_the_network_only_where_keypoints_have_no_scale(photo, monkeypatch):
    """At SIFT's own detections SIFT's poses vote (:class:`~patchpose.matching.pairpose.SiftVotes`), at keypoints
    given with sizes the gradient's (:class:`~patchpose.matching.pairpose.GradientVotes`), and no model is loaded;
    at corners our poses vote, read by the recipe's model."""
    import patchpose.matching.pair as pair
    from patchpose.matching.describe import Describer
    from patchpose.matching.features import detect
    from patchpose.matching.pairpose import GradientVotes, OurVotes, SiftVotes, recipe_votes

    img2, _ = turned(photo, 30.0, 1.2)
    f1, f2 = detect(photo, 200), detect(img2, 200)
    assert isinstance(recipe_votes(f1, f2, Describer()), SiftVotes)
    g1, g2 = detect(photo, 200, detector="gftt"), detect(img2, 200, detector="gftt")
    with pytest.raises(patchpose.InputError, match="needs our estimator"):
        recipe_votes(g1, g2, Describer())
    est = patchpose.PatchPoseEstimator.load(patchpose.recipes.MODELS["pair-pose"])
    assert type(recipe_votes(g1, g2, Describer(), est)) is OurVotes
    assert type(recipe_votes(f1, g2, Describer(), est)) is OurVotes  # one photo's corners: ours
    h1, h2 = (detect(im, keypoints=f.xy, sizes=np.full(len(f), 9.0)) for im, f in ((photo, f1), (img2, f2)))
    assert type(recipe_votes(h1, h2, Describer())) is GradientVotes
    loads = []
    real = pair.PatchPoseEstimator.load
    monkeypatch.setattr(pair.PatchPoseEstimator, "load", lambda *a, **k: loads.append(a) or real(*a, **k))
    m = patchpose.match_pair(photo, img2, recipe="pair-pose", max_keypoints=200)
    # SIFT's angles voted the turn: 30° clockwise as displayed
    assert loads == [] and abs((m.turn + 30.0 + 180.0) % 360.0 - 180.0) < 3.0
    patchpose.match_pair(photo, img2, max_keypoints=200, detector="gftt")
    assert loads == [(patchpose.recipes.MODELS["pair-pose"],)]
    patchpose.match_pair(
        photo, img2, keypoints=(h1.xy, h2.xy), sizes=(np.full(len(h1), 9.0), np.full(len(h2), 9.0))
    )
    assert len(loads) == 1


def test_keypoints_given_with_their_sizes_are_described_as_a_detectors(photo):
    """Keypoints of one's own with their regions' half-widths (as kornia reads a LAF's scale) are described as a
    detector's that gives a size: SIFT's detections handed back with their sizes give the same ``pose`` matches as
    SIFT's own route, and ``pair-pose`` describes them about their sizes (the gradient's votes: they are not SIFT's
    own detections); sizes come with keypoints, one finite positive size each, for both photos."""
    from patchpose.conventions import REFERENCE_RADIUS
    from patchpose.matching.blend import blend_descriptors
    from patchpose.matching.describe import Describer
    from patchpose.matching.features import detect
    from patchpose.matching.matcher import mutual_nn
    from patchpose.matching.pairpose import GradientVotes, pair_pose_candidates

    img2, H = turned(photo, 30.0, 1.2)
    f1, f2 = detect(photo, 200), detect(img2, 200)
    sizes = (REFERENCE_RADIUS * np.exp2(f1.frame), REFERENCE_RADIUS * np.exp2(f2.frame))
    own = patchpose.match_pair(photo, img2, recipe="pose", max_keypoints=200)
    given = patchpose.match_pair(photo, img2, recipe="pose", keypoints=(f1.xy, f2.xy), sizes=sizes)
    bare = patchpose.match_pair(photo, img2, recipe="pose", keypoints=(f1.xy, f2.xy))  # without: our scale
    np.testing.assert_array_equal(given.matches, own.matches)
    assert not np.array_equal(bare.matches, own.matches)
    pair = patchpose.match_pair(photo, img2, keypoints=(f1.xy, f2.xy), sizes=sizes)
    c1, c2, _, turn = pair_pose_candidates(f1, f2, Describer(), None, votes=GradientVotes(Describer()))
    d1, d2 = (blend_descriptors(c[3], c[2])[:, None] for c in (c1, c2))
    np.testing.assert_array_equal(pair.matches, mutual_nn(d1, d2)[0])
    assert pair.turn == pytest.approx(np.degrees(turn.radians))
    n, m = len(f1), len(f2)
    for kw, message in [
        ({"sizes": (np.ones(n), np.ones(m))}, "sizes are those of keypoints"),
        ({"keypoints": (f1.xy, f2.xy), "sizes": np.ones(n)}, "sizes must be a pair"),
        ({"keypoints": f1.xy}, "keypoints must be a pair"),
        ({"keypoints": (f1.xy, f2.xy), "sizes": (np.ones(n - 1), np.ones(m))}, "one size per"),
        ({"keypoints": (f1.xy, f2.xy), "sizes": (-np.ones(n), np.ones(m))}, "finite region half-widths from"),
    ]:
        with pytest.raises(patchpose.InputError, match=message):
            patchpose.match_pair(photo, img2, **kw)


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"sizes": 1e9}, r"sizes must be finite region half-widths from .* to 65536 pixels"),
        ({"sizes": 8 + 1j}, "sizes must be real numbers"),
        (
            {"homography": np.full((3, 3), np.nan)},
            "the homography must be a finite 3×3 matrix, got NaN or infinite",
        ),
        ({"homography": np.zeros((3, 3))}, "the homography is not invertible"),
        ({"homography": "abc"}, "the homography must be a 3×3 matrix of real numbers, got str"),
        ({"recipe": ["pose"]}, "recipe must be one of"),
        ({"recipe": "ours"}, "recipe must be one of"),
        ({"recipe": "rectify", "detector": "gftt"}, "detects keypoints again with SIFT"),
        ({"recipe": "rectify", "keypoints": (np.ones((2, 2)), np.ones((2, 2)))}, "detects keypoints again"),
        ({"detector": "keynet"}, "detector must be one of"),
        ({"max_keypoints": 0}, "max_keypoints must be an integer from 1"),
    ],
)
def test_bad_arguments_are_one_line_input_errors_before_any_work(photo, kw, message, monkeypatch):
    """Wrong types and values of ``match_pair``'s arguments are refused as :class:`patchpose.InputError`, before
    any description (a size of 1e9 px once ran for minutes inside OpenCV; a singular homography gave every match
    an infinite error)."""
    from patchpose.matching import pair

    def no_work(*args, **kwargs):
        raise AssertionError("description began before the arguments were checked")

    if "sizes" in kw:  # sizes are checked with the keypoints they belong to
        xy = np.array([[100.0, 100.0], [50.0, 60.0]])
        kw = {"keypoints": (xy, xy), "sizes": (np.full(2, kw["sizes"]), np.full(2, 8.0))}
    for name in ("pair_pose_descriptors", "pose_descriptors", "gradient_blend_candidates", "rectified_pair"):
        monkeypatch.setattr(pair, name, no_work)
    with pytest.raises(patchpose.InputError, match=message):
        patchpose.match_pair(photo, photo, **kw)
