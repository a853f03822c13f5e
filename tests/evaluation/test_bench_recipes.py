"""``patchpose bench --recipes``: each recipe of match_pair (and pair-pose at corners) timed beside SIFT's own
pipeline on one known pair."""

import json

import cv2
import numpy as np
import pytest

from patchpose.cli.main import main
from patchpose.errors import InputError
from patchpose.evaluation.bench import bench_pair, bench_recipes
from patchpose.geometry import apply_homography
from patchpose.recipes import RECIPES


def test_the_bench_pair_is_the_photo_seen_through_its_homography():
    img1, img2, H = bench_pair((320, 240))
    assert img1.shape == img2.shape == (240, 320) and img1.dtype == np.uint8
    # the map turns by 30° and zooms by 1.25 near the centre: a pixel there lands where H sends it
    xy = np.array([[160.0, 120.0], [170.0, 120.0]])
    a, b = apply_homography(H, xy)
    assert np.linalg.norm(b - a) == pytest.approx(12.5, rel=0.02)
    assert np.degrees(np.arctan2(-(b - a)[1], (b - a)[0])) == pytest.approx(30.0, abs=1.0)
    back = cv2.warpPerspective(img2, np.linalg.inv(H), (320, 240))
    inner = (slice(90, 150), slice(120, 200))
    assert np.abs(back[inner].astype(float) - img1[inner]).mean() < 12


def test_recipes_are_timed_beside_sift_and_written(tmp_path, capsys):
    res = bench_recipes(150, size=(320, 240), repeats=1, out=tmp_path)
    # a bar on stderr says what is being timed (the benchmarks printed nothing for up to 40 s)
    assert "timing sift, sift_ratio" in capsys.readouterr().err
    # pair-pose also at corners, where our network votes
    assert list(res["rows"]) == ["sift", "sift_ratio", *RECIPES, "pair-pose@gftt"]
    for r in res["rows"].values():
        assert r["seconds"] > 0 and 0 <= r["correct@3px"] <= r["matches"]
        assert r["matches"] > 20 and r["correct@3px"] > 0.5 * r["matches"]  # the known map is found again
    assert res["rows"]["sift"]["ratio_to_sift"] == 1.0
    assert json.loads((tmp_path / "recipes.json").read_text()) == res
    for bad in (0, 2.5, "a"):
        with pytest.raises(InputError, match="keypoints must be an integer"):
            bench_recipes(bad)
    assert main(["bench", "--recipes", "--repeats", "0", "--out", str(tmp_path)]) == 2


def test_upright_cost_is_timed_per_photo_against_one_extraction_and_written(tmp_path, capsys, monkeypatch):
    """``patchpose bench --upright`` (#63's cost): any extractor; a photo un-turned at a quarter turn costs its
    extraction, off it a canvas of at most CANVAS_PIXELS (the whole canvas, larger, beside it); per photo = (half a
    pair's votes + the un-turned extraction) / one extraction, computed from the seconds it prints; the same with
    the votes retried with more corners (both rounds run: counted, not timed against each other)."""
    from patchpose.evaluation.bench import UPRIGHT_TURNS, bench_upright
    from patchpose.matching.upright import CANVAS_PIXELS

    seen = []

    def extract(image):  # remembers the pixels it was given: the canvas's size is what the cost follows
        seen.append(image.shape[0] * image.shape[1])
        return np.zeros((0, 2)), np.zeros((0, 8), np.float32)

    import patchpose.matching.upright as upright

    corners, voters = [], upright.voters

    def counted(image, max_keypoints=upright.VOTE_KEYPOINTS, estimator=None):
        corners.append(max_keypoints)
        return voters(image, max_keypoints, estimator)

    monkeypatch.setattr(upright, "voters", counted)
    res = bench_upright(None, repeats=1, out=tmp_path, extract=extract, sizes=((160, 120),))
    # warm-up and one timed run: a pair's votes (500 corners), then both rounds of the retried votes, each once
    assert corners == [500, 500, 500, 500, 2000, 2000] * 2, corners
    r = res["sizes"]["160x120"]
    names = [
        "extraction",
        "votes_of_a_pair",
        "votes_retried",
        *(f"unturned_{d:g}" for d in UPRIGHT_TURNS),
        "unturned_45_whole_canvas",
    ]
    assert list(r["seconds"]) == names and all(s > 0 for s in r["seconds"].values())
    for votes, key in (("votes_of_a_pair", "per_photo"), ("votes_retried", "per_photo_retried")):
        share = r["seconds"][votes] / 2
        assert list(r[key]) == [f"{d:g}" for d in UPRIGHT_TURNS] + ["45_whole_canvas"]
        for name, ratio in r[key].items():
            assert ratio == pytest.approx(
                (share + r["seconds"][f"unturned_{name}"]) / r["seconds"]["extraction"]
            )
    assert res["canvas_pixels"] == CANVAS_PIXELS
    # warm-up and one timed run of each: photo, 30°, 45°, 90° (the photo's own pixels), the whole 45° canvas
    assert seen[:5] == seen[5:] and seen[0] == seen[3] == 160 * 120
    assert seen[1] <= CANVAS_PIXELS * 160 * 120 < seen[4] and seen[2] <= CANVAS_PIXELS * 160 * 120
    assert json.loads((tmp_path / "upright.json").read_text()) == res
    with pytest.raises(InputError, match="repeats must be"):
        bench_upright(None, repeats=0, extract=extract)
    assert main(["bench", "--upright", "--out", str(tmp_path)]) == 2
    assert "--upright needs --peers" in capsys.readouterr().err
    assert main(["bench", "--upright", "--peers", str(tmp_path / "none")]) == 2
    assert main(["bench", "--upright", "--recipes", "--peers", str(tmp_path)]) == 2
    assert main(["bench", "--recipes", "--peers", str(tmp_path)]) == 2
    assert "--peers is read only by --upright" in capsys.readouterr().err
