"""COLMAP end to end (:mod:`patchpose.integrations.colmap`): keypoints into a COLMAP database and back, the
matcher, reconstructions of generated views of a textured plane and (where ../shared holds them) of real
frames, with every other one turned, and bad input as one line."""

import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from conftest import make_textured_image
from patchpose.cli.main import main
from patchpose.conventions import angle_diff
from patchpose.errors import InputError
from patchpose.evaluation.colmap_eval import describe_at, evaluate_colmap, reconstruct_at, turn_every_other
from patchpose.integrations import colmap as cm

# 17 TUM RGB-D frames (docs/results.md), in the shared folder beside the repository's clone when it is there
TUM = Path(__file__).resolve().parents[3] / "shared" / "data" / "tum_freiburg"
needs_pycolmap = pytest.mark.skipif(
    importlib.util.find_spec("pycolmap") is None, reason="pycolmap is not installed (the 'colmap' extra)"
)


def write_images(folder: Path, n: int, size: int = 96) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for k in range(n):
        im = cv2.GaussianBlur((rng.random((size, size)) * 255).astype(np.uint8), (0, 0), 1.5)
        cv2.imwrite(str(folder / f"{k:02d}.png"), im)
    return folder


def plane_views(folder: Path, n: int = 4, size: int = 240, spread: float = 40.0) -> Path:
    """``n`` square views of a textured plane (:func:`make_textured_image`) from cameras on an arc of
    ``spread`` degrees around it, all looking at its centre, with the focal length COLMAP assumes for an
    image without EXIF (1.2 × the image size): a scene COLMAP reconstructs with every view."""
    folder.mkdir(parents=True, exist_ok=True)
    texture = 600
    tex = (make_textured_image(texture, seed=0) * 255).astype(np.uint8)
    f = 1.2 * size
    K = np.array([[f, 0, size / 2], [0, f, size / 2], [0, 0, 1.0]])
    to_plane = np.array([[2 / texture, 0, -1], [0, 2 / texture, -1], [0, 0, 1.0]])  # the plane is [-1, 1]²
    at_z2 = np.diag([1.0, 1.0, 2.0])  # at z = 2, the first camera at the origin
    for k, th in enumerate(np.radians(np.linspace(-spread / 2, spread / 2, n))):
        R = np.array([[np.cos(th), 0, np.sin(th)], [0, 1, 0], [-np.sin(th), 0, np.cos(th)]])
        C = np.array([2 * np.sin(th), 0, 2 - 2 * np.cos(th)])
        H = K @ (R @ at_z2 - np.outer(R @ C, [0, 0, 1])) @ to_plane
        view = cv2.warpPerspective(tex, H, (size, size), flags=cv2.INTER_AREA)
        cv2.imwrite(str(folder / f"{k:02d}.png"), view)
    return folder


@pytest.fixture(scope="module")
def plane_turned(tmp_path_factory):
    """Four views of a textured plane, the 2nd and 4th turned by 90° clockwise."""
    root = tmp_path_factory.mktemp("plane")
    return turn_every_other(plane_views(root / "views"), root / "turned")


@pytest.fixture(scope="module")
def tum_turned(tmp_path_factory):
    """Five consecutive TUM frames, the 2nd and 4th turned by 90° clockwise (a phone held sideways)."""
    frames = sorted(TUM.glob("*.png"))[:5] if TUM.is_dir() else []
    if len(frames) < 5:
        pytest.skip(f"the TUM frames are not in {TUM}")
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
    # COLMAP's affine rows (a11 a12 a21 a22 = the radius times the rotation) give the same poses
    r, a = rows[:, 2].astype(np.float64), rows[:, 3].astype(np.float64)
    affine = np.column_stack([rows[:, :2], r * np.cos(a), -r * np.sin(a), r * np.sin(a), r * np.cos(a)])
    back6 = cm.from_colmap_keypoints(affine)
    assert np.abs(back6["scale"] - scale).max() < 1e-5 and np.abs(angle_diff(back6["ori"], ori)).max() < 1e-5


def test_keypoint_distance_is_the_closest_descriptor_pair_and_matches_are_mutual():
    d1 = np.array([[0, 0], [10, 0], [0, 10]], np.float32)  # keypoint 0 has two descriptors
    o1 = np.array([0, 0, 1])
    d2 = np.array([[10, 1], [0, 9], [50, 50]], np.float32)
    o2 = np.array([0, 1, 2])
    f1 = {"xy": np.zeros((2, 2)), "descriptors": d1, "owner": o1}
    f2 = {"xy": np.zeros((3, 2)), "descriptors": d2, "owner": o2}
    # keypoint 0 of 1 matches keypoint 0 of 2 by its second descriptor (1.0 away; its first is 10.05 away)
    assert cm.match_keypoints(f1, f2).tolist() == [[0, 0], [1, 1]]
    # with only its first descriptor, keypoint 0 of 1 is nearest keypoint 1 of 2 (9.0), which keypoint 1
    # of 1 is nearer (1.0): keypoint 0 is left unmatched
    first = {"xy": np.zeros((2, 2)), "descriptors": d1[[0, 2]], "owner": np.array([0, 1])}
    assert cm.match_keypoints(first, f2).tolist() == [[1, 1]]
    empty = {"xy": np.zeros((0, 2)), "descriptors": d2[:0], "owner": o2[:0]}
    assert cm.match_keypoints(f1, empty).shape == (0, 2)


def test_describe_image_sift_gives_every_orientation_and_ours_one():
    """The recipe ``pose`` (:func:`describe_image`: SIFT's size, the gradient's angle on SIFT's window) and the
    benchmark's poses describe the same keypoints: SIFT's own at every orientation it found there, the others once
    each; ``network`` at our size and angle, ``ours_angle`` at SIFT's size and our angle."""
    from patchpose import PatchPoseEstimator
    from patchpose.data.keypoints import detect_sift
    from patchpose.matching.candidates import gradient_angles
    from patchpose.matching.features import sift_features

    image = (np.random.default_rng(2).random((120, 120)) * 255).astype(np.uint8)
    image = cv2.GaussianBlur(image, (0, 0), 2.0)
    torch.set_num_threads(1)
    est = PatchPoseEstimator.load("patchpose-v10")
    sift = describe_at(image, "sift", max_keypoints=200)
    ours = describe_at(image, "ours_angle", est, max_keypoints=200)
    network = describe_at(image, "network", est, max_keypoints=200)
    pose = cm.describe_image(image, max_keypoints=200)
    assert (
        describe_at(image, "pose", max_keypoints=200)["descriptors"].tobytes()
        == pose["descriptors"].tobytes()
    )
    assert len(sift["xy"]) == len(ours["xy"]) > 20  # the same keypoints
    assert np.array_equal(sift["xy"], ours["xy"]) and np.array_equal(pose["xy"], sift["xy"])
    assert np.array_equal(network["xy"], sift["xy"])
    assert len(sift["descriptors"]) > len(sift["xy"])  # some locations have a second orientation
    assert len(ours["descriptors"]) == len(ours["xy"]) and (np.diff(sift["owner"]) >= 0).all()
    assert len(pose["descriptors"]) == len(pose["xy"])
    # pose: SIFT's size (its radius, half its size), the gradient's angle on SIFT's window
    xy, kps = detect_sift(image, 200)
    f = sift_features(image, xy, kps)
    np.testing.assert_allclose(np.exp2(pose["scale"]) * 16.0, [k.size / 2 for k in kps], rtol=1e-4)
    np.testing.assert_allclose(
        np.angle(np.exp(1j * (pose["ori"] - gradient_angles(f, f.sift_scale)))), 0, atol=1e-3
    )
    np.testing.assert_allclose(ours["scale"], pose["scale"], rtol=1e-6)  # ours_angle keeps SIFT's size
    assert np.mean(np.abs(network["scale"] - pose["scale"]) > 0.1) > 0.5  # network: our size
    with pytest.raises(InputError, match="pose must be one of"):
        describe_at(image, "colmap")


@needs_pycolmap
def test_ours_registers_every_generated_view_with_half_turned_and_upright_fewer(plane_turned, tmp_path):
    torch.set_num_threads(1)
    kw = {"max_keypoints": 400, "threads": 1}
    from patchpose import PatchPoseEstimator

    ours = reconstruct_at(
        plane_turned, tmp_path / "ours", "ours_angle", PatchPoseEstimator.load("patchpose-v10"), **kw
    )
    assert ours["registered"] == ours["images"] == 4
    assert ours["points3D"] > 150 and ours["reprojection_px"] < 1.0
    # upright descriptors do not match a turned view to an upright one: the views fall apart
    upright = reconstruct_at(plane_turned, tmp_path / "upright", "upright", **kw)
    assert upright["registered"] < 4
    # SIFT's orientations each a keypoint of their own: several 3-D points at one place, counted once
    split = reconstruct_at(plane_turned, tmp_path / "split", "sift", split=True, **kw)
    assert split["registered"] == 4 and split["distinct_points3D"] < split["points3D"]


@needs_pycolmap
def test_ours_registers_every_frame_with_frames_turned(tum_turned, tmp_path, monkeypatch):
    """The reconstruction (the recipe ``pose``: SIFT's size, the gradient's angle, no model) registers real frames,
    every other one turned."""
    from patchpose import PatchPoseEstimator

    torch.set_num_threads(1)
    monkeypatch.setattr(
        PatchPoseEstimator, "load", classmethod(lambda *a, **k: pytest.fail("a model was read"))
    )
    stats = cm.reconstruct(tum_turned, tmp_path / "ours", max_keypoints=1500, threads=1)
    want = {"recipe": "pose", "scale": "detector", "angle": "gradient", "max_keypoints": 1500}
    assert {k: stats["settings"][k] for k in want} == want and "model" not in stats["settings"]
    assert stats["registered"] == stats["images"] == 5
    assert stats["points3D"] > 300 and stats["reprojection_px"] < 1.5
    assert (tmp_path / "ours" / "database.db").is_file() and (tmp_path / "ours" / "sparse" / "0").is_dir()
    assert json.loads((tmp_path / "ours" / cm.STATS).read_text())["points3D"] == stats["points3D"]
    # a rerun into the finished folder returns its statistics; other settings are refused
    assert cm.reconstruct(tum_turned, tmp_path / "ours", max_keypoints=1500, threads=1) == stats
    with pytest.raises(InputError, match="exists and is not this reconstruction"):
        reconstruct_at(tum_turned, tmp_path / "ours", "upright", max_keypoints=1500, threads=1)


@needs_pycolmap
def test_colmap_cli_refuses_bad_input_in_one_line(tmp_path, capsys):
    write_images(tmp_path / "one", 1)
    cases = [
        ([str(tmp_path / "missing")], "not found"),
        ([str(tmp_path / "one")], "at least 2"),
        ([str(tmp_path / "one"), "--max-keypoints", "0"], "max_keypoints must be a positive integer"),
        ([str(tmp_path / "one"), "--seed", "-1"], "seed must be an integer >= 0"),
        ([str(tmp_path / "one"), "--max-keypoints", "99999999999"], "up to 10,000,000"),
    ]
    for args, message in cases:
        assert main(["colmap", *args, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    # the recipe reads no model: no --weights to give it
    with pytest.raises(SystemExit) as e:
        main(["colmap", str(tmp_path / "one"), "--out", str(tmp_path / "out"), "--weights", "patchpose-v10"])
    assert e.value.code == 2 and "--weights" in capsys.readouterr().err
    # eval colmap checks its settings before it writes anything (the turned copies)
    write_images(tmp_path / "two", 2)
    assert (
        main(
            ["eval", "colmap", str(tmp_path / "two"), "--out", str(tmp_path / "out"), "--max-keypoints", "0"]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "max_keypoints" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
    # a photo that cannot be read stops the run before any folder is written
    (tmp_path / "two" / "bad.png").write_bytes(b"not a png")
    assert main(["colmap", str(tmp_path / "two"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert not list(tmp_path.glob("out*")), list(tmp_path.glob("out*"))


def test_a_missing_pycolmap_is_one_line_naming_the_install(monkeypatch, tmp_path):
    write_images(tmp_path / "im", 2)
    monkeypatch.setitem(sys.modules, "pycolmap", None)  # import pycolmap raises ModuleNotFoundError
    with pytest.raises(InputError, match="pycolmap is not installed.*colmap"):
        reconstruct_at(tmp_path / "im", tmp_path / "out", "sift")
    with pytest.raises(InputError, match="pycolmap is not installed.*colmap"):
        evaluate_colmap(tmp_path / "im", tmp_path / "out", poses=["sift"], seeds=[0], progress=False)
    assert not (tmp_path / "out").exists()
