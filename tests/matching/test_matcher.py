"""Descriptor matching (``patchpose.matching.matcher``) on hand-built cases."""

from __future__ import annotations

import math

import numpy as np

from patchpose.matching.matcher import keypoint_distances, mutual_nn


def test_mutual_nn_on_a_hand_built_case():
    d1 = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]])
    d2 = np.array([[0.0, 1.0], [0.9, 0.1], [-1.0, 0.0]])
    pairs, dist = mutual_nn(d1, d2)
    # 0↔1 and 1↔0 are mutual; 2's nearest is d2[1] (0.63) but d2[1]'s nearest is d1[0] (0.14)
    assert pairs.tolist() == [[0, 1], [1, 0]]
    np.testing.assert_allclose(dist, [math.hypot(0.1, 0.1), 0.0], atol=1e-6)
    e0, e1 = mutual_nn(np.zeros((0, 2)), d2)
    assert e0.shape == (0, 2) and e1.shape == (0,)


def test_several_descriptors_per_keypoint_take_the_closest_pair():
    d1 = np.array([[[1.0, 0.0], [0.0, 1.0]]])  # one keypoint, two candidates
    d2 = np.array([[[0.0, 1.0]], [[0.6, 0.0]]])  # two keypoints, one candidate each
    np.testing.assert_allclose(keypoint_distances(d1, d2), [[0.0, 0.4]], atol=1e-6)
