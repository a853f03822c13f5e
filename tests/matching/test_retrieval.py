"""Which photos of an unordered collection to pair (``patchpose.matching.retrieval``): VLAD vectors are unit length,
deterministic and alike for photos of one scene; each photo's nearest are paired, each pair once; a collection's
turns voted over retrieval pairs are every pair's; bad input is one line."""

from __future__ import annotations

import numpy as np
import pytest

from patchpose.data.patches import load_photo
from patchpose.data.photos import demo_photo
from patchpose.errors import InputError
from patchpose.matching import collection
from patchpose.matching.retrieval import nearest_pairs, vlad
from patchpose.matching.upright import turn_image


def scenes(rng, photos_per_scene=4, scenes=3, dim=16, n=60):
    """Descriptors of photos of a few scenes: each scene's photos draw (with noise) from its own 20 patterns."""
    out, labels = [], []
    for s in range(scenes):
        patterns = rng.normal(size=(20, dim))
        for _ in range(photos_per_scene):
            d = patterns[rng.integers(0, 20, n)] + 0.1 * rng.normal(size=(n, dim))
            out.append(d / np.linalg.norm(d, axis=1, keepdims=True))
            labels.append(s)
    return out, np.array(labels)


def test_vlad_is_unit_length_deterministic_and_pairs_a_scenes_photos():
    rng = np.random.default_rng(0)
    desc, labels = scenes(rng)
    v = vlad(desc, words=8)
    assert v.shape == (12, 8 * 16)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vlad(desc, words=8), v)  # seeded k-means: the same vectors again
    pairs = nearest_pairs(v, 3)
    assert all(labels[i] == labels[j] for i, j in pairs)  # every photo's 3 nearest are its scene's other 3
    assert len(pairs) == 3 * 6  # each scene's 6 pairs, once each
    # a photo without descriptors gets zeros and no NaN
    v2 = vlad([*desc, np.zeros((0, 16))], words=8)
    assert np.isfinite(v2).all() and not v2[-1].any()
    # fewer descriptors than words: as many words as descriptors are learned
    assert vlad([desc[0][:3]], words=8).shape == (1, 8 * 16)


def test_nearest_pairs_on_hand_built_vectors():
    v = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert nearest_pairs(v, 1) == [(0, 1), (2, 3)]
    assert nearest_pairs(v, 3) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]  # k >= N - 1: every pair
    assert nearest_pairs(v[:1], 2) == []


def test_bad_input_is_one_line():
    for call, message in (
        (lambda: vlad(np.zeros((3, 4))), "a list of"),
        (lambda: vlad([np.zeros((3, 4)), np.zeros((3, 5))]), "of one D"),
        (lambda: vlad([np.full((3, 4), np.nan)]), "finite"),
        (lambda: vlad([np.zeros((3, 4))], words=0), "words must be"),
        (lambda: nearest_pairs(np.zeros(3), 1), r"\(N, E\)"),
        (lambda: nearest_pairs(np.zeros((3, 2)), 0), "k must be"),
    ):
        with pytest.raises(InputError, match=message) as e:
            call()
        assert len(str(e.value).splitlines()) == 1


def test_turns_voted_over_retrieval_pairs_are_every_pairs(monkeypatch):
    """Crops of the demo photo turned by 90°, 180° and 30° and of another photo (two scenes): with ``retrieval=2``
    fewer pairs are voted than every pair, each photo's pairs its own scene's,
    each crop's turn is found within 2° of the truth as with every pair, and
    ``retrieval`` with ``pairs`` or below 1 is a one-line error."""
    from skimage import data as skdata

    photo = np.asarray(load_photo(demo_photo(), 480))
    other = np.asarray(skdata.coffee())
    parts = [photo[:, :400], photo[:, 40:440], photo[:, 80:], photo[20:, 10:410]]
    turned = [turn_image(p, d)[0] for p, d in zip(parts, (0.0, 90.0, 180.0, 30.0))]
    others = [other[:, :520], turn_image(other[:, 60:], 90.0)[0], other[40:, 30:]]
    real, asked = collection.nearest_pairs, []

    def recording(v, k):
        asked.append(real(v, k))
        return asked[-1]

    monkeypatch.setattr(collection, "nearest_pairs", recording)
    got = collection.upright_collection([*turned, *others], retrieval=2)
    assert 0 < len(asked[0]) < 21
    assert all((i < 4) == (j < 4) for i, j in asked[0])  # each scene's photos paired with their own
    truth = np.array([0.0, -90.0, -180.0, -30.0])
    assert got.found.all()
    np.testing.assert_allclose((got.degrees[:4] - truth + 180.0) % 360.0 - 180.0, 0.0, atol=2.0)
    img = np.zeros((64, 64, 3), np.uint8)
    with pytest.raises(InputError, match="not both"):
        collection.upright_collection([img, img], pairs=[(0, 1)], retrieval=1)
    with pytest.raises(
        InputError, match="^retrieval must be a whole number >= 1"
    ):  # the argument's name, not the CLI's
        collection.upright_collection([img, img], retrieval=0)
