"""Hostile input everywhere (issue #40): every public function of the integrations, the file readers and
writers, the image reader and the command line refuses bad input with one line of its own
(:class:`patchpose.InputError`, exit status 2 on the command line), and takes empty input to empty output.
Every fixture is made here, in ``tmp_path``."""

from __future__ import annotations

import os
import struct
import zlib

import cv2
import numpy as np
import pytest
import torch

import patchpose
from patchpose.errors import InputError
from patchpose.integrations import formats as F

kornia = pytest.importorskip("kornia")
h5py = pytest.importorskip("h5py")
KF = kornia.feature


@pytest.fixture(scope="module")
def est():
    torch.set_num_threads(1)
    return patchpose.PatchPoseEstimator.from_pretrained()


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err, err
    return err


def texture(h: int = 96, w: int = 96) -> np.ndarray:
    return cv2.GaussianBlur((np.random.default_rng(0).random((h, w)) * 255).astype(np.uint8), (5, 5), 1.5)


# --- kornia -------------------------------------------------------------------------------------------------


def test_lax_orienter_with_our_angle_detector_takes_zero_lafs(est):
    orienter = KF.LAFOrienter(32, angle_detector=patchpose.kornia_angle_detector(est))
    out = orienter(torch.zeros(1, 0, 2, 3), torch.rand(1, 1, 64, 64))
    assert out.shape == (1, 0, 2, 3)


def test_angle_detector_takes_zero_patches_and_refuses_bad_ones(est):
    det = patchpose.kornia_angle_detector(est)
    assert det(torch.zeros(0, 1, 32, 32)).shape == (0,)
    for bad, match in (
        (np.zeros((1, 1, 32, 32), np.float32), "torch.Tensor"),
        (torch.zeros(2, 3, 32, 32), r"\(B, 1, PS, PS\)"),
        (torch.zeros(2, 1, 32, 16), r"\(B, 1, PS, PS\)"),
        (torch.zeros(2, 1, 32, 32, dtype=torch.uint8), "floats"),
        (torch.full((2, 1, 32, 32), float("nan")), "non-finite"),
    ):
        with pytest.raises(InputError, match=match):
            det(bad)


@pytest.mark.parametrize("kw", [{"scale": "x"}, {"orientation": 1}, {"laf_frame": "yes"}, {"scale": None}])
def test_laf_pose_assigner_flags_must_be_booleans(est, kw):
    from patchpose.integrations.kornia import LAFPoseAssigner

    with pytest.raises(InputError, match="True or False"):
        LAFPoseAssigner(est, **kw)


def test_laf_pose_assigner_refuses_bad_lafs_and_images(est):
    from patchpose.integrations.kornia import LAFPoseAssigner

    a = LAFPoseAssigner(est)
    img = torch.rand(1, 1, 64, 64)
    good = KF.laf_from_center_scale_ori(torch.tensor([[[32.0, 32.0]]]), torch.full((1, 1, 1, 1), 6.0))
    for laf, image, match in (
        (np.zeros((1, 1, 2, 3)), img, "torch tensors"),
        ("abc", img, "torch tensors"),
        (torch.zeros(1, 1, 3, 3), img, r"\(B, N, 2, 3\)"),
        (torch.full((1, 1, 2, 3), float("nan")), img, "NaN"),
        (torch.zeros(1, 1, 2, 3, dtype=torch.int64), img, "floats"),
        (good, torch.rand(2, 1, 64, 64), r"img must be a \(1, 1 or 3, H, W\)"),
        (good, img * 255, r"floats in \[0, 1\].*got values in"),
        (
            KF.laf_from_center_scale_ori(torch.tensor([[[-1000.0, 32.0]]]), torch.full((1, 1, 1, 1), 6.0)),
            img,
            "outside",
        ),
        (good, (img * 255).to(torch.uint8), "floats"),
        (good, torch.full((1, 1, 64, 64), float("nan")), "NaN"),
    ):
        with pytest.raises(InputError, match=match):
            a(laf, image)
    with pytest.raises(InputError, match="estimator must be"):
        LAFPoseAssigner(123)
    assert a(torch.zeros(1, 0, 2, 3), img).shape == (1, 0, 2, 3)  # no LAFs: none out
    # a LAF of scale 0 has no frame to read in: refused where its scale is read or kept
    flat = good.clone()
    flat[..., :2] = 0.0
    assert torch.isfinite(a(flat, img)).all()  # its scale is replaced: fine
    with pytest.raises(InputError, match="degenerate"):
        LAFPoseAssigner(est, laf_frame=True)(flat, img)
    with pytest.raises(InputError, match="degenerate"):
        LAFPoseAssigner(est, scale=False)(flat, img)


# --- LightGlue ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "xy, scale, ori, kw, match",
    [
        (np.ones((4, 3)), 0.0, 0.0, {}, r"\(N, 2\)"),  # was reshaped into 6 keypoints
        (np.ones(4), 0.0, 0.0, {}, r"\(N, 2\)"),
        (np.ones((4, 2)), 1e6, 0.0, {}, r"within \[-12, 12\]"),  # was inf
        (np.ones((4, 2)), np.ones(3), 0.0, {}, "4 numbers"),
        (np.ones((4, 2)), 0.0, np.ones((4, 1)), {}, "4 numbers"),
        (np.array([[1, "a"]], object), 0.0, 0.0, {}, "dtype object"),
        ("abc", 0.0, 0.0, {}, r"\(N, 2\)"),
        (np.ones((4, 2)), "1", 0.0, {}, "scale"),
        (np.ones((4, 2)), True, 0.0, {}, "scale"),
        (np.ones((4, 2)), 0.0, np.nan, {}, "NaN"),
        (np.ones((4, 2)) * np.inf, 0.0, 0.0, {}, "NaN or infinite"),
        (np.ones((4, 2)), 0.0, 0.0, {"image_size": "abc"}, "image_size"),
        (np.ones((4, 2)), 0.0, 0.0, {"image_size": (0, 480)}, "image_size"),
        (np.ones((4, 2)), 0.0, 0.0, {"image_size": (640.5, 480)}, "image_size"),
        (np.ones((4, 2)), 0.0, 0.0, {"scores": np.ones(3)}, "scores"),
        (np.ones((4, 2)), 0.0, 0.0, {"descriptors": np.ones((3, 8))}, "descriptors"),
        (np.ones((4, 2)), 0.0, 0.0, {"descriptors": np.full((4, 8), np.nan)}, "descriptors"),
        (np.ones((4, 2)), 0.0, 0.0, {"descriptors": np.ones((4, 8), complex)}, "descriptors"),
    ],
)
def test_to_lightglue_refuses_bad_input(xy, scale, ori, kw, match):
    with pytest.raises(InputError, match=match):
        F.to_lightglue(xy, scale, ori, **kw)


def test_to_lightglue_empty_and_tensor_input():
    out = F.to_lightglue(
        np.zeros((0, 2)), np.zeros(0), np.zeros(0), np.zeros((0, 128)), np.zeros(0), (64, 48)
    )
    assert out["keypoints"].shape == (1, 0, 2) and out["scales"].shape == (1, 0)
    assert out["descriptors"].shape == (1, 0, 128) and out["image_size"].tolist() == [[64.0, 48.0]]
    xy = torch.ones(3, 2, requires_grad=True)
    t = F.to_lightglue(xy, torch.zeros(3), 0.0, scores=torch.ones(3))
    assert torch.equal(t["keypoints"], F.to_lightglue(np.ones((3, 2)), 0.0, 0.0)["keypoints"])


# --- hloc ---------------------------------------------------------------------------------------------------


def _hloc(path, name="im.jpg", **datasets):
    with h5py.File(path, "a") as f:
        g = f.create_group(name)
        for k, v in datasets.items():
            g.create_dataset(k, data=v)
    return path


def test_hloc_reader_refuses_missing_foreign_and_folder_paths(tmp_path):
    with pytest.raises(InputError, match="not found"):
        F.read_hloc_features(tmp_path / "none.h5", "im.jpg")
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(InputError, match="not an HDF5 file"):
        F.read_hloc_features(tmp_path / "text.h5", "im.jpg")
    with pytest.raises(InputError, match="folder"):
        F.read_hloc_features(tmp_path, "im.jpg")
    (tmp_path / "cut.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 40)  # an HDF5 signature, then nothing
    with pytest.raises(InputError, match="cut.h5"):
        F.read_hloc_features(tmp_path / "cut.h5", "im.jpg")
    p = _hloc(tmp_path / "f.h5", keypoints=np.ones((2, 2)))
    for name in ("", "/", "/abs.jpg", "a//b.jpg", "../x.jpg", 3, None):
        with pytest.raises(InputError, match="name"):
            F.read_hloc_features(p, name)


@pytest.mark.parametrize(
    "datasets, match",
    [
        ({"keypoints": np.ones((2, 2)), "scales": np.array([1.0, 0.0])}, "radii"),  # was -inf
        ({"keypoints": np.ones((2, 2)), "scales": np.array([1.0, -3.0])}, "radii"),  # was NaN
        ({"keypoints": np.ones((2, 2)), "scales": np.array([1.0, np.nan])}, "NaN"),
        ({"keypoints": np.ones((2, 2)), "scales": np.ones(3)}, "3 values for 2"),
        ({"keypoints": np.ones((2, 2)), "oris": np.array([0.0, np.inf])}, "NaN"),
        ({"keypoints": np.array([[1.0, np.nan]])}, "NaN"),
        ({"keypoints": np.ones((2, 3))}, r"\(N, 2\)"),
        ({"keypoints": np.ones(2)}, "2-d"),
        ({"keypoints": np.array([b"a", b"b"])}, "numbers"),
        ({"keypoints": np.ones((2, 2)), "descriptors": np.ones((8, 3))}, r"\(D, N\)"),
    ],
)
def test_hloc_reader_refuses_bad_values(tmp_path, datasets, match):
    p = _hloc(tmp_path / "f.h5", **datasets)
    with pytest.raises(InputError, match=match):
        F.read_hloc_features(p, "im.jpg")


def test_hloc_writer_refuses_bad_paths_and_names_and_round_trips_empty(tmp_path):
    args = (np.ones((2, 2)), 0.0, 0.0, np.ones((2, 8), np.float32), None, (4, 4))
    with pytest.raises(InputError, match="does not exist"):
        F.write_hloc_features(tmp_path / "no" / "f.h5", "im.jpg", *args)
    with pytest.raises(InputError, match="folder"):
        F.write_hloc_features(tmp_path, "im.jpg", *args)
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(InputError, match="not an HDF5 file"):
        F.write_hloc_features(tmp_path / "text.h5", "im.jpg", *args)
    with pytest.raises(InputError, match="name"):
        F.write_hloc_features(tmp_path / "f.h5", "", *args)
    with pytest.raises(InputError, match="need descriptors"):
        F.write_hloc_features(tmp_path / "f.h5", "im.jpg", np.ones((2, 2)), 0.0, 0.0, None, None, (4, 4))
    F.write_hloc_features(
        tmp_path / "f.h5", "db/e.jpg", np.zeros((0, 2)), 0.0, 0.0, np.zeros((0, 8)), None, (4, 4)
    )
    r = F.read_hloc_features(tmp_path / "f.h5", "db/e.jpg")
    assert r["xy"].shape == (0, 2) and r["scale"].shape == (0,) and r["descriptors"].shape == (0, 8)


# --- COLMAP -------------------------------------------------------------------------------------------------


def _colmap_line(x=10.5, y=20.5, r=16.0, a=0.0, desc=(0,) * 128) -> str:
    return " ".join(map(str, (x, y, r, a, *desc)))


@pytest.mark.parametrize(
    "text, match",
    [
        ("1 128\n" + _colmap_line(r=-4.0), "radii"),  # was NaN
        ("1 128\n" + _colmap_line(r=0.0), "radii"),
        ("1 128\n" + _colmap_line(x="nan"), "NaN"),
        ("1 128\n" + _colmap_line(a="inf"), "NaN"),
        ("1 128\n" + _colmap_line(desc=(999,) + (0,) * 127), r"\[0, 255\]"),  # was 231
        ("1 128\n" + _colmap_line(desc=(1.5,) + (0,) * 127), r"\[0, 255\]"),
        ("1 128\n" + _colmap_line(desc=(-1,) + (0,) * 127), r"\[0, 255\]"),
        ("1 128\n" + _colmap_line(desc=(0,) * 127), "line 2"),
        ("2 128\n" + _colmap_line(), "2 keypoints"),
        ("1 128\n" + _colmap_line() + "\n" + _colmap_line(), "1 keypoints"),
        ("1 64\n" + _colmap_line(desc=(0,) * 64), "D = 128"),
        ("-1 128\n", "N >= 0"),
        ("hello\n", "first line"),
        ("", "first line"),
    ],
)
def test_colmap_reader_refuses_bad_files(tmp_path, text, match):
    p = tmp_path / "k.txt"
    p.write_text(text)
    with pytest.raises(InputError, match=match):
        F.read_colmap_keypoints(p)


def test_colmap_reader_and_writer_refuse_bad_paths_and_round_trip_empty(tmp_path):
    (tmp_path / "bin.txt").write_bytes(bytes(range(256)) * 4)  # was UnicodeDecodeError
    with pytest.raises(InputError, match="not text"):
        F.read_colmap_keypoints(tmp_path / "bin.txt")
    with pytest.raises(InputError, match="not found"):
        F.read_colmap_keypoints(tmp_path / "none.txt")
    with pytest.raises(InputError, match="folder"):
        F.read_colmap_keypoints(tmp_path)
    with pytest.raises(InputError, match="does not exist"):  # was FileNotFoundError
        F.write_colmap_keypoints(tmp_path / "no" / "k.txt", np.ones((1, 2)), 0.0, 0.0)
    with pytest.raises(InputError, match="folder"):
        F.write_colmap_keypoints(tmp_path, np.ones((1, 2)), 0.0, 0.0)
    with pytest.raises(InputError, match="scale"):
        F.write_colmap_keypoints(tmp_path / "k.txt", np.ones((1, 2)), np.nan, 0.0)
    F.write_colmap_keypoints(tmp_path / "e.txt", np.zeros((0, 2)), np.zeros(0), np.zeros(0))
    r = F.read_colmap_keypoints(tmp_path / "e.txt")
    assert r["xy"].shape == (0, 2) and r["scale"].shape == (0,) and r["descriptors"].shape == (0, 128)


# --- OpenCV keypoints and LAFs (interop) ----------------------------------------------------------------------


def test_interop_refuses_bad_keypoints_factors_and_lafs():
    from patchpose import interop as I

    for factor in (0, -1.0, np.nan, "2", True, None):
        with pytest.raises(InputError, match="size_factor"):
            I.to_cv2_keypoints(np.ones((1, 2)), 0.0, 0.0, size_factor=factor)
        with pytest.raises(InputError, match="laf_factor"):
            I.to_laf(np.ones((1, 2)), 0.0, 0.0, laf_factor=factor)
    with pytest.raises(InputError, match=r"\(N, 2\)"):
        I.to_cv2_keypoints(np.ones((2, 3)), 0.0, 0.0)
    with pytest.raises(InputError, match=r"\(N, 2\)"):
        I.to_laf(np.ones(6), 0.0, 0.0)
    with pytest.raises(InputError, match="size"):  # was -inf
        I.from_cv2_keypoints([cv2.KeyPoint(5.0, 5.0, 0.0)])
    with pytest.raises(InputError, match="cv2.KeyPoint"):
        I.from_cv2_keypoints([(5.0, 5.0)])
    for bad in (None, "abc", np.ones((2, 2)), 5):
        with pytest.raises(InputError, match="cv2.KeyPoint"):
            I.is_opencv_sift(bad)
    with pytest.raises(InputError, match="image_shape"):
        I.keypoint_xy([cv2.KeyPoint(5.0, 5.0, 3.0)], image_shape="abc")
    laf = I.to_laf(np.ones((2, 2)) * 5, 0.0, 0.0)
    with pytest.raises(InputError, match=r"\(1, N, 2, 3\)"):
        I.from_laf(torch.cat([laf, laf]))  # the second image was dropped silently
    with pytest.raises(InputError, match="torch tensor"):
        I.from_laf(laf.numpy())
    with pytest.raises(InputError, match="degenerate"):
        I.from_laf(torch.zeros(1, 1, 2, 3))
    assert I.to_cv2_keypoints(np.zeros((0, 2)), np.zeros(0), np.zeros(0)) == []
    assert I.from_laf(I.to_laf(np.zeros((0, 2)), np.zeros(0), np.zeros(0)))[0].shape == (0, 2)


# --- the estimator and assign -------------------------------------------------------------------------------


def test_estimate_reads_tensors_that_require_grad_and_refuses_tensor_images(est):
    img = texture()
    kp = torch.tensor([[48.0, 48.0]], requires_grad=True)
    assert np.array_equal(est.estimate(img, kp).scale, est.estimate(img, np.array([[48.0, 48.0]])).scale)
    with pytest.raises(InputError, match="numpy array"):
        est.estimate(torch.from_numpy(img).float().requires_grad_(), np.array([[48.0, 48.0]]))


def test_assign_refuses_none(est):
    with pytest.raises(InputError, match="cv2.KeyPoint"):
        patchpose.assign(texture(), None, est)
    with pytest.raises(InputError, match="numpy array"):
        patchpose.assign(None, [], est)
    with pytest.raises(InputError, match="numpy array"):
        patchpose.resolve_orientations("img.png", [], est)
    assert patchpose.assign(texture(), [], est) == []


# --- image files --------------------------------------------------------------------------------------------


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def png_claiming(w: int, h: int) -> bytes:
    """A small PNG whose header claims ``w × h`` gray pixels (its data would decode to far fewer)."""
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(b"\0" * 4096))
        + _chunk(b"IEND", b"")
    )


def jpeg_claiming(w: int, h: int) -> bytes:
    """A JPEG's first segments: an APP0 header, then a baseline frame header claiming ``w × h``."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, h, w, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


@pytest.mark.parametrize("ext", ["png", "jpg", "bmp", "webp", "ppm", "pgm", "tif"])
def test_header_size_reads_each_format(tmp_path, ext):
    from patchpose.data.image_header import header_size

    img = np.zeros((37, 53, 3), np.uint8)
    p = tmp_path / f"a.{ext}"
    assert cv2.imwrite(str(p), img[..., 0] if ext == "pgm" else img)
    assert header_size(p) == (53, 37)
    assert header_size(p, p.read_bytes()) == (53, 37)  # its bytes, read already
    with open(p, "rb") as f:  # the file opened already (patchpose extract): read from, left open
        assert header_size(p, f) == (53, 37) and not f.closed


def test_images_over_the_pixel_limit_are_refused_before_decoding(tmp_path, monkeypatch):
    from patchpose.data.image_header import DEFAULT_MAX_IMAGE_PIXELS, MAX_PIXELS_ENV
    from patchpose.data.patches import load_image

    monkeypatch.setenv(MAX_PIXELS_ENV, "")
    for name, data in (
        ("bomb.png", png_claiming(50_000, 50_000)),
        ("bomb.jpg", jpeg_claiming(50_000, 50_000)),
    ):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(
            InputError, match=f"50000 × 50000 pixels.*{DEFAULT_MAX_IMAGE_PIXELS:,}.*{MAX_PIXELS_ENV}"
        ):
            load_image(tmp_path / name)
    small = tmp_path / "small.png"
    cv2.imwrite(str(small), texture(80, 100))
    assert load_image(small).shape == (80, 100, 3)
    monkeypatch.setenv(MAX_PIXELS_ENV, "7999")
    with pytest.raises(InputError, match="7,999"):
        load_image(small)
    small_tif = tmp_path / "small.tiff"  # a header read too; the decoded size is checked for any format
    cv2.imwrite(str(small_tif), texture(80, 100))
    with pytest.raises(InputError, match="7,999"):
        load_image(small_tif)
    monkeypatch.setenv(MAX_PIXELS_ENV, "8000")
    assert load_image(small).shape == (80, 100, 3)
    monkeypatch.setenv(MAX_PIXELS_ENV, "lots")
    with pytest.raises(InputError, match=MAX_PIXELS_ENV):
        load_image(small)


# --- the command line ---------------------------------------------------------------------------------------


def test_cli_refuses_an_image_bomb_in_one_line(tmp_path, capsys, monkeypatch):
    from patchpose.cli.main import main
    from patchpose.data.image_header import MAX_PIXELS_ENV

    monkeypatch.setenv(MAX_PIXELS_ENV, "")  # empty: the default limit
    (tmp_path / "bomb.png").write_bytes(png_claiming(50_000, 50_000))
    assert main(["estimate", str(tmp_path / "bomb.png"), "--out", str(tmp_path)]) == 2
    assert "more than the limit" in one_line_error(capsys)
    small = tmp_path / "small.png"
    cv2.imwrite(str(small), texture(80, 100))
    assert main(["--max-image-pixels", "100", "estimate", str(small), "--out", str(tmp_path)]) == 2
    assert "limit of 100 pixels" in one_line_error(capsys)
    assert os.environ[MAX_PIXELS_ENV] == ""  # the flag held for that command only
    assert main(["--max-image-pixels", "0", "estimate", str(small), "--out", str(tmp_path)]) == 2
    assert "--max-image-pixels" in one_line_error(capsys)
    # given after the command, argparse knows it not: the error says where it goes
    with pytest.raises(SystemExit) as e:
        main(["estimate", str(small), "--out", str(tmp_path), "--max-image-pixels", "100"])
    assert e.value.code == 2 and "goes before the command" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["generate", "patchpose", "--out", "{o}"],
        ["generate", "patchpose", "--split", "test", "--out", "{o}"],
        ["generate", "hpatches", "--out", "{o}"],
        ["generate", "hpatches", "--split", "all", "--out", "{o}"],
        ["generate", "posed-pairs", "--out", "{o}"],
        ["generate", "scenes", "--out", "{o}"],
        ["eval", "rotation", "--out", "{o}"],
        ["eval", "synthetic", "--out", "{o}"],
    ],
)
def test_cli_refuses_an_empty_photo_folder(tmp_path, capsys, args):
    from patchpose.cli.main import main

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no photos here")
    out = tmp_path / "out"
    argv = [a.format(o=out) for a in args] + ["--images", str(empty)]
    assert main(argv) == 2
    assert "holds no photos" in one_line_error(capsys)
    assert not (out / "manifest.json").exists()
    assert main([a.format(o=out) for a in args] + ["--images", str(tmp_path / "missing")]) == 2
    assert "not found" in one_line_error(capsys)


@pytest.mark.parametrize("workers", ["-1", "0", "100000"])
def test_cli_checks_worker_counts(tmp_path, capsys, workers):
    from patchpose.cli.main import main

    (tmp_path / "p").mkdir()
    cv2.imwrite(str(tmp_path / "p" / "a.png"), texture())
    argv = ["generate", "patchpose", "--images", str(tmp_path / "p"), "--out", str(tmp_path / "o")]
    assert main([*argv, "--workers", workers]) == 2
    assert "--workers must be a whole number from 1 to" in one_line_error(capsys)
    assert not (tmp_path / "o").exists()


def test_training_worker_count_is_checked():
    from patchpose.training.config import load_config

    for n in (-1, 10_000):
        with pytest.raises(ValueError, match="data.num_workers"):
            load_config("v1", [f"data.num_workers={n}"])
    assert load_config("v1", ["data.num_workers=0"]).data.num_workers == 0


def test_bad_splits_json_is_one_line(tmp_path):
    from patchpose.data.photos import load_splits

    (tmp_path / "splits.json").write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        load_splits(tmp_path)
    (tmp_path / "splits.json").write_text('{"train": "a.png"}')
    with pytest.raises(InputError, match="list of photo paths"):
        load_splits(tmp_path)


def test_scale_limit_is_the_estimators_frame_limit():
    from patchpose.checks import SCALE_LIMIT
    from patchpose.reading import MAX_FRAME

    assert SCALE_LIMIT == MAX_FRAME


def test_keypoint_files_that_are_folders_or_binary_are_one_line(tmp_path):
    from patchpose.fileio import read_keypoints

    with pytest.raises(InputError, match="is a folder, not a keypoints file"):
        read_keypoints(tmp_path)
    (tmp_path / "kp.txt").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError, match="not a text file"):
        read_keypoints(tmp_path / "kp.txt")
    (tmp_path / "kp.npy").write_bytes(b"garbage")
    with pytest.raises(InputError, match="not a readable .npy"):
        read_keypoints(tmp_path / "kp.npy")


def test_a_large_photos_picture_shows_it_shrunk_over_the_same_pixel_coordinates(tmp_path, monkeypatch):
    """draw_poses gives matplotlib a photo wider than twice the figure shrunk (matplotlib resamples as float RGBA:
    1.5 GB for a 48-megapixel photo), laid over the photo's own pixel coordinates, so the keypoints land where
    they are; a small photo is shown as it is."""
    import matplotlib.axes

    from patchpose.outputs import draw_poses

    shown = []
    imshow = matplotlib.axes.Axes.imshow
    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "imshow",
        lambda ax, a, **kw: shown.append((a.shape, kw.get("extent"))) or imshow(ax, a, **kw),
    )
    xy, s, o = np.array([[10.0, 20.0]]), np.zeros(1), np.zeros(1)
    for w, h in ((4000, 1000), (600, 400)):
        path = draw_poses(np.zeros((h, w, 3), np.uint8), xy, s, o, tmp_path / f"p{w}.png")
        assert cv2.imread(str(path)) is not None
    assert shown[0] == ((480, 1920, 3), (-0.5, 3999.5, 999.5, -0.5))
    assert shown[1] == ((400, 600, 3), (-0.5, 599.5, 399.5, -0.5))


def test_the_picture_of_an_image_of_any_shape_is_of_bounded_size_and_not_empty(tmp_path):
    """draw_poses sized its figure by the width alone (8 × 8·h/w inches): an image 20 px wide and 32,000 high asked
    for 40 GiB, one 16 wide and 320 high for 960 × 19,200 pixels, and one 32,000 wide and 20 high for a figure of
    no pixel rows ("cannot write empty image"). The long side is 8 inches, the short side at least 4: at most
    960 × 960 pixels, at least 480 on a side, whatever the image's shape."""
    from patchpose.outputs import draw_poses

    xy, s, o = np.array([[5.0, 5.0]]), np.zeros(1), np.zeros(1)
    for h, w in ((320, 16), (16, 320), (20, 32_000), (600, 800)):
        path = draw_poses(np.zeros((h, w), np.uint8), xy, s, o, tmp_path / f"p{h}x{w}.png")
        shape = cv2.imread(str(path)).shape[:2]
        assert max(shape) == 960 and min(shape) >= 480, (h, w, shape)
        assert (shape[0] > shape[1]) == (h > w), (h, w, shape)  # a tall image's picture is tall
    assert shape == (720, 960)  # a photo's picture is as it was


def test_the_picture_draws_every_keypoints_circle_in_pixels_as_one_collection(tmp_path, monkeypatch):
    """draw_poses draws the circles of all keypoints as one collection of arrays (a patch object per keypoint
    took 190 MiB for 100,000), centred on the keypoints with the radius 16·2^scale in the photo's pixels."""
    import matplotlib.axes

    from patchpose.outputs import draw_poses

    added = []
    add = matplotlib.axes.Axes.add_collection
    monkeypatch.setattr(
        matplotlib.axes.Axes, "add_collection", lambda ax, c, **kw: added.append(c) or add(ax, c, **kw)
    )
    xy, s = np.array([[10.0, 20.0], [300.5, 100.0], [50.0, 350.0]]), np.array([0.0, 1.0, -0.5])
    draw_poses(np.zeros((400, 600), np.uint8), xy, s, np.zeros(3), tmp_path / "p.png")
    circles = [c for c in added if isinstance(c, matplotlib.collections.EllipseCollection)]
    assert len(circles) == 1
    c = circles[0]
    np.testing.assert_allclose(c.get_offsets(), xy)
    # diameters (get_widths from matplotlib 3.9; before, the half-sizes it keeps), in data units: photo pixels
    widths = c.get_widths() if hasattr(c, "get_widths") else 2 * c._widths
    heights = c.get_heights() if hasattr(c, "get_heights") else 2 * c._heights
    np.testing.assert_allclose(widths, 2 * 16 * 2.0**s)
    np.testing.assert_allclose(heights, 2 * 16 * 2.0**s)
    assert c._units == "xy"


# --- OpenCV keypoints: blends, resolve_orientations (a second probe, 293 cases) --------------------------------


def test_a_huge_keypoint_size_is_refused_not_a_hang(est):
    """A window of 1e12 px had OpenCV reflect each sample back into the image one width at a time (for ever);
    patches are cut only within 16·2**±16 px, in every path that cuts them."""
    img, sift = texture(), cv2.SIFT_create()
    for size in (1e6, 1e12):
        with pytest.raises(InputError, match="patch scales must be finite log2 scales within"):
            patchpose.compute_blended(sift, img, [cv2.KeyPoint(40, 40, size)])
    shape = patchpose.AffineShapeEstimator.from_pretrained()
    with pytest.raises(InputError, match="patch scales must be finite"):
        shape.frames(img, np.array([[40.0, 40.0]]), 1e12)
    for radius in ("10", 8 + 1j):  # not read as 10, not as 8
        with pytest.raises(InputError, match="radius must be a number or one per keypoint"):
            shape.frames(img, np.array([[40.0, 40.0]]), radius)
    patchpose.compute_blended(sift, img, [cv2.KeyPoint(40, 40, 5000.0)])  # large, not absurd: cut


def test_compute_blended_takes_float_and_16_bit_images_as_8_bit(est):
    """OpenCV's extractors take 8-bit images: a float [0, 1] or 16-bit image is handed over as its 8-bit gray
    (the same descriptors as the 8-bit image's)."""
    img, sift = texture(), cv2.SIFT_create()
    kps = sift.detect(img, None)[:10]
    want = patchpose.compute_blended(sift, img, kps)[1]
    for other in (img.astype(np.float32) / 255.0, img.astype(np.uint16) * 257):
        np.testing.assert_array_equal(patchpose.compute_blended(sift, other, kps)[1], want)


def test_opencv_keypoint_functions_refuse_what_is_not_keypoints_and_bad_flags(est):
    img = texture()
    for call in (
        lambda: patchpose.assign(img, 3, est),
        lambda: patchpose.compute_blended(cv2.SIFT_create(), img, 5),
        lambda: patchpose.resolve_orientations(img, 5, est),
    ):
        with pytest.raises(InputError, match="keypoints must be a sequence of cv2.KeyPoint, got int"):
            call()
    with pytest.raises(InputError, match=r"got ndarray: for an \(N, 2\) array of x, y use est.estimate"):
        patchpose.assign(img, np.array([[40.0, 40.0]]), est)
    kp = [cv2.KeyPoint(40, 40, 8, 10)]
    with pytest.raises(InputError, match="keep_size must be True or False, got 'False'"):
        patchpose.assign(img, kp, est, keep_size="False")
    with pytest.raises(InputError, match="keep_size must be True or False"):
        patchpose.compute_blended(cv2.SIFT_create(), img, kp, keep_size="no")


def test_compute_blended_refuses_an_extractor_that_gives_bad_descriptors(est):
    img = texture()
    kps = [cv2.KeyPoint(40, 40, 8, 10), cv2.KeyPoint(50, 30, 8, 10)]

    class Short:
        def compute(self, image, k):
            return k, np.ones((len(k) - 1, 4), np.float32)

    class AList:
        def compute(self, image, k):
            return k, [[1.0] * 4] * len(k)

    with pytest.raises(InputError, match="the extractor described 7 of 8 candidates"):
        patchpose.compute_blended(Short(), img, kps)
    with pytest.raises(InputError, match="descriptors as list, not a numpy array"):
        patchpose.compute_blended(AList(), img, kps)


def test_resolve_orientations_checks_every_keypoint(est):
    """Every keypoint is checked, read by the model or not (a lone keypoint 1,000 px outside the image, or with a
    NaN angle, came back unchanged; a NaN angle won its location)."""
    img = texture()
    for kps, match in [
        ([cv2.KeyPoint(-1000, 50, 10, 3)], "lie outside"),
        ([cv2.KeyPoint(float("nan"), 50, 10, 3)], "lie outside|finite"),
        (
            [cv2.KeyPoint(50, 50, 10, float("nan")), cv2.KeyPoint(50, 50, 10, 200)],
            "keypoint #0 has angle nan",
        ),
        ([cv2.KeyPoint(50, 50, float("nan"), 3)], "resolve_orientations needs each keypoint's size > 0"),
    ]:
        with pytest.raises(InputError, match=match):
            patchpose.resolve_orientations(img, kps, est)


def test_kornia_shape_and_blend_modules_check_images_lafs_and_descriptors():
    """``LAFAffineShape`` and ``describe_blended`` take kornia's images (float, in [0, 1]) and LAFs centred in the
    image, as ``LAFPoseAssigner`` does (a [0, 255] image was clamped, a uint8 one raised from kornia, a centre
    1,000 px outside was read at the border); a descriptor module must give one row per LAF."""
    from patchpose.integrations.kornia import LAFAffineShape, describe_blended

    img = torch.rand(1, 1, 64, 64)
    good = KF.laf_from_center_scale_ori(torch.tensor([[[32.0, 32.0]]]), torch.full((1, 1, 1, 1), 6.0))
    outside = KF.laf_from_center_scale_ori(torch.tensor([[[-1000.0, 32.0]]]), torch.full((1, 1, 1, 1), 6.0))
    shape = LAFAffineShape()
    desc = KF.LAFDescriptor(KF.HardNet(pretrained=False))
    for image, laf, match in [
        (img * 255, good, r"floats in \[0, 1\]"),
        ((img * 255).to(torch.uint8), good, "floats"),
        (img, outside, "outside"),
    ]:
        with pytest.raises(InputError, match=match):
            shape(laf, image)
        if match != "outside":
            with pytest.raises(InputError, match=match):
                describe_blended(image, laf, desc)

    class Extra(torch.nn.Module):
        def forward(self, image, lafs):
            return torch.ones(1, lafs.shape[1] + 1, 8)

    class Numpy(torch.nn.Module):
        def forward(self, image, lafs):
            return np.ones((1, lafs.shape[1], 8), np.float32)

    for module, got in [(Extra(), r"got \(1, 5, 8\)"), (Numpy(), "got ndarray")]:
        with pytest.raises(
            InputError, match="descriptor must give a \\(1, 4, D\\) tensor for 4 LAFs, " + got
        ):
            describe_blended(img, good, module)


def test_keypoints_are_numbers_and_tensors_are_read_whatever_their_state():
    """#62's one policy for numbers: booleans, strings and complex values are no keypoints (a float cast read True as
    1); a tensor that requires grad or is bfloat16 is read as its values; one on the meta device has none."""
    import torch

    import patchpose

    img = np.random.default_rng(0).random((64, 64)).astype(np.float32)
    est = patchpose.PatchPoseEstimator.from_pretrained()
    for bad in (np.array([[True, False]]), [["3", "4"]], np.array([[1 + 1j, 2.0]])):
        with pytest.raises(patchpose.InputError, match="real numbers") as e:
            est.estimate(img, bad)
        assert len(str(e.value).splitlines()) == 1
    with pytest.raises(patchpose.InputError, match="meta device"):
        est.estimate(img, torch.empty((1, 2), device="meta"))
    want = est.estimate(img, np.array([[10.0, 12.0]]))
    for t in (
        torch.tensor([[10.0, 12.0]], requires_grad=True),
        torch.tensor([[10.0, 12.0]], dtype=torch.bfloat16),
    ):
        got = est.estimate(img, t)
        np.testing.assert_allclose(got.orientation, want.orientation, atol=1e-6)
    # the detector's scale alike: True, "1" and ["1"] were read as 1.0; a tensor with grad raised torch's error
    xy = np.array([[30.0, 30.0]])
    for bad in (True, "1", ["1"], 1 + 1j):
        with pytest.raises(patchpose.InputError, match="detector_scale must be a number") as e:
            est.estimate(img, xy, detector_scale=bad)
        assert len(str(e.value).splitlines()) == 1
    want = est.estimate(img, xy, detector_scale=1.0).scale
    for t in (torch.ones(1, requires_grad=True), torch.ones(1, dtype=torch.bfloat16)):
        np.testing.assert_allclose(est.estimate(img, xy, detector_scale=t).scale, want)


def test_keypoint_files_of_booleans_or_strings_are_refused(tmp_path):
    """A ``.npy`` of booleans was read as 0/1 pixel coordinates, one of strings parsed as numbers (#62)."""
    from patchpose.fileio import read_keypoints

    for name, array in (("b", np.array([[True, True], [True, False]])), ("s", np.array([["30", "40"]]))):
        np.save(tmp_path / f"{name}.npy", array)
        with pytest.raises(InputError, match="not numbers"):
            read_keypoints(tmp_path / f"{name}.npy")
    np.save(tmp_path / "i.npy", np.array([[30, 40]], np.int16))
    assert read_keypoints(tmp_path / "i.npy").tolist() == [[30.0, 40.0]]
    # a file of 192 bytes whose header claims 10⁹ keypoints: refused before numpy allocates 15 GiB for it (in a
    # process limited to 4 GiB of address space, where the allocation was a raw MemoryError)
    import subprocess
    import sys

    with open(tmp_path / "bomb.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (10**9, 2)})
        f.write(bytes(64))
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))\n"
        "from patchpose.fileio import read_keypoints\n"
        "from patchpose.errors import InputError\n"
        "try:\n    read_keypoints(sys.argv[1])\nexcept InputError as e:\n    print('refused:', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "bomb.npy")], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.startswith("refused:"), done.stderr[-1000:]
    assert len(done.stdout.strip().splitlines()) == 1


def test_numbers_past_float32_and_a_zero_top_k_are_refused_and_a_failed_write_leaves_no_temporary(tmp_path):
    import cv2

    import patchpose
    from patchpose.fileio import write_text_atomic
    from patchpose.integrations.formats import to_lightglue

    with pytest.raises(patchpose.InputError, match="float32"):  # it returned inf
        to_lightglue(np.zeros((1, 2)), 0.0, 0.0, np.full((1, 4), 1e300))
    img = (np.random.default_rng(0).random((64, 64)) * 255).astype(np.uint8)
    with pytest.raises(patchpose.InputError, match="top_k"):  # 0 was read as 1
        patchpose.assign(img, [cv2.KeyPoint(30, 30, 8)], top_k=0)

    import os

    def fails(*a):
        raise OSError(28, "No space left on device")

    target = tmp_path / "poses.json"
    real = os.replace
    os.replace = fails  # the rename fails after the temporary file is written
    try:
        with pytest.raises(patchpose.InputError, match="stopped the write") as e:
            write_text_atomic(target, "{}")
    finally:
        os.replace = real
    assert not list(tmp_path.iterdir()) and len(str(e.value).splitlines()) == 1


def test_every_writer_into_a_place_it_cannot_write_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    """Poses, matches, COLMAP keypoint and hloc files into a folder that is a file (mkstemp's error), a missing folder,
    or a disk that fails the write: one line naming the file, no temporary file left (#62: raw PermissionError and
    OSError, and ``*_poses.json.tmp`` / ``k.txt.tmp`` left behind)."""
    from types import SimpleNamespace

    import patchpose
    from patchpose.integrations.formats import write_colmap_keypoints, write_hloc_features
    from patchpose.outputs import write_matches_csv, write_poses

    poses = SimpleNamespace(scale=np.zeros(1), orientation=np.zeros(1), valid=np.ones(1, bool))
    xy = np.array([[3.0, 4.0]])
    writers = {
        "poses file": lambda p: write_poses(p / "im_poses", xy, poses),
        "matches file": lambda p: write_matches_csv(p / "m.csv", xy, xy, np.array([[0, 0]]), np.zeros(1)),
        "COLMAP keypoint file": lambda p: write_colmap_keypoints(p / "k.txt", xy, 0.0, 0.0),
        "hloc features file": lambda p: write_hloc_features(
            p / "f.h5", "a.jpg", xy, 0.0, 0.0, np.ones((1, 4)), image_size=(64, 64)
        ),
    }
    (tmp_path / "a_file").write_text("not a folder")
    for what, write in writers.items():
        for where in (tmp_path / "a_file", tmp_path / "missing"):
            with pytest.raises(
                patchpose.InputError, match="Not a directory|No such file|does not exist"
            ) as e:
                write(where)
            assert len(str(e.value).splitlines()) == 1 and what in str(e.value), e.value
    import os

    real = os.fsync

    def full(fd):
        raise OSError(28, "No space left on device")

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(os, "fsync", full)  # the disk fails the write's flush
    for what, write in writers.items():
        with pytest.raises(patchpose.InputError, match="stopped the write") as e:
            write(out)
        assert what in str(e.value)
    from patchpose.outputs import draw_poses

    with pytest.raises(patchpose.InputError, match="stopped the write") as e:
        draw_poses(np.zeros((32, 32), np.uint8), xy, np.zeros(1), np.zeros(1), out / "p.png")
    assert "cannot write it" not in str(
        e.value
    )  # it was wrapped twice: "cannot write it (picture ...: the disk"
    monkeypatch.setattr(os, "fsync", real)
    assert not list(out.iterdir())

    def interrupted(fd):
        raise KeyboardInterrupt

    from patchpose.outputs import draw_poses, write_matches_picture

    img = np.zeros((40, 50), np.uint8)
    pictures = [
        lambda p: draw_poses(img, xy, np.zeros(1), np.zeros(1), p),
        lambda p: write_matches_picture(p, img, img, xy, xy, np.array([[0, 0]])),
    ]
    for (
        picture
    ) in pictures:  # a folder that is a file, no suffix, a type no writer knows: one line, nothing left
        for name, why in (
            ("a_file/x.png", "cannot make its folder"),
            ("x", "suffix"),
            ("x.weird", "cannot write"),
        ):
            with pytest.raises(patchpose.InputError, match=why) as e:
                picture(tmp_path / name)
            assert len(str(e.value).splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "out"]
    writers["picture of poses"] = lambda p: pictures[0](p / "pic.png")
    writers["picture of matches"] = lambda p: pictures[1](p / "pic.png")
    monkeypatch.setattr(os, "fsync", interrupted)  # Ctrl-C while writing: no temporary file either
    for write in writers.values():
        with pytest.raises(KeyboardInterrupt):
            write(out)
    monkeypatch.setattr(os, "fsync", real)
    assert not list(out.iterdir())


def test_a_budget_of_zero_keypoints_finds_none_and_a_nan_image_is_refused_without_a_warning(recwarn):
    """OpenCV reads a budget of 0 as "all": Harris and Shi-Tomasi corners returned every corner (#62); a NaN image
    warned in numpy's cast before the refusal."""
    from patchpose.data.keypoints import detect_gftt, detect_harris, detect_sift
    from patchpose.integrations.extract import features_of_image

    img = (np.random.default_rng(0).random((96, 96)) * 255).astype(np.uint8)
    for detect in (detect_harris, detect_gftt):
        assert len(detect(img, 0)) == 0 and len(detect(img, 5)) == 5
    assert len(detect_sift(img, 0)[0]) == 0
    assert len(features_of_image(img, detector="harris", max_keypoints=0)["xy"]) == 0
    nan = np.full((96, 96), np.nan, np.float32)
    for call in (lambda: detect_sift(nan, 100), lambda: features_of_image(nan)):
        with pytest.raises(InputError, match="NaN"):
            call()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_an_image_too_large_for_opencvs_warps_is_one_line(tmp_path, capsys, est):
    """OpenCV's remap and warpAffine take sides under SHRT_MAX (32,767 px): such an image was a cv2.error traceback
    in ``estimate``, ``match`` and the estimator; it is refused where images are checked, in one line naming the
    limit (and, on the command line, the file)."""
    from patchpose.cli.main import main

    wide = np.random.default_rng(0).integers(0, 256, (16, 32_767)).astype(np.uint8)  # corners to read at
    with pytest.raises(InputError, match=r"too large \(32767×16\).* at most 32,766 px"):
        est.estimate(wide, np.array([[100.0, 8.0]]))
    cv2.imwrite(str(tmp_path / "wide.png"), wide)
    cv2.imwrite(str(tmp_path / "ok.png"), texture())
    np.save(tmp_path / "kp.npy", np.array([[100.0, 8.0]]))
    for argv in (
        ["estimate", str(tmp_path / "wide.png"), "--keypoints", str(tmp_path / "kp.npy")],
        ["match", str(tmp_path / "ok.png"), str(tmp_path / "wide.png"), "--detector", "harris"],
    ):
        assert main([*argv, "--out", str(tmp_path / "o")]) == 2
        err = one_line_error(capsys)
        assert "image is too large" in err and "32,766 px" in err, err
    assert not (tmp_path / "o").exists()
    # SIFT's keypoints described where they are cut small patches: a panorama of any width is extracted
    from patchpose.integrations.extract import extract_features

    (tmp_path / "pano").mkdir()
    rng = np.random.default_rng(0)
    pano = cv2.GaussianBlur(rng.random((24, 33_000)).astype(np.float32), (0, 0), 2.0)
    cv2.imwrite(str(tmp_path / "pano" / "p.png"), np.uint8(255 * (pano - pano.min()) / np.ptp(pano)))
    out = extract_features(tmp_path / "pano", tmp_path / "p.h5")
    assert len(F.read_hloc_features(out, "p.png")["xy"]) > 100


def test_extract_names_images_too_small_or_too_large_once_the_others_are_extracted(tmp_path, capsys):
    """``extract`` stopped at an image too small (8×8) without naming it, the images after it never extracted (with
    ``--unturn``: "photo 1", an index); at Harris corners one too large for OpenCV's warps was a cv2.error. They are
    now named as undecodable files are, in one line once the others are extracted (their parts kept for the rerun,
    none for them); with ``--unturn`` the votes, which read every image first, stop naming the file."""
    from patchpose.cli.main import main

    folder = tmp_path / "photos"
    folder.mkdir()
    cv2.imwrite(str(folder / "a.png"), texture())
    cv2.imwrite(str(folder / "b.png"), np.zeros((8, 8), np.uint8))
    cv2.imwrite(str(folder / "c.png"), texture(80, 100))
    cv2.imwrite(str(folder / "d.png"), np.zeros((16, 32_767), np.uint8))
    argv = ["extract", str(folder), "--no-progress", "--max-keypoints", "50"]
    assert main([*argv, "--detector", "harris", "--out", str(tmp_path / "f.h5")]) == 2
    err = one_line_error(capsys)
    assert "2 of 4 images could not be read or used" in err and "b.png: image is too small (8×8)" in err, err
    assert "d.png" in err and not (tmp_path / "f.h5").exists()
    assert len(list((tmp_path / "f.h5.parts").glob("*.h5"))) == 2  # a.png's and c.png's
    assert main([*argv, "--unturn", "--out", str(tmp_path / "u.h5")]) == 2
    err = one_line_error(capsys)
    assert "b.png: image is too small (8×8)" in err and "photo 1" not in err, err
