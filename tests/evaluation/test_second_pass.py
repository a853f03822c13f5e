"""#60's model-free second pass (``patchpose.evaluation.second_pass``, the row ``second_pass``): on a slanted photo it
finds several times SIFT's correct matches, at photo 2's own keypoints mapped back (its map and warp:
tests/matching/test_rectify.py)."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from patchpose.data.patches import load_photo, to_gray
from patchpose.data.photos import demo_photo
from patchpose.errors import InputError
from patchpose.evaluation.rows import Image, MatchConfig, Run, get_row, match_images, pair_descriptors
from patchpose.evaluation.second_pass import second_pass
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.features import detect


@pytest.fixture(scope="module")
def photo():
    return to_gray(load_photo(demo_photo(), 480))


def squeezed(photo: np.ndarray, factor: float, angle: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """The photo squeezed ``factor`` times across the direction ``angle`` about its centre (a slant), and that
    ``(3, 3)`` map."""
    h, w = photo.shape
    u = np.array([math.cos(angle), math.sin(angle)])
    P = np.eye(2) - (1 - 1 / factor) * np.outer(u, u)
    c = np.array([(w - 1) / 2, (h - 1) / 2])
    H = np.eye(3)
    H[:2, :2], H[:2, 2] = P, c - P @ c
    return cv2.warpAffine(photo, H[:2], (w, h), flags=cv2.INTER_AREA), H


def test_on_a_slanted_photo_it_finds_several_times_sifts_correct_matches_at_photo_2s_own_keypoints(photo):
    img2, H = squeezed(photo, 2.0)
    run = Run(Describer("sift"), cfg=MatchConfig(max_keypoints=500))
    res = match_images(photo, img2, run, rows=("sift_all", "second_pass"), H=H)
    found = {row: int((r["error_px"] <= 3).sum()) for row, r in res["rows"].items()}
    assert found["second_pass"] > 2.5 * found["sift_all"], found  # measured: 288 against 79
    row = res["rows"]["second_pass"]
    xy2 = row["xy2"]  # the warped photo's keypoints mapped back: the errors are theirs
    assert "xy2" not in res["rows"]["sift_all"] and (xy2 > -0.5).all() and (xy2 < 479.5).all()
    m = row["matches"]
    mapped = res["xy1"][m[:, 0]] @ H[:2, :2].T + H[:2, 2]
    np.testing.assert_allclose(
        row["error_px"], np.linalg.norm(mapped - xy2[m[:, 1]], axis=1), rtol=1e-5, atol=1e-4
    )
    p = second_pass(detect(photo, 500), detect(img2, 500), run.describer, 500)
    corners = np.array([[0.0, 0.0], [479.0, 0.0], [0.0, 479.0], [479.0, 479.0], [240.0, 240.0]])
    moved = corners @ p.affine[:, :2].T + p.affine[:, 2]
    assert np.abs(moved - (corners @ H[:2, :2].T + H[:2, 2])).max() < 2.0
    assert p.computed > p.matched > 0  # photo 2 described twice
    cost = get_row("second_pass").redetect(run, Image(detect(photo, 500)), Image(detect(img2, 500)))[4]
    assert (cost.passes, cost.fits) == (2, 1) and cost.computations > cost.descriptors >= 1.0
    with pytest.raises(InputError, match="again"):
        pair_descriptors("second_pass", run, Image(detect(photo, 50)), Image(detect(img2, 50)))


def test_without_a_map_photo_2_is_matched_as_it_is(photo):
    """Two unrelated photos: no map, photo 2's own keypoints and SIFT with all its orientations there."""
    other = np.ascontiguousarray(photo[::-1, ::-1].T)
    f1, f2 = detect(photo, 300), detect(other, 300)
    describer = Describer("sift")
    p = second_pass(f1, f2, describer, 300)
    assert p.affine is None and p.xy2 is f2.xy and p.computed == p.matched
    np.testing.assert_array_equal(p.descriptors2, sift_all_descriptors(f2, describer))
