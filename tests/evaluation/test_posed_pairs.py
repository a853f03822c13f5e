"""Posed pairs (``patchpose.evaluation.datasets.posed_pairs``): the pairs-file format and the generator's geometry."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from conftest import make_textured_image, pairs_file_line
from patchpose.errors import InputError
from patchpose.evaluation.datasets.posed_pairs import (
    default_intrinsics,
    generate_posed_pairs,
    read_pairs_file,
    rotate_camera,
    rotation_from_angles,
    write_pairs_file,
)


def test_pairs_file_reads_the_megadepth_scannet_format(tmp_path):
    f = tmp_path / "pairs.txt"
    f.write_text(
        "# a comment\n"
        + pairs_file_line()
        + "\n\n"
        + pairs_file_line("c.png", "d.png", (0, 0, 2.0))
        + "  # trailing\n"
    )
    pairs = read_pairs_file(f)
    assert [(p.name0, p.name1) for p in pairs] == [("a.png", "b.png"), ("c.png", "d.png")]
    assert pairs[0].K0[0, 2] == 320 and pairs[1].t.tolist() == [0, 0, 2.0]
    np.testing.assert_array_equal(pairs[0].R, np.eye(3))
    write_pairs_file(tmp_path / "again.txt", pairs)  # round trip
    again = read_pairs_file(tmp_path / "again.txt")
    for p, q in zip(pairs, again):
        np.testing.assert_allclose(p.T_0to1, q.T_0to1)
        np.testing.assert_allclose(p.K1, q.K1)


@pytest.mark.parametrize(
    "text,msg",
    [
        ("a b 0 0 1 2 3\n", "expected 38 fields"),
        (pairs_file_line().replace(" 500 ", " x ", 1) + "\n", "must be numbers"),
        (pairs_file_line().replace(" 500 ", " nan ", 1) + "\n", "NaN"),
        ("", "no pairs"),
    ],
)
def test_pairs_file_errors_name_the_line(tmp_path, text, msg):
    f = tmp_path / "p.txt"
    f.write_text(text)
    with pytest.raises(InputError, match=msg):
        read_pairs_file(f)


def test_pairs_file_rejects_a_non_rotation(tmp_path):
    toks = pairs_file_line().split()
    toks[22] = "2.0"  # T[0, 0] of T_0to1 (fields 22 onwards)
    (tmp_path / "p.txt").write_text(" ".join(toks))
    with pytest.raises(InputError, match="not a rotation"):
        read_pairs_file(tmp_path / "p.txt")


def test_camera_rotation_warp_matches_the_projection():
    """Image 1 of a rotation pair shows the point K·R·X where image 0 shows K·X."""
    img = np.zeros((240, 320, 3), np.uint8)
    cv2.circle(img, (100, 80), 4, (255, 255, 255), -1)
    K = default_intrinsics(img.shape)
    R = rotation_from_angles(math.radians(30), math.radians(5), math.radians(-4))
    out = rotate_camera(img, K, R)
    x = np.linalg.inv(K) @ [100, 80, 1.0]
    p = K @ R @ x
    p = p[:2] / p[2]
    ys, xs = np.nonzero(out[..., 0] > 128)
    assert np.hypot(xs.mean() - p[0], ys.mean() - p[1]) < 0.7


def test_posed_pairs_resume_only_what_the_same_settings_and_photos_made(tmp_path):
    """Images already on disk were kept whatever the settings, and two photos of one name shared images, so
    the pairs file could pair new poses with old images: each image must be K R K^-1 of its first image."""
    from patchpose.evaluation.datasets.posed_pairs import rotate_camera

    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    cv2.imwrite(str(tmp_path / "x" / "cat.png"), (make_textured_image(200, 1) * 255).astype(np.uint8))
    cv2.imwrite(
        str(tmp_path / "y" / "cat.png"), (make_textured_image(160, 2) * 255).astype(np.uint8)[:, :120]
    )
    photos = [tmp_path / "x" / "cat.png", tmp_path / "y" / "cat.png"]
    pf = generate_posed_pairs(photos, tmp_path / "d", per_photo=1, stereo_pairs=0, progress=False)
    for p in read_pairs_file(pf):
        im0 = cv2.imread(str(tmp_path / "d" / "images" / p.name0))[..., ::-1]
        im1 = cv2.imread(str(tmp_path / "d" / "images" / p.name1))[..., ::-1]
        assert im0.shape[:2] == (int(round(2 * p.K0[1, 2])) + 1, int(round(2 * p.K0[0, 2])) + 1)
        assert np.abs(rotate_camera(im0, p.K1, p.T_0to1[:3, :3]).astype(float) - im1).mean() < 1.0
    assert len({p.name0 for p in read_pairs_file(pf)}) == 2
    generate_posed_pairs(photos, tmp_path / "d", per_photo=1, stereo_pairs=0, progress=False)  # resumes
    with pytest.raises(InputError, match="other settings"):
        generate_posed_pairs(photos, tmp_path / "d", per_photo=1, stereo_pairs=0, seed=1, progress=False)
    with pytest.raises(InputError, match="was made from"):
        generate_posed_pairs(photos[1:], tmp_path / "d", per_photo=1, stereo_pairs=0, progress=False)


def test_zoomed_pairs_carry_their_zoom_in_k1_and_the_warp(tmp_path):
    """``generate posed-pairs --zoom``: camera 1's focal lengths are 2**z times camera 0's, |z| between half the
    maximum and all of it, in and out; image 1 is image 0 warped by K1·R·K0⁻¹ (a point lands where that
    projection puts it); without a zoom the pairs and the manifest are those made before the setting existed."""
    from patchpose.evaluation.datasets.posed_pairs import ZOOM_SETTINGS, zoomed

    img = np.zeros((240, 320, 3), np.uint8)
    cv2.circle(img, (150, 110), 4, (255, 255, 255), -1)
    K0 = default_intrinsics(img.shape)
    R = rotation_from_angles(math.radians(-25), math.radians(2), math.radians(1))
    K1 = zoomed(K0, 1.0)
    assert K1[0, 0] == 2 * K0[0, 0] and K1[1, 1] == 2 * K0[1, 1] and (K1[:2, 2] == K0[:2, 2]).all()
    out = rotate_camera(img, K0, R, K1)
    p = K1 @ R @ np.linalg.inv(K0) @ [150, 110, 1.0]
    ys, xs = np.nonzero(out[..., 0] > 128)
    assert np.hypot(xs.mean() - p[0] / p[2], ys.mean() - p[1] / p[2]) < 0.7
    assert len(xs) > 3.5 * np.count_nonzero(img[..., 0] > 128)  # the disc drawn twice as wide

    photo = tmp_path / "cat.png"
    cv2.imwrite(str(photo), (make_textured_image(200, 3) * 255).astype(np.uint8))
    pf = generate_posed_pairs(
        [photo], tmp_path / "z", per_photo=8, stereo_pairs=0, progress=False, **ZOOM_SETTINGS
    )
    z = []
    for p in read_pairs_file(pf):
        z.append(math.log2(p.K1[0, 0] / p.K0[0, 0]))
        im0 = cv2.imread(str(tmp_path / "z" / "images" / p.name0))[..., ::-1]
        im1 = cv2.imread(str(tmp_path / "z" / "images" / p.name1))[..., ::-1]
        np.testing.assert_allclose(p.K1, zoomed(p.K0, z[-1]))
        assert np.abs(rotate_camera(im0, p.K0, p.R, p.K1).astype(float) - im1).mean() < 1.0
    top = ZOOM_SETTINGS["max_zoom_octaves"]
    assert all(top / 2 <= abs(v) <= top for v in z) and min(z) < 0 < max(z), z
    # without a zoom each pair is what it was before the setting existed: the same rotation drawn from the
    # same seed, no zoom drawn, K1 = K0, and no zoom in the manifest (folders made before it still resume)
    from patchpose.evaluation.datasets.posed_pairs import _rng, random_rotation

    plain = generate_posed_pairs([photo], tmp_path / "p", per_photo=2, stereo_pairs=0, progress=False)
    for p in read_pairs_file(plain):
        np.testing.assert_array_equal(p.K1, p.K0)
        np.testing.assert_allclose(p.R, random_rotation(_rng(0, p.name1), 180.0, 20.0), atol=1e-9)  # %.10g
    assert "max_zoom_octaves" not in (tmp_path / "p" / "manifest.json").read_text()
    generate_posed_pairs([photo], tmp_path / "p", per_photo=2, stereo_pairs=0, progress=False)  # resumes
    # a zoomed folder is not resumed without its zoom, nor a plain one with a zoom
    with pytest.raises(InputError, match="other settings"):
        generate_posed_pairs(
            [photo], tmp_path / "z", per_photo=8, stereo_pairs=0, progress=False, max_tilt_deg=5.0
        )
    with pytest.raises(InputError, match="other settings"):
        generate_posed_pairs(
            [photo], tmp_path / "p", per_photo=2, stereo_pairs=0, progress=False, max_zoom_octaves=1.0
        )
    for bad in (-1.0, float("nan"), "1", None, True):
        with pytest.raises(InputError, match="max_zoom_octaves"):
            generate_posed_pairs([photo], tmp_path / "bad", progress=False, max_zoom_octaves=bad)
    assert not (tmp_path / "bad").exists()  # refused before anything was made
