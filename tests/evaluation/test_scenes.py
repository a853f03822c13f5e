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
    centre_errors,
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


def test_a_texture_pixel_lands_where_the_camera_projects_its_point():
    yy, xx = np.mgrid[:50, :100]
    blob = 255 * np.exp(-((xx - 70) ** 2 + (yy - 20) ** 2) / (2 * 3.0**2))
    tex = np.repeat(blob[..., None], 3, -1).astype(np.uint8)  # centred on texture pixel (70, 20): the point
    # origin + (70.5/100)·W·u + (20.5/50)·H·v (pixel centres at integers)
    face = Face(np.array([-1.0, -0.5, 4.0]), np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), 2.0, 1.0, tex)
    R, t = look_at(np.array([0.3, -0.2, 0.0]), np.array([0.0, 0.0, 4.0]), roll_deg=20.0)
    img = render([face], K, R, t, SIZE)
    X = face.origin + (70.5 / 100) * 2.0 * face.u + (20.5 / 50) * 1.0 * face.v
    want = _project(K, R, t, X)
    bright = img.sum(-1) - 3 * 40.0  # above the background
    ys, xs = np.nonzero(bright > 0.05 * bright.max())
    w = bright[ys, xs]
    got = np.array([np.sum(xs * w) / w.sum(), np.sum(ys * w) / w.sum()])
    assert np.linalg.norm(got - want) < 0.25, (got, want)


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
    turned = math.degrees(math.atan2(a[0] * b[1] - a[1] * b[0], a @ b))
    assert abs(abs(turned) - 30.0) < 1e-6 and np.linalg.norm(a) == pytest.approx(np.linalg.norm(b))


def test_centre_errors_are_zero_up_to_a_similarity_and_measure_a_moved_camera():
    rng = np.random.default_rng(0)
    true = rng.normal(size=(20, 3))
    a = 0.7
    Rz = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    found = 3.0 * true @ Rz.T + np.array([5.0, -1.0, 2.0])
    np.testing.assert_allclose(centre_errors(true, found), 0.0, atol=1e-9)
    moved = found.copy()
    moved[3] += np.array([0.0, 0.0, 3.0])  # 1 m in the truth's units (the fit takes some of it)
    err = centre_errors(true, moved)
    assert err[3] > 0.7 and np.argmax(err) == 3 and np.median(err) < 0.1
    with pytest.raises(InputError, match="N >= 3"):
        centre_errors(true[:2], found[:2])


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
    cams = read_cameras(folders[0])
    assert sorted(cams) == ["frame_00.jpg", "frame_01.jpg", "frame_02.jpg"]
    for name, c in cams.items():
        img = cv2.imread(str(folders[0] / name))
        assert img.shape == (64, 96, 3) and img.std() > 5  # textured, not blank
        np.testing.assert_allclose(c["R"] @ c["R"].T, np.eye(3), atol=1e-9)
        assert c["size"].tolist() == [96, 64]
    centres = np.array([-c["R"].T @ c["t"] for c in cams.values()])
    assert np.ptp(centres[:, 0]) == pytest.approx(3.0)  # the walk slides 3 m sideways
    stamp = (folders[0] / "frame_01.jpg").stat().st_mtime_ns
    generate_scenes(photos, out, kinds=("walk",), scenes=1, frames=3, size=(96, 64), progress=False)
    assert (folders[0] / "frame_01.jpg").stat().st_mtime_ns == stamp  # kept
    with pytest.raises(InputError, match="other settings"):
        generate_scenes(photos, out, kinds=("walk",), scenes=1, frames=4, size=(96, 64), progress=False)
    with pytest.raises(InputError, match="kinds"):
        generate_scenes(photos, tmp_path / "x", kinds=("fly",), progress=False)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cameras.json").write_text(json.dumps({"a.jpg": {"K": 1}}))
    with pytest.raises(InputError, match="not a cameras file"):
        read_cameras(tmp_path / "bad")
    assert read_cameras(tmp_path) is None


def test_eval_colmap_on_a_rendered_walk_finds_the_cameras_where_they_are(photos, tmp_path):
    pytest.importorskip("pycolmap")
    from patchpose.evaluation.colmap_eval import evaluate_colmap

    scene = generate_scenes(photos, tmp_path / "s", kinds=("walk",), scenes=1, frames=5, size=(320, 240),
                            progress=False)[0]  # fmt: skip
    doc = evaluate_colmap(
        scene, tmp_path / "ev", poses=("colmap",), seeds=(0,), sets=("upright",), progress=False
    )
    run = doc["runs"][0]
    assert run["registered"] == 5
    assert run["centre_error_median"] is not None and run["centre_error_max"] < 0.1  # metres, on a 3 m walk
    assert "camera centre error" in (tmp_path / "ev" / "results.md").read_text()
