"""COLMAP end to end (:mod:`patchpose.integrations.colmap`): keypoints into a COLMAP database and back, the
matcher, a reconstruction of real frames with every other one turned, and bad input as one line."""

import json
import math
import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from patchpose.cli.main import main
from patchpose.conventions import angle_diff
from patchpose.errors import InputError
from patchpose.integrations import colmap as cm

TUM = Path("/work/shared/data/tum_freiburg")
needs_pycolmap = pytest.mark.skipif(
    not cm._has_pycolmap(), reason="pycolmap is not installed (pip install pycolmap)"
)


def write_images(folder: Path, n: int, size: int = 96) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for k in range(n):
        im = cv2.GaussianBlur((rng.random((size, size)) * 255).astype(np.uint8), (0, 0), 1.5)
        cv2.imwrite(str(folder / f"{k:02d}.png"), im)
    return folder


@pytest.fixture(scope="module")
def tum_turned(tmp_path_factory):
    """Five consecutive TUM frames, the 2nd and 4th turned by 90° clockwise (a phone held sideways)."""
    frames = sorted(TUM.glob("*.png"))[:5] if TUM.is_dir() else []
    if len(frames) < 5:
        pytest.skip(f"the TUM frames are not in {TUM}")
    from patchpose.evaluation.colmap_eval import turn_every_other

    src = tmp_path_factory.mktemp("tum") / "frames"
    src.mkdir()
    for p in frames:
        shutil.copyfile(p, src / p.name)
    return turn_every_other(src, src.parent / "turned")


@needs_pycolmap
def test_keypoints_keep_their_pose_through_the_database(tmp_path):
    import pycolmap

    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 90, (50, 2))
    scale, ori = rng.uniform(-1.5, 1.5, 50), rng.uniform(0, 2 * math.pi, 50)
    rows = cm.colmap_keypoints(xy, scale, ori)
    # COLMAP's conventions: the top-left pixel centre at (0.5, 0.5), radius px, radians clockwise
    one = cm.colmap_keypoints([[0.0, 0.0]], [0.0], [math.pi / 2])[0]
    assert one[:3].tolist() == [0.5, 0.5, 16.0] and one[3] == pytest.approx(-math.pi / 2)
    write_images(tmp_path / "im", 2)
    db_path = tmp_path / "db.db"
    pycolmap.Database.open(db_path).close()
    pycolmap.import_images(db_path, tmp_path / "im")
    db = pycolmap.Database.open(db_path)
    image_id = db.read_all_images()[0].image_id
    db.write_keypoints(image_id, rows)
    back = cm.from_colmap_keypoints(db.read_keypoints(image_id))
    db.close()
    assert np.abs(back["xy"] - xy).max() < 1e-4
    assert np.abs(back["scale"] - scale).max() < 1e-5
    assert np.abs(angle_diff(back["ori"], ori)).max() < 1e-5


def test_keypoint_distance_is_the_closest_descriptor_pair_and_matches_are_mutual():
    d1 = np.array([[0, 0], [10, 0], [0, 10]], np.float32)  # keypoint 0 has two descriptors
    o1 = np.array([0, 0, 1])
    d2 = np.array([[10, 1], [0, 9], [50, 50]], np.float32)
    o2 = np.array([0, 1, 2])
    dist = cm.keypoint_distance_matrix(d1, o1, d2, o2)
    assert dist.shape == (2, 3)
    assert dist[0, 0] == pytest.approx(1.0)  # its second descriptor, not its first (10.05)
    f1 = {"xy": np.zeros((2, 2)), "descriptors": d1, "owner": o1}
    f2 = {"xy": np.zeros((3, 2)), "descriptors": d2, "owner": o2}
    assert cm.match_keypoints(f1, f2).tolist() == [[0, 0], [1, 1]]
    # keypoint 0 of 2 is 1.0 from its match and 9.0 from the next: the ratio test keeps it at 0.5, not 0.1
    assert [0, 0] in cm.match_keypoints(f1, f2, ratio=0.5).tolist()
    assert [0, 0] not in cm.match_keypoints(f1, f2, ratio=0.1).tolist()


def test_describe_image_sift_gives_every_orientation_and_ours_one():
    image = (np.random.default_rng(2).random((120, 120)) * 255).astype(np.uint8)
    image = cv2.GaussianBlur(image, (0, 0), 2.0)
    torch.set_num_threads(1)
    sift = cm.describe_image(image, "sift", max_keypoints=200)
    ours = cm.describe_image(image, "ours_angle", max_keypoints=200)
    assert len(sift["xy"]) == len(ours["xy"]) > 20  # the same keypoints
    assert np.array_equal(sift["xy"], ours["xy"])
    assert len(sift["descriptors"]) > len(sift["xy"])  # some locations have a second orientation
    assert len(ours["descriptors"]) == len(ours["xy"]) and (np.diff(sift["owner"]) >= 0).all()


@needs_pycolmap
def test_ours_registers_every_frame_with_frames_turned(tum_turned, tmp_path):
    torch.set_num_threads(1)
    stats = cm.reconstruct(tum_turned, tmp_path / "ours", pose="ours_angle", max_keypoints=1500, threads=1)
    assert stats["registered"] == stats["images"] == 5
    assert stats["points3D"] > 300 and stats["reprojection_px"] < 1.5
    assert (tmp_path / "ours" / "database.db").is_file() and (tmp_path / "ours" / "sparse" / "0").is_dir()
    assert json.loads((tmp_path / "ours" / cm.STATS).read_text())["points3D"] == stats["points3D"]
    # a rerun into the finished folder returns its statistics; other settings are refused
    assert cm.reconstruct(tum_turned, tmp_path / "ours", pose="ours_angle", max_keypoints=1500) == stats
    with pytest.raises(InputError, match="exists and is not this reconstruction"):
        cm.reconstruct(tum_turned, tmp_path / "ours", pose="upright", max_keypoints=1500)


@needs_pycolmap
def test_colmap_cli_refuses_bad_input_in_one_line(tmp_path, capsys):
    write_images(tmp_path / "one", 1)
    cases = [
        ([str(tmp_path / "missing")], "image folder not found"),
        ([str(tmp_path / "one")], "at least 2"),
        ([str(tmp_path / "one"), "--max-keypoints", "0"], "max_keypoints must be a positive integer"),
        ([str(tmp_path / "one"), "--ratio", "1.5"], "ratio must be None or a number in (0, 1]"),
    ]
    for args, message in cases:
        assert main(["colmap", *args, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_a_missing_pycolmap_is_one_line_naming_the_install(monkeypatch, tmp_path):
    write_images(tmp_path / "im", 2)
    monkeypatch.setitem(sys.modules, "pycolmap", None)  # import pycolmap raises ModuleNotFoundError
    with pytest.raises(InputError, match="pip install pycolmap"):
        cm.reconstruct(tmp_path / "im", tmp_path / "out", pose="sift")
