"""Two-view pose evaluation (``patchpose.evaluation.pose_eval``): the metrics on hand-built cases, the
pipeline end to end (a failing pair is reported, never a crash), and bad input refused before any work."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import make_textured_image, pairs_file_line
from patchpose.errors import InputError
from patchpose.evaluation.datasets.posed_pairs import (
    PosedPair,
    generate_posed_pairs,
    read_pairs_file,
    rotation_from_angles,
    write_pairs_file,
)
from patchpose.evaluation.pose_eval import (
    FAIL_DEG,
    MAIN_ROWS,
    maa,
    maa_intervals,
    pair_accuracy,
    pair_clusters,
    pose_auc,
    pose_error_deg,
    rotation_error_deg,
    translation_error_deg,
)

#: the main rows of eval pose without a peers folder, in report order (each budget in turn)
MAIN_ROWS_WITHOUT_PEERS = tuple(r for r in MAIN_ROWS if r not in ("orinet", "affnet+orinet"))


def test_metrics_on_hand_built_errors():
    # mAA: thresholds 1..5; errors 0.5, 2.5, 7, 180 → shares 1/4, 1/4, 2/4, 2/4, 2/4
    assert maa([0.5, 2.5, 7.0, 180.0], 5) == pytest.approx((0.25 + 0.25 + 0.5 + 0.5 + 0.5) / 5)
    assert maa([0.5, 2.5, 7.0, 180.0], 10) == pytest.approx((1 + 1 + 2 + 2 + 2 + 2 + 3 + 3 + 3 + 3) / 40)
    # AUC: one pair at error 2 of threshold 5: recall 0 until 2 (linear from (0,0) to (2,1)), then 1
    assert pose_auc([2.0], 5.0) == pytest.approx((1.0 + 3.0) / 5.0)
    assert pose_auc([10.0], 5.0) == 0.0
    assert pose_auc([0.0, 0.0], 5.0) == pytest.approx(1.0)


def test_per_pair_accuracy_photos_and_intervals_on_hand_built_errors():
    # each pair's share of the thresholds 1..5 it is within; their mean is the mAA
    np.testing.assert_allclose(pair_accuracy([0.5, 2.5, 7.0, 180.0], 5), [1.0, 0.6, 0.0, 0.0])
    assert np.mean(pair_accuracy([0.5, 2.5, 7.0, 180.0], 10)) == pytest.approx(
        maa([0.5, 2.5, 7.0, 180.0], 10)
    )
    # pairs that share an image, directly or not, are one cluster, named by its first image
    pairs = [
        ("coins_0.png", "coins_r0.png"),
        ("b/1.jpg", "b/2.jpg"),
        ("coins_0.png", "coins_r1.png"),
        ("b/3.jpg", "b/2.jpg"),
        ("a.png", "z.png"),
    ]
    assert pair_clusters(pairs) == ["coins_0.png", "b/1.jpg", "coins_0.png", "b/1.jpg", "a.png"]  # fmt: skip
    # photo x: pairs 0 and 1, photo y: pair 2; row b fails where a does not, and the other way round
    errors = {"a": [0.5, 0.5, 180.0], "b": [180.0, 0.5, 0.5]}
    iv = maa_intervals(errors, ["x", "x", "y"], "a", replicates=500)["mAA@5"]
    assert iv["mean"]["a"]["value"] == pytest.approx(2 / 3) and iv["mean"]["b"]["value"] == pytest.approx(
        2 / 3
    )
    assert iv["minus_reference"]["b"]["value"] == pytest.approx(0.0) and iv["n_clusters"] == 2
    # photo y alone: b − a = +1; photo x alone: −1/2 (the pairs of a photo move together)
    lo, hi = iv["minus_reference"]["b"]["interval"]
    assert lo == pytest.approx(-0.5) and hi == pytest.approx(1.0)


def test_pose_errors_and_their_conventions():
    R = rotation_from_angles(math.radians(10), 0, 0)
    assert rotation_error_deg(np.eye(3), R) == pytest.approx(10.0)
    assert translation_error_deg(np.array([1.0, 0, 0]), np.array([-1.0, 0, 0])) == pytest.approx(
        0.0
    )  # sign-free
    assert translation_error_deg(np.array([1.0, 0, 0]), np.array([1.0, 1.0, 0])) == pytest.approx(45.0)
    T = np.eye(4)
    T[:3, 3] = [1.0, 0, 0]
    assert pose_error_deg(T, R, np.array([1.0, 1.0, 0])) == pytest.approx(45.0)  # max of the two
    assert pose_error_deg(np.eye(4), R, np.zeros(3)) == pytest.approx(10.0)  # zero baseline: rotation only
    assert pose_error_deg(T, None, None) == FAIL_DEG


def test_evaluation_end_to_end_reports_failing_pairs(tmp_path):
    from patchpose.evaluation.pose_eval import evaluate_pose

    photo = tmp_path / "tex.png"
    cv2.imwrite(str(photo), (make_textured_image(320) * 255).astype(np.uint8))
    pairs_file = generate_posed_pairs([photo], tmp_path / "d", per_photo=1, stereo_pairs=1, progress=False)
    pairs = read_pairs_file(pairs_file)
    # a third pair whose second image is blank: no matches, so it must fail with 180° and not crash
    cv2.imwrite(str(tmp_path / "d" / "images" / "blank.png"), np.full((200, 200, 3), 128, np.uint8))
    pairs.append(PosedPair(pairs[0].name0, "blank.png", pairs[0].K0, pairs[0].K1, pairs[0].T_0to1))
    write_pairs_file(pairs_file, pairs)
    doc = evaluate_pose(
        pairs_file,
        tmp_path / "d" / "images",
        tmp_path / "out",
        budgets=(256, 512),
        ablation=False,
        progress=False,
    )
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["n_pairs"] == 3
    assert list(saved["rows"]) == [f"{r}@{k}" for k in (256, 512) for r in MAIN_ROWS_WITHOUT_PEERS]
    for row in saved["rows"].values():
        assert set(row) == {"inliers", "mAA@5", "mAA@10", "AUC@5", "AUC@10", "AUC@20"}
        assert 0.0 <= row["mAA@10"] <= 2 / 3 + 1e-9  # the blank pair can never count
    assert all(p["errors"]["sift@256"] == FAIL_DEG for p in saved["per_pair"] if "blank" in p["pair"])
    assert any("no keypoints detected in blank.png" in f for f in saved["failures"])  # the method's failure
    assert doc["per_pair"][0]["errors"]["sift@512"] < 5.0  # the camera-rotation pair is easy
    assert doc["per_pair"][0]["errors"]["sift resolved by ours@512"] < 5.0
    assert doc["per_pair"][0]["errors"]["dominant gradient@512"] < 5.0  # the peer's poses work there too
    assert doc["per_pair"][0]["errors"]["dominant gradient blend@512"] < 5.0  # and its blended descriptors
    assert doc["per_pair"][0]["errors"]["our scale, gradient blend@512"] < 5.0
    assert doc["per_pair"][0]["errors"]["shape zoom blend@512"] < 5.0  # the pair row, at the pair's zoom
    assert doc["per_pair"][0]["errors"]["pair pose@512"] < 5.0  # match_pair's default, at the pair's turn
    assert "| sift+ours@512 |" in (tmp_path / "out" / "results.md").read_text()
    # intervals over photos, each budget's rows against its SIFT row
    assert saved["intervals"]["512"]["mAA@5"]["reference"] == "sift@512"
    assert set(saved["intervals"]["512"]["mAA@10"]["mean"]) == {
        r for r in saved["rows"] if r.endswith("@512")
    }


def test_corners_have_no_sift_rows_and_the_pair_row_finds_a_zoomed_turned_camera(tmp_path):
    """``eval pose --detector gftt``: the rows that read SIFT's pose are left out (intervals against the
    dominant gradient), and on a camera turned and zoomed out 2× the pair row recovers the rotation, where the
    fixed 16 px size of the dominant gradient's row cannot follow the zoom; a blank image (no corners) fails its
    pair, and the run goes on."""
    from patchpose.data.patches import load_photo
    from patchpose.data.photos import demo_photo
    from patchpose.evaluation.datasets.posed_pairs import default_intrinsics, rotate_camera, zoomed
    from patchpose.evaluation.pose_eval import evaluate_pose

    (tmp_path / "images").mkdir()
    img = load_photo(demo_photo(), 480)
    K0 = default_intrinsics(img.shape)
    K1 = zoomed(K0, -1.0)
    R = rotation_from_angles(math.radians(70), math.radians(2), 0.0)
    cv2.imwrite(str(tmp_path / "images" / "a_0.png"), img[..., ::-1])
    cv2.imwrite(str(tmp_path / "images" / "a_r0.png"), rotate_camera(img, K0, R, K1)[..., ::-1])
    T = np.eye(4)
    T[:3, :3] = R
    # a blank image has no corners: a failure of the method on that pair (180°), not an input error
    cv2.imwrite(str(tmp_path / "images" / "blank.png"), np.full((200, 200, 3), 128, np.uint8))
    pairs = [PosedPair("a_0.png", "a_r0.png", K0, K1, T), PosedPair("a_0.png", "blank.png", K0, K0, T)]
    write_pairs_file(tmp_path / "pairs.txt", pairs)
    doc = evaluate_pose(
        tmp_path / "pairs.txt", tmp_path / "images", tmp_path / "out", weights="patchpose-v10", budgets=(300,),
        ablation=False, progress=False, detector="gftt",
    )  # fmt: skip
    assert list(doc["rows"]) == [f"{r}@300" for r in MAIN_ROWS_WITHOUT_PEERS if not r.startswith("sift")]
    assert doc["intervals"]["300"]["mAA@5"]["reference"] == "dominant gradient@300"
    err = doc["per_pair"][0]["errors"]
    assert err["shape zoom blend@300"] < 1.0 and err["dominant gradient@300"] > 5.0, err
    assert err["pair pose@300"] < 1.0, err  # the pair's turn (70°) and zoom, voted
    assert set(doc["per_pair"][1]["errors"].values()) == {FAIL_DEG}
    assert any("no keypoints detected in blank.png" in f for f in doc["failures"])
    assert "Shi-Tomasi" in doc["setup"]["detector"]
    with pytest.raises(InputError, match="needs the peers"):
        evaluate_pose(
            tmp_path / "pairs.txt", tmp_path / "images", tmp_path / "o2", progress=False, detector="keynet"
        )
    with pytest.raises(InputError, match="detector must be one of"):
        evaluate_pose(
            tmp_path / "pairs.txt", tmp_path / "images", tmp_path / "o2", progress=False, detector="orb"
        )


PEERS_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "peers"


@pytest.mark.skipif(not PEERS_DIR.is_dir(), reason=f"the peers' weights are not here ({PEERS_DIR})")
def test_peer_rows_orinet_and_affnet_recover_an_easy_pose(tmp_path):
    """With a peers folder, OriNet's angle and AffNet + OriNet's affine frames (descriptor patches and
    AdaLAM's LAFs cut through them) are rows of their own, and they find the camera-rotation pair's pose."""
    from patchpose.evaluation.pose_eval import evaluate_pose

    photo = tmp_path / "tex.png"
    cv2.imwrite(str(photo), (make_textured_image(320) * 255).astype(np.uint8))
    pairs_file = generate_posed_pairs([photo], tmp_path / "d", per_photo=1, stereo_pairs=0, progress=False)
    doc = evaluate_pose(
        pairs_file, tmp_path / "d" / "images", tmp_path / "out", budgets=(512,), ablation=False, progress=False,
        peers=PEERS_DIR,
    )  # fmt: skip
    assert list(doc["rows"]) == [f"{r}@512" for r in (*MAIN_ROWS_WITHOUT_PEERS, "orinet", "affnet+orinet")]
    assert doc["per_pair"][0]["errors"]["orinet@512"] < 5.0
    assert doc["per_pair"][0]["errors"]["affnet+orinet@512"] < 5.0
    assert not doc["failures"]


def test_pose_eval_refuses_a_missing_peers_folder_before_any_work(tmp_path):
    from patchpose.evaluation.pose_eval import evaluate_pose

    with pytest.raises(InputError, match="peers"):
        evaluate_pose(
            tmp_path / "no.txt", tmp_path, tmp_path / "out", peers=tmp_path / "nowhere", progress=False
        )


def test_cli_pose_eval_errors_are_clear(tmp_path, capsys):
    from patchpose.cli.main import main

    rc = main(["eval", "pose", "--pairs", str(tmp_path / "none.txt"), "--images", str(tmp_path)])
    assert rc == 2 and "pairs file not found" in capsys.readouterr().err


def _pose_inputs(tmp_path, second="b.png", rot=("0", "0")):
    """A pairs file whose pair (line 2, after a comment) names ``a.png`` (a good image) and ``second``."""
    images = tmp_path / "imgs"
    images.mkdir(exist_ok=True)
    cv2.imwrite(str(images / "a.png"), (make_textured_image(64) * 255).astype(np.uint8))
    toks = pairs_file_line("a.png", second).split()
    toks[2:4] = rot
    pairs = tmp_path / "p.txt"
    pairs.write_text("# header\n" + " ".join(toks) + "\n")
    return pairs, images


@pytest.mark.parametrize(
    "second,make,msg",
    [
        ("nope.png", None, "image not found"),
        ("text.png", lambda p: p.write_text("not an image"), "cannot decode image"),
        ("tiny.png", lambda p: cv2.imwrite(str(p), np.zeros((5, 5, 3), np.uint8)), "too small"),
    ],
)
def test_pose_eval_refuses_bad_images_up_front(tmp_path, capsys, second, make, msg):
    """A missing, undecodable or tiny image is the user's error, not a 180° failure of the method: the run
    stops before any work with the pairs-file line, and the CLI exits with status 2."""
    from patchpose.cli.main import main
    from patchpose.evaluation.pose_eval import evaluate_pose

    pairs, images = _pose_inputs(tmp_path, second)
    if make is not None:
        make(images / second)
    with pytest.raises(InputError, match=rf"p\.txt:2: .*{msg}"):
        evaluate_pose(pairs, images, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    rc = main(["eval", "pose", "--pairs", str(pairs), "--images", str(images), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and msg in err and second in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("budgets", [(0,), (-5,), (1024, 0), (), (1.5,)])
def test_pose_eval_refuses_keypoint_budgets_that_are_not_positive_integers(tmp_path, budgets):
    from patchpose.evaluation.pose_eval import evaluate_pose

    pairs, images = _pose_inputs(tmp_path, "a.png")
    with pytest.raises(InputError, match="keypoint budget"):
        evaluate_pose(pairs, images, tmp_path / "out", budgets=budgets, progress=False)


def test_pose_eval_cli_keypoints_zero_exits_2(tmp_path, capsys):
    from patchpose.cli.main import main

    pairs, images = _pose_inputs(tmp_path, "a.png")
    for k in ("0", "-5"):
        argv = ["eval", "pose", "--pairs", str(pairs), "--images", str(images), "--keypoints", k]
        assert main([*argv, "--out", str(tmp_path / "o")]) == 2
        assert "must be positive integers" in capsys.readouterr().err


def test_pose_eval_refuses_non_zero_rotations(tmp_path):
    """``rot0``/``rot1`` (EXIF-style quarter turns) are not applied, so a non-zero one is refused rather
    than silently ignored."""
    from patchpose.evaluation.pose_eval import evaluate_pose

    pairs, images = _pose_inputs(tmp_path, "a.png", rot=("0", "1"))
    with pytest.raises(InputError, match=r"p\.txt:2: non-zero rotations .*not supported"):
        evaluate_pose(pairs, images, tmp_path / "out", progress=False)


def test_eval_synthetic_refuses_a_pair_count_that_is_not_positive(tmp_path, capsys):
    from patchpose.cli.main import main
    from patchpose.training.validation import make_protocol_pairs

    for n in (0, -1):
        with pytest.raises(InputError, match="positive integer"):
            make_protocol_pairs(None, n, 0, 32, (1.0,))
    photos = tmp_path / "photos"
    photos.mkdir()
    cv2.imwrite(str(photos / "tex.png"), (make_textured_image(96) * 255).astype(np.uint8))
    for n in ("0", "-1"):
        rc = main(["eval", "synthetic", "--images", str(photos), "--pairs", n, "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and "--pairs" in err and len(err.splitlines()) == 1


def test_the_evaluations_detector_option_names_the_pipelines_detectors():
    import argparse

    from patchpose.cli.evaluate import _add_detector
    from patchpose.evaluation.rows import DETECTORS

    p = argparse.ArgumentParser()
    _add_detector(p)
    assert tuple(p._actions[-1].choices) == DETECTORS
