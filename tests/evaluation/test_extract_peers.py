"""``patchpose extract --detector keynet --descriptor hardtfeat --peers DIR``: the peers' weights (never
bundled) read from ``../shared/peers`` beside the repository; the tests that need them skip without it."""

from pathlib import Path

import cv2
import h5py
import numpy as np
import pytest
import torch

from patchpose.cli.main import main
from patchpose.errors import InputError
from patchpose.integrations import extract as ex
from patchpose.integrations.formats import read_hloc_features

#: peer weights beside the repository (``../shared/peers``); a user's clone has none
PEERS = (Path(__file__).resolve().parents[2] / ".." / "shared" / "peers").resolve()
needs_peers = pytest.mark.skipif(
    not PEERS.is_dir(), reason=f"the peers' weights are not here ({PEERS}); a user's clone has none"
)
KEYPOINTS = 40


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """2 small textured images."""
    root = tmp_path_factory.mktemp("extract_peers") / "images"
    root.mkdir()
    rng = np.random.default_rng(1)
    for k in range(2):
        im = cv2.GaussianBlur((rng.random((96, 96)) * 255).astype(np.uint8), (0, 0), 1.5)
        cv2.imwrite(str(root / f"{k}.png"), cv2.normalize(im, None, 0, 255, cv2.NORM_MINMAX))
    return root


@needs_peers
def test_keynet_hardtfeat_writes_128d_descriptors_at_keynet_keypoints(images, tmp_path, capsys):
    torch.set_num_threads(1)
    out = tmp_path / "f.h5"
    args = ["extract", str(images), "--out", str(out), "--detector", "keynet", "--descriptor", "hardtfeat"]
    args += ["--max-keypoints", str(KEYPOINTS), "--peers", str(PEERS), "--no-progress"]
    assert main(args) == 0, capsys.readouterr().err
    with h5py.File(out, "r") as f:
        assert sorted(f) == ["0.png", "1.png"]
        for name in f:
            g = f[name]
            n = len(g["keypoints"])
            assert 0 < n <= KEYPOINTS and g["keypoints"].shape == (n, 2)
            assert g["keypoints"].dtype == g["descriptors"].dtype == np.float32
            assert g["descriptors"].shape == (128, n)
            assert g["scales"].shape == g["oris"].shape == (n,) and "scores" not in g
            np.testing.assert_allclose(np.linalg.norm(g["descriptors"][()], axis=0), 1.0, atol=1e-4)
        settings = f.attrs[ex.SETTINGS]
    assert '"keynet.pth"' in settings and '"hardtfeat.pth"' in settings and str(PEERS) in settings
    back = read_hloc_features(out, "0.png")
    assert back["descriptors"].shape[1] == 128 and np.isfinite(back["scale"]).all()
    # the scale written is Key.Net's own region, the angle ours read in it (the pipeline's ours_angle row)
    from patchpose.matching.pipeline import detect

    from patchpose.data.patches import load_image
    from patchpose.evaluation.peers import Peers

    feats = detect(load_image(images / "0.png"), KEYPOINTS, detector="keynet", peers=Peers(PEERS))
    np.testing.assert_allclose(back["scale"], feats.frame, atol=1e-5)
    # resuming onto the file with other settings (another descriptor) is refused
    with pytest.raises(InputError, match="other settings"):
        ex.extract_features(
            images, out, detector="keynet", descriptor="none", max_keypoints=KEYPOINTS, peers=PEERS,
            progress=False,
        )  # fmt: skip


@pytest.mark.parametrize("option", [["--detector", "keynet"], ["--descriptor", "hardtfeat"]])
def test_keynet_or_hardtfeat_without_peers_is_a_one_line_error(images, tmp_path, capsys, option):
    out = tmp_path / "f.h5"
    assert main(["extract", str(images), "--out", str(out), *option, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--peers" in err and option[1] in err and len(err.splitlines()) == 1
    assert not out.exists() and not out.with_name("f.h5.parts").exists()
    with pytest.raises(InputError, match="--peers"):
        ex.features_of_image(
            np.zeros((32, 32), np.uint8),
            None,
            *(("keynet", "none") if "keynet" in option else ("sift", "hardtfeat")),
        )
