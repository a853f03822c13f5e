"""Bootstrap intervals over keypoints (patchpose.evaluation.intervals): exact values on hand-built cases."""

from __future__ import annotations

import numpy as np
import pytest

from patchpose.errors import InputError
from patchpose.evaluation.intervals import cluster_bootstrap, format_interval


def test_two_keypoints_one_always_right_one_always_wrong():
    """Two keypoints of 5 pairs each: a replicate draws {right, right}, {right, wrong} or {wrong, wrong} with
    probabilities 1/4, 1/2, 1/4, so the replicates' accuracies are 100, 50, 0 and the 95 % interval is the
    whole range, although 10 pairs resampled one by one would give a much narrower one."""
    correct = np.array([True] * 5 + [False] * 5)
    clusters = np.repeat([7, 3], 5)
    r = cluster_bootstrap({"m": correct}, clusters)
    acc = r["accuracy"]["m"]
    assert acc["value"] == 50.0 and acc["interval"] == [0.0, 100.0]
    assert r["n_pairs"] == 10 and r["n_clusters"] == 2 and r["difference"] == {}
    by_pair = cluster_bootstrap({"m": correct}, np.arange(10))["accuracy"]["m"]["interval"]
    assert 0.0 < by_pair[0] < 50.0 < by_pair[1] < 100.0


def test_paired_differences_are_exact_where_they_do_not_vary():
    rng = np.random.default_rng(1)
    a = rng.random(300) < 0.7
    clusters = rng.integers(0, 40, 300)
    r = cluster_bootstrap(
        {"ours": a, "same": a.copy(), "never": np.zeros(300, bool), "always": np.ones(300, bool)},
        clusters,
        reference="ours",
    )
    d = r["difference"]
    assert set(d) == {"same", "never", "always"}
    assert d["same"]["value"] == 0.0 and d["same"]["interval"] == [0.0, 0.0]
    assert d["never"]["value"] == pytest.approx(100 * a.mean())
    assert d["always"]["value"] == pytest.approx(100 * (a.mean() - 1))
    lo, hi = d["never"]["interval"]  # ours − never is our own accuracy, replicate by replicate
    assert [lo, hi] == pytest.approx(r["accuracy"]["ours"]["interval"])
    assert r["accuracy"]["always"]["interval"] == [100.0, 100.0]


def test_pairing_narrows_the_difference_of_methods_that_fail_on_the_same_keypoints():
    """Method b fails wherever a fails and on one more pair per keypoint that a gets right: each accuracy
    moves by tens of points between replicates, their difference by a few."""
    kp = np.repeat(np.arange(30), 10)
    hard = np.isin(kp, np.arange(12))
    a = ~hard
    b = a.copy()
    b[np.arange(30) * 10] = False
    r = cluster_bootstrap({"a": a, "b": b}, kp, reference="a")
    width = lambda iv: iv[1] - iv[0]  # noqa: E731
    assert width(r["accuracy"]["a"]["interval"]) > 20.0
    assert width(r["difference"]["b"]["interval"]) < width(r["accuracy"]["a"]["interval"]) / 5
    assert r["difference"]["b"]["value"] == pytest.approx(100 * 18 / 300)


def test_the_same_seed_gives_the_same_intervals_and_another_seed_nearly_the_same():
    rng = np.random.default_rng(0)
    c, k = rng.random(500) < 0.6, rng.integers(0, 80, 500)
    r1, r2 = cluster_bootstrap({"m": c}, k, seed=3), cluster_bootstrap({"m": c}, k, seed=3)
    assert r1 == r2
    r3 = cluster_bootstrap({"m": c}, k, seed=4)
    assert r3["accuracy"]["m"]["interval"] != r1["accuracy"]["m"]["interval"]
    assert np.allclose(r3["accuracy"]["m"]["interval"], r1["accuracy"]["m"]["interval"], atol=1.5)
    narrow = cluster_bootstrap({"m": c}, k, level=0.5)["accuracy"]["m"]["interval"]
    wide = r1["accuracy"]["m"]["interval"]
    assert wide[0] < narrow[0] < narrow[1] < wide[1]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"correct": {}}, "at least one method"),
        ({"correct": {"m": np.ones(3, bool)}, "clusters": np.zeros(4)}, "(3,) correctness values for 4"),
        ({"correct": {"m": np.array([0, 2, 1])}}, "boolean, or a score from 0 to 1"),
        ({"correct": {"m": np.array([0.5, np.nan, 1])}}, "boolean, or a score from 0 to 1"),
        ({"correct": {"m": np.array(["a", "b", "c"])}}, "boolean, or a score from 0 to 1"),
        ({"correct": {"m": np.ones(3, bool)}, "reference": "x"}, "reference method 'x'"),
        ({"correct": {"m": np.ones(3, bool)}, "replicates": 0}, "replicates must be positive"),
        ({"correct": {"m": np.ones(3, bool)}, "level": 1.0}, "level must lie in (0, 1)"),
        ({"correct": {"m": np.ones(0, bool)}, "clusters": np.zeros(0)}, "at least one pair"),
    ],
)
def test_bad_input_is_named(kwargs, message):
    args = {"clusters": np.zeros(3), **kwargs}
    with pytest.raises(InputError, match=__import__("re").escape(message)):
        cluster_bootstrap(**args)


def test_integer_zero_one_correctness_is_accepted():
    r = cluster_bootstrap({"m": np.array([1, 0, 1, 1])}, np.arange(4))
    assert r["accuracy"]["m"]["value"] == 75.0


def test_scores_between_0_and_1_are_averaged_per_cluster():
    """A score per pair (an MMA, say): two clusters whose pairs score 0.2 and 0.6 on average; the mean is
    0.4 (40 %), and a resample draws either cluster twice or both, so the interval is [20, 60]."""
    scores = np.array([0.1, 0.3, 0.6, 0.6])
    r = cluster_bootstrap({"a": scores, "b": scores - 0.05}, np.array([0, 0, 1, 1]), "a", replicates=400)
    assert r["accuracy"]["a"]["value"] == pytest.approx(40.0)
    assert r["accuracy"]["a"]["interval"] == pytest.approx([20.0, 60.0])
    assert r["difference"]["b"]["value"] == pytest.approx(5.0)
    assert r["difference"]["b"]["interval"] == pytest.approx([5.0, 5.0])


def test_format_interval():
    assert format_interval(1.23, [-0.44, 2.9], signed=True) == "+1.2 [−0.4, +2.9]"
    assert format_interval(68.54, [64.81, 72.0]) == "68.5 [64.8, 72.0]"


def test_rotation_mma_intervals_resample_photos():
    """eval rotation: photos are the clusters. Two photos, two turns: SIFT's MMA 0.8 and 0.6 per photo (0.7
    overall), ours 0.1 lower on each photo, so ours − sift is −0.1 in every replicate."""
    from patchpose.evaluation.rotation_eval import mma_intervals

    per_angle = {
        "sift": {0: [[1.0], [0.8]], 90: [[0.6], [0.4]]},
        "ours": {0: [[0.9], [0.9]], 90: [[0.5], [0.1]]},
    }
    r = mma_intervals(per_angle, (3,), replicates=400)["mma@3px"]
    assert r["n_clusters"] == 2 and r["replicates"] == 400 and r["reference"] == "sift"
    assert r["mean"]["sift"]["value"] == pytest.approx(0.7)
    assert r["mean"]["sift"]["interval"] == pytest.approx([0.6, 0.8])
    assert r["minus_reference"]["ours"]["value"] == pytest.approx(-0.1)
    assert r["minus_reference"]["ours"]["interval"] == pytest.approx([-0.1, -0.1])


def test_fraction_intervals_print_three_decimals_and_no_negative_zero():
    from patchpose.evaluation.intervals import format_fraction_interval

    assert format_fraction_interval({"value": 0.8526, "interval": [0.81, 0.9]}) == "0.853 [0.810, 0.900]"
    assert (
        format_fraction_interval({"value": -0.013, "interval": [-0.029, 0.001]}, True)
        == "−0.013 [−0.029, +0.001]"
    )
    # a difference that rounds to zero reads +0.000, whatever its sign before rounding
    assert (
        format_fraction_interval({"value": -1e-17, "interval": [-0.0004, 0.0]}, True)
        == "+0.000 [+0.000, +0.000]"
    )


def test_one_cluster_has_no_interval_rather_than_a_zero_width_one():
    """With one keypoint (or sequence, or photo) every replicate is the sample itself: the interval cannot
    be computed, and the tables say so instead of printing [x, x]."""
    from patchpose.evaluation.intervals import (
        NO_INTERVAL,
        cluster_bootstrap,
        format_fraction_interval,
        format_interval,
        mean_intervals,
    )

    correct = {"a": np.array([True, False, True]), "b": np.array([True, True, False])}
    one = cluster_bootstrap(correct, np.zeros(3), reference="a", replicates=50)
    assert one["accuracy"]["a"]["interval"] is None and one["difference"]["b"]["interval"] is None
    assert one["accuracy"]["a"]["value"] == pytest.approx(200 / 3)
    two = cluster_bootstrap(correct, np.array([0, 0, 1]), reference="a", replicates=50)
    assert two["accuracy"]["a"]["interval"] is not None
    m = mean_intervals({k: v.astype(float) for k, v in correct.items()}, np.zeros(3), "a", 50)
    assert m["mean"]["a"]["interval"] is None and m["minus_reference"]["b"]["interval"] is None
    assert format_fraction_interval(m["mean"]["a"]).endswith(NO_INTERVAL)
    assert format_interval(66.7, None) == f"66.7 {NO_INTERVAL}"
