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


def test_recipes_are_timed_beside_sift_and_written(tmp_path):
    res = bench_recipes(150, size=(320, 240), repeats=1, out=tmp_path)
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
