"""The official PatchPose bin metric (``patchpose.evaluation.official``), on hand-computed cases.

Most cases are asymmetric on purpose: computing ``d = argmax(src) − argmax(trg)`` (a sign flip) or
rounding the orientation ground truth would break at least one exact expected value below."""

from __future__ import annotations

import math

import numpy as np
import pytest

from patchpose.evaluation.official import (
    official_accuracies,
    official_ori_errors,
    official_scale_errors,
    official_topk_ori_errors,
    official_topk_scale_errors,
    ori_gt_bins,
    scale_gt_bins,
)


def one_hot(bins, num_bins: int) -> np.ndarray:
    h = np.zeros((len(bins), num_bins), np.float32)
    h[np.arange(len(bins)), bins] = 1.0
    return h


# ----------------------------------------------------------------------------- scale
def test_scale_ground_truth_is_rounded_bins():
    s = [2 ** (1 / 3), 2.0**-2, 1.26, 0.7937, 1.0, 4.0, 2 ** (2 / 3), 1.1]
    # 3·log2: 1, -6, 1.0003, -0.99995, 0, 6, 2, 0.41
    assert scale_gt_bins(s).tolist() == [1, -6, 1, -1, 0, 6, 2, 0]


def test_scale_errors_one_hot_exact():
    src = one_hot([6, 6, 6, 6, 3, 4, 12], 13)
    trg = one_hot([7, 0, 7, 6, 5, 9, 0], 13)
    gt = [2 ** (1 / 3), 2.0**-2, 1.26, 0.7937, 2 ** (2 / 3), 2.0, 4.0]
    # d = [1, -6, 1, 0, 2, 5, -12]; gt bins = [1, -6, 1, -1, 2, 3, 6]
    err = official_scale_errors(src, trg, gt)
    assert err.dtype == np.float64
    assert err.tolist() == [0.0, 0.0, 0.0, 1.0, 0.0, 2.0, 18.0]


def test_scale_errors_use_argmax_of_non_one_hot_histograms():
    rng = np.random.default_rng(0)
    src = rng.normal(size=(2, 13))
    trg = rng.normal(size=(2, 13))
    src[0, 2], trg[0, 5] = 10.0, 10.0  # d = 3
    src[1, 9], trg[1, 1] = 10.0, 10.0  # d = -8
    err = official_scale_errors(src, trg, [2.0, 2.0**-2])  # gt bins 3, -6
    assert err.tolist() == [0.0, 2.0]


def test_scale_matches_python_round_reference():
    """Independent scalar reference: Python's ``round`` (half to even) in float64 on 4-decimal
    factors as in the file names; ``np.round`` in float32 must agree."""
    rng = np.random.default_rng(1)
    n = 2000
    s = np.round(rng.uniform(0.25, 4.0, n), 4)
    a, b = rng.integers(0, 13, n), rng.integers(0, 13, n)
    err = official_scale_errors(one_hot(a, 13), one_hot(b, 13), s)
    ref = [abs(int(bb - aa) - round(3 * math.log2(ss))) for aa, bb, ss in zip(a, b, s)]
    assert err.tolist() == [float(r) for r in ref]


def test_scale_threshold_one_and_a_half_equals_one():
    rng = np.random.default_rng(2)
    n = 500
    s = 2.0 ** rng.uniform(-2, 2, n)
    err = official_scale_errors(rng.normal(size=(n, 13)), rng.normal(size=(n, 13)), s)
    assert np.all(err == np.round(err))
    acc = official_accuracies(scale_errors=err)
    assert acc["scale_acc@1/2"] == acc["scale_acc@1/3"]
    assert acc["scale_acc@1/6"] <= acc["scale_acc@1/3"] <= acc["scale_acc@2/3"]


# ----------------------------------------------------------------------------- orientation
def test_ori_ground_truth_not_rounded():
    assert ori_gt_bins([15.0, 0.0, 350.0, 5.0]).tolist() == [1.5, 0.0, 35.0, 0.5]


def test_ground_truth_bins_of_other_bin_counts_are_exact_divisions():
    """θ / (360/B) and log2(s)/2 · (B−1)/2 as the docstrings say, also where B does not divide evenly
    (integer division gave 90° → 4.09 bins of 16 and 18 bins of 64, and a scale factor of 4 → 5 of 12)."""
    assert ori_gt_bins([90.0], 16)[0] == pytest.approx(4.0)
    assert ori_gt_bins([90.0], 64)[0] == pytest.approx(16.0)
    assert scale_gt_bins([4.0], 12).tolist() == [6]  # log2 4 / 2 · 5.5 = 5.5 → 6 (halves to even)
    assert scale_gt_bins([4.0], 13).tolist() == [6]


@pytest.mark.parametrize("cyclic", [True, False])
def test_ori_errors_one_hot_exact(cyclic):
    src = one_hot([0, 0, 3, 35, 10], 36)
    trg = one_hot([1, 2, 4, 1, 10], 36)
    ang = [15.0, 15.0, 10.0, 20.0, 5.0]
    # d = [1, 2, 1, -34, 0]; g = [1.5, 1.5, 1, 2, 0.5]
    err = official_ori_errors(src, trg, ang, cyclic=cyclic)
    assert err.tolist() == [0.5, 0.5, 0.0, 0.0, 0.5]
    acc = official_accuracies(ori_errors=err)
    assert acc["ori_acc@5"] == 100.0  # 0.5 bin counts at ±5° (≤, no tolerance needed)
    assert acc["ori_acc@10"] == 100.0


def test_ori_semi_cyclic_official_case():
    # src argmax 35, trg argmax 0 -> d = -35; 350° -> g = 35; d - g = -70
    src, trg = one_hot([35], 36), one_hot([0], 36)
    assert official_ori_errors(src, trg, [350.0], cyclic=False).tolist() == [34.0]
    assert official_ori_errors(src, trg, [350.0], cyclic=True).tolist() == [2.0]
    assert official_ori_errors(src, trg, [350.0]).tolist() == [2.0]  # cyclic is the default


def test_ori_semi_cyclic_agrees_with_cyclic_when_one_wrap_suffices():
    rng = np.random.default_rng(3)
    n = 3000
    a, b = rng.integers(0, 36, n), rng.integers(0, 36, n)
    ang = rng.integers(0, 360, n).astype(float)
    src, trg = one_hot(a, 36), one_hot(b, 36)
    semi = official_ori_errors(src, trg, ang, cyclic=False)
    cyc = official_ori_errors(src, trg, ang, cyclic=True)
    x = (b - a) - ang / 10
    assert np.all(cyc <= 18.0) and np.all(semi >= cyc)
    near = np.abs(x) <= 54
    np.testing.assert_array_equal(semi[near], cyc[near])
    assert np.any(semi[~near] > cyc[~near])
    # independent scalar references
    ref_semi = [min(abs(v), abs(v - 36), abs(v + 36)) for v in x]
    ref_cyc = [min(abs(v - 36 * k) for k in (-2, -1, 0, 1, 2)) for v in x]
    np.testing.assert_allclose(semi, ref_semi, atol=1e-5)
    np.testing.assert_allclose(cyc, ref_cyc, atol=1e-5)


def test_ori_non_integer_ground_truth_float32():
    # 13° -> g = 1.3 (float32), d = 1 -> error 0.3 (within float32 precision)
    err = official_ori_errors(one_hot([4], 36), one_hot([5], 36), [13.0])
    assert err[0] == pytest.approx(0.3, abs=1e-6)


# ----------------------------------------------------------------------------- accuracies
def test_accuracies_by_hand():
    acc = official_accuracies(ori_errors=[0, 0.5, 1, 2, 5])
    assert acc == {
        "ori_acc@5": 40.0,
        "ori_acc@10": 60.0,
        "ori_acc@20": 80.0,
        "ori_acc@40": 80.0,
        "n_ori_pairs": 5,
    }
    acc = official_accuracies(scale_errors=[0, 1, 1, 2, 3, 0, 0, 5])
    assert acc == {
        "scale_acc@1/6": 37.5,
        "scale_acc@1/3": 62.5,
        "scale_acc@1/2": 62.5,
        "scale_acc@2/3": 75.0,
        "n_scale_pairs": 8,
    }


def test_accuracies_both_rounding_and_empty():
    acc = official_accuracies(scale_errors=[0, 1, 3], ori_errors=[0.5, 4.0, 4.5], decimals=2)
    assert acc["scale_acc@1/6"] == 33.33 and acc["scale_acc@1/3"] == 66.67
    assert acc["ori_acc@5"] == 33.33 and acc["ori_acc@40"] == 66.67
    assert acc["n_scale_pairs"] == 3 and acc["n_ori_pairs"] == 3
    empty = official_accuracies(ori_errors=[])
    assert empty["n_ori_pairs"] == 0 and math.isnan(empty["ori_acc@5"])
    assert official_accuracies() == {}


def test_accuracies_end_to_end_from_histograms():
    src = one_hot([0, 0, 0, 0, 0], 36)
    trg = one_hot([1, 2, 4, 8, 30], 36)
    # d = [1, 2, 4, 8, 30]; g = [1, 1.5, 3, 6, 1] -> errors [0, 0.5, 1, 2, 7] (cyclic: 29 -> 7)
    err = official_ori_errors(src, trg, [10.0, 15.0, 30.0, 60.0, 10.0])
    assert err.tolist() == [0.0, 0.5, 1.0, 2.0, 7.0]
    acc = official_accuracies(ori_errors=err)
    assert (acc["ori_acc@5"], acc["ori_acc@10"], acc["ori_acc@20"], acc["ori_acc@40"]) == (
        40.0,
        60.0,
        80.0,
        80.0,
    )


# ----------------------------------------------------------------------------- top-k
def test_topk_scale_second_peak_recovers():
    src = np.zeros((1, 13))
    trg = np.zeros((1, 13))
    src[0, 2], src[0, 5] = 1.0, 0.8  # argmax 2, second 5
    trg[0, 9], trg[0, 6] = 1.0, 0.9  # argmax 9, second 6
    gt = [2 ** (1 / 3)]  # 1 bin
    # top-1: d = 7 -> 6; top-2 pairs d in {7, 4, 4, 1} -> 0
    assert official_scale_errors(src, trg, gt).tolist() == [6.0]
    assert official_topk_scale_errors(src, trg, gt, k=1).tolist() == [6.0]
    assert official_topk_scale_errors(src, trg, gt, k=2).tolist() == [0.0]
    acc1 = official_accuracies(scale_errors=official_topk_scale_errors(src, trg, gt, k=1))
    acc2 = official_accuracies(scale_errors=official_topk_scale_errors(src, trg, gt, k=2))
    assert acc1["scale_acc@1/6"] == 0.0 and acc2["scale_acc@1/6"] == 100.0


@pytest.mark.parametrize("cyclic", [True, False])
def test_topk_ori_second_peak_recovers(cyclic):
    src = np.zeros((1, 36))
    trg = np.zeros((1, 36))
    src[0, 10], src[0, 3] = 1.0, 0.7
    trg[0, 15], trg[0, 4] = 1.0, 0.9
    # g = 1; top-1 d = 5 -> 4; top-2 pairs d in {5, -6, 12, 1} -> 0
    assert official_topk_ori_errors(src, trg, [10.0], k=1, cyclic=cyclic).tolist() == [4.0]
    assert official_topk_ori_errors(src, trg, [10.0], k=2, cyclic=cyclic).tolist() == [0.0]


def test_topk_k1_equals_argmax_on_random_histograms():
    rng = np.random.default_rng(4)
    n = 400
    for hs, ht in [
        (rng.normal(size=(n, 13)), rng.normal(size=(n, 13))),
        (
            rng.integers(0, 3, (n, 13)).astype(np.float32),
            rng.integers(0, 3, (n, 13)).astype(np.float32),
        ),  # ties
    ]:
        s = 2.0 ** rng.uniform(-2, 2, n)
        np.testing.assert_array_equal(
            official_topk_scale_errors(hs, ht, s, k=1), official_scale_errors(hs, ht, s)
        )
        d = np.argmax(ht, 1) - np.argmax(hs, 1)  # first maximum on ties, as torch/numpy argmax
        ref = [abs(int(v) - round(3 * math.log2(x))) for v, x in zip(d, s)]
        assert official_scale_errors(hs, ht, s).tolist() == [float(r) for r in ref]
    for hs, ht in [
        (rng.normal(size=(n, 36)), rng.normal(size=(n, 36))),
        (rng.integers(0, 3, (n, 36)).astype(np.float32), rng.integers(0, 3, (n, 36)).astype(np.float32)),
    ]:
        ang = rng.uniform(0, 360, n)
        for cyclic in (True, False):
            np.testing.assert_array_equal(
                official_topk_ori_errors(hs, ht, ang, k=1, cyclic=cyclic),
                official_ori_errors(hs, ht, ang, cyclic=cyclic),
            )
        d = np.argmax(ht, 1) - np.argmax(hs, 1)
        x = d - ang / 10
        ref = [min(abs(v), abs(v - 36), abs(v + 36)) for v in x]
        np.testing.assert_allclose(official_ori_errors(hs, ht, ang, cyclic=False), ref, atol=1e-4)


def test_topk_non_increasing_in_k():
    rng = np.random.default_rng(5)
    n = 300
    hs, ht = rng.normal(size=(n, 36)), rng.normal(size=(n, 36))
    ang = rng.uniform(0, 360, n)
    prev = official_topk_ori_errors(hs, ht, ang, k=1)
    for k in (2, 3, 5):
        cur = official_topk_ori_errors(hs, ht, ang, k=k)
        assert np.all(cur <= prev)
        prev = cur
    # with all bins as candidates every pair has an exact-bin candidate: error = distance to nearest integer
    full = official_topk_ori_errors(hs, ht, ang, k=36)
    np.testing.assert_allclose(full, np.abs(ang / 10 - np.round(ang / 10)), atol=1e-4)


# ----------------------------------------------------------------------------- validation
def test_input_validation():
    with pytest.raises(ValueError):
        official_scale_errors(np.zeros((2, 13)), np.zeros((2, 12)), [1.0, 1.0])
    with pytest.raises(ValueError):
        official_ori_errors(np.zeros((2, 36)), np.zeros((2, 36)), [0.0])
    with pytest.raises(ValueError):
        official_topk_ori_errors(np.zeros((1, 36)), np.zeros((1, 36)), [0.0], k=0)
    with pytest.raises(ValueError):
        official_topk_scale_errors(np.zeros((1, 13)), np.zeros((1, 13)), [1.0], k=14)


def test_official_metric_for_continuous_methods():
    """Poses are quantised to their nearest bins before differencing; NaN (no detection) is always wrong."""
    from patchpose.evaluation.official import official_errors_from_poses

    # scale: 0.1 → bin 0, 0.45 → bin 1 (3·0.45 = 1.35): d = 1; truth 2^(1/3) → 1 bin: error 0
    e = official_errors_from_poses(
        np.array([0.1, 0.1, np.nan]), np.array([0.45, 1.1, 0.0]), np.array([2 ** (1 / 3)] * 3), "scale"
    )
    np.testing.assert_array_equal(e, [0.0, 2.0, np.inf])
    # orientation: 355° → bin 0 (35.5 rounds to 36 → 0), 12° → bin 1: d = 1, truth 15° (1.5 bins): 0.5
    src, trg = np.radians([355.0, 0.0]), np.radians([12.0, 200.0])
    e = official_errors_from_poses(src, trg, np.array([15.0, 20.0]), "orientation")
    np.testing.assert_allclose(e, [0.5, 18.0])  # 200° → bin 20, truth 2 bins: |20 − 2| = 18 either way round
    # top-k: the second candidate of the target is right
    e = official_errors_from_poses(
        np.array([[0.0, 1.0]]), np.array([[1.0, 1.0 / 3]]), np.array([2 ** (1 / 3)]), "scale"
    )
    np.testing.assert_array_equal(e, [0.0])


def test_exact_poses_ceiling_of_the_official_metric():
    """A perfect estimator has zero continuous error, scores 100 % on rotations by whole bins, and loses
    exactly the quantisation on a 3° rotation: a pair fails when the reference's angle lies within 3° below
    a bin boundary, i.e. 30 % of the time."""
    from patchpose.evaluation.patchpose_eval import continuous_accuracies, exact_poses, official_scores

    n = 4000
    for angle, expected in ((30.0, 100.0), (3.0, 70.0)):
        data = {
            "keypoint": np.repeat(np.arange(n), 2),
            "scale_factor": np.ones(2 * n),
            "angle_deg": np.tile([0.0, angle], n),
        }
        pairs = {
            "ref": np.arange(0, 2 * n, 2),
            "trg": np.arange(1, 2 * n, 2),
            "scale_factor": np.ones(n),
            "angle_deg": np.full(n, angle),
            "d_scale": np.zeros(n),
            "d_ori": np.full(n, np.radians(angle)),
        }
        m = exact_poses(data, seed=1)
        res = official_scores(m, None, pairs)
        assert res["ori_acc@5"] == pytest.approx(expected, abs=2.0)
        assert res["ori_acc@10"] == 100.0
        cont, err = continuous_accuracies(m, pairs, ("orientation",))
        assert np.abs(err["orientation"]).max() < 1e-9 and cont["ori_acc@5"] == 100.0


def test_histograms_of_other_widths_are_scored_in_the_metrics_bins():
    """eval patchpose: the official thresholds count bins of 10° and 1/3 octave, so a histogram of 72
    orientation bins or 6 scale bins per octave is decoded and binned as a baseline's poses are. A view
    pair off by 5° (one 72-bin) passes ±5° as a baseline's would; read as bins it failed (1 bin > 0.5)."""
    from patchpose.evaluation.patchpose_eval import MethodPoses, official_pair_errors

    ori = np.full((2, 72), 1e-4)
    ori[0, 0] = ori[1, 2] = 1.0  # peaks at 0° and 10°; the truth is 5°
    ori /= ori.sum(1, keepdims=True)
    pairs_o = {"ref": np.array([0]), "trg": np.array([1]), "angle_deg": np.array([5.0])}
    sc = np.full((2, 25), 1e-4)  # 6 bins per octave over [−2, 2]
    sc[0, 12] = sc[1, 13] = 1.0  # 1/6 octave apart; the truth is 1/3 octave
    sc /= sc.sum(1, keepdims=True)
    pairs_s = {"ref": np.array([0]), "trg": np.array([1]), "scale_factor": np.array([2 ** (1 / 3)])}
    m = MethodPoses("m", scale_hist=sc, ori_hist=ori, scale_bins_per_octave=6.0)
    se, oe = official_pair_errors(m, pairs_s, pairs_o)
    # orientation: bins round(0/10) = 0 and round(10/10) = 1, against 0.5 → 0.5, within ±5°
    assert oe[0] == pytest.approx(0.5)
    # scale: 1/6 octave is bin round(0.5) = 0 (halves to even), against round(1) = 1 → 1, within ±1/3 only
    assert se[0] == pytest.approx(1.0)
    acc = official_accuracies(se, oe)
    assert acc["ori_acc@5"] == 100.0 and acc["scale_acc@1/6"] == 0.0 and acc["scale_acc@1/3"] == 100.0
    # the metric's own bins are still read as bins (argmax), the same pairs at 36 and 13 bins
    ori36 = np.full((2, 36), 1e-4)
    ori36[0, 0] = ori36[1, 1] = 1.0
    se36, oe36 = official_pair_errors(MethodPoses("m", ori_hist=ori36), None, pairs_o)
    assert se36 is None and oe36[0] == pytest.approx(0.5)
    # and the top-k candidates of other widths are the histogram's peaks
    ori2 = ori.copy()
    ori2[1, 2], ori2[1, 36] = 0.4, 0.6  # view 2's strongest peak is opposite; its second the right one
    _, oe_k1 = official_pair_errors(MethodPoses("m", ori_hist=ori2), None, pairs_o, k=1)
    _, oe_k2 = official_pair_errors(MethodPoses("m", ori_hist=ori2), None, pairs_o, k=2)
    assert oe_k1[0] > 10 and oe_k2[0] == pytest.approx(0.5)
