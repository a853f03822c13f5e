"""The pair's zoom voted by our scales (:mod:`patchpose.matching.zoom`): exact votes on hand-built scales, the
sign and the frames, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from patchpose.errors import InputError
from patchpose.matching.zoom import MIN_VOTES, ZOOM_BAND, PairZoom, pair_zoom


def test_the_vote_is_the_median_of_the_matches_that_agree():
    s1 = np.zeros(20)
    agree = [1.01, 1.03, 1.05, 1.07, 1.1, 1.15, 1.3]  # one bin (1 to 7/6), and 1.3 in the band about it
    s2 = np.concatenate([agree, [-3.0, -1.5, 2.5, 3.5]])  # 4 scattered
    m = np.stack([np.arange(11), np.arange(11)], 1)
    z = pair_zoom(s1, s2, m)
    assert z == PairZoom(1.07, 7, 11)
    # the votes are differences, so a common offset of both photos' scales changes nothing
    assert pair_zoom(s1 + 0.7, s2 + 0.7, m).log2 == pytest.approx(z.log2)
    # image 2's structures look larger: a positive zoom, and the window widened in image 2 only
    assert z.frames == (0.0, z.log2)
    # the same pair the other way round: the opposite zoom, image 1's window widened
    back = pair_zoom(s2, s1, m[:, ::-1])
    assert back.log2 == pytest.approx(-z.log2) and back.frames == (z.log2, 0.0)


def test_votes_far_from_the_winner_and_non_finite_scales_do_not_count():
    s1 = np.zeros(12)
    s2 = np.array([2.05] * 6 + [2.05 + ZOOM_BAND + 0.2, np.nan, np.inf, 2.05, 2.05, -2.0])
    m = np.stack([np.arange(12), np.arange(12)], 1)
    z = pair_zoom(s1, s2, m)
    assert z == PairZoom(2.05, 8, 10)  # NaN and inf dropped; 2.5 is outside the band


def test_too_few_agreeing_votes_give_no_zoom():
    s1, s2 = np.zeros(MIN_VOTES - 1), np.full(MIN_VOTES - 1, 1.5)
    m = np.stack([np.arange(MIN_VOTES - 1)] * 2, 1)
    assert pair_zoom(s1, s2, m) == PairZoom(0.0, MIN_VOTES - 1, MIN_VOTES - 1)
    assert pair_zoom(s1, s2, np.zeros((0, 2), np.int64)) == PairZoom(0.0, 0, 0)
    assert PairZoom(0.0, 0, 0).frames == (0.0, 0.0)
    assert not pair_zoom(s1, s2, m).found and not PairZoom(0.0, 0, 0).found
    assert pair_zoom(
        np.zeros(MIN_VOTES), np.full(MIN_VOTES, 1.5), np.stack([np.arange(MIN_VOTES)] * 2, 1)
    ).found


@pytest.mark.parametrize(
    "scales1, matches, message",
    [
        (np.zeros(3), np.array([[0, 5]]), "outside"),
        (np.zeros(3), np.array([[-1, 0]]), "outside"),
        (np.zeros(3), np.array([0.0, 1.0]), r"\(L, 2\) integer"),
        (np.zeros(3), np.array([[0.0, 1.0]]), r"\(L, 2\) integer"),
        (np.zeros((3, 1)), np.array([[0, 1]]), r"\(N,\) arrays"),
    ],
)
def test_bad_input_is_one_clear_error(scales1, matches, message):
    with pytest.raises(InputError, match=message):
        pair_zoom(scales1, np.zeros(3), matches)


def test_match_pair_reads_the_model_the_table_names_for_its_recipe(monkeypatch):
    """``match_pair`` loads the model :data:`patchpose.recipes.MODELS` names for its recipe, and none for the
    gradient's blend."""
    import numpy as np

    from patchpose.matching import pair
    from patchpose.recipes import MODELS

    loaded = []

    def load(name):
        loaded.append(name)
        raise InputError("stop")

    monkeypatch.setattr(pair.PatchPoseEstimator, "load", load)
    photo = (np.random.default_rng(0).random((120, 120)) * 255).astype(np.uint8)
    for recipe in ("pair-pose", "pose"):
        with pytest.raises(InputError, match="stop"):
            pair.match_pair(photo, photo, recipe=recipe, detector="gftt")
    pair.match_pair(photo, photo, recipe="blend", detector="gftt")
    assert loaded == [MODELS["pair-pose"], MODELS["pose"]]
