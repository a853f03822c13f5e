"""The peers (Key.Net, OriNet, AffNet, TFeat, HardTFeat) loaded from a folder of their weights, and their
rows, detectors and descriptors in the matching evaluation.

The weights are never bundled: the tests that need them read ``../shared/peers`` beside the repository (where
CI has it) and skip, saying so, where it is absent (a user's clone).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from patchpose.errors import InputError, WeightsError
from patchpose.evaluation.peers import PEER_FILES, HardTFeat, Peers, read_sums

PEERS_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "peers"
needs_peers = pytest.mark.skipif(
    not PEERS_DIR.is_dir(), reason=f"the peers' weights are not here ({PEERS_DIR}); CI has them"
)


@pytest.fixture(scope="module")
def peers() -> Peers:
    return Peers(PEERS_DIR)


def _rot90_xy(xy: np.ndarray, width: int) -> np.ndarray:
    """Where ``np.rot90`` (a quarter turn counter-clockwise as displayed) sends pixel centres ``xy``."""
    return np.stack([xy[:, 1], width - 1 - xy[:, 0]], 1)


def _turn_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.degrees(np.angle(np.exp(1j * (np.asarray(b) - np.asarray(a)))))


# ------------------------------------------------------------------ loading, checked
@needs_peers
def test_every_peer_loads_from_the_folder_and_matches_its_sums(peers):
    assert set(peers.sums) >= set(PEER_FILES.values())
    for name in ("orinet", "affnet", "tfeat", "hardtfeat"):
        net = getattr(peers, name)()
        assert not net.training
    assert isinstance(peers.hardtfeat(), HardTFeat) and peers.hardtfeat() is peers.hardtfeat()
    det = peers.keynet(100)
    assert not det.training and det.model is peers.keynet(50).model  # the weights are read once


def _folder_with(tmp_path: Path, net: torch.nn.Module, name: str = "hardtfeat") -> Path:
    d = tmp_path / "peers"
    d.mkdir(exist_ok=True)
    torch.save({"state_dict": net.state_dict()}, d / PEER_FILES[name])
    return d


def test_bad_folders_and_files_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="peers folder not found"):
        Peers(tmp_path / "nope")
    d = _folder_with(tmp_path, HardTFeat())
    assert isinstance(Peers(d).hardtfeat(), HardTFeat)  # no SHA256SUMS: loaded unchecked
    with pytest.raises(WeightsError, match="not found"):
        Peers(d).tfeat()
    torch.save({"state_dict": {"features.0.weight": torch.zeros(3)}}, d / PEER_FILES["orinet"])
    with pytest.raises(WeightsError, match="cannot load orinet"):
        Peers(d).orinet()
    torch.save({"features.0.weight": torch.zeros(32, 1, 7, 7, dtype=torch.int64)}, d / "hardtfeat.pth")
    with pytest.raises(WeightsError, match="not floating point"):
        Peers(d).hardtfeat()
    (d / "hardtfeat.pth").write_bytes(b"not a torch file")
    with pytest.raises(WeightsError) as e:
        Peers(d).hardtfeat()
    assert "\n" not in str(e.value)
    (d / "SHA256SUMS").write_text("zz  hardtfeat.pth\n")
    with pytest.raises(WeightsError, match="line 1"):
        Peers(d)


def test_a_file_that_differs_from_its_sum_is_refused(tmp_path):
    d = _folder_with(tmp_path, HardTFeat())
    good = __import__("hashlib").sha256((d / "hardtfeat.pth").read_bytes()).hexdigest()
    (d / "SHA256SUMS").write_text(f"{good}  hardtfeat.pth\n")
    assert read_sums(d / "SHA256SUMS") == {"hardtfeat.pth": good}
    Peers(d).hardtfeat()  # matches: loads
    torch.save({"state_dict": HardTFeat().state_dict()}, d / "hardtfeat.pth")  # other random weights
    with pytest.raises(WeightsError, match="sha256"):
        Peers(d).hardtfeat()
    _folder_with(tmp_path, HardTFeat(), "tfeat")  # a file the sums do not list
    with pytest.raises(WeightsError, match="not listed"):
        Peers(d).tfeat()


@needs_peers
def test_a_corrupt_copy_of_the_real_folder_is_refused(tmp_path, peers):
    d = tmp_path / "copy"
    shutil.copytree(PEERS_DIR, d)
    f = d / "orinet.pth"
    f.chmod(0o644)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(WeightsError, match="sha256"):
        Peers(d).orinet()
    (d / "SHA256SUMS").chmod(0o644)
    (d / "SHA256SUMS").unlink()
    f.write_bytes(bytes(data[: len(data) // 3]))  # truncated, no sums to catch it: torch.load does
    with pytest.raises(WeightsError):
        Peers(d).orinet()
    assert Peers(d).affnet() is not None  # the intact files still load


# ------------------------------------------------------------------ HardTFeat
def test_hardtfeat_gives_unit_descriptors_that_ignore_gain_and_offset():
    torch.manual_seed(0)
    net = HardTFeat().eval()
    x = torch.rand(6, 1, 32, 32)
    with torch.inference_mode():
        d = net(x)
        assert d.shape == (6, 128)
        assert torch.allclose(d.norm(dim=1), torch.ones(6), atol=1e-5)
        assert torch.allclose(net(3.0 * x + 0.5), d, atol=1e-4)  # each patch is standardised first
        assert not torch.allclose(net(x.flip(-1)), d, atol=1e-3)
    with pytest.raises(InputError):
        net(torch.rand(2, 1, 64, 64))


def test_hardtfeat_forward_equals_its_layers_in_order():
    """The fast forward (pooling before tanh, as four strided views) gives what the plain stack of layers
    gives: standardise, conv, tanh, max-pool, conv, tanh, conv, tanh, normalise."""
    torch.manual_seed(1)
    net = HardTFeat().eval()
    x = torch.rand(5, 1, 32, 32)
    with torch.inference_mode():
        flat = x.flatten(1)
        z = (x - flat.mean(1).view(-1, 1, 1, 1)) / (flat.std(1).view(-1, 1, 1, 1) + 1e-7)
        want = torch.nn.functional.normalize(net.classifier(net.features(z)).flatten(1), dim=1)
        assert torch.allclose(net(x), want, atol=1e-6)


@needs_peers
def test_the_real_hardtfeat_matches_a_patch_to_itself_under_noise(peers):
    rng = np.random.default_rng(0)
    base = cv2.GaussianBlur(rng.random((40, 32, 32)).astype(np.float32), (0, 0), 1.5)[:, None]
    noisy = base + 0.01 * rng.standard_normal(base.shape).astype(np.float32)
    with torch.inference_mode():
        a, b = peers.hardtfeat()(torch.from_numpy(base)), peers.hardtfeat()(torch.from_numpy(noisy))
    assert (torch.cdist(a, b).argmin(1) == torch.arange(40)).float().mean() > 0.95


# ------------------------------------------------------------------ rows, detectors, descriptors
def row_poses(name, feats, peers=None):
    """A poses row's ``(scale, orientation)`` ``(N, k)`` at ``feats`` (the registry's ``Row.poses``)."""
    from patchpose.evaluation.rows import Image, Run, get_row

    return get_row(name).poses(Run(None, peers=peers), Image(feats))


@needs_peers
def test_the_orinet_row_turns_with_the_image(textured_image, peers):
    from patchpose.evaluation.rows import detect

    img = textured_image
    g = np.mgrid[60:340:20, 60:340:20].reshape(2, -1).T[:, ::-1].astype(np.float64)
    f1 = detect(img, keypoints=g)
    f2 = detect(np.rot90(img).copy(), keypoints=_rot90_xy(g, img.shape[1]))
    (s1, o1), (s2, o2) = (row_poses("orinet", f, peers) for f in (f1, f2))
    assert np.all(s1 == 0) and np.all(s2 == 0)  # the upright size
    turn = _turn_deg(o1[:, 0], o2[:, 0])
    assert np.mean(np.abs(turn - 90) <= 10) >= 0.9 and abs(np.median(turn) - 90) < 3
    # the affine frames turn with the image too: the frame in the turned image is the turned frame
    from patchpose.evaluation.rows import peer_poses

    A1, A2 = peer_poses(f1, peers, "affnet+orinet")[1], peer_poses(f2, peers, "affnet+orinet")[1]
    R = np.array([[0.0, 1.0], [-1.0, 0.0]])  # np.rot90 on (x, y) vectors: (x, y) -> (y, -x)
    size = np.linalg.norm(A1, axis=(1, 2))
    turned, unturned = (np.linalg.norm(A2 - M @ A1, axis=(1, 2)) / size for M in (R, np.eye(2)))
    assert np.median(turned) < 0.25 and np.median(unturned) > 1.0
    with pytest.raises(InputError, match="--peers"):
        row_poses("orinet", detect(img, keypoints=g))


def test_gftt_corners_differ_from_harris_and_have_no_pose(textured_image):
    from patchpose.data.keypoints import detect_harris
    from patchpose.evaluation.rows import detect

    f = detect(textured_image, 200, detector="gftt")
    assert 0 < len(f) <= 200 and np.isnan(f.sift_scale).all() and f.sift_ori_candidates is None
    h = detect_harris(textured_image, 200)
    assert not (len(h) == len(f) and np.allclose(h, f.xy))
    with pytest.raises(InputError, match="--peers"):
        detect(textured_image, 200, detector="keynet")


@needs_peers
def test_keynet_keypoints_are_strongest_first_one_per_location(textured_image, peers):
    from patchpose.evaluation.rows import detect

    img = textured_image[:300, :300].copy()
    f = detect(img, 300, detector="keynet", peers=peers)
    h, w = img.shape
    assert 40 < len(f) <= 300 and np.isnan(f.sift_scale).all()
    assert (f.xy >= 0).all() and (f.xy[:, 0] <= w - 1).all() and (f.xy[:, 1] <= h - 1).all()
    assert len(np.unique(np.round(f.xy, 2), axis=0)) == len(f)
    few = detect(img, 40, detector="keynet", peers=peers)
    assert np.array_equal(few.xy, f.xy[:40])
    # pixel centres at integers: the keypoints of a shifted image are shifted by as much
    moved = detect(np.roll(img, (8, 4), axis=(0, 1)), 300, detector="keynet", peers=peers)
    gap = np.linalg.norm((f.xy + [4.0, 8.0])[:, None] - moved.xy[None], axis=2).min(1)
    inside = (f.xy[:, 0] < w - 30) & (f.xy[:, 1] < h - 30)
    assert np.mean(gap[inside] <= 1.0) >= 0.8


@needs_peers
def test_aliked_keypoints_are_strongest_first_without_a_pose_and_follow_a_shift(textured_image, peers):
    """``aliked``: ALIKED-n16's keypoints (kornia's network, the peers' weights), inside the image, a prefix of
    themselves when fewer are asked, no scale and no angle (the corners' rows), pixel centres at integers (a
    shifted image's keypoints are shifted by as much), none in an image under Key.Net's smallest side."""
    from patchpose.evaluation.rows import detect, pose_rows

    img = textured_image[:300, :300].copy()
    f = detect(img, 300, detector="aliked", peers=peers)
    h, w = img.shape
    assert 40 < len(f) <= 300 and np.isnan(f.sift_scale).all() and f.detector_scale is None
    assert (f.xy >= 0).all() and (f.xy[:, 0] <= w - 1).all() and (f.xy[:, 1] <= h - 1).all()
    assert np.array_equal(detect(img, 40, detector="aliked", peers=peers).xy, f.xy[:40])
    moved = detect(np.roll(img, (8, 4), axis=(0, 1)), 300, detector="aliked", peers=peers)
    gap = np.linalg.norm((f.xy + [4.0, 8.0])[:, None] - moved.xy[None], axis=2).min(1)
    inside = (f.xy[:, 0] > 30) & (f.xy[:, 0] < w - 30) & (f.xy[:, 1] > 30) & (f.xy[:, 1] < h - 30)
    assert np.mean(gap[inside] <= 1.0) >= 0.8
    assert len(detect(img[:16, :18].copy(), 50, detector="aliked", peers=peers)) == 0
    assert "keynet" not in pose_rows(4, sift=False)  # rows for keypoints without a scale
    with pytest.raises(InputError, match="peers"):
        detect(img, 50, detector="aliked")


@needs_peers
def test_keynet_keeps_its_scale_and_the_peers_read_in_its_frame(textured_image, peers):
    """Key.Net's scale (kornia's LAF scale, the region it describes) is kept as the detector's frame: the
    ``keynet`` row is that scale upright, OriNet and our angle read in it, and it follows a zoom."""
    from patchpose.conventions import REFERENCE_RADIUS
    from patchpose.evaluation.peers import keynet_frames
    from patchpose.evaluation.rows import detect, pose_rows

    img = textured_image[:300, :300].copy()
    f = detect(img, 200, detector="keynet", peers=peers)
    xy, radius = keynet_frames(peers, img.astype(np.float32) / 255.0 if img.dtype == np.uint8 else img, 200)
    np.testing.assert_array_equal(xy, f.xy)
    np.testing.assert_allclose(REFERENCE_RADIUS * np.exp2(f.detector_scale), radius, rtol=1e-9)
    assert np.isfinite(f.detector_scale).all() and np.ptp(f.detector_scale) > 0  # several levels
    s, o = row_poses("keynet", f)
    np.testing.assert_array_equal(s[:, 0], f.detector_scale)
    assert np.all(o == 0)
    s, _ = row_poses("orinet", f, peers)
    np.testing.assert_array_equal(s[:, 0], f.detector_scale)
    assert pose_rows(4, sift=False, keynet=True)[:2] == ("lower", "keynet")
    assert "keynet" not in pose_rows(4) and "keynet" not in pose_rows(4, sift=False)
    with pytest.raises(InputError, match="detections with a scale and no angle"):
        row_poses("keynet", detect(img, 50))  # SIFT's detections have their own row
    # twice as large an image: Key.Net's regions grow by about an octave
    big = detect(np.kron(img, np.ones((2, 2), img.dtype)), 200, detector="keynet", peers=peers)
    assert 0.6 < np.median(big.detector_scale) - np.median(f.detector_scale) < 1.4


def test_peer_descriptors_need_the_folder():
    from patchpose.evaluation.descriptors import describer

    for name in ("tfeat", "hardtfeat"):
        with pytest.raises(InputError, match="--peers"):
            describer(name)


@needs_peers
def test_peer_rows_match_a_quarter_turn_that_upright_patches_miss(textured_image, peers):
    """Corners (Key.Net itself is not covariant under large turns: kornia's network with these weights finds
    few of its keypoints again beyond about 30°), OriNet's angle or AffNet + OriNet's frame, and each peer
    descriptor."""
    from patchpose.evaluation.descriptors import describer as make_describer
    from patchpose.evaluation.rows import MatchConfig, Run, match_images

    img = textured_image[60:340, 60:340].copy()
    w = img.shape[1]
    H = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, w - 1.0], [0.0, 0.0, 1.0]])  # np.rot90 on pixel centres
    for descriptor in ("hardtfeat", "tfeat"):
        cfg = MatchConfig(max_keypoints=150, descriptor=descriptor, detector="gftt")
        describer = make_describer(descriptor, peers=peers)
        d = describer.describe(describer_pyr(img), np.array([[140.0, 140.0]]), [0.0], [0.0])
        assert d.shape == (1, 128) and abs(np.linalg.norm(d) - 1) < 1e-5
        rows = ("lower", "orinet", "affnet+orinet")
        res = match_images(img, np.rot90(img).copy(), Run(describer, None, cfg, peers), rows, H)
        mma = {r: float(np.mean(v["error_px"] <= 3)) for r, v in res["rows"].items()}
        assert mma["orinet"] > 0.9 and mma["affnet+orinet"] > 0.9 and mma["lower"] < 0.1, (descriptor, mma)


def describer_pyr(img):
    from patchpose.data.patches import Pyramid

    return Pyramid(img)


# ------------------------------------------------------------------ the command
def test_eval_hpatches_takes_the_peer_options(monkeypatch):
    from patchpose.cli.main import main
    from patchpose.evaluation import hpatches_eval

    seen = {}

    class Reached(Exception):
        pass

    def stub(root, out, weights=None, **kw):
        seen.update(kw)
        raise Reached

    monkeypatch.setattr(hpatches_eval, "evaluate_hpatches", stub)
    argv = ["eval", "hpatches", "--root", "R", "--peers", "P", "--detector", "keynet", "--descriptor"]
    with pytest.raises(Reached):
        main([*argv, "hardtfeat"])
    assert (seen["peers"], seen["detector"], seen["descriptor"]) == ("P", "keynet", "hardtfeat")
    for detector, descriptor in (("gftt", "tfeat"), ("harris", "sift")):
        with pytest.raises(Reached):
            main(["eval", "hpatches", "--root", "R", "--detector", detector, "--descriptor", descriptor])
        assert (seen["peers"], seen["detector"], seen["descriptor"]) == (None, detector, descriptor)


def test_keynet_or_a_peer_descriptor_without_peers_is_a_one_line_error(tmp_path, capsys):
    from patchpose.cli.main import main

    for extra in (["--detector", "keynet"], ["--descriptor", "hardtfeat"]):
        rc = main(["eval", "hpatches", "--root", str(tmp_path), "--out", str(tmp_path / "o"), *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "--peers" in err[0], err
    rc = main(["eval", "hpatches", "--root", str(tmp_path), "--peers", str(tmp_path / "nope")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "peers folder not found" in err[0]
    assert not (tmp_path / "o").exists()


@needs_peers
def test_eval_hpatches_reports_the_peer_rows_with_descriptors_and_correct_matches(tmp_path, textured_image):
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    seq = tmp_path / "hp" / "v_turn"
    seq.mkdir(parents=True)
    img = (textured_image[::2, ::2] * 255).astype(np.uint8)
    w = img.shape[1]
    cv2.imwrite(str(seq / "1.ppm"), np.repeat(img[..., None], 3, 2))
    cv2.imwrite(str(seq / "2.ppm"), np.repeat(np.rot90(img)[..., None], 3, 2))
    np.savetxt(seq / "H_1_2", [[0.0, 1.0, 0.0], [-1.0, 0.0, w - 1.0], [0.0, 0.0, 1.0]])
    doc = evaluate_hpatches(
        tmp_path / "hp",
        tmp_path / "o",
        detector="gftt",
        descriptor="tfeat",
        peers=PEERS_DIR,
        max_keypoints=150,
        pose=False,
        progress=False,
        bootstrap=50,
        rows=["all"],
    )
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    from patchpose.evaluation.rows import pose_rows

    # the rows of corners (pinned in tests/evaluation/test_hpatches_eval.py), the peers' before the upper bound
    assert list(saved["mma"]) == [
        *pose_rows(4, sift=False)[:-1],
        "orinet",
        "affnet+orinet",
        "affnet_pooled_blend",
        "upper",
    ]
    per_kp = saved["descriptors_per_keypoint"]
    assert 1 <= per_kp.pop("ours_adaptive") < 4  # as many as the histograms have strong peaks
    assert per_kp == {r: 4 if r == "ours_top4" else 1 for r in saved["mma"] if r != "ours_adaptive"}
    for r in saved["mma"]:
        c = saved["correct_matches"][r]["viewpoint"]
        assert c == pytest.approx(saved["matches"][r] * saved["mma"][r]["viewpoint"][2])
    for r in ("orinet", "affnet_pooled_blend", "shape_pooled_blend"):  # a quarter turn: upright ones fail
        assert saved["correct_matches"][r]["viewpoint"] > 2 * saved["correct_matches"]["lower"]["viewpoint"]
    assert set(saved["correct_intervals"]["viewpoint"]["mean"]) == set(saved["mma"])
    assert "orinet" in saved["repeated_keypoints_pose"]["overall"]
    md = (tmp_path / "o" / "results.md").read_text()
    assert "| AffNet shape + OriNet orientation (kornia), detector's scale | 1 |" in md
    assert doc["setup"]["peers"] == str(PEERS_DIR) and doc["setup"]["detector"].startswith("Shi-Tomasi")


@needs_peers
def test_eval_rotation_adds_the_orinet_row_read_in_sifts_window(tmp_path):
    import cv2

    from conftest import make_textured_image
    from patchpose.evaluation.rotation_eval import evaluate_rotation

    photo = tmp_path / "tex.png"
    cv2.imwrite(str(photo), (make_textured_image(300, seed=2) * 255).astype(np.uint8))
    doc = evaluate_rotation(
        [photo], tmp_path / "o", angles=(0, 90), max_keypoints=200, progress=False, peers=PEERS_DIR
    )
    assert "orinet" in doc["mma_per_angle"] and "orinet" in doc["angle_consistency"]
    assert doc["mma_per_angle"]["orinet"]["90"][1] > doc["mma_per_angle"]["upright"]["90"][1]
    assert doc["angle_consistency"]["orinet"]["0-1 px"]["within_10"] > 0.8  # a quarter turn, found again


def test_scale_space_corners_are_strongest_first_and_grow_with_a_zoom(textured_image):
    """``gftt_scale``: Shi-Tomasi corners of kornia's scale space (no weights), one per location inside the image,
    a prefix of themselves when fewer are asked, each with its region's size; the ``keynet`` row reads that size
    upright, and twice as large an image gives regions about an octave larger."""
    from patchpose.evaluation.rows import detect

    img = textured_image[:300, :300].copy()
    f = detect(img, 300, detector="gftt_scale")
    h, w = img.shape
    assert 40 < len(f) <= 300 and np.isnan(f.sift_scale).all()
    assert (f.xy >= 0).all() and (f.xy[:, 0] <= w - 1).all() and (f.xy[:, 1] <= h - 1).all()
    assert len(np.unique(np.round(f.xy, 2), axis=0)) == len(f)
    assert np.array_equal(detect(img, 40, detector="gftt_scale").xy, f.xy[:40])
    assert np.isfinite(f.detector_scale).all() and np.ptp(f.detector_scale) > 0  # several levels
    s, o = row_poses("keynet", f)
    np.testing.assert_array_equal(s[:, 0], f.detector_scale)
    assert np.all(o == 0)
    big = detect(np.kron(img, np.ones((2, 2), img.dtype)), 300, detector="gftt_scale")
    assert 0.6 < np.median(big.detector_scale) - np.median(f.detector_scale) < 1.4
    assert (
        len(detect(img[:16, :18].copy(), 50, detector="gftt_scale")) == 0
    )  # under Key.Net's smallest side too
