"""Un-turning photos for features trained upright (#63, ``patchpose.matching.upright``): the turned canvas maps back
exactly, our votes find the turn (and say when there is none), and a feature that does not turn with the photo
matches a turned photo once photo 1 is un-turned; the four quarter turns where the votes find none."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

import patchpose
from patchpose.data.patches import load_photo
from patchpose.data.photos import demo_photo
from patchpose.errors import InputError
from patchpose.geometry import reprojection_errors
from patchpose.matching.upright import UprightTurn, extract_turned, match_upright, turn_image, upright_pair

PEERS = Path(__file__).resolve().parents[2].parent / "shared" / "peers"


@pytest.fixture(scope="module")
def photo():
    return np.ascontiguousarray(np.asarray(load_photo(demo_photo(), 480))[:, :400])  # not square


def turned_photo(photo, degrees):
    """The photo turned by ``degrees`` (CCW as displayed) on a canvas that holds it, and the homography photo →
    turned."""
    t, M = turn_image(photo, degrees)
    return t, np.linalg.inv(np.vstack([M, [0.0, 0.0, 1.0]]))


def upright_sift(image):
    """An extractor that does not turn with the photo: SIFT's keypoints described upright (angle 0)."""
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
    sift = cv2.SIFT_create(800)
    kps = sift.detect(gray, None)
    kps = [cv2.KeyPoint(k.pt[0], k.pt[1], k.size, 0.0, k.response, k.octave) for k in kps]
    kps, d = sift.compute(gray, kps)
    return np.array([k.pt for k in kps], np.float64).reshape(-1, 2), d


def correct(H, m) -> int:
    return int((reprojection_errors(H, m.xy1[m.matches[:, 0]], m.xy2[m.matches[:, 1]]) <= 3.0).sum())


def test_a_turned_canvas_holds_the_photo_and_maps_back_exactly(photo):
    h, w = photo.shape[:2]
    for degrees, rotate in (
        (90, cv2.ROTATE_90_COUNTERCLOCKWISE),
        (180, cv2.ROTATE_180),
        (270, cv2.ROTATE_90_CLOCKWISE),
    ):
        t, M = turn_image(photo, degrees)
        np.testing.assert_array_equal(t, cv2.rotate(photo, rotate))  # quarter turns: exact, no resampling
        ys, xs = np.mgrid[0 : t.shape[0] : 7, 0 : t.shape[1] : 5]
        back = np.stack([xs.ravel(), ys.ravel()], 1) @ M[:, :2].T + M[:, 2]
        np.testing.assert_allclose(back, np.round(back), atol=1e-9)
        b = np.round(back).astype(int)
        np.testing.assert_array_equal(t[ys.ravel(), xs.ravel()], photo[b[:, 1], b[:, 0]])
    t, M = turn_image(photo, 30.0)
    corners = np.array([[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1]], np.float64)
    inv = np.linalg.inv(np.vstack([M, [0, 0, 1]]))[:2]
    on_canvas = corners @ inv[:, :2].T + inv[:, 2]
    assert (on_canvas > -0.5).all() and (on_canvas[:, 0] < t.shape[1] - 0.5).all()
    assert (on_canvas[:, 1] < t.shape[0] - 0.5).all()
    # CCW as displayed: the photo's top-right corner goes up-left, to the canvas's top
    assert on_canvas[1, 1] == pytest.approx(0.0, abs=0.6)
    centre = np.array([[(t.shape[1] - 1) / 2, (t.shape[0] - 1) / 2]]) @ M[:, :2].T + M[:, 2]
    np.testing.assert_allclose(centre, [[(w - 1) / 2, (h - 1) / 2]], atol=1e-9)
    for bad in (float("nan"), "90", True):
        with pytest.raises(InputError, match="degrees must be"):
            turn_image(photo, bad)


def test_a_capped_canvas_is_cropped_about_its_centre_and_still_maps_back(photo):
    """Turned by 45° the whole photo needs about 1.9× its pixels; capped at 1.3× the canvas has at most that many,
    in the whole canvas's proportions, its centre on the photo's centre, and every canvas pixel inside the photo
    shows the photo's pixel there; quarter turns (the photo's own pixels) and small caps are refused or unchanged."""
    h, w = photo.shape[:2]
    full, _ = turn_image(photo, 45.0)
    assert full.shape[0] * full.shape[1] > 1.8 * h * w
    t, M = turn_image(photo, 45.0, max_pixels=1.3)
    assert 1.25 * h * w < t.shape[0] * t.shape[1] <= 1.3 * h * w
    assert abs(t.shape[1] / t.shape[0] - full.shape[1] / full.shape[0]) < 0.01
    centre = np.array([(t.shape[1] - 1) / 2, (t.shape[0] - 1) / 2]) @ M[:, :2].T + M[:, 2]
    np.testing.assert_allclose(centre, [(w - 1) / 2, (h - 1) / 2], atol=1e-9)
    ys, xs = np.mgrid[2 : t.shape[0] - 2 : 11, 2 : t.shape[1] - 2 : 13]
    back = np.stack([xs.ravel(), ys.ravel()], 1) @ M[:, :2].T + M[:, 2]
    inside = (back[:, 0] > 2) & (back[:, 0] < w - 3) & (back[:, 1] > 2) & (back[:, 1] < h - 3)
    kept = inside.mean() * t.shape[0] * t.shape[1] / (h * w)
    assert 0.85 < kept < 0.99, kept  # the photo's far corners cut off, most of it kept
    gray = cv2.cvtColor(photo, cv2.COLOR_RGB2GRAY).astype(np.float32)
    expected = cv2.remap(
        gray, back[inside, :1].astype(np.float32), back[inside, 1:].astype(np.float32), cv2.INTER_LINEAR
    )
    got = cv2.cvtColor(t, cv2.COLOR_RGB2GRAY).astype(np.float32)[ys.ravel()[inside], xs.ravel()[inside]]
    assert np.median(np.abs(got - expected.ravel())) < 2.0
    np.testing.assert_array_equal(turn_image(photo, 90.0, max_pixels=1.0)[0], turn_image(photo, 90.0)[0])
    for bad in (0.5, float("nan"), "1.3", True):
        with pytest.raises(InputError, match="max_pixels must be"):
            turn_image(photo, 30.0, max_pixels=bad)


def test_the_votes_find_the_turn_or_say_there_is_none(photo):
    """Turned by 135°: found within 2°, far past the threshold; a photo and noise: none found (0°, confidence under
    the threshold)."""
    img2, _ = turned_photo(photo, 135.0)
    turn = upright_pair(photo, img2)
    assert turn.found and abs((turn.degrees - 135.0 + 180.0) % 360.0 - 180.0) < 2.0, turn
    assert turn.confidence > 20 and abs(turn.zoom) < 0.1
    noise = (np.random.default_rng(0).random(photo.shape) * 255).astype(np.uint8)
    none = upright_pair(photo, noise)
    assert not none.found and none.degrees == 0.0 and none.confidence < 8, none
    assert UprightTurn(0.0, 0.0, 0, 0, False).confidence == 0.0


def test_where_few_corners_show_no_turn_more_corners_vote_again(photo, monkeypatch):
    """Ten corners a photo are too few to show a turn of 135°: the votes are taken again with
    VOTE_RETRY_KEYPOINTS corners and find it (``retried``); 500 need no second vote; with the retry at ten corners
    too, none is found and nothing is retried."""
    import patchpose.matching.upright as upright

    img2, _ = turned_photo(photo, 135.0)
    turn = upright_pair(photo, img2, max_keypoints=10)
    assert turn.found and turn.retried and turn.matches > 100, turn
    assert abs((turn.degrees - 135.0 + 180.0) % 360.0 - 180.0) < 2.0, turn
    assert not upright_pair(photo, img2).retried
    monkeypatch.setattr(upright, "VOTE_RETRY_KEYPOINTS", 10)
    few = upright_pair(photo, img2, max_keypoints=10)
    assert not few.found and not few.retried and few.degrees == 0.0, few


def test_a_feature_that_does_not_turn_matches_a_turned_photo_once_photo_1_is_unturned(photo):
    """Upright SIFT on the photo turned by 120°: as it comes a few correct matches; ``match_upright`` extracts photo
    1 once at the voted turn and finds most of them correct; told no turn was found, it tries the 4 quarter turns
    and keeps the nearest (a photo turned by 100°: 90°)."""
    img2, H = turned_photo(photo, 120.0)
    xy1, d1 = upright_sift(photo)
    xy2, d2 = upright_sift(img2)
    from patchpose.matching.matcher import mutual_nn

    m0 = mutual_nn(d1.astype(np.float32), d2.astype(np.float32))[0]
    as_is = int((reprojection_errors(H, xy1[m0[:, 0]], xy2[m0[:, 1]]) <= 3.0).sum())
    m = match_upright(photo, img2, upright_sift)
    assert m.turn.found and m.tried == (m.degrees,) and m.extractions == 2
    assert abs(m.degrees - 120.0) < 2.0 and correct(H, m) > max(5 * as_is, 150), (correct(H, m), as_is)
    assert (m.xy1 > -0.5).all() and (m.xy1[:, 0] < photo.shape[1] - 0.5).all()
    img2, H = turned_photo(photo, 100.0)  # 10° from a quarter turn
    quarter = match_upright(photo, img2, upright_sift, turn=UprightTurn(0.0, 0.0, 0, 0, False))
    assert quarter.tried == (0.0, 90.0, 180.0, 270.0) and quarter.extractions == 5 and quarter.degrees == 90.0
    assert correct(H, quarter) > 300, correct(H, quarter)  # measured: 447 of 451 supporting
    # a known turn within SNAP_DEG of a quarter turn is made as that quarter turn: applied says so, degrees as given
    near = match_upright(photo, photo, upright_sift, turn=UprightTurn.known(4.7))
    assert near.degrees == 4.7 and near.applied == 0.0 and quarter.applied == 90.0 and m.applied == m.degrees
    assert match_upright(photo, photo, upright_sift, turn=UprightTurn.known(-87.0)).applied == 270.0


def test_a_bad_extractor_or_turn_is_one_line(photo, monkeypatch):
    def flat(image):
        return np.zeros(5), np.zeros((5, 8))

    turn = UprightTurn(0.0, 0.0, 0, 0, True)
    with pytest.raises(InputError, match=r"xy \(N, 2\) and descriptors \(N, D\)"):
        match_upright(photo, photo, flat, turn=turn)
    with pytest.raises(InputError, match="must return \\(xy, descriptors\\)"):
        extract_turned(photo, lambda image: None, 0.0)
    # descriptors None where nothing is found (OpenCV's compute): said as None, not as the shape () NumPy makes of it
    with pytest.raises(InputError) as e:
        match_upright(photo, photo, lambda image: (np.zeros((0, 2)), None), turn=turn)
    assert str(e.value) == (
        "the extractor must return xy (N, 2) and descriptors (N, D) for photo 2, got (0, 2) and None (no keypoints: "
        "empty arrays, (0, 2) and (0, D))"
    )
    with pytest.raises(InputError, match="turn must be an UprightTurn"):
        match_upright(photo, photo, upright_sift, turn=90.0)
    with pytest.raises(InputError, match="extract must be a callable"):
        match_upright(photo, photo, "aliked", turn=turn)

    def refuses(image):  # as ALIKED refuses a float image: said before the votes are taken
        raise InputError("this extractor takes uint8 photos")

    import patchpose.matching.upright as upright

    voted = []
    monkeypatch.setattr(upright, "upright_pair", lambda *a, **k: voted.append(1))
    with pytest.raises(InputError, match="takes uint8 photos"):
        match_upright(photo, photo, refuses)
    assert not voted

    def far(image):  # keypoints not in the image it was given: they were dropped without a word
        xy, d = upright_sift(image)
        return xy + 1000.0, d

    for degrees in (0.0, 33.0):
        with pytest.raises(InputError, match=r"keypoints outside the \d+×\d+ image it was given"):
            extract_turned(photo, far, degrees)
    with pytest.raises(InputError, match="outside .* for photo 2"):
        match_upright(photo, photo, far, turn=turn)

    def normalised(image):  # kornia's and LightGlue's [-1, 1]: inside the image, all at its corner
        xy, d = upright_sift(image)
        return xy / np.array(image.shape[1::-1]) * 2.0 - 1.0, d

    with pytest.raises(InputError, match="normalised coordinates"):
        extract_turned(photo, normalised, 30.0)
    h, w = photo.shape[:2]
    edge = extract_turned(photo, lambda image: (np.array([[-0.5, -0.5], [w - 0.5, h - 0.5]]), np.eye(2)), 0.0)
    assert len(edge[0]) == 0  # on the border: not an error (and not inside)


def test_a_known_turn_and_odd_images(photo):
    """A turn known otherwise is found with no votes; near a quarter turn (within SNAP_DEG) the photo is turned by
    that quarter turn exactly; float16 and one-channel images keep their type and shape."""
    from patchpose.matching.upright import SNAP_DEG

    k = UprightTurn.known(450.0)
    assert k.found and k.degrees == 90.0 and k.votes == 0 and k.confidence == 0.0
    near, M = turn_image(photo, 90.0 + 0.5 * SNAP_DEG)
    np.testing.assert_array_equal(near, cv2.rotate(photo, cv2.ROTATE_90_COUNTERCLOCKWISE))
    assert turn_image(photo, 90.0 + 2 * SNAP_DEG)[0].shape[:2] != near.shape[:2]  # past it: resampled, larger
    half = (photo[:, :, :1] / 255.0).astype(np.float16)
    for d in (30.0, 90.0):
        t, _ = turn_image(half, d)
        assert t.dtype == np.float16 and t.ndim == 3 and t.shape[2] == 1


def test_aliked_extractor_loads_a_state_dict_of_ones_own_and_refuses_bad_arguments(tmp_path, photo, capsys):
    """kornia's ALIKED built with random weights saved to a file (no peers needed): the extractor reads it
    weights-only, takes RGB and gray uint8 images and gives (N, 2) keypoints inside the image with (N, 128)
    descriptors, at most ``max_keypoints``; bad arguments and a non-ALIKED file are one line."""
    import torch
    from kornia.feature import ALIKED

    from patchpose.errors import WeightsError
    from patchpose.integrations.kornia import aliked_extractor

    torch.manual_seed(0)
    path = tmp_path / "aliked.pth"
    state = {k: v for k, v in ALIKED("aliked-n16").state_dict().items() if k != "dkd.hw_grid"}
    torch.save(state, path)
    extract = aliked_extractor(path, max_keypoints=50)
    small = np.ascontiguousarray(photo[:160, :200])
    for image in (small, cv2.cvtColor(small, cv2.COLOR_RGB2GRAY)):
        xy, d = extract(image)
        assert xy.shape[1] == 2 and d.shape == (len(xy), 128) and 0 < len(xy) <= 50
        assert (xy >= 0).all() and (xy[:, 0] <= 199).all() and (xy[:, 1] <= 159).all()
    with pytest.raises(InputError, match="uint8"):
        extract(small.astype(np.float32))
    with pytest.raises(
        InputError, match=r"not aliked_extractor itself"
    ):  # the factory passed as the extractor
        aliked_extractor(small)
    for kw, message in [
        ({"model": "aliked-x"}, "model must be one of"),
        ({"max_keypoints": 0}, "max_keypoints must be an integer"),
    ]:
        with pytest.raises(InputError, match=message):
            aliked_extractor(path, **kw)
    # another network's file, or another ALIKED's (aliked-t16's read as the default aliked-n16): one short line
    # naming the model and the option, not torch's list of every tensor that differs
    torch.save({"w": torch.zeros(3)}, tmp_path / "other.pth")
    t16 = {k: v for k, v in ALIKED("aliked-t16").state_dict().items() if k != "dkd.hw_grid"}
    torch.save(t16, tmp_path / "t16.pth")
    for other, message in [
        (
            "other.pth",
            "does not hold aliked-n16's weights (kornia's ALIKED): none of its 1 tensors has an ALIKED name",
        ),
        (
            "t16.pth",
            "holds aliked-t16's weights, not aliked-n16's (kornia's ALIKED): pass --aliked-model aliked-t16",
        ),
    ]:
        with pytest.raises(WeightsError) as e:
            aliked_extractor(tmp_path / other)
        assert str(e.value).startswith(f"{tmp_path / other} {message}"), str(e.value)
    assert aliked_extractor(tmp_path / "t16.pth", "aliked-t16", max_keypoints=50)(small)[1].shape[1] == 64
    from patchpose.cli.main import main

    argv = ["extract", str(tmp_path), "--out", str(tmp_path / "x.h5"), "--aliked", str(tmp_path / "t16.pth")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "holds aliked-t16's weights, not aliked-n16's" in err
    assert "size" not in err


def test_an_aliked_file_near_the_model_says_what_differs_not_another_model(tmp_path):
    """``--aliked FILE`` names another ALIKED (``--aliked-model NAME``) only where the file has the model's tensor
    names and another ALIKED's shapes (which one; aliked-n16 and aliked-n16rot share theirs); the right weights saved
    with a ``module.`` prefix (DataParallel), one tensor missing or one extra say that (torch's first missing or
    unexpected name), and shapes no ALIKED has name the first that differs: each was "does not hold aliked-n16's
    weights ... pass --aliked-model NAME", the wrong fix."""
    import torch
    from kornia.feature import ALIKED

    from patchpose.errors import WeightsError
    from patchpose.integrations.kornia import aliked_extractor

    def state(model: str) -> dict:
        return {k: v for k, v in ALIKED(model).state_dict().items() if k != "dkd.hw_grid"}

    n16, t16 = state("aliked-n16"), state("aliked-t16")
    first, last = next(iter(n16)), list(n16)[-1]
    wide = dict(n16)
    wide[first] = torch.zeros(1, *n16[first].shape[1:])
    cases = [
        (
            {f"module.{k}": v for k, v in n16.items()},
            "aliked-n16",
            "does not hold aliked-n16's weights as kornia's ALIKED names them: its names begin with 'module.'",
        ),
        ({k: v for k, v in n16.items() if k != last}, "aliked-n16", f"(kornia's ALIKED): missing '{last}'"),
        (
            {**n16, "extra.weight": torch.zeros(2)},
            "aliked-n16",
            "(kornia's ALIKED): unexpected 'extra.weight'",
        ),
        (
            {k: v for k, v in t16.items() if k != last},  # another ALIKED's but not whole: what is missing
            "aliked-n16",
            f"(kornia's ALIKED): missing '{last}'",
        ),
        (
            wide,
            "aliked-n16",
            f"nor another ALIKED's: {first} is {tuple(wide[first].shape)} where aliked-n16's is "
            f"{tuple(n16[first].shape)}",
        ),
        (
            n16,
            "aliked-t16",
            "holds aliked-n16's or aliked-n16rot's weights (the same shapes), not aliked-t16's (kornia's ALIKED): "
            "pass --aliked-model aliked-n16 or aliked-n16rot",
        ),
        (n16, "aliked-n32", "holds aliked-n16's or aliked-n16rot's weights"),
    ]
    for k, (sd, model, message) in enumerate(cases):
        path = tmp_path / f"{k}.pth"
        torch.save(sd, path)
        with pytest.raises(WeightsError) as e:
            aliked_extractor(path, model)
        got = str(e.value)
        assert message in got and len(got.splitlines()) == 1 and len(got) < 400, (k, got)
        if "holds" not in message:
            assert "--aliked-model" not in got, (k, got)


@pytest.mark.skipif(
    not (PEERS / "aliked-n16.pth").exists(), reason="no ../shared/peers here (ALIKED's weights)"
)
def test_aliked_unturned_by_our_vote_matches_a_photo_turned_by_150_degrees(photo):
    """kornia's ALIKED (trained upright) on the photo turned by 150°: as it comes few correct matches; un-turned by
    our vote several times more."""
    from patchpose.integrations.kornia import aliked_extractor
    from patchpose.matching.matcher import mutual_nn

    extract = aliked_extractor(PEERS / "aliked-n16.pth", max_keypoints=1000)
    img2, H = turned_photo(photo, 150.0)
    (xy1, d1), (xy2, d2) = extract(photo), extract(img2)
    m0 = mutual_nn(d1, d2)[0]
    as_is = int((reprojection_errors(H, xy1[m0[:, 0]], xy2[m0[:, 1]]) <= 3.0).sum())
    m = patchpose.match_upright(photo, img2, extract)
    assert correct(H, m) > max(4 * as_is, 100), (correct(H, m), as_is)


def test_match_results_print_their_arrays_by_shape():
    """A result's repr names each field, an array by its dtype and shape (the dataclass's printed every keypoint:
    16 KB for one pair)."""
    from patchpose.matching.collection import CollectionTurns
    from patchpose.matching.upright import UprightMatches

    turns = CollectionTurns(
        np.zeros(500),
        np.ones(500, bool),
        np.zeros((9, 2), np.int64),
        *np.zeros((2, 9)),
        np.zeros(500, np.int64),
    )
    assert repr(turns).startswith("CollectionTurns(degrees=float64[500], found=bool[500], pairs=int64[9, 2]")
    m = UprightMatches(np.zeros((1000, 2)), np.zeros((900, 2)), np.zeros((700, 2), np.int64), np.zeros(700),
                       UprightTurn(90.0, 0.0, 40, 100, True), 90.0, (90.0,), 1.25)  # fmt: skip
    text = repr(m)
    assert (
        len(text) < 300
        and "xy1=float64[1000, 2]" in text
        and "degrees=90," in text
        and "seconds=1.25)" in text
    )
    assert "UprightTurn(degrees=90.0" in text
