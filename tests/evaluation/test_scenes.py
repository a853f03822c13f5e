"""Rendered scenes (``patchpose.evaluation.datasets.scenes``): the renderer's geometry, the truth's errors, the
generator's files, and ``eval colmap``'s camera errors on a scene."""

from __future__ import annotations

import json
import math

import cv2
import numpy as np
import pytest

from conftest import make_textured_image
from patchpose.errors import InputError
from patchpose.evaluation.datasets.scenes import (
    Face,
    fit_similarity,
    generate_scenes,
    look_at,
    read_cameras,
    render,
)

K = np.array([[200.0, 0, 79.5], [0, 200.0, 59.5], [0, 0, 1]])
SIZE = (160, 120)


def _project(K, R, t, X):
    x = K @ (R @ X + t)
    return x[:2] / x[2]


@pytest.mark.parametrize("fine", [1, 4, 16])  # texture pixels per image pixel: pyramid levels 0, 2, 4
def test_a_texture_pixel_lands_where_the_camera_projects_its_point(fine):
    yy, xx = np.mgrid[: 50 * fine, : 100 * fine]
    cx, cy = 70 * fine, 20 * fine
    blob = 255 * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * (3.0 * fine) ** 2))
    tex = np.repeat(blob[..., None], 3, -1).astype(np.uint8)  # centred on texture pixel (cx, cy): the point
    # origin + ((cx + 0.5) / width)·W·u + ((cy + 0.5) / height)·H·v (pixel centres at integers)
    face = Face(np.array([-1.0, -0.5, 4.0]), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), 2.0, 1.0, tex)
    R, t = look_at(np.array([0.3, -0.2, 0.0]), np.array([0.0, 0.0, 4.0]), roll_deg=20.0)
    img = render([face], K, R, t, SIZE)
    X = face.origin + (cx + 0.5) / (100 * fine) * 2.0 * face.u + (cy + 0.5) / (50 * fine) * 1.0 * face.v
    want = _project(K, R, t, X)
    bright = img.sum(-1) - 3 * 40.0  # above the background
    ys, xs = np.nonzero(bright > 0.05 * bright.max())
    w = bright[ys, xs]
    got = np.array([np.sum(xs * w) / w.sum(), np.sum(ys * w) / w.sum()])
    assert np.linalg.norm(got - want) < 0.1, (got, want)


def test_the_nearer_face_hides_the_farther_and_nothing_is_drawn_behind_the_camera():
    red = np.zeros((8, 8, 3), np.uint8)
    red[..., 0] = 200
    blue = np.zeros((8, 8, 3), np.uint8)
    blue[..., 2] = 200
    x, y, z = np.eye(3)
    far = Face(np.array([-3.0, -3.0, 6.0]), x, y, 6.0, 6.0, blue)
    near = Face(np.array([-0.5, -0.5, 3.0]), x, y, 1.0, 1.0, red)
    behind = Face(np.array([-5.0, -5.0, -1.0]), x, y, 10.0, 10.0, red)  # a wall behind the camera
    R, t = np.eye(3), np.zeros(3)
    for faces in ([far, near, behind], [near, behind, far]):  # the order of the faces does not matter
        img = render(faces, K, R, t, SIZE)
        assert img[59, 79, 0] > 150 and img[59, 79, 2] < 10  # the centre: the near red face
        assert img[5, 5, 2] > 150 and img[5, 5, 0] < 10  # a corner: the far blue one


def test_look_at_puts_the_target_at_the_principal_point_and_rolls_about_it():
    centre, target = np.array([1.0, -0.5, -2.0]), np.array([0.0, 0.5, 5.0])
    R0, t0 = look_at(centre, target)
    np.testing.assert_allclose(_project(K, R0, t0, target), K[:2, 2], atol=1e-9)
    np.testing.assert_allclose(R0 @ R0.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(R0) == pytest.approx(1.0)
    R1, t1 = look_at(centre, target, roll_deg=30.0)
    X = target + R0.T @ np.array([1.0, 0, 0])  # to the image's right of the target
    a = _project(K, R0, t0, X) - K[:2, 2]
    b = _project(K, R1, t1, X) - K[:2, 2]
    turned = math.degrees(
        math.atan2(a[1] * b[0] - a[0] * b[1], a @ b)
    )  # counter-clockwise as seen (rows down)
    assert turned == pytest.approx(30.0) and np.linalg.norm(a) == pytest.approx(np.linalg.norm(b))
    below = (
        _project(K, R0, t0, target + np.array([0.0, 1.0, 0.0])) - K[:2, 2]
    )  # world +y is the picture's down
    assert below[1] > 10 * abs(below[0])


def test_fit_similarity_recovers_a_similarity_and_a_moved_camera_stands_out():
    rng = np.random.default_rng(0)
    true = rng.normal(size=(20, 3))
    a = 0.7
    Rz = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    found = 3.0 * true @ Rz.T + np.array([5.0, -1.0, 2.0])

    def errors(true, found):
        scale, R, t = fit_similarity(found, true)
        return np.linalg.norm(scale * found @ R.T + t - true, axis=1)

    scale, R, _ = fit_similarity(found, true)
    np.testing.assert_allclose([scale], [1 / 3.0], rtol=1e-9)
    np.testing.assert_allclose(R, Rz.T, atol=1e-9)
    np.testing.assert_allclose(errors(true, found), 0.0, atol=1e-9)
    moved = found.copy()
    moved[3] += np.array([0.0, 0.0, 3.0])  # 1 m in the truth's units (the fit takes some of it)
    err = errors(true, moved)
    assert err[3] > 0.7 and np.argmax(err) == 3 and np.median(err) < 0.1
    with pytest.raises(InputError, match="N >= 3"):
        fit_similarity(found[:2], true[:2])
    line = np.outer(np.arange(5.0), [1.0, 2.0, 0.5])
    with pytest.raises(InputError, match="no similarity"):
        fit_similarity(2 * line, line)


@pytest.fixture
def photos(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"photo{i}.png"
        cv2.imwrite(str(p), (255 * make_textured_image(128, seed=i)).astype(np.uint8))
        paths.append(p)
    return paths


def test_generated_scenes_write_frames_and_their_cameras_and_resume_only_their_own(photos, tmp_path):
    out = tmp_path / "scenes"
    folders = generate_scenes(photos, out, kinds=("walk",), scenes=1, frames=3, size=(96, 64), progress=False)
    assert [f.name for f in folders] == ["walk_0"]
    (
        folders[0] / "cameras.json"
    ).unlink()  # an unfinished scene: its frames are kept, a missing one rendered again
    before = (folders[0] / "frame_002.jpg").read_bytes()
    (folders[0] / "frame_002.jpg").unlink()
    generate_scenes(photos, out, kinds=("walk",), scenes=1, frames=3, size=(96, 64), progress=False)
    assert (folders[0] / "frame_002.jpg").read_bytes() == before
    cams = read_cameras(folders[0])
    assert sorted(cams) == ["frame_000.jpg", "frame_001.jpg", "frame_002.jpg"]
    for name, c in cams.items():
        img = cv2.imread(str(folders[0] / name))
        assert img.shape == (64, 96, 3) and img.std() > 5  # textured, not blank
        np.testing.assert_allclose(c["R"] @ c["R"].T, np.eye(3), atol=1e-9)
        assert c["size"].tolist() == [96, 64]
    centres = np.array([-c["R"].T @ c["t"] for c in cams.values()])
    assert np.ptp(centres[:, 0]) == pytest.approx(3.0)  # the walk slides 3 m sideways
    stamp = (folders[0] / "frame_001.jpg").stat().st_mtime_ns
    generate_scenes(photos, out, kinds=("walk",), scenes=1, frames=3, size=(96, 64), progress=False)
    assert (folders[0] / "frame_001.jpg").stat().st_mtime_ns == stamp  # kept
    with pytest.raises(InputError, match="other settings"):
        generate_scenes(photos, out, kinds=("walk",), scenes=1, frames=4, size=(96, 64), progress=False)
    with pytest.raises(InputError, match="other settings"):
        generate_scenes(photos[:2], out, kinds=("walk",), scenes=1, frames=3, size=(96, 64), progress=False)
    (tmp_path / "stray" / "walk_0").mkdir(parents=True)  # a scene no manifest accounts for
    with pytest.raises(InputError, match="no manifest says what made it"):
        generate_scenes(photos, tmp_path / "stray", kinds=("walk",), scenes=1, frames=3, progress=False)
    for kinds in (("fly",), ("walk", "walk"), ()):
        with pytest.raises(InputError, match="kinds"):
            generate_scenes(photos, tmp_path / "x", kinds=kinds, progress=False)
    (tmp_path / "bad").mkdir()
    for doc in ({"a.jpg": {"K": 1}}, {"a.jpg": {"K": np.eye(3).tolist(), "R": [[1, 0], [0, 1]], "t": [0, 0, 0],
                                               "size": [4, 4]}}):  # fmt: skip
        (tmp_path / "bad" / "cameras.json").write_text(json.dumps(doc))
        with pytest.raises(InputError, match="not a cameras file"):
            read_cameras(tmp_path / "bad")
    assert read_cameras(tmp_path) is None


def test_orbit_cameras_look_at_the_boxes_from_around_them_rolled_and_zoomed(photos, tmp_path):
    folder = generate_scenes(photos, tmp_path / "o", kinds=("orbit",), scenes=1, frames=6, size=(96, 64),
                             progress=False)[0]  # fmt: skip
    cams = read_cameras(folder)
    focal = np.array([c["K"][0, 0] for c in cams.values()]) / (0.78 * 96)
    assert ((focal > 0.74) & (focal < 1.51)).all() and np.ptp(focal) > 0.05  # each zoomed its own way
    rolls = []
    for c in cams.values():
        centre = -c["R"].T @ c["t"]
        assert 3.9 < np.linalg.norm(centre - np.array([0.0, centre[1], 5.5])) < 8.1  # 4-8 m from the boxes
        assert abs(centre[0]) < 4.6 and centre[2] < 5.5  # inside the room, in front of the boxes
        rolls.append(math.degrees(math.asin(np.clip(c["R"][0, 1], -1, 1))))  # image right's downward tilt
    assert max(abs(r) for r in rolls) < 9.5 and np.ptp(rolls) > 1.0


def test_eval_colmap_on_a_rendered_walk_finds_the_cameras_where_they_are(photos, tmp_path):
    pytest.importorskip("pycolmap")
    from patchpose.evaluation.colmap_eval import camera_errors, evaluate_colmap

    scene = generate_scenes(photos, tmp_path / "s", kinds=("walk",), scenes=1, frames=5, size=(320, 240),
                            progress=False)[0]  # fmt: skip
    doc = evaluate_colmap(
        scene, tmp_path / "ev", poses=("colmap",), seeds=(0,), sets=("upright",), progress=False
    )
    run = doc["runs"][0]
    assert run["registered"] == 5
    assert run["centre_error_max"] < 0.1 and run["view_error_max"] < 2.0  # metres on a 3 m walk; degrees
    table = (tmp_path / "ev" / "results.md").read_text()
    assert "camera centre error m; optical axis error" in table
    assert (
        f"{run['centre_error_max']:.3f}; {run['view_error_median']:.2f} / {run['view_error_max']:.2f} |"
        in table
    )
    cams = json.loads((scene / "cameras.json").read_text())
    cams["frame_002.jpg"]["t"] = (np.array(cams["frame_002.jpg"]["t"]) + [0.0, 1.0, 0.0]).tolist()  # 1 m off
    moved = camera_errors(tmp_path / "ev" / "runs" / "upright" / "colmap-seed0", {
        n: {k: np.asarray(v, np.float64) for k, v in c.items()} for n, c in cams.items()})  # fmt: skip
    assert moved["centre_error_max"] > 0.3 > run["centre_error_max"]
    assert camera_errors(tmp_path / "nothing", cams)["centre_error_median"] is None  # no model
