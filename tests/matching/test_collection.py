"""Un-turning a collection (#63, ``patchpose.matching.collection``): rotation averaging recovers each photo's turn
from pairwise turns, wrong pairs left out, the majority kept upright; the votes of a real collection find each
photo's turn; bad input is one line."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from patchpose.data.patches import load_photo
from patchpose.data.photos import demo_photo
from patchpose.errors import InputError
from patchpose.matching.collection import AGREE_DEG, collection_turns, upright_collection, upright_cue
from patchpose.matching.upright import turn_image


def wrap(d):
    return (np.asarray(d) + 180.0) % 360.0 - 180.0


def pair_turns(truth, pairs, noise=0.0, seed=0):
    """The turn photo j shows photo i's structures by, when turning photo k by ``truth[k]`` shows it upright."""
    rng = np.random.default_rng(seed)
    return [(i, j, float((truth[i] - truth[j] + rng.normal(0, noise)) % 360.0)) for i, j in pairs]


def test_exact_pair_turns_give_each_photo_its_turn():
    """Six photos, three upright and three turned by 90°, 200° and 17°: the majority (the three) kept upright,
    every turn recovered to 1e-9 degrees, residuals 0; a chain of pairs (a path, no loop) is enough."""
    truth = np.array([0.0, 90.0, 0.0, 200.0, 0.0, 17.0])
    for pairs in (list(itertools.combinations(range(6), 2)), [(k, k + 1) for k in range(5)]):
        got = collection_turns(6, pair_turns(truth, pairs))
        np.testing.assert_allclose(wrap(got.degrees - truth), 0.0, atol=1e-9)
        assert got.found.all() and (got.group == 0).all() and np.abs(got.residual).max() < 1e-9
        assert got.consistent.all() and len(got.pairs) == len(pairs)


def test_wrong_pairs_are_outvoted_and_shown():
    """Twelve photos at random turns, every pair with 1° of noise and a fifth of the pairs replaced by random
    turns: every photo within 2° (relative to photo 0), and the wrong pairs are the inconsistent ones."""
    rng = np.random.default_rng(1)
    truth = rng.uniform(0.0, 360.0, 12)
    pairs = list(itertools.combinations(range(12), 2))
    turns = pair_turns(truth, pairs, noise=1.0)
    wrong = rng.random(len(turns)) < 0.2
    for k in np.nonzero(wrong)[0]:
        i, j, d = turns[k]
        turns[k] = (i, j, float((d + rng.uniform(60.0, 300.0)) % 360.0))
    got = collection_turns(12, turns)
    rel = wrap((got.degrees - got.degrees[0]) - (truth - truth[0]))
    assert np.abs(rel).max() < 2.0, rel
    np.testing.assert_array_equal(~got.consistent, wrong)


def test_separate_groups_and_lone_photos():
    """Two groups with no pair between them are averaged apart (each its own upright); a photo in no pair keeps 0
    and is not found."""
    truth = np.array([0.0, 90.0, 0.0, 0.0, 180.0, 0.0, 45.0])
    pairs = [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5)]
    got = collection_turns(7, pair_turns(truth, pairs))
    np.testing.assert_allclose(wrap(got.degrees[:6] - truth[:6]), 0.0, atol=1e-9)
    assert list(got.group) == [0, 0, 0, 1, 1, 1, -1] and list(got.found) == [True] * 6 + [False]
    assert got.degrees[6] == 0.0
    none = collection_turns(3, [])
    assert not none.found.any() and (none.degrees == 0).all() and none.pairs.shape == (0, 2)


def test_upright_is_the_largest_agreeing_set_ties_to_the_earliest():
    """Two photos at 0°, three at 90°: the three are upright. Two and two, or five and five: the set that holds the
    earliest photo (a collection half of it sideways is un-turned to the first photo's way up)."""
    truth = np.array([0.0, 0.0, 90.0, 90.0, 90.0])
    got = collection_turns(5, pair_turns(truth, itertools.combinations(range(5), 2)))
    np.testing.assert_allclose(wrap(got.degrees - (truth - 90.0)), 0.0, atol=1e-9)
    truth = np.array([90.0, 0.0, 0.0, 90.0])
    got = collection_turns(4, pair_turns(truth, itertools.combinations(range(4), 2)))
    np.testing.assert_allclose(wrap(got.degrees - (truth - 90.0)), 0.0, atol=1e-9)
    # five and five, the earliest photo at the edge of its set (11° from one of it): still the earliest photo's set
    truth = np.array([-6.0, 90.0, 0.0, 91.0, 6.0, 89.0, -5.0, 92.0, 5.0, 88.0])
    got = collection_turns(10, pair_turns(truth, itertools.combinations(range(10), 2)))
    np.testing.assert_allclose(wrap(got.degrees - truth), 0.0, atol=1e-9)
    # small tilts within AGREE_DEG: upright is their mean, not one photo's
    truth = np.array([3.0, -3.0, 0.5 * AGREE_DEG, -0.5 * AGREE_DEG])
    got = collection_turns(4, pair_turns(truth, itertools.combinations(range(4), 2)))
    np.testing.assert_allclose(wrap(got.degrees - truth), 0.0, atol=1e-9)


def test_a_tie_goes_to_the_set_under_which_the_photos_look_upright():
    """Two photos sideways (the first among them) and two upright: without a cue the first photo's set is upright;
    with each photo's upright cue the set under which they look upright wins; a cue that ties keeps the first
    photo's set, and a cue never overrides a larger set."""
    truth = np.array([90.0, 0.0, 0.0, 90.0])
    turns = pair_turns(truth, itertools.combinations(range(4), 2))
    up = np.zeros((4, 4))
    up[np.arange(4), (truth // 90).astype(int)] = 1.0  # photo k looks upright turned by truth[k]
    np.testing.assert_allclose(wrap(collection_turns(4, turns).degrees - (truth - 90.0)), 0.0, atol=1e-9)
    np.testing.assert_allclose(wrap(collection_turns(4, turns, up).degrees - truth), 0.0, atol=1e-9)
    flat = np.ones((4, 4))
    np.testing.assert_allclose(
        wrap(collection_turns(4, turns, flat).degrees - (truth - 90.0)), 0.0, atol=1e-9
    )
    three = np.array([90.0, 0.0, 90.0, 90.0])  # three sideways: they are upright, whatever the cue says
    up3 = np.zeros((4, 4))
    up3[np.arange(4), (three // 90).astype(int)] = 1.0
    got = collection_turns(4, pair_turns(three, itertools.combinations(range(4), 2)), up3)
    np.testing.assert_allclose(wrap(got.degrees - (three - 90.0)), 0.0, atol=1e-9)
    with pytest.raises(InputError, match=r"up must be \(4, 4\)"):
        collection_turns(4, turns, np.ones((3, 4)))


def test_the_upright_cue_finds_the_sky_above():
    """The cue of a photo brighter above than below is highest unturned; of the photo turned 90° counter-clockwise,
    highest turned a further 270°; of the astronaut (a light background above), upright; and in a collection of
    its crops half turned sideways, the first among them, the votes un-turn every crop upright."""
    ramp = np.repeat(np.linspace(255, 0, 120)[:, None], 160, 1).astype(np.uint8)
    assert np.argmax(upright_cue(ramp)) == 0 and np.argmax(upright_cue(np.rot90(ramp, 1))) == 3
    for same in (
        ramp[:, :, None],
        ramp.astype(np.uint16) * 257,
        np.dstack([ramp] * 4),
        ramp / np.float32(255),
    ):
        np.testing.assert_allclose(
            upright_cue(same), upright_cue(ramp), atol=0.1
        )  # whatever type and channels
    photo = np.asarray(load_photo(demo_photo(), 480))
    assert np.argmax(upright_cue(photo)) == 0
    parts = [photo[:, :400], photo[:, 40:440], photo[:, 80:], photo[20:, 10:410]]
    turned = [turn_image(p, d)[0] for p, d in zip(parts, (90.0, 0.0, 0.0, 90.0))]
    got = upright_collection(turned)
    np.testing.assert_allclose(wrap(got.degrees - np.array([-90.0, 0.0, 0.0, -90.0])), 0.0, atol=2.0)


def test_the_votes_of_a_collection_find_each_photos_turn():
    """The demo photo and crops of it turned by 90°, 180° and 30° (as displayed, counter-clockwise): each photo's
    turn, which un-turns it, found within 2°, from every pair's votes."""
    photo = np.asarray(load_photo(demo_photo(), 480))
    parts = [photo[:, :400], photo[:, 40:440], photo[:, 80:], photo[20:, 10:410]]
    turned = [turn_image(p, d)[0] for p, d in zip(parts, (0.0, 90.0, 180.0, 30.0))]
    got = upright_collection(turned)
    truth = np.array([0.0, -90.0, -180.0, -30.0])
    assert got.found.all()
    np.testing.assert_allclose(wrap(got.degrees - truth), 0.0, atol=2.0)


def test_a_collection_does_not_vote_again_with_more_corners():
    """Unlike ``upright_pair``, a pair whose corners show no turn is left out, not voted again (more corners made
    every COLMAP set worse, CHANGELOG): with ten corners a photo, the photo and its copies turned by 135° and 60°
    keep the one pair those ten find, and the first photo has no turn."""
    photo = np.ascontiguousarray(np.asarray(load_photo(demo_photo(), 480))[:, :400])
    photos = [photo, turn_image(photo, 135.0)[0], turn_image(photo, 60.0)[0]]
    got = upright_collection(photos, max_keypoints=10)
    assert len(got.pairs) == 1 and not got.found[0], got


def test_bad_input_is_one_line():
    with pytest.raises(InputError, match="count must be"):
        collection_turns(-1, [])
    with pytest.raises(InputError, match=r"\(i, j, degrees\)"):
        collection_turns(3, [(0, 1)])
    with pytest.raises(InputError, match="photo indices"):
        collection_turns(3, [(0, 3, 10.0)])
    with pytest.raises(InputError, match="two photos"):
        collection_turns(3, [(1, 1, 10.0)])
    with pytest.raises(InputError, match="degrees must be finite"):
        collection_turns(3, [(0, 1, float("nan"))])
    with pytest.raises(InputError, match="pair_turns must be a sequence"):
        collection_turns(3, None)
    img = np.zeros((64, 64, 3), np.uint8)
    with pytest.raises(InputError, match="pairs must be two different"):
        upright_collection([img, img], pairs=[(0, 0)])
    with pytest.raises(InputError, match="pairs must be two different"):
        upright_collection([img, img], pairs=[5])
    with pytest.raises(InputError, match="pairs must be a sequence"):
        upright_collection([img, img], pairs=5)
    with pytest.raises(InputError, match="a list of photos"):
        upright_collection(img)  # one photo, not a list: its rows would pass for gray photos
    with pytest.raises(InputError, match="photo 1"):
        upright_collection([img, "photo.jpg"])


def test_sifts_turns_averaged_alike_are_the_model_free_peer():
    """``eval colmap``'s ``aliked_sift`` row: SIFT's pairwise turns (each photo detected once), averaged the same way,
    find the same turns as our votes on the turned crops."""
    from patchpose.evaluation.colmap_eval import sift_collection_turns

    photo = np.asarray(load_photo(demo_photo(), 480))
    parts = [photo[:, :400], photo[:, 40:440], photo[:, 80:], photo[20:, 10:410]]
    turned = [turn_image(p, d)[0] for p, d in zip(parts, (0.0, 90.0, 180.0, 30.0))]
    got = sift_collection_turns(turned)
    assert got.found.all() and len(got.pairs) == 6
    np.testing.assert_allclose(wrap(got.degrees - np.array([0.0, -90.0, -180.0, -30.0])), 0.0, atol=2.0)
