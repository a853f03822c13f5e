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


def test_keypoints_that_repeat_their_first_descriptor_are_matched_as_by_every_pair():
    """Keypoints with fewer descriptors than the most repeat their first (SIFT with all its orientations): the
    distances skip those repeats, and equal the smallest over every descriptor pair, in blocks of any size."""
    rng = np.random.default_rng(3)
    d1 = rng.standard_normal((90, 4, 8)).astype(np.float32)
    d2 = rng.standard_normal((70, 3, 8)).astype(np.float32)
    for d, every in ((d1, 3), (d2, 2)):
        d[::every, 1:] = d[::every, :1]  # one descriptor, repeated
    d1[1::5, 3] = d1[1::5, 0]  # the last repeats the first after others
    want = np.linalg.norm(d1[:, None, :, None] - d2[None, :, None, :], axis=-1).min(axis=(2, 3))
    for chunk in (4, 37, 4096):
        np.testing.assert_allclose(keypoint_distances(d1, d2, chunk=chunk), want, rtol=1e-5, atol=1e-5)


def test_mutual_nn_in_blocks_equals_the_whole_distance_matrix_ties_included():
    """``mutual_nn`` streams over row blocks of the distances (memory ``chunk × M``, not ``N × M``): the pairs
    and distances equal those of the whole matrix's argmins, ties going to the lowest index across blocks."""
    rng = np.random.default_rng(0)
    d1 = np.round(rng.standard_normal((700, 2, 6))).astype(np.float32)  # coarse values: many exact ties
    d2 = np.round(rng.standard_normal((500, 6))).astype(np.float32)
    d2[7] = d2[5]  # the same descriptor twice in photo 2
    dist = keypoint_distances(d1, d2)
    nn12, nn21 = dist.argmin(1), dist.argmin(0)
    i = np.nonzero(nn21[nn12] == np.arange(len(d1)))[0]
    want = np.stack([i, nn12[i]], 1)
    for chunk in (2, 64, 333, 4096):  # blocks of 1, 32, 166 and every keypoint (two descriptors each)
        pairs, d = mutual_nn(d1, d2, chunk=chunk)
        np.testing.assert_array_equal(pairs, want)
        np.testing.assert_array_equal(d, dist[want[:, 0], want[:, 1]])
    assert len(want) > 50 and 7 not in want[:, 1]  # a tie in photo 2 goes to index 5


def test_the_ratio_test_keeps_distinct_nearest_neighbours_and_cross_checks():
    """Lowe's ratio test on hand-built distances: a keypoint whose two nearest are alike is dropped, a clear one
    kept; with the cross check a keypoint of image 2 that another keypoint is nearer to is dropped; the second
    nearest is another *keypoint*, never another descriptor of the same one."""
    from patchpose.matching.matcher import ratio_matches

    d2 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], np.float32)
    d1 = np.array([[1.0, 0.05], [0.7, 0.7], [-1.0, 0.0], [-0.98, 0.02]], np.float32)
    m, dist = ratio_matches(d1, d2, 0.8, cross_check=False)
    # 0 -> 0 clear; 1 is as near to 0 as to 1: dropped; 2 and 3 -> 2 clear
    assert m.tolist() == [[0, 0], [2, 2], [3, 2]]
    np.testing.assert_allclose(dist, [0.05, 0.0, np.hypot(0.02, 0.02)], atol=1e-6)
    m, _ = ratio_matches(d1, d2, 0.8)  # cross check: image 2's keypoint 2 is nearest to 2, not 3
    assert m.tolist() == [[0, 0], [2, 2]]
    # several descriptors per keypoint: keypoint 0 of image 2 has two, both near d1[0]; the second nearest is
    # keypoint 1 of image 2, so the match stands
    multi = np.stack([d2, d2], 1)
    multi[0, 1] = [0.99, 0.1]
    m, _ = ratio_matches(d1[:1], multi, 0.8)
    assert m.tolist() == [[0, 0]]
    assert ratio_matches(d1, d2[:1], 0.8)[0].tolist() == [
        [0, 0]
    ]  # one keypoint: no second, cross check decides
    assert ratio_matches(d1[:0], d2)[0].shape == (0, 2)
