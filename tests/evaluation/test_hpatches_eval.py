"""HPatches evaluation (``patchpose.evaluation.hpatches_eval``) on a tiny replica of the real layout: MMA,
pose accuracy, intervals over sequences, the cache and its errors."""

from __future__ import annotations

import json
import math
import shutil

import cv2
import numpy as np
import pytest

from conftest import make_hpatches_replica, make_rgb_image
from patchpose.conventions import similarity_about
from patchpose.errors import InputError
from patchpose.evaluation.datasets.hpatches import write_homography
from patchpose.evaluation.hpatches_eval import pair_mma, summarize_matching
from patchpose.geometry import apply_homography


def test_pair_mma_exact_values():
    assert pair_mma([0.5, 2.5, 4.0], (1, 2, 3, 4, 5)) == pytest.approx([1 / 3, 1 / 3, 2 / 3, 1.0, 1.0])
    assert pair_mma([], (1, 2)) == [0.0, 0.0]
    per_seq = {
        "i_a": [{"mma": {"r": [1.0, 1.0]}, "matches": {"r": 10}}],
        "v_b": [
            {"mma": {"r": [0.0, 0.5]}, "matches": {"r": 2}},
            {"mma": {"r": [0.5, 0.5]}, "matches": {"r": 4}},
        ],
    }
    mma, matches = summarize_matching(per_seq, ["r"])
    assert mma["r"]["illumination"] == [1.0, 1.0]
    assert mma["r"]["viewpoint"] == [0.25, 0.5]
    assert mma["r"]["overall"] == pytest.approx([0.5, 2 / 3])
    assert matches["r"] == pytest.approx(16 / 3)


def test_evaluation_end_to_end_and_resume(tmp_path):
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    make_hpatches_replica(tmp_path, names=("i_a", "v_b"), targets=2)
    out = tmp_path / "out"
    doc = evaluate_hpatches(tmp_path, out, max_keypoints=200, progress=False)
    saved = json.loads((out / "results.json").read_text())
    rows = ["lower", "sift", "ours", "ours_top4", "upper"]
    # the default rows: every row but the ablations (those are tested with rows=["all"] at corners)
    assert saved["protocol"] == "d2net" and list(saved["mma"]) == rows[:2] + ["sift_all"] + rows[2:4] + [
        "dominant_gradient",
        "pair_pose",
        "pair_pose_gradient",
        "second_pass",
        "rectify",
        "upper",
    ]
    for row in saved["mma"]:
        for kind in ("overall", "illumination", "viewpoint"):
            v = saved["mma"][row][kind]
            assert len(v) == 10 and all(0.0 <= x <= 1.0 for x in v)
            assert v == sorted(v)  # MMA grows with the threshold
        assert saved["matches"][row] > 0
    assert list(saved["pose_accuracy"]) == rows
    per_kp = saved["descriptors_per_keypoint"]
    assert per_kp["ours_top4"] == 4 and per_kp["sift"] == per_kp["ours"] == 1
    assert 1 < per_kp["sift_all"] < 2  # measured, not nominal
    # what each row spent per pair: the recipe pair-pose describes 1.2 + 6 per SIFT keypoint (SIFT's votes, then 3
    # sizes about the fixed window and 3 about SIFT's), in 2 passes; our votes cost 4 instead of SIFT's 1.2
    costs = saved["costs"]
    assert costs["sift"] == pytest.approx({"computations": 1, "descriptors": 1, "passes": 1, "fits": 0,
                                          "seconds": costs["sift"]["seconds"]})  # fmt: skip
    assert 7 < costs["pair_pose"]["computations"] < 8.5 and costs["pair_pose"]["passes"] >= 2
    assert (
        all(c["seconds"] > 0 for c in costs.values()) and "| comp./kp |" in (out / "results.md").read_text()
    )
    assert saved["pose_accuracy"]["upper"] == {
        "scale_acc@1/6": 100.0,
        "scale_acc@1/3": 100.0,
        "ori_acc@5": 100.0,
        "ori_acc@10": 100.0,
    }
    # illumination pairs have no geometric change: the lower bound is exact there
    assert saved["pose"]["illumination"]["official"]["lower"]["ori_acc@5"] == 100.0
    assert (out / "mma.png").stat().st_size > 10_000 and "| ours (top-4) |" in (
        out / "results.md"
    ).read_text()
    # intervals of MMA@3 px over sequences; one sequence per kind: no interval there, one over both kinds
    iv = saved["intervals"]
    assert set(iv) == {"overall", "illumination", "viewpoint"} and iv["viewpoint"]["n_clusters"] == 1
    ours = saved["mma"]["ours"]["viewpoint"][2]
    assert iv["viewpoint"]["mean"]["ours"]["interval"] is None
    lo, hi = iv["overall"]["mean"]["ours"]["interval"]
    assert lo <= saved["mma"]["ours"]["overall"][2] <= hi
    assert "no interval: fewer than 2" in (out / "results.md").read_text()
    assert (
        "ours" not in iv["overall"]["minus_reference"] and "ours (argmax)" in (out / "results.md").read_text()
    )
    assert "− ours (argmax)" in (out / "results.md").read_text()
    vs = saved["intervals_vs_sift"]["viewpoint"]  # our rows against SIFT's own pose, in the same run
    assert vs["reference"] == "sift" and set(vs["minus_reference"]) == {"ours", "ours_top4"}
    sift = saved["mma"]["sift"]["viewpoint"][2]
    assert vs["minus_reference"]["ours"]["value"] == pytest.approx(ours - sift)
    assert "| ours (top-4) − SIFT's own pose |" in (out / "results.md").read_text()
    # a second run reads every sequence from the cache and gives the same numbers
    caches = list((out / "cache").rglob("*.match.json"))
    assert len(caches) == 2
    again = evaluate_hpatches(tmp_path, out, max_keypoints=200, progress=False)
    assert again["mma"] == doc["mma"] and again["pose_accuracy"] == doc["pose_accuracy"]
    # a sequence whose files changed is evaluated again, not read from the cache
    seq = tmp_path / "hpatches-sequences-release" / "v_b"
    cv2.imwrite(str(seq / "3.ppm"), np.full((200, 200, 3), 128, np.uint8))
    changed = evaluate_hpatches(tmp_path, out, max_keypoints=200, pose=False, progress=False)
    assert changed["mma"]["ours"]["viewpoint"] != doc["mma"]["ours"]["viewpoint"]
    assert changed["mma"]["ours"]["illumination"] == doc["mma"]["ours"]["illumination"]


def test_a_sequence_without_pose_pairs_does_not_shift_the_others(tmp_path):
    """A viewpoint sequence whose H moves every keypoint out of the image has no pose-transfer pairs; it used
    to count its samples anyway, so the pairs of the sequences after it pointed past their arrays."""
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    rel = make_hpatches_replica(tmp_path / "one", names=("v_b",), targets=2)
    alone = evaluate_hpatches(rel, tmp_path / "o1", max_keypoints=100, bootstrap=0, progress=False)
    away = tmp_path / "two" / "hpatches-sequences-release"
    shutil.copytree(rel / "v_b", away / "v_b")
    (away / "v_a").mkdir()  # sorts first
    img = make_rgb_image(200, seed=5)
    cv2.imwrite(str(away / "v_a" / "1.ppm"), img)
    H = np.array([[1.0, 0.0, 5000.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    for k in (2, 3):
        cv2.imwrite(str(away / "v_a" / f"{k}.ppm"), img)
        write_homography(away / "v_a" / f"H_1_{k}", H)
    both = evaluate_hpatches(away, tmp_path / "o2", max_keypoints=100, bootstrap=0, progress=False)
    assert both["pose_accuracy"] == alone["pose_accuracy"]


def test_mma_intervals_resample_sequences():
    """Two viewpoint sequences of two pairs each; ours scores 0.6 and 0.2 on them (0.4 overall), SIFT's pose
    0.1 more on every pair: sift − ours is +0.1 in every replicate, and ours' interval spans the two
    sequences' means."""
    from patchpose.evaluation.hpatches_eval import mma_intervals

    def pair(ours):
        return {"mma": {"ours": [0.0, 0.0, ours], "sift": [0.0, 0.0, ours + 0.1]}}

    per_seq = {"v_a": [pair(0.5), pair(0.7)], "v_b": [pair(0.1), pair(0.3)]}
    iv = mma_intervals(per_seq, ["ours", "sift"], (1, 2, 3), replicates=400)
    assert set(iv) == {"overall", "viewpoint"}  # no illumination sequence
    v = iv["viewpoint"]
    assert v["reference"] == "ours" and v["n_clusters"] == 2
    assert v["mean"]["ours"]["value"] == pytest.approx(0.4)
    assert v["mean"]["ours"]["interval"] == pytest.approx([0.2, 0.6])
    assert v["minus_reference"]["sift"]["value"] == pytest.approx(0.1)
    assert v["minus_reference"]["sift"]["interval"] == pytest.approx([0.1, 0.1])
    w = mma_intervals(per_seq, ["sift", "ours"], (1, 2, 3), replicates=400, reference="sift")["viewpoint"]
    assert w["reference"] == "sift" and w["minus_reference"]["ours"]["value"] == pytest.approx(-0.1)
    assert w["minus_reference"]["ours"]["interval"] == pytest.approx([-0.1, -0.1])


def test_correct_match_intervals_count_matches_within_3px():
    """Correct matches per pair = matches × MMA@3: ours 100 × 0.5 and 300 × 0.5 (mean 100), SIFT's 80 × 1.0 on
    both (80): ours finds 20 more per pair at a lower MMA, and with one sequence per pair the interval of the
    difference spans the two sequences' differences (−30 and +70)."""
    from patchpose.evaluation.hpatches_eval import mma_intervals

    def pair(n_ours, n_sift):
        return {
            "mma": {"ours": [0.0, 0.0, 0.5], "sift": [0.0, 0.0, 1.0]},
            "matches": {"ours": n_ours, "sift": n_sift},
        }

    per_seq = {"v_a": [pair(100, 80)], "v_b": [pair(300, 80)]}
    iv = mma_intervals(per_seq, ["sift", "ours"], (1, 2, 3), 2000, reference="sift", correct=True)[
        "viewpoint"
    ]
    assert iv["mean"]["ours"]["value"] == pytest.approx(100.0)
    assert iv["mean"]["sift"]["value"] == pytest.approx(80.0)
    assert iv["mean"]["sift"]["interval"] == pytest.approx([80.0, 80.0])
    assert iv["minus_reference"]["ours"]["value"] == pytest.approx(20.0)
    assert iv["minus_reference"]["ours"]["interval"] == pytest.approx([-30.0, 70.0])


def test_mma_intervals_draw_clusters_of_sequences_together():
    """Six sequences, three per photo (seeds 0 to 2): photo a's score 0.8 on each, photo b's 0.2. Drawn one
    sequence at a time, a replicate holds all six from one photo only 1 time in 32, so the interval stays
    inside (0.2, 0.8); drawn by photo, the sequences come in two blocks, and one time in two a replicate
    holds only one photo's: the interval is [0.2, 0.8]."""
    from patchpose.evaluation.hpatches_eval import mma_intervals, sequence_clusters

    def pair(v):
        return {"mma": {"ours": [0.0, 0.0, v]}}

    per_seq = {f"v_{p}_s{k}": [pair(0.8 if p == "a" else 0.2)] for p in "ab" for k in range(3)}
    groups = sequence_clusters(per_seq, r"^(.*)_s\d+$")
    assert groups == {f"v_{p}_s{k}": f"v_{p}" for p in "ab" for k in range(3)}
    by_seq = mma_intervals(per_seq, ["ours"], (1, 2, 3), replicates=2000)["viewpoint"]
    by_photo = mma_intervals(per_seq, ["ours"], (1, 2, 3), replicates=2000, clusters=groups)["viewpoint"]
    assert by_seq["n_clusters"] == 6 and by_photo["n_clusters"] == 2
    assert by_photo["mean"]["ours"]["value"] == pytest.approx(0.5)
    assert by_photo["mean"]["ours"]["interval"] == pytest.approx([0.2, 0.8])
    lo, hi = by_seq["mean"]["ours"]["interval"]
    assert 0.2 < lo < 0.5 < hi < 0.8
    # no group: the whole match; no pattern: each sequence its own cluster
    assert sequence_clusters(["v_a_s0", "v_b_s0"], r"^v_.") == {"v_a_s0": "v_a", "v_b_s0": "v_b"}
    assert sequence_clusters(["v_a"], None) == {"v_a": "v_a"}
    with pytest.raises(InputError, match="does not match the sequence 'i_c'"):
        sequence_clusters(["v_a_s0", "i_c"], r"^(.*)_s\d+$")
    with pytest.raises(InputError, match="not a regular expression"):
        sequence_clusters(["v_a"], "(")


def test_eval_hpatches_refuses_a_cluster_pattern_that_misses_a_sequence_before_any_work(tmp_path, capsys):
    from patchpose.cli.main import main

    make_hpatches_replica(tmp_path, names=("v_boat",), targets=1)
    out = tmp_path / "o"
    rc = main(
        ["eval", "hpatches", "--root", str(tmp_path), "--out", str(out), "--cluster-pattern", "_s[0-9]+$"]
    )
    assert rc == 2
    assert "does not match the sequence 'v_boat'" in capsys.readouterr().err
    assert not out.exists()


def test_repeated_pose_counts_on_a_hand_built_case():
    from patchpose.evaluation.hpatches_eval import repeated_pose_counts

    class F:
        def __init__(self, xy):
            self.xy = np.asarray(xy, float)

        def __len__(self):
            return len(self.xy)

    H = similarity_about((0.0, 0.0), 0.5, math.radians(30))
    x1 = np.array([[10.0, 10.0], [50.0, 50.0], [90.0, 20.0]])
    xk = apply_homography(H, x1)
    xk[2] += 5.0  # the third keypoint was not detected again (5 px off)
    f1, fk = F(x1), F(np.vstack([xk, [[300.0, 300.0]]]))
    t = math.radians(30)
    good = (np.zeros(3), np.zeros(3)), (np.full(4, 0.5), np.full(4, t))
    half = (
        (np.zeros(3), np.zeros(3)),
        (np.array([0.5, 0.8, 0.5, 0]), np.array([t + math.radians(7), t, t, 0])),
    )
    res = repeated_pose_counts(H, f1, fk, {"a": good[0], "b": half[0]}, {"a": good[1], "b": half[1]})
    assert res["n"] == 2
    assert res["a"] == [2, 2, 2, 2]
    # keypoint 0: scale exact, 7° off; keypoint 1: scale 0.3 octave off, orientation exact
    assert res["b"] == [1, 2, 1, 2]


def test_harris_and_file_keypoints_evaluate_without_sift_rows(tmp_path):
    """Harris corners and the same corners given as files give the same matching numbers; neither has
    the rows that read SIFT's pose; a missing keypoint file is a clear error."""
    from patchpose.data.keypoints import detect_harris
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches
    from patchpose.evaluation.rows import pose_rows

    assert pose_rows(4, sift=False) == (
        "lower",
        "ours",
        "ours_top4",
        "ours_adaptive",
        "ours_blend",
        "ours_scale_gradient_blend",
        "ours_scale_gradient",
        "pose",
        "ours_angle",
        "dominant_gradient",
        "dominant_gradient_blend",
        "dominant_gradient_pooled_blend",
        "shape_pooled_blend",
        "shape_zoom_blend",
        "pair_pose",
        "pair_pose_ours",
        "pair_pose_gradient",
        "upper",
    )
    for rows in (pose_rows(4, sift=True), pose_rows(4, sift=False, keynet=True)):
        assert (
            "dominant_gradient_pooled_blend" in rows
        )  # the shape blend's twin without the network, anywhere
    assert "shape_zoom_blend" in pose_rows(4, sift=True) and "shape_zoom_blend" in pose_rows(4, keynet=True)
    rel = make_hpatches_replica(tmp_path, names=("v_b",), targets=2)
    doc = evaluate_hpatches(
        tmp_path,
        tmp_path / "h",
        detector="harris",
        max_keypoints=150,
        pose=False,
        progress=False,
        rows=["all"],
    )
    assert list(doc["mma"]) == list(pose_rows(4, sift=False))
    assert doc["setup"]["detector"].startswith("Harris")
    # the pair row's voted zoom is measured against H's on every pair (the replica's views barely zoom)
    assert (
        list(doc["pair_zoom"]) == ["shape_zoom_blend", "pair_pose", "pair_pose_ours", "pair_pose_gradient"]
        and doc["pair_zoom"]["shape_zoom_blend"]["pairs"] == 2
    )
    assert "## The pair's zoom" in (tmp_path / "h" / "results.md").read_text()
    assert list(doc["pair_turn"]) == ["pair_pose"] and doc["pair_turn"]["pair_pose"]["pairs"] == 2
    assert "## The pair's turn" in (tmp_path / "h" / "results.md").read_text()
    assert set(doc["repeated_keypoints_pose"]["overall"]) == {"n", "ours", "dominant_gradient"}
    kdir = tmp_path / "kp" / "v_b"
    kdir.mkdir(parents=True)
    for k in (1, 2, 3):
        xy = detect_harris(cv2.imread(str(rel / "v_b" / f"{k}.ppm"))[..., ::-1].copy(), 150)
        if k == 3:
            np.savetxt(kdir / "3.txt", xy)
        else:
            np.save(kdir / f"{k}.npy", xy)
    again = evaluate_hpatches(
        tmp_path, tmp_path / "f", keypoints_dir=tmp_path / "kp", max_keypoints=150, pose=False, progress=False
    )
    # by default the rows that are not ablations: the bounds, ours, ours top-k, the peers, pair_pose and its gradient-voted twin
    default = ["lower", "ours", "ours_top4", "dominant_gradient", "pair_pose", "pair_pose_gradient", "upper"]
    assert again["mma"] == {r: doc["mma"][r] for r in default}
    assert again["matches"] == {r: doc["matches"][r] for r in default}
    assert "keypoints from" in again["setup"]["detector"]
    (kdir / "3.txt").unlink()
    with pytest.raises(InputError, match="no keypoints for v_b image 3"):
        evaluate_hpatches(tmp_path, tmp_path / "g", keypoints_dir=tmp_path / "kp", pose=False, progress=False)
    with pytest.raises(InputError, match="keypoints folder not found"):
        evaluate_hpatches(tmp_path, tmp_path / "g", keypoints_dir=tmp_path / "nope", progress=False)
    with pytest.raises(InputError, match="detector must be one of"):
        evaluate_hpatches(tmp_path, tmp_path / "g", detector="orb", progress=False)


def test_a_bad_image_in_a_sequence_is_named(tmp_path):
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    rel = make_hpatches_replica(tmp_path, names=("v_b",), targets=1)
    cv2.imwrite(str(rel / "v_b" / "2.ppm"), np.zeros((5, 5, 3), np.uint8))
    with pytest.raises(InputError, match=r"sequence .*v_b: image is too small"):
        evaluate_hpatches(tmp_path, tmp_path / "o", max_keypoints=50, pose=False, progress=False)


def test_shape_row_takes_the_shape_network_it_is_given(tmp_path):
    """``shape_weights`` picks the network of the shape rows (``shape_pooled_blend``): another file is another cached
    result (an untrained network's discs match differently from the bundled shapes); given without the row,
    it is an error, not ignored."""
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches
    from patchpose.models.shapenet import ShapeNet
    from patchpose.weights import save_shape_weights

    make_hpatches_replica(tmp_path / "r", names=("v_b",), targets=2)
    disc = save_shape_weights(ShapeNet(), tmp_path / "disc.safetensors")
    kw = dict(detector="gftt", max_keypoints=120, pose=False, progress=False, bootstrap=0)
    bundled = evaluate_hpatches(tmp_path / "r", tmp_path / "o", rows=["shape_pooled_blend"], **kw)
    discs = evaluate_hpatches(
        tmp_path / "r", tmp_path / "o", rows=["shape_pooled_blend"], shape_weights=disc, **kw
    )
    assert len(list((tmp_path / "o" / "cache").iterdir())) == 2
    assert bundled["mma"]["shape_pooled_blend"] != discs["mma"]["shape_pooled_blend"]
    with pytest.raises(
        InputError, match="shape-weights is for the shape_pooled_blend and shape_zoom_blend rows"
    ):
        evaluate_hpatches(tmp_path / "r", tmp_path / "o", rows=["lower"], shape_weights=disc, **kw)


def test_the_voted_zoom_is_scored_against_the_zoom_h_makes():
    """:func:`true_zoom` is H's local scale change at image 1's keypoints that land in image k (their median),
    and :func:`summarize_zoom` the errors of the votes against it, on hand-built pairs."""
    from patchpose.evaluation.hpatches_eval import summarize_zoom, true_zoom

    H = np.diag([2.0, 2.0, 1.0])  # everything twice as large in image k
    xy = np.array([[10.0, 10.0], [40.0, 20.0], [300.0, 300.0]])  # the last lands outside a 100 × 100 image k
    assert true_zoom(H, xy, (100, 100)) == pytest.approx(1.0)
    assert true_zoom(H, xy[2:], (100, 100)) is None
    per_seq = {
        "v_a": [
            {"k": 2, "zoom": {"shape_zoom_blend": 1.1}, "zoom_true": 1.0},
            {"k": 3, "zoom": {"shape_zoom_blend": -0.5}, "zoom_true": 0.0},
        ],
        "v_b": [
            {"k": 2, "zoom": {"shape_zoom_blend": 0.0}, "zoom_true": 0.2},
            {"k": 3, "zoom": {"shape_zoom_blend": 0.3}, "zoom_true": None},  # H gives none: not scored
            {"k": 4},  # no pair row
        ],
    }
    z = summarize_zoom(per_seq, ["ours_blend", "shape_zoom_blend"])["shape_zoom_blend"]
    assert z["pairs"] == 3
    assert z["median_abs_error"] == pytest.approx(0.2) and z["max_abs_error"] == pytest.approx(0.5)
    assert z["within_quarter_octave"] == pytest.approx(2 / 3)
    assert summarize_zoom(per_seq, ["ours_blend"]) == {}


def test_the_voted_turn_is_scored_against_the_turn_h_makes():
    """:func:`true_turn` is H's local turn at image 1's keypoints that land in image k (their circular median,
    CCW as displayed), and :func:`summarize_turn` the errors of the ``pair_pose`` row's votes against it, with
    the pairs where no turn was found counted apart, on hand-built pairs."""
    from patchpose.evaluation.hpatches_eval import summarize_turn, true_turn

    a = math.radians(30.0)  # x right, y down: turns the picture 30° clockwise as displayed
    H = np.array([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0], [0.0, 0.0, 1.0]])
    xy = np.array([[10.0, 10.0], [40.0, 20.0], [-300.0, 300.0]])  # the last lands outside a 100 × 100 image k
    assert true_turn(H, xy, (100, 100)) == pytest.approx(330.0, abs=0.05)
    assert true_turn(H, xy[2:], (100, 100)) is None
    per_seq = {
        "v_a": [
            {"k": 2, "turn": {"pair_pose": 358.0}, "turn_true": 1.0},  # 3° apart across 0
            {"k": 3, "turn": {"pair_pose": 100.0}, "turn_true": 90.0},
        ],
        "v_b": [
            {"k": 2, "turn": {"pair_pose": None}, "turn_true": 40.0},  # no turn found: counted, not scored
            {"k": 3, "turn": {"pair_pose": 20.0}, "turn_true": None},  # H gives none: not scored
            {"k": 4},  # no pair_pose row
        ],
    }
    t = summarize_turn(per_seq)["pair_pose"]
    assert t["pairs"] == 4 and t["not_found"] == 1
    assert t["median_abs_error"] == pytest.approx(6.5) and t["max_abs_error"] == pytest.approx(10.0)
    assert t["within_5deg"] == pytest.approx(0.5)
    assert summarize_turn({"v_a": [{"k": 2}]}) == {}


def test_the_ratio_matcher_keeps_a_subset_of_the_mutual_matches(tmp_path):
    """``matcher="ratio"``: Lowe's ratio test with a cross check keeps, for every row, only mutual nearest
    neighbours whose nearest is clearly nearer than the second: never more matches than ``mnn``, fewer for some
    rows; the report says which matcher ran, and an unknown one is a one-line error before any work."""
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    make_hpatches_replica(tmp_path, names=("v_b",), targets=1)
    rows = ["sift", "ours", "pair_pose_gradient"]
    mnn = evaluate_hpatches(
        tmp_path, tmp_path / "m", max_keypoints=150, rows=rows, pose=False, progress=False
    )
    ratio = evaluate_hpatches(
        tmp_path, tmp_path / "r", max_keypoints=150, rows=rows, pose=False, progress=False, matcher="ratio"
    )
    assert all(ratio["matches"][r] <= mnn["matches"][r] for r in rows)
    assert any(ratio["matches"][r] < mnn["matches"][r] for r in rows)
    assert (
        ratio["setup"]["matcher"] == "ratio" and "ratio test" in (tmp_path / "r" / "results.md").read_text()
    )
    with pytest.raises(InputError, match="matcher must be one of"):
        evaluate_hpatches(tmp_path, tmp_path / "x", matcher="lowe", progress=False)
