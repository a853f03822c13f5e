"""The rotation benchmark (``patchpose.evaluation.rotation_eval``): a tiny run end to end, bands, angle errors
by hand, and the refusals of input it cannot evaluate."""

from __future__ import annotations

import os

import cv2
import numpy as np
import pytest

import patchpose
from conftest import make_textured_image
from patchpose.errors import InputError


def test_rotation_matching_eval_on_a_tiny_set(tmp_path):
    from patchpose.evaluation.rotation_eval import evaluate_rotation

    photo = tmp_path / "tex.png"
    cv2.imwrite(str(photo), (make_textured_image(300, seed=2) * 255).astype(np.uint8))
    doc = evaluate_rotation([photo], tmp_path / "o", angles=(0, 90), max_keypoints=300, progress=False)
    per = doc["mma_per_angle"]
    assert set(per) == {
        "sift",
        "ours",
        "ours_at_sift_size",
        "sift_resolved_by_ours",
        "dominant_gradient",
        "upright",
        "ours_blend",
        "ours_scale_gradient_blend",
        "dominant_gradient_blend",
        "sift_all_orientations",
    } and doc["thresholds_px"] == [
        1,
        3,
        5,
        10,
    ]
    for r in per:  # the same image: every pose matches almost perfectly
        assert per[r]["0"][1] > 0.9
    assert per["upright"]["90"][1] < per["sift"]["90"][1]  # without a pose, a quarter turn hurts
    assert per["dominant_gradient_blend"]["90"][1] > 0.9  # a blend over the gradient's peaks turns exactly
    assert doc["matches"]["sift_all_orientations"] >= doc["matches"]["sift"] > 10  # mean matches per pair
    assert "| ours |" in (tmp_path / "o" / "results.md").read_text()
    iv = doc["intervals"]["mma@3px"]  # one photo: nothing to resample, so no interval (not a zero-width one)
    assert iv["n_clusters"] == 1 and iv["mean"]["ours"]["interval"] is None
    assert "| ours − sift |" in (tmp_path / "o" / "results.md").read_text()
    cons = doc["angle_consistency"]  # a quarter turn is exact: SIFT finds its keypoints and angles again
    assert set(cons) == {
        "sift",
        "ours",
        "ours_at_sift_size",
        "sift_resolved_by_ours",
        "dominant_gradient",
        "ours_at_sift_size_true_position",
    }
    # the dominant gradient, read in SIFT's window, turns with the image as SIFT's angle does
    assert (
        cons["dominant_gradient"]["0-1 px"]["n"] == cons["sift"]["0-1 px"]["n"]
        and cons["dominant_gradient"]["0-1 px"]["within_10"] > 0.9
    )
    n = cons["ours_at_sift_size"]["0-1 px"]["n"]
    assert cons["ours_at_sift_size_true_position"]["0-1 px"]["n"] == n > 50
    assert cons["sift"]["0-1 px"]["n"] > 50 and cons["sift"]["0-1 px"]["median_deg"] < 1.0
    assert "Angle error at the keypoints SIFT finds again" in (tmp_path / "o" / "results.md").read_text()
    # the turns by band (0° and 90° away from upright) and the photo's own row
    bands = doc["by_rotation"]
    assert list(bands) == ["0-0°", "90-180°"] and bands["90-180°"]["angles"] == [90]
    assert bands["90-180°"]["mma"]["ours"] == pytest.approx(per["ours"]["90"])
    assert doc["mma_per_photo"]["ours"]["tex.png"] == pytest.approx(doc["mma_overall"]["ours"])
    md = (tmp_path / "o" / "results.md").read_text()
    assert "By how far the photo is turned" in md and "| tex.png |" in md


def test_a_stopped_rotation_run_resumes_at_the_photo_it_had_not_done(tmp_path, monkeypatch):
    """Each photo's turns are cached under OUT/cache (written whole, then renamed): a run stopped at its second
    photo computes only that one again, and gives what an uninterrupted run gives; other settings do not reuse
    the cache."""
    import patchpose.evaluation.rotation_eval as rot

    photos = []
    for n in range(2):
        photos.append(tmp_path / f"p{n}.bmp")
        cv2.imwrite(str(photos[-1]), (make_textured_image(200, seed=n) * 255).astype(np.uint8))
    kw = dict(angles=(0, 90), max_keypoints=200, progress=False, bootstrap=50)
    whole = rot.evaluate_rotation(photos, tmp_path / "whole", **kw)
    computed, real = [], rot._photo_arrays

    def stop_at_the_second(p, *a, **k):
        if p == photos[1]:
            raise KeyboardInterrupt
        computed.append(p)
        return real(p, *a, **k)

    monkeypatch.setattr(rot, "_photo_arrays", stop_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        rot.evaluate_rotation(photos, tmp_path / "o", **kw)
    assert computed == [photos[0]] and not (tmp_path / "o" / "results.json").exists()
    assert not [f for f in (tmp_path / "o").rglob("*") if ".tmp" in f.name]

    def counted(p, *a, **k):
        computed.append(p)
        return real(p, *a, **k)

    monkeypatch.setattr(rot, "_photo_arrays", counted)
    resumed = rot.evaluate_rotation(photos, tmp_path / "o", **kw)
    assert computed == [photos[0], photos[1]]  # the first photo came from the cache
    drop = ("seconds",)
    assert {k: v for k, v in resumed.items() if k not in drop} == {
        k: v for k, v in whole.items() if k not in drop
    }
    rot.evaluate_rotation(photos, tmp_path / "o", **{**kw, "max_keypoints": 150})
    assert computed[2:] == photos  # other settings: computed again
    # a photo changed under its name, its size and modification time kept (an uncompressed format): computed again
    st = photos[1].stat()
    cv2.imwrite(str(photos[1]), (make_textured_image(200, seed=5) * 255).astype(np.uint8))
    os.utime(photos[1], ns=(st.st_atime_ns, st.st_mtime_ns))
    assert photos[1].stat().st_size == st.st_size
    rot.evaluate_rotation(photos, tmp_path / "o", **kw)
    assert computed[4:] == [photos[1]]


def test_rotation_bands_by_distance_from_upright():
    """A turn's band is set by its distance from upright: 350° is 10° away, 270° is 90° away; by_rotation
    averages each band's turns (photos first) and leaves out bands without turns."""
    from patchpose.evaluation.rotation_eval import by_rotation, rotation_band

    assert [rotation_band(a) for a in (0, 360, 10, 350, 44, 45, 315, 89, 90, 270, 180, 185)] == [
        "0-0°",
        "0-0°",
        "1-44°",
        "1-44°",
        "1-44°",
        "45-89°",
        "45-89°",
        "45-89°",
        "90-180°",
        "90-180°",
        "90-180°",
        "90-180°",
    ]
    per = {  # two photos; MMA@1, @3
        "sift": {0: [[1, 1], [1, 1]], 10: [[0.5, 0.6], [0.7, 0.8]], 350: [[0.1, 0.2], [0.3, 0.4]]},
        "ours": {0: [[1, 1], [1, 1]], 10: [[0.6, 0.6], [0.8, 0.8]], 350: [[0.2, 0.2], [0.4, 0.4]]},
    }
    b = by_rotation(per, (1, 3), 0)
    assert list(b) == ["0-0°", "1-44°"] and b["1-44°"]["angles"] == [10, 350]
    assert b["1-44°"]["mma"]["sift"] == pytest.approx([0.4, 0.5]) and b["1-44°"]["mma"]["ours"] == [0.5, 0.5]
    assert b["1-44°"]["intervals"] == {}


def test_angle_errors_by_hand():
    """angle_errors pairs each keypoint with its re-detection under H and scores cv2's clockwise angles:
    a CCW turn by a lowers cv2.KeyPoint.angle by a; keypoints found too far or at another size are left out."""
    from patchpose.conventions import similarity_about
    from patchpose.evaluation.rotation_eval import angle_errors, summarise_angle_errors

    H = similarity_about((50.0, 50.0), 0.0, np.radians(30.0))
    pts = np.array([[20.0, 30.0], [60.0, 70.0], [80.0, 20.0]])
    moved = (H[:2, :2] @ pts.T).T + H[:2, 2]
    k0 = [cv2.KeyPoint(*p, 4.0, 100.0) for p in pts]
    k1 = [
        cv2.KeyPoint(moved[0, 0] + 0.3, moved[0, 1], 4.0, 70.0),  # exact angle, found 0.3 px away
        cv2.KeyPoint(moved[1, 0], moved[1, 1], 4.0, 75.0),  # 5° off
        cv2.KeyPoint(moved[2, 0], moved[2, 1], 8.0, 70.0),  # found at twice the size: left out
    ]
    e = angle_errors(
        {"sift": k0, "ours": k0, "ours_at_sift_size": k0},
        {"sift": k1, "ours": k1, "ours_at_sift_size": k1},
        H,
        30.0,
    )
    np.testing.assert_allclose(e["sift"], [[0.0, 0.3], [5.0, 0.0]], atol=1e-4)
    s = summarise_angle_errors({"sift": [e["sift"]]})["sift"]
    assert s["0-1 px"]["n"] == 2 and s["0.25-0.5 px"]["n"] == 1 and s["0-0.25 px"]["within_5"] == 1.0


def test_true_position_errors_read_our_angle_where_the_keypoint_truly_is():
    """The true-position row reads image 1 at H·x0, not where SIFT found the keypoint again: on a quarter
    turn (exact resampling) it is exact even when the re-detected keypoints are moved by 0.8 px, while the
    same angles read at the moved keypoints are not."""
    from patchpose.conventions import similarity_about
    from patchpose.evaluation.rotation_eval import angle_errors, found_again, true_position_errors
    from patchpose.geometry import apply_homography

    img = (make_textured_image(240, seed=4) * 255).astype(np.uint8)
    H = similarity_about((119.5, 119.5), 0.0, np.pi / 2)
    img1 = np.ascontiguousarray(np.rot90(img))  # CCW quarter turn about the centre, exact
    assert np.allclose(cv2.warpAffine(img, H[:2], (240, 240))[5:-5, 5:-5], img1[5:-5, 5:-5], atol=1)
    est = patchpose.PatchPoseEstimator.from_pretrained()
    rng = np.random.default_rng(0)
    g = np.arange(90.0, 151.0, 20.0)
    p0 = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2) + rng.uniform(-2, 2, (16, 2))
    k0 = [cv2.KeyPoint(*p, 6.0) for p in p0]
    p1 = apply_homography(H, p0) + np.array([0.8, 0.0]) * rng.choice([-1, 1], (len(p0), 1))
    k1 = [cv2.KeyPoint(*p, 6.0) for p in p1]
    i, j, d = found_again(k0, k1, H)
    assert len(i) == len(p0) and np.allclose(d, 0.8, atol=1e-4)
    v0 = {"sift": k0, "ours_at_sift_size": patchpose.assign(img, k0, est, keep_size=True)}
    v1 = {"sift": k1, "ours_at_sift_size": patchpose.assign(img1, k1, est, keep_size=True)}
    e_true = true_position_errors(img1, v0, v1, H, 90.0, est)
    np.testing.assert_allclose(e_true[:, 1], 0.8, atol=1e-4)
    assert np.median(e_true[:, 0]) < 1.0  # the same pixels, turned: our angle turns with them
    e_moved = angle_errors({**v0, "ours": k0}, {**v1, "ours": k1}, H, 90.0)["ours_at_sift_size"]
    assert np.median(e_moved[:, 0]) > np.median(e_true[:, 0])


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


def test_peer_angles_turn_with_the_image_and_need_their_weights(tmp_path):
    """The peers' rows keep SIFT's size and read their angle in SIFT's window: on a quarter-turned image the
    angle of every keypoint moves by 90° (OpenCV's angle is clockwise, so by −90°)."""
    from patchpose.evaluation.rotation_eval import peer_angles

    img = (make_textured_image(300, seed=3) * 255).astype(np.uint8)
    rgb = np.dstack([img] * 3)
    g = np.mgrid[60:240:30, 60:240:30].reshape(2, -1).T.astype(np.float64)
    kps = [cv2.KeyPoint(float(x), float(y), 6.0) for y, x in g]
    turned = np.rot90(rgb).copy()  # counter-clockwise: (x, y) -> (y, W - 1 - x)
    kps_t = [cv2.KeyPoint(k.pt[1], 299 - k.pt[0], 6.0) for k in kps]
    a0 = np.array([k.angle for k in peer_angles(rgb, kps, "dominant_gradient")])
    a1 = np.array([k.angle for k in peer_angles(turned, kps_t, "dominant_gradient")])
    d = (a1 - a0 + 90.0 + 180.0) % 360.0 - 180.0
    assert np.mean(np.abs(d) <= 5.0) >= 0.9
    assert [k.size for k in peer_angles(rgb, kps, "dominant_gradient")] == [6.0] * len(kps)
    assert peer_angles(rgb, [], "dominant_gradient") == []
    with pytest.raises(InputError, match="--peers"):
        peer_angles(rgb, kps, "orinet")
