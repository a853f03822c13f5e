"""The HPatches commands end to end: ``generate hpatches``, ``match`` on its sequence, ``eval hpatches``; bad
input exits with status 2 and one line."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from conftest import make_rgb_image


def test_cli_generate_eval_and_match(tmp_path, capsys):
    from patchpose.cli.main import main

    photos = tmp_path / "photos"
    photos.mkdir()
    cv2.imwrite(str(photos / "a.png"), make_rgb_image(260))
    (tmp_path / "none").mkdir()
    rc = main(["generate", "hpatches", "--images", str(tmp_path / "none"), "--out", str(tmp_path / "x")])
    assert rc == 2 and "no photos" in capsys.readouterr().err
    (photos / "splits.json").write_text(json.dumps({"train": [], "val": [], "test": ["a.png"]}))
    assert (
        main(
            [
                "generate",
                "hpatches",
                "--images",
                str(photos),
                "--out",
                str(tmp_path / "hp"),
                "--targets",
                "1",
                "--kinds",
                "v",
                "--max-side",
                "200",
                "--no-progress",
            ]
        )
        == 0
    )
    seq = tmp_path / "hp" / "v_a"
    out = tmp_path / "m"
    rc = main(
        [
            "match",
            str(seq / "1.ppm"),
            str(seq / "2.ppm"),
            "--homography",
            str(seq / "H_1_2"),
            "--out",
            str(out),
            "--max-keypoints",
            "300",
        ]
    )
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    lines = (out / "matches.csv").read_text().splitlines()
    assert lines[0] == "x1,y1,x2,y2,distance,error_px" and len(lines) == summary["matches"] + 1
    assert cv2.imread(str(out / "matches.png")).shape[1] == 400
    # the default at SIFT's detections: photo 2 warped through the map found, detected again
    assert summary["recipe"] == "rectify" and np.shape(summary["affine"]) == (2, 3)
    for recipe in ("pose", "blend"):  # one descriptor per keypoint, one photo at a time
        # into the folder of the run above: its outputs replaced, as asked
        h = ["--homography", str(seq / "H_1_2"), "--out", str(out), "--detector", "harris", "--overwrite"]
        rc = main(
            [
                "match",
                str(seq / "1.ppm"),
                str(seq / "2.ppm"),
                "--recipe",
                recipe,
                "--max-keypoints",
                "300",
                *h,
            ]
        )
        summary = json.loads((out / "summary.json").read_text())
        assert rc == 0 and summary["recipe"] == recipe and summary["matches"] > 20
    np.savetxt(tmp_path / "kp.csv", [[50.0, 60.0], [80.0, 90.0]], delimiter=",")
    capsys.readouterr()
    kp = ["--keypoints1", str(tmp_path / "kp.csv"), "--keypoints2", str(tmp_path / "kp.csv")]
    rc = main(
        [
            "match",
            str(seq / "1.ppm"),
            str(seq / "2.ppm"),
            "--recipe",
            "blend",
            *kp,
            "--out",
            str(out),
            "--overwrite",
        ]
    )
    assert rc == 0 and json.loads((out / "summary.json").read_text())["keypoints"] == [2, 2]
    rc = main(
        ["match", str(seq / "1.ppm"), str(seq / "2.ppm"), kp[0], kp[1], "--out", str(out), "--overwrite"]
    )
    assert rc == 2 and "--keypoints2" in capsys.readouterr().err  # keypoints for both images or for none
    (tmp_path / "badH").write_text("not a matrix")
    rc = main(
        [
            "match",
            str(seq / "1.ppm"),
            str(seq / "2.ppm"),
            "--homography",
            str(tmp_path / "badH"),
            "--out",
            str(out),
            "--overwrite",
        ]
    )
    assert rc == 2 and "cannot read homography" in capsys.readouterr().err
    rc = main(["eval", "hpatches", "--root", str(tmp_path / "nothing"), "--out", str(out)])
    assert rc == 2 and "not found" in capsys.readouterr().err


def test_eval_hpatches_rows_and_reference_are_checked_before_any_work(tmp_path, capsys):
    """A row the run cannot have (a SIFT row at corners, a typo) or a reference outside the rows is a one-line
    error before anything is matched; a subset of rows is computed alone, in report order."""
    from conftest import make_hpatches_replica
    from patchpose.cli.main import main

    root = make_hpatches_replica(tmp_path / "hp", names=("v_b",), targets=1)
    out = tmp_path / "o"
    base = ["eval", "hpatches", "--root", str(root), "--out", str(out), "--no-pose", "--no-progress"]
    rc = main([*base, "--detector", "harris", "--rows", "ours,sift_all"])
    err = capsys.readouterr().err
    assert rc == 2 and "['sift_all'] are not rows of this run" in err and len(err.strip().splitlines()) == 1
    rc = main([*base, "--rows", "ours,upper", "--reference", "sift"])
    assert rc == 2 and "reference row 'sift' is not among" in capsys.readouterr().err
    assert not list(out.glob("cache/*/*.json"))  # nothing was matched
    rc = main([*base, "--rows", "upper,ours_blend,ours", "--reference", "upper", "--bootstrap", "0"])
    assert rc == 0
    doc = json.loads((out / "results.json").read_text())
    assert list(doc["mma"]) == ["ours", "ours_blend", "upper"]


def test_cli_generate_zoom_writes_viewpoint_sequences_only(tmp_path, capsys):
    """``generate hpatches --zoom``: viewpoint sequences by default, recorded as zoom settings in the manifest;
    asked for illumination ones too, one line and status 2."""
    from patchpose.cli.main import main

    photos = tmp_path / "photos"
    photos.mkdir()
    cv2.imwrite(str(photos / "a.png"), make_rgb_image(200))
    argv = ["generate", "hpatches", "--images", str(photos), "--split", "all", "--targets", "1", "--zoom"]
    assert main([*argv, "--out", str(tmp_path / "z"), "--no-progress"]) == 0
    m = json.loads((tmp_path / "z" / "manifest.json").read_text())
    assert m["kinds"] == "v" and m["config"]["zoom_exact"] and m["config"]["max_zoom_octaves"] == 0.4
    capsys.readouterr()
    assert main([*argv, "--kinds", "vi", "--out", str(tmp_path / "z2")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--zoom makes viewpoint sequences only" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "z2").exists()
    turn = [a for a in argv if a != "--zoom"] + ["--turn"]
    assert main([*turn, "--out", str(tmp_path / "t"), "--no-progress"]) == 0
    m = json.loads((tmp_path / "t" / "manifest.json").read_text())
    assert m["kinds"] == "v" and m["config"]["turn_exact"] and m["config"]["max_zoom_octaves"] == 0.0
    from patchpose.data.warps import read_homography

    step = [*argv[:-2], "2", "--turn", "--turn-step", "90"]  # --targets 2: images 2, 3 turned 90°, 180°
    assert main([*step, "--out", str(tmp_path / "t90"), "--no-progress"]) == 0
    m = json.loads((tmp_path / "t90" / "manifest.json").read_text())
    assert m["config"]["max_rotation_deg"] == 90.0 and m["config"]["turn_exact"]
    for k, degrees in ((2, 90.0), (3, 180.0)):
        H = read_homography(next((tmp_path / "t90").glob(f"v_*/H_1_{k}")))
        assert abs(np.degrees(np.arctan2(H[1, 0], H[0, 0]))) == pytest.approx(degrees, abs=1e-6)
    assert main([*argv[:-2], "1", "--turn", "--turn-step", "180", "--out", str(tmp_path / "t180")]) == 0
    H = read_homography(next((tmp_path / "t180").glob("v_*/H_1_2")))
    assert abs(np.degrees(np.arctan2(H[1, 0], H[0, 0]))) == pytest.approx(180.0, abs=1e-6)
    capsys.readouterr()
    for bad, why in (
        (["--turn-step", "15"], "give --turn too"),
        (["--turn", "--turn-step", "nan"], "(0, 180]"),
        (["--turn", "--turn-step", "0"], "(0, 180]"),
        (["--turn", "--turn-step", "-15"], "(0, 180]"),
        (["--turn", "--turn-step", "180.5"], "(0, 180]"),
        (["--turn", "--turn-step", "91"], "turns the last image by 182°"),  # --targets 2
        (["--turn", "--turn-step", "180"], "turns the last image by 360°"),
    ):
        assert main([*argv[:-2], "2", *bad, "--out", str(tmp_path / "b")]) == 2
        err = capsys.readouterr().err.strip()
        assert why in err and len(err.splitlines()) == 1 and not (tmp_path / "b").exists()
    tilt = [a for a in argv if a != "--zoom"] + ["--tilt"]
    assert main([*tilt, "--out", str(tmp_path / "s"), "--no-progress"]) == 0
    m = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert m["kinds"] == "v" and m["config"]["tilt_octaves"] == 0.25 and not m["config"]["turn_exact"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:  # one preset at a time (argparse's usage error)
        main([*tilt, "--turn", "--out", str(tmp_path / "s2")])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
