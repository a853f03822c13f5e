"""Two-view pose: the pairs-file format, the generator's geometry, the metrics on hand-built cases, and
the pipeline end to end (a failing pair is reported, never a crash)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from conftest import make_textured_image
from patchpose.data.posed_pairs import (
    PosedPair,
    default_intrinsics,
    generate_posed_pairs,
    read_pairs_file,
    rotate_camera,
    rotation_from_angles,
    write_pairs_file,
)
from patchpose.errors import InputError
from patchpose.evaluation.pose_eval import (
    FAIL_DEG,
    maa,
    pose_auc,
    pose_error_deg,
    rotation_error_deg,
    translation_error_deg,
)
from patchpose.matching.twoview import relative_pose


def _line(name0="a.png", name1="b.png", t=(1.0, 0.0, 0.0)):
    K = [500, 0, 320, 0, 500, 240, 0, 0, 1]
    T = np.eye(4)
    T[:3, 3] = t
    return " ".join([name0, name1, "0", "0"] + [str(v) for v in K + K + T.ravel().tolist()])


def test_pairs_file_reads_the_megadepth_scannet_format(tmp_path):
    f = tmp_path / "pairs.txt"
    f.write_text("# a comment\n" + _line() + "\n\n" + _line("c.png", "d.png", (0, 0, 2.0)) + "  # trailing\n")
    pairs = read_pairs_file(f)
    assert [(p.name0, p.name1) for p in pairs] == [("a.png", "b.png"), ("c.png", "d.png")]
    assert pairs[0].K0[0, 2] == 320 and pairs[1].t.tolist() == [0, 0, 2.0]
    np.testing.assert_array_equal(pairs[0].R, np.eye(3))
    write_pairs_file(tmp_path / "again.txt", pairs)  # round trip
    again = read_pairs_file(tmp_path / "again.txt")
    for p, q in zip(pairs, again):
        np.testing.assert_allclose(p.T_0to1, q.T_0to1)
        np.testing.assert_allclose(p.K1, q.K1)


@pytest.mark.parametrize(
    "text,msg",
    [
        ("a b 0 0 1 2 3\n", "expected 38 fields"),
        (_line().replace(" 500 ", " x ", 1) + "\n", "must be numbers"),
        (_line().replace(" 500 ", " nan ", 1) + "\n", "NaN"),
        ("", "no pairs"),
    ],
)
def test_pairs_file_errors_name_the_line(tmp_path, text, msg):
    f = tmp_path / "p.txt"
    f.write_text(text)
    with pytest.raises(InputError, match=msg):
        read_pairs_file(f)


def test_pairs_file_rejects_a_non_rotation(tmp_path):
    toks = _line().split()
    toks[22] = "2.0"  # T[0, 0] of T_0to1 (fields 22 onwards)
    (tmp_path / "p.txt").write_text(" ".join(toks))
    with pytest.raises(InputError, match="not a rotation"):
        read_pairs_file(tmp_path / "p.txt")


def test_metrics_on_hand_built_errors():
    # mAA: thresholds 1..5; errors 0.5, 2.5, 7, 180 → shares 1/4, 1/4, 2/4, 2/4, 2/4
    assert maa([0.5, 2.5, 7.0, 180.0], 5) == pytest.approx((0.25 + 0.25 + 0.5 + 0.5 + 0.5) / 5)
    assert maa([0.5, 2.5, 7.0, 180.0], 10) == pytest.approx((1 + 1 + 2 + 2 + 2 + 2 + 3 + 3 + 3 + 3) / 40)
    # AUC: one pair at error 2 of threshold 5: recall 0 until 2 (linear from (0,0) to (2,1)), then 1
    assert pose_auc([2.0], 5.0) == pytest.approx((1.0 + 3.0) / 5.0)
    assert pose_auc([10.0], 5.0) == 0.0
    assert pose_auc([0.0, 0.0], 5.0) == pytest.approx(1.0)


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


def test_camera_rotation_warp_matches_the_projection():
    """Image 1 of a rotation pair shows the point K·R·X where image 0 shows K·X."""
    img = np.zeros((240, 320, 3), np.uint8)
    cv2.circle(img, (100, 80), 4, (255, 255, 255), -1)
    K = default_intrinsics(img.shape)
    R = rotation_from_angles(math.radians(30), math.radians(5), math.radians(-4))
    out = rotate_camera(img, K, R)
    x = np.linalg.inv(K) @ [100, 80, 1.0]
    p = K @ R @ x
    p = p[:2] / p[2]
    ys, xs = np.nonzero(out[..., 0] > 128)
    assert np.hypot(xs.mean() - p[0], ys.mean() - p[1]) < 0.7


def test_relative_pose_recovers_a_synthetic_two_view_geometry():
    rng = np.random.default_rng(0)
    K = np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]])
    X = np.c_[rng.uniform(-2, 2, 300), rng.uniform(-1.5, 1.5, 300), rng.uniform(4, 9, 300)]
    R = rotation_from_angles(math.radians(20), math.radians(8), math.radians(3))
    t = np.array([-1.0, 0.1, 0.05])
    x0 = (K @ X.T).T
    X1 = (R @ X.T).T + t
    x1 = (K @ X1.T).T
    x0, x1 = x0[:, :2] / x0[:, 2:], x1[:, :2] / x1[:, 2:]
    x1[:30] = rng.uniform(0, 640, (30, 2))  # 10 % outliers
    fit = relative_pose(x0, x1, K, K)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    assert fit["model"] == "essential" and fit["inliers"] >= 250
    assert pose_error_deg(T, fit["R"], fit["t"]) < 1.0
    # a pure rotation: the homography branch, rotation error only
    x1r = (K @ R @ np.linalg.inv(K) @ np.c_[x0, np.ones(len(x0))].T).T
    x1r = x1r[:, :2] / x1r[:, 2:]
    x1r[:30] = rng.uniform(0, 640, (30, 2))
    fit = relative_pose(x0, x1r, K, K)
    assert fit["model"] == "rotation" and rotation_error_deg(R, fit["R"]) < 0.1
    assert np.all(fit["t"] == 0) and fit["inliers"] >= 260
    assert relative_pose(x0[:3], x1[:3], K, K)["R"] is None  # too few matches: a failure, not a crash


def test_relative_pose_does_not_take_a_plane_for_a_rotation():
    """Every point on one plane, seen from two places: a homography explains every match (the rule before
    this one then returned t = 0), but a camera rotation does not, so the essential matrix is kept."""
    rng = np.random.default_rng(0)
    K = np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]])
    X = np.c_[rng.uniform(-2, 2, 300), rng.uniform(-1.5, 1.5, 300), np.zeros(300)]
    X[:, 2] = 6 + 0.3 * X[:, 0] - 0.2 * X[:, 1]
    R = rotation_from_angles(math.radians(20), math.radians(8), math.radians(3))
    t = np.array([-1.0, 0.1, 0.05])
    x0, x1 = (K @ X.T).T, (K @ ((R @ X.T).T + t).T).T
    x0, x1 = x0[:, :2] / x0[:, 2:], x1[:, :2] / x1[:, 2:]
    x0, x1 = x0 + rng.normal(0, 0.1, x0.shape), x1 + rng.normal(0, 0.1, x1.shape)
    H, mask = cv2.findHomography(x0, x1, cv2.RANSAC, 2.0)
    assert mask.sum() >= 290  # a homography explains the matches
    fit = relative_pose(x0, x1, K, K)
    assert fit["model"] == "essential" and np.linalg.norm(fit["t"]) == pytest.approx(1.0)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    assert pose_error_deg(T, fit["R"], fit["t"]) < 1.0


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
    assert list(saved["rows"]) == [
        "sift@256",
        "sift+ours@256",
        "sift resolved by ours@256",
        "sift@512",
        "sift+ours@512",
        "sift resolved by ours@512",
    ]
    for row in saved["rows"].values():
        assert set(row) == {"inliers", "mAA@5", "mAA@10", "AUC@5", "AUC@10", "AUC@20"}
        assert 0.0 <= row["mAA@10"] <= 2 / 3 + 1e-9  # the blank pair can never count
    assert all(p["errors"]["sift@256"] == FAIL_DEG for p in saved["per_pair"] if "blank" in p["pair"])
    assert any("no keypoints detected in blank.png" in f for f in saved["failures"])  # the method's failure
    assert doc["per_pair"][0]["errors"]["sift@512"] < 5.0  # the camera-rotation pair is easy
    assert doc["per_pair"][0]["errors"]["sift resolved by ours@512"] < 5.0
    assert "| sift+ours@512 |" in (tmp_path / "out" / "results.md").read_text()


def test_cli_pose_eval_errors_are_clear(tmp_path, capsys):
    from patchpose.cli.main import main

    rc = main(["eval", "pose", "--pairs", str(tmp_path / "none.txt"), "--images", str(tmp_path)])
    assert rc == 2 and "pairs file not found" in capsys.readouterr().err


def test_resolved_pose_source_keeps_sift_where_unambiguous_and_needs_our_poses():
    """The 'resolved' pose: SIFT's scale, and SIFT's orientation nearest ours among SIFT's candidates; without
    our poses it is a clear error."""
    from patchpose.matching.pipeline import detect
    from patchpose.matching.twoview import TwoViewConfig, frame_poses

    img = (make_textured_image(300, seed=3) * 255).astype(np.uint8)
    f = detect(img, 300)
    n = len(f)
    last = np.array([c[-1] for c in f.sift_ori_candidates])[:, None]  # (N, 1), as top_k=1
    flipped = SimpleNamespace(orientation=last, scale=np.zeros_like(last))
    s, o = frame_poses(f, "resolved", flipped)
    np.testing.assert_array_equal(s, f.sift_scale)
    multi = np.array([len(c) > 1 for c in f.sift_ori_candidates])
    assert multi.any() and (~multi).any()
    np.testing.assert_allclose(o, flipped.orientation[:, 0])  # every candidate is its own nearest
    np.testing.assert_allclose(o[~multi], f.sift_ori[~multi])
    assert not np.allclose(o[multi], f.sift_ori[multi])  # where SIFT was ambiguous, ours chose the other
    with pytest.raises(InputError, match="estimator's poses"):
        frame_poses(f, "resolved", None)
    with pytest.raises(InputError, match="describe_pose must be one of"):
        TwoViewConfig(describe_pose="bogus").validate()
    with pytest.raises(InputError, match="describe_pose must be one of"):  # only adalam_pose may be None
        TwoViewConfig(describe_pose=None).validate()
    TwoViewConfig(adalam_pose=None).validate()
    assert n > 10


def _pose_inputs(tmp_path, second="b.png", rot=("0", "0")):
    """A pairs file whose pair (line 2, after a comment) names ``a.png`` (a good image) and ``second``."""
    images = tmp_path / "imgs"
    images.mkdir(exist_ok=True)
    cv2.imwrite(str(images / "a.png"), (make_textured_image(64) * 255).astype(np.uint8))
    toks = _line("a.png", second).split()
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
    from patchpose.evaluation.synthetic import make_protocol_pairs

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


def test_eval_rotation_refuses_no_photos_and_no_angles(tmp_path, capsys):
    from patchpose.cli.main import main
    from patchpose.evaluation.rotation_eval import evaluate_rotation, rotation_angles

    photo = tmp_path / "tex.png"
    cv2.imwrite(str(photo), (make_textured_image(64) * 255).astype(np.uint8))
    with pytest.raises(InputError, match="no photos"):
        evaluate_rotation([], tmp_path / "o", progress=False)
    for angles in ((), (0,), (0, 360)):
        with pytest.raises(InputError, match="no rotation to evaluate"):
            evaluate_rotation([photo], tmp_path / "o", angles=angles, progress=False)
    assert rotation_angles(90) == (0, 90, 180, 270)
    assert rotation_angles(90, start=45) == (45, 135, 225, 315)
    assert rotation_angles(100, 5) == (5, 105, 205, 305)
    for start in (-5, 360, 2.5):
        with pytest.raises(InputError, match="from 0 to 359"):
            rotation_angles(10, start)
    for step in (0, -10, 360, 2.5):
        with pytest.raises(InputError, match="from 1 to 359"):
            rotation_angles(step)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["eval", "rotation", "--images", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "no photos" in capsys.readouterr().err
    one = tmp_path / "one"
    one.mkdir()
    cv2.imwrite(str(one / "tex.png"), (make_textured_image(64) * 255).astype(np.uint8))
    assert (
        main(["eval", "rotation", "--images", str(one), "--step", "-10", "--out", str(tmp_path / "o")]) == 2
    )
    assert "from 1 to 359" in capsys.readouterr().err
    assert main(["eval", "rotation", "--images", str(one), "--step", "0", "--out", str(tmp_path / "o")]) == 2
    assert "from 1 to 359" in capsys.readouterr().err
    assert (
        main(["eval", "rotation", "--images", str(one), "--start", "400", "--out", str(tmp_path / "o")]) == 2
    )
    assert "--start" in capsys.readouterr().err


def test_eval_rotation_refuses_photos_without_keypoints(tmp_path):
    from patchpose.evaluation.rotation_eval import evaluate_rotation

    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((64, 64, 3), 128, np.uint8))
    with pytest.raises(InputError, match="none of the 1 photos"):
        evaluate_rotation([blank], tmp_path / "o", angles=(0, 90), progress=False)


def test_posed_pairs_resume_only_what_the_same_settings_and_photos_made(tmp_path):
    """Images already on disk were kept whatever the settings, and two photos of one name shared images, so
    the pairs file could pair new poses with old images: each image must be K R K^-1 of its first image."""
    from patchpose.data.posed_pairs import rotate_camera

    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    cv2.imwrite(str(tmp_path / "x" / "cat.png"), (make_textured_image(200, 1) * 255).astype(np.uint8))
    cv2.imwrite(
        str(tmp_path / "y" / "cat.png"), (make_textured_image(160, 2) * 255).astype(np.uint8)[:, :120]
    )
    photos = [tmp_path / "x" / "cat.png", tmp_path / "y" / "cat.png"]
    pf = generate_posed_pairs(photos, tmp_path / "d", per_photo=1, stereo_pairs=0, progress=False)
    for p in read_pairs_file(pf):
        im0 = cv2.imread(str(tmp_path / "d" / "images" / p.name0))[..., ::-1]
        im1 = cv2.imread(str(tmp_path / "d" / "images" / p.name1))[..., ::-1]
        assert im0.shape[:2] == (int(round(2 * p.K0[1, 2])) + 1, int(round(2 * p.K0[0, 2])) + 1)
        assert np.abs(rotate_camera(im0, p.K1, p.T_0to1[:3, :3]).astype(float) - im1).mean() < 1.0
    assert len({p.name0 for p in read_pairs_file(pf)}) == 2
    generate_posed_pairs(photos, tmp_path / "d", per_photo=1, stereo_pairs=0, progress=False)  # resumes
    with pytest.raises(InputError, match="other settings"):
        generate_posed_pairs(photos, tmp_path / "d", per_photo=1, stereo_pairs=0, seed=1, progress=False)
    with pytest.raises(InputError, match="was made from"):
        generate_posed_pairs(photos[1:], tmp_path / "d", per_photo=1, stereo_pairs=0, progress=False)
