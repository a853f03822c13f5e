"""Relative-pose errors and accuracies on hand-built cases with exact expected values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from patchpose.accuracy import accuracies, relative_errors


def test_scale_errors_and_accuracies_exact():
    """Errors 0.1, 0.2, 0.3, 0.5 octaves → 25 % within 1/6 and 75 % within 1/3."""
    d = np.array([0.5, -1.0, 0.0, 2.0])
    pred_a = {"scale": np.array([0.3, 1.0, -0.5, 0.0])}
    err = np.array([0.1, -0.2, 0.3, -0.5])  # signed error of (b − a) − d
    pred_b = {"scale": pred_a["scale"] + d + err}
    e = relative_errors(pred_a, pred_b, d, None)
    assert set(e) == {"scale"}
    np.testing.assert_allclose(e["scale"], [0.1, 0.2, 0.3, 0.5], atol=1e-12)
    acc = accuracies(e)
    assert acc == {"scale_acc@1/6": 25.0, "scale_acc@1/3": 75.0}


def test_scale_thresholds_are_inclusive():
    """An error of exactly 1/6 (or 1/3) octave counts as correct."""
    acc = accuracies({"scale": np.array([1 / 6, 1 / 3])})
    assert acc["scale_acc@1/6"] == 50.0
    assert acc["scale_acc@1/3"] == 100.0


def test_scale_error_uses_b_minus_a():
    """The predicted relative scale is b − a: swapping a and b doubles a wrong sign into the error."""
    a, b = {"scale": np.array([0.0])}, {"scale": np.array([1.0])}
    assert relative_errors(a, b, np.array([1.0]), None)["scale"][0] == pytest.approx(0.0)
    assert relative_errors(b, a, np.array([1.0]), None)["scale"][0] == pytest.approx(2.0)


def test_orientation_error_is_cyclic():
    """pred_b − pred_a = 359° against a truth of 1° is an error of 2°, not 358°."""
    pred_a = {"orientation": np.array([0.0])}
    pred_b = {"orientation": np.array([math.radians(359.0)])}
    e = relative_errors(pred_a, pred_b, None, np.array([math.radians(1.0)]))
    assert set(e) == {"orientation"}
    assert e["orientation"][0] == pytest.approx(2.0, abs=1e-9)


def test_orientation_errors_in_degrees_and_accuracies_exact():
    """Errors 3°, 5°, 7°, 12°, 180° → 40 % within 5° and 60 % within 10°; direction of the error is ignored."""
    truth = np.radians([10.0, 350.0, 180.0, 0.0, 90.0])
    err = np.radians([3.0, -5.0, 7.0, -12.0, 180.0])
    pa = np.radians([100.0, 0.0, 359.0, 5.0, 270.0])
    pred_b = np.mod(pa + truth + err, 2 * np.pi)
    e = relative_errors({"orientation": pa}, {"orientation": pred_b}, None, truth)
    np.testing.assert_allclose(e["orientation"], [3.0, 5.0, 7.0, 12.0, 180.0], atol=1e-9)
    assert accuracies(e) == {"ori_acc@5": 40.0, "ori_acc@10": 60.0}


def test_orientation_error_never_exceeds_180():
    """Cyclic errors lie in [0°, 180°] for arbitrary inputs."""
    rng = np.random.default_rng(0)
    a, b, t = rng.uniform(-10, 10, (3, 500))
    e = relative_errors({"orientation": a}, {"orientation": b}, None, t)["orientation"]
    assert e.min() >= 0 and e.max() <= 180.0 + 1e-9


def test_both_heads_together():
    """Scale and orientation are evaluated independently in one call; accuracies has four keys."""
    pa = {"scale": np.zeros(2), "orientation": np.zeros(2)}
    pb = {"scale": np.array([0.0, 1.0]), "orientation": np.radians([0.0, 20.0])}
    e = relative_errors(pa, pb, np.array([0.0, 0.0]), np.radians([0.0, 0.0]))
    np.testing.assert_allclose(e["scale"], [0.0, 1.0])
    np.testing.assert_allclose(e["orientation"], [0.0, 20.0], atol=1e-9)
    assert accuracies(e) == {
        "scale_acc@1/6": 50.0,
        "scale_acc@1/3": 50.0,
        "ori_acc@5": 50.0,
        "ori_acc@10": 50.0,
    }


def test_top_k_takes_best_candidate_combination():
    """With (N, k) candidates the error is the minimum over all k×k (a_i, b_j) combinations."""
    # pair 0: best is b[1] − a[1] = 1.2 − 1.0 = 0.2 = truth; pair 1: best |b − a − d| = |0.9 − 0 − 1| = 0.1
    pa = {"scale": np.array([[0.0, 1.0], [0.0, -2.0]])}
    pb = {"scale": np.array([[5.0, 1.2], [3.0, 0.9]])}
    e = relative_errors(pa, pb, np.array([0.2, 1.0]), None)
    np.testing.assert_allclose(e["scale"], [0.0, 0.1], atol=1e-12)
    # top-1 (first candidates only) is worse
    e1 = relative_errors(
        {"scale": pa["scale"][:, 0]}, {"scale": pb["scale"][:, 0]}, np.array([0.2, 1.0]), None
    )
    np.testing.assert_allclose(e1["scale"], [4.8, 2.0], atol=1e-12)


def test_top_k_orientation_uses_cyclic_best_combination():
    """Orientation top-k: the best combination may be the one that wraps around 360°."""
    pa = {"orientation": np.radians([[10.0, 200.0]])}
    pb = {"orientation": np.radians([[100.0, 195.0]])}  # 195 − 200 = −5 ≡ 355 vs truth 354 → 1°
    e = relative_errors(pa, pb, None, np.radians([354.0]))
    assert e["orientation"][0] == pytest.approx(1.0, abs=1e-9)


def test_top_k_mixed_with_single_prediction():
    """A (N,) prediction on one side and (N, k) on the other broadcast correctly."""
    pa = {"scale": np.array([0.0, 0.5])}
    pb = {"scale": np.array([[2.0, 0.4], [1.0, 3.0]])}
    e = relative_errors(pa, pb, np.array([0.5, 0.5]), None)
    np.testing.assert_allclose(e["scale"], [0.1, 0.0], atol=1e-12)


def test_empty_inputs_give_empty_outputs():
    """Missing heads give no keys."""
    assert relative_errors({}, {}, None, None) == {}
    assert accuracies({}) == {}


def test_redetections_are_mutual_nearest_within_the_radius():
    """Pairs are mutually nearest and within max_px; a point nearer to another's match is not paired."""
    from patchpose.evaluation.metrics import redetections

    proj = np.array([[0.0, 0.0], [10.0, 0.0], [10.4, 0.0], [50.0, 50.0]])
    found = np.array([[0.3, 0.4], [10.3, 0.0], [80.0, 80.0]])
    i, j, d = redetections(proj, found, 1.0)
    assert i.tolist() == [0, 2] and j.tolist() == [0, 1]  # #1 and #2 both nearest to found #1: #2 is nearer
    np.testing.assert_allclose(d, [0.5, 0.1], atol=1e-12)
    assert [len(a) for a in redetections(proj[:0], found, 1.0)] == [0, 0, 0]


def test_rangewise_figure_counts_each_pair_in_one_bin():
    """Figure C.2's scale bins are centred on the PatchPose-A changes k/3: each of the 13 A pairs lands in
    its own bin, once (closed bins with edges on those values counted each pair twice)."""
    from patchpose.evaluation.figures import ORI_RANGE_EDGES, SCALE_RANGE_EDGES, binned_accuracy

    gt = np.log2(2.0 ** ((np.arange(13) - 6) / 3.0))  # as generate patchpose stores them
    correct = gt == 0.0
    x, y = binned_accuracy(gt, correct, SCALE_RANGE_EDGES)
    np.testing.assert_allclose(x, (np.arange(13) - 6) / 3.0, atol=1e-12)
    assert y == [100.0 if k == 6 else 0.0 for k in range(13)]
    x, y = binned_accuracy([0.0, 29.999, 30.0, 359.9], [True, False, True, True], ORI_RANGE_EDGES)
    assert x == [15.0, 45.0, 345.0] and y == [50.0, 100.0, 100.0]


def test_a_failed_candidate_does_not_spoil_the_best_pair():
    """Top-k recall takes the best of the k×k pairs: a NaN candidate is passed over, not propagated."""
    pa = {
        "scale": np.array([[0.0, np.nan], [np.nan, np.nan]]),
        "orientation": np.array([[0.1, np.nan], [0.0, 1.0]]),
    }
    pb = {
        "scale": np.array([[0.5, np.nan], [0.2, 0.3]]),
        "orientation": np.array([[0.1, 2.0], [np.nan, np.nan]]),
    }
    e = relative_errors(pa, pb, np.array([0.5, 0.0]), np.array([0.0, 0.0]))
    assert e["scale"][0] == 0.0 and np.isnan(e["scale"][1])
    assert e["orientation"][0] == pytest.approx(0.0, abs=1e-9) and np.isnan(e["orientation"][1])
