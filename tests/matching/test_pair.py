"""``patchpose.match_pair`` (``patchpose match``): its default description and SIFT as users run it."""

from __future__ import annotations

import inspect
from pathlib import Path

import cv2
import numpy as np
import pytest

pytest.importorskip("kornia")

import patchpose  # noqa: E402
from patchpose.data.patches import load_photo, to_gray  # noqa: E402
from patchpose.data.photos import demo_photo  # noqa: E402
from patchpose.matching.pair import DEFAULT_POSE, MATCH_POSES  # noqa: E402


@pytest.fixture(scope="module")
def photo():
    return to_gray(load_photo(demo_photo(), 480))


def turned(photo: np.ndarray, degrees: float, zoom: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The photo turned by ``degrees`` and enlarged ``zoom`` times about its centre (same canvas), and that
    homography."""
    h, w = photo.shape
    c = np.array([(w - 1) / 2, (h - 1) / 2])
    a = np.radians(degrees)
    A = zoom * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    M = np.concatenate([A, (c - A @ c)[:, None]], 1)
    return cv2.warpAffine(photo, M, (w, h), flags=cv2.INTER_LINEAR), np.vstack([M, [0, 0, 1]])


def test_the_default_is_the_recommended_pose_everywhere():
    """``match_pair`` and ``patchpose match`` describe at :data:`DEFAULT_POSE` unless told: one pose per photo, the
    pair's turn and zoom (docs/peers.md), a key of :data:`MATCH_POSES`."""
    from patchpose.cli.main import build_parser

    assert DEFAULT_POSE == "pair-pose" and MATCH_POSES[DEFAULT_POSE] == "pair_pose"
    assert inspect.signature(patchpose.match_pair).parameters["pose"].default == DEFAULT_POSE
    args = build_parser().parse_args(["match", "a.png", "b.png"])
    assert args.pose == DEFAULT_POSE


def test_the_default_matches_corners_across_a_zoom_where_a_fixed_size_fails(photo):
    """Harris corners of the photo and of its copy turned by 60° and enlarged 2×: the default description
    (no ``pose`` given) finds several times the correct matches of the dominant gradient at the corners'
    fixed 16 px (measured: 71 against 14), and more than our one pose (52)."""
    img2, H = turned(photo, 60, 2.0)
    correct = {}
    for pose in (None, "dominant-gradient", "ours"):
        kw = {} if pose is None else {"pose": pose}
        res = patchpose.match_pair(photo, img2, homography=H, detector="harris", max_keypoints=300, **kw)
        assert res.pose == (pose or DEFAULT_POSE)
        correct[pose] = int(res.correct.sum())
    assert correct[None] > 3 * correct["dominant-gradient"], correct
    assert correct[None] > correct["ours"], correct


def test_sift_all_describes_every_orientation_and_matches_each_location_once(photo):
    """``pose="sift-all"``: SIFT's keypoints (one per location) described at every orientation SIFT found there,
    a pair's distance that of its closest descriptors: on the photo turned by 90° more correct matches than
    SIFT's first orientation alone (measured: 218 against 188), each location in at most one match."""
    img2, H = turned(photo, 90)
    res = {
        p: patchpose.match_pair(photo, img2, pose=p, homography=H, max_keypoints=300)
        for p in ("sift-all", "sift")
    }
    for xy in ("xy1", "xy2"):  # the same keypoints as SIFT's first angle, one per location (no repeats)
        pts = getattr(res["sift-all"], xy)
        np.testing.assert_array_equal(pts, getattr(res["sift"], xy))
        assert len(np.unique(pts, axis=0)) == len(pts)
    assert res["sift-all"].correct.sum() > res["sift"].correct.sum() + 10
    for kw in ({"detector": "harris"}, {"keypoints1": [[50.0, 60.0]], "keypoints2": [[50.0, 60.0]]}):
        with pytest.raises(patchpose.InputError, match="--pose sift-all needs SIFT's own detections"):
            patchpose.match_pair(photo, img2, pose="sift-all", max_keypoints=50, **kw)


#: peer weights beside the repository (``../shared/peers``); a user's clone has none
PEERS = (Path(__file__).resolve().parents[2] / ".." / "shared" / "peers").resolve()


def test_key_net_needs_the_peers_folder_in_one_line(photo):
    with pytest.raises(patchpose.InputError, match="needs the peers' weights folder"):
        patchpose.match_pair(photo, photo, detector="keynet")


@pytest.mark.skipif(
    not PEERS.is_dir(), reason=f"the peers' weights are not here ({PEERS}); a user's clone has none"
)
def test_key_net_keypoints_are_described_about_their_own_size_too(photo):
    """Key.Net detections (the peers' weights) carry a size: the default describes each at the pair's turn both at
    the fixed window and about that size, and matches a photo turned by 50° and enlarged 1.3×: the turn and zoom
    reported within 2° and 0.1 octave, more correct matches than the dominant gradient at Key.Net's size."""
    img2, H = turned(photo, 50.0, 1.3)
    res = {
        pose: patchpose.match_pair(
            photo, img2, pose=pose, detector="keynet", peers=PEERS, homography=H, max_keypoints=300
        )
        for pose in ("pair-pose", "dominant-gradient")
    }
    pp = res["pair-pose"]
    assert abs((pp.turn - (360.0 - 50.0) + 180.0) % 360.0 - 180.0) < 2.0, pp.turn  # −50° as displayed
    assert pp.zoom == pytest.approx(np.log2(1.3), abs=0.1)
    assert pp.correct.sum() > res["dominant-gradient"].correct.sum(), {
        k: int(r.correct.sum()) for k, r in res.items()
    }


def test_keypoints_given_with_their_sizes_are_described_as_a_detectors(photo):
    """Keypoints of one's own with their regions' half-widths (as kornia reads a LAF's scale) are described as a
    detector's that gives a size: SIFT's detections handed back with their sizes give the same matches as SIFT's
    own route; sizes come with keypoints, one finite positive size each, for both photos."""
    from patchpose.conventions import REFERENCE_RADIUS
    from patchpose.matching.pipeline import detect

    img2, H = turned(photo, 30.0, 1.2)
    f1, f2 = detect(photo, 200), detect(img2, 200)
    own = patchpose.match_pair(photo, img2, max_keypoints=200)
    given = patchpose.match_pair(
        photo,
        img2,
        keypoints1=f1.xy,
        keypoints2=f2.xy,
        sizes1=REFERENCE_RADIUS * np.exp2(f1.frame),
        sizes2=REFERENCE_RADIUS * np.exp2(f2.frame),
    )
    bare = patchpose.match_pair(
        photo, img2, keypoints1=f1.xy, keypoints2=f2.xy
    )  # without sizes: the fixed window
    np.testing.assert_array_equal(given.matches, own.matches)
    assert given.turn == pytest.approx(own.turn) and not np.array_equal(bare.matches, own.matches)
    n = len(f1)
    for kw, message in [
        ({"sizes1": np.ones(n), "sizes2": np.ones(len(f2))}, "sizes are those of keypoints"),
        ({"keypoints1": f1.xy, "keypoints2": f2.xy, "sizes1": np.ones(n)}, "sizes for both"),
        (
            {"keypoints1": f1.xy, "keypoints2": f2.xy, "sizes1": np.ones(n - 1), "sizes2": np.ones(len(f2))},
            "one size per",
        ),
        (
            {"keypoints1": f1.xy, "keypoints2": f2.xy, "sizes1": -np.ones(n), "sizes2": np.ones(len(f2))},
            "finite region half-widths from",
        ),
    ]:
        with pytest.raises(patchpose.InputError, match=message):
            patchpose.match_pair(photo, img2, **kw)


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"sizes1": 1e9}, r"sizes must be finite region half-widths from .* to 65536 pixels"),
        ({"sizes1": 8 + 1j}, "sizes must be real numbers"),
        ({"top_k": None}, "top_k .* must be an integer of at least 2, got None"),
        ({"top_k": 1}, "top_k .* must be an integer of at least 2, got 1"),
        ({"homography": np.full((3, 3), np.nan)}, "the homography must be a finite 3×3 matrix"),
        ({"homography": np.zeros((3, 3))}, "the homography is not invertible"),
        ({"homography": "abc"}, "the homography must be a 3×3 matrix of real numbers, got str"),
        ({"pose": ["none"]}, "pose must be one of"),
        ({"weights": 3}, "weights must be a bundled model's name or a file path, got int"),
        ({"detector": "keynet", "peers": 5}, "the peers folder must be a path, got int"),
        ({"read_plan": "passes=1"}, "read_plan must be a mapping"),
    ],
)
def test_bad_arguments_are_one_line_input_errors_before_any_work(photo, kw, message, monkeypatch):
    """Wrong types and values of ``match_pair``'s arguments are refused as :class:`patchpose.InputError`, before
    detection (a size of 1e9 px once ran for minutes inside OpenCV; a singular homography gave every match an
    infinite error)."""
    from patchpose.matching import pipeline

    def no_work(*args, **kwargs):
        raise AssertionError("matching began before the arguments were checked")

    if "sizes1" in kw:  # sizes are checked with the keypoints they belong to, inside the pipeline
        xy = np.array([[100.0, 100.0], [50.0, 60.0]])
        kw = {
            "keypoints1": xy,
            "keypoints2": xy,
            "sizes1": np.full(2, kw["sizes1"]),
            "sizes2": np.full(2, 8.0),
        }
    else:
        monkeypatch.setattr(pipeline, "match_images", no_work)
    with pytest.raises(patchpose.InputError, match=message):
        patchpose.match_pair(photo, photo, **kw)


def test_top_k_only_changes_the_topk_pose(photo):
    """``top_k`` is the candidates of ``pose="ours-topk"``; the default pose reads what it needs whatever it is."""
    img2, _ = turned(photo, 40.0)
    kw = {"max_keypoints": 150}
    default = patchpose.match_pair(photo, img2, **kw)
    np.testing.assert_array_equal(patchpose.match_pair(photo, img2, top_k=2, **kw).matches, default.matches)
    two = patchpose.match_pair(photo, img2, pose="ours-topk", top_k=2, **kw)
    four = patchpose.match_pair(photo, img2, pose="ours-topk", top_k=4, **kw)
    assert not np.array_equal(two.matches, four.matches)


@pytest.mark.skipif(
    not PEERS.is_dir(), reason=f"the peers' weights are not here ({PEERS}); a user's clone has none"
)
def test_key_net_finds_nothing_in_an_image_too_small_for_it(photo):
    """kornia's Key.Net cannot read an image with a side under 19 px (its smallest level is smaller than its
    padding): such an image has no Key.Net keypoints, and one just large enough is read."""
    from patchpose.matching.peers import KEYNET_MIN_SIDE

    for shape in [(16, 16), (18, 300), (300, 18)]:
        m = patchpose.match_pair(photo[: shape[0], : shape[1]].copy(), photo, detector="keynet", peers=PEERS)
        assert len(m.xy1) == 0 and len(m.matches) == 0
    assert KEYNET_MIN_SIDE == 19
    patchpose.match_pair(photo[:19, :300].copy(), photo, detector="keynet", peers=PEERS)
