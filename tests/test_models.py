"""Model registry, named configurations and the training presets."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from patchpose.data.photos import group_of, split_by_image
from patchpose.models import ModelConfig, create_model, get_config, list_models
from patchpose.training.config import list_presets, load_config


def test_registry_lists_the_paper_and_small_models():
    assert {"paper-resnet18", "small-cnn", "small-cnn-ms"} <= set(list_models())
    with pytest.raises(KeyError, match="unknown model"):
        get_config("nope")


def test_paper_reference_configuration():
    """ResNet-18 (ImageNet stem, global max pool) with the 4-layer MLP heads, RGB 32×32, 13 + 36 bins."""
    m = create_model("paper-resnet18")
    assert m.cfg.arch == "resnet18" and m.cfg.head == "mlp" and m.cfg.in_channels == 3
    assert 11e6 < sum(p.numel() for p in m.parameters()) < 13e6
    out = m.eval()(torch.rand(2, 3, 32, 32))
    assert out["scale_logits"].shape == (2, 13) and out["ori_logits"].shape == (2, 36)


@pytest.mark.parametrize("heads", [["scale"], ["orientation"], ["scale", "orientation"]])
def test_heads_are_optional(heads):
    out = create_model("small-cnn", heads=heads)(torch.rand(3, 1, 32, 32))
    assert set(out) == {{"scale": "scale_logits", "orientation": "ori_logits"}[h] for h in heads}


def test_multi_window_input_channels():
    m = create_model("small-cnn-ms")
    assert m.cfg.in_channels == 3
    with pytest.raises(ValueError, match="expected inputs"):
        m(torch.rand(2, 1, 32, 32))


def test_bad_model_configs():
    with pytest.raises(ValueError):
        create_model(ModelConfig(arch="vgg"))
    with pytest.raises(ValueError):
        create_model("small-cnn", heads=["pose"])
    with pytest.raises(ValueError, match="unknown model config keys"):
        ModelConfig.from_dict({"arch": "small-cnn", "depth": 3})
    for bad, match in (
        ({"patch_size": 0}, "patch_size"),
        ({"windows": [1.0, 1e6]}, "windows"),
        ({"num_ori_bins": 2}, "orientation bins"),
    ):
        with pytest.raises(ValueError, match=match):
            ModelConfig(arch="small-cnn", **bad).validate()


def test_presets_load_and_overrides_apply():
    assert {"v1", "paper"} <= set(list_presets())
    paper = load_config("paper")
    assert paper.optim.optimizer == "sgd" and paper.optim.lr == 3.0 and paper.loss.temperature == 20.0
    assert paper.loss.scale_bins == "official" and paper.optim.batch_size == 64
    cfg = load_config("v1", ["optim.lr=0.01", "model.windows=[1.0,2.0]"])
    assert cfg.optim.lr == 0.01 and list(cfg.model.windows) == [1.0, 2.0]
    with pytest.raises(ValueError, match="bad training config"):
        load_config("v1", ["optim.lrr=1"])
    with pytest.raises(FileNotFoundError):
        load_config("no-such-preset")


def test_split_by_image_keeps_scene_groups_together():
    assert group_of("aero1.jpg") == group_of("aero3.jpg") == "aero"
    assert group_of("motorcycle_left.png") == group_of("motorcycle_right.png")
    assert group_of("leuvenA.jpg") == group_of("leuvenB.jpg")
    paths = [f"{n}{i}.jpg" for n in ("aero", "boat", "cat", "dog", "elk", "fox", "gnu") for i in (1, 2, 3)]
    sp = split_by_image(paths, val_frac=0.3, test_frac=0.3)
    assert sorted(sum(sp.values(), [])) == sorted(paths)
    where = {group_of(p): k for k, v in sp.items() for p in v}
    for k, v in sp.items():
        assert all(where[group_of(p)] == k for p in v)
    assert split_by_image(paths, 0.3, 0.3) == sp  # deterministic


def test_camera_file_names_are_split_photo_by_photo():
    """A camera's counter (IMG_0001, DSC00042) is not a view number: stripping it put every photo of a
    camera folder into one group, so one split got all of them."""
    assert group_of("IMG_0001.jpg") != group_of("IMG_0002.jpg")
    assert group_of("DSC00042.JPG") == "dsc00042"
    assert group_of("scenetext01.jpg") == group_of("scenetext06.jpg") == "scenetext"  # views: 1-2 digits
    paths = [f"IMG_{i:04d}.jpg" for i in range(200)] + [f"DSC{i:05d}.JPG" for i in range(100)]
    sp = split_by_image(paths, val_frac=0.1, test_frac=0.1)
    assert all(len(v) >= 10 for v in sp.values())


def test_fetched_wheel_photos_are_filed_under_their_own_source_and_need_every_wheel(tmp_path, monkeypatch):
    """Each wheel's photos go to its own folder; a wheel that is not installed is an error, not a test split
    silently short of its photos."""
    import patchpose.data.photos as P
    from patchpose.errors import InputError

    mpl = [w for w in P.WHEEL_PHOTOS if w[0] == "matplotlib"]
    monkeypatch.setattr(P, "WHEEL_PHOTOS", mpl)
    splits = P.fetch_photos(tmp_path / "a", debian=False)
    assert splits["test"] == ["matplotlib/grace_hopper.jpg"]
    assert (tmp_path / "a" / "matplotlib" / "grace_hopper.jpg").is_file()
    monkeypatch.setattr(P, "WHEEL_PHOTOS", [("nowheel", "no_such_module_patchpose", "a.png"), *mpl])
    with pytest.raises(InputError, match=r"\[eval\]"):
        P.fetch_photos(tmp_path / "b", debian=False)
    assert not (tmp_path / "b" / "splits.json").exists()


def test_fetched_debian_photos_take_a_plasma_wallpapers_largest_image(tmp_path, monkeypatch, caplog):
    """A Plasma wallpaper is a folder (``NAME/contents/images/<w>x<h>.jpg``, a screenshot and a dark
    variant beside it): its largest image is copied as ``NAME.jpg``; a plain ``NAME.<ext>`` file is copied as
    it is, and files of the package not listed are not."""
    import cv2
    import numpy as np

    import patchpose.data.photos as P

    root = tmp_path / "unpacked"
    wall = root / "usr/share/wallpapers/Path/contents"
    (wall / "images").mkdir(parents=True)
    (wall / "images_dark").mkdir()
    rng = np.random.default_rng(0)
    cv2.imwrite(str(wall / "images" / "640x480.jpg"), rng.integers(0, 255, (48, 64), dtype=np.uint8))
    cv2.imwrite(str(wall / "images" / "1280x960.jpg"), rng.integers(0, 255, (96, 128), dtype=np.uint8))
    cv2.imwrite(str(wall / "images_dark" / "2560x1920.jpg"), rng.integers(0, 255, (192, 256), dtype=np.uint8))
    cv2.imwrite(str(wall / "screenshot.png"), rng.integers(0, 255, (300, 300), dtype=np.uint8))
    cv2.imwrite(str(root / "usr/share/wallpapers/Plain.png"), np.zeros((40, 40), np.uint8))
    cv2.imwrite(str(root / "usr/share/wallpapers/Other.png"), np.zeros((40, 40), np.uint8))
    monkeypatch.setattr(P, "WHEEL_PHOTOS", [])
    monkeypatch.setattr(P, "DEBIAN_PHOTOS", {"fake-base": ("usr/share/wallpapers", ["Plain"])})
    monkeypatch.setattr(P, "EXTRA_DEBIAN_PHOTOS", {"fake-extra": ("usr/share/wallpapers", ["Path", "Gone"])})
    monkeypatch.setattr(P, "_unpack_debian", lambda pkg, tmp: root)
    splits = P.fetch_photos(tmp_path / "pool", debian=True)
    assert sorted(splits["train"] + splits["val"]) == ["fake-base/Plain.png"]  # the extra pool is opt-in
    splits = P.fetch_photos(tmp_path / "pool", debian=True, extra=True)
    got = sorted(splits["train"] + splits["val"])
    assert got == ["fake-base/Plain.png", "fake-extra/Path.jpg"]
    assert (
        "photo Gone not found" in caplog.text
    )  # a listed photo the package lacks is said, not dropped silently
    copied = cv2.imread(str(tmp_path / "pool" / "fake-extra" / "Path.jpg"), cv2.IMREAD_GRAYSCALE)
    assert copied.shape == (96, 128)  # the largest of contents/images, not the dark variant or the screenshot
    # the extra photos alone, no wheel photo and no default Debian photo: a held-out folder
    from patchpose.errors import InputError

    monkeypatch.setattr(P, "WHEEL_PHOTOS", [w for w in P.WHEEL_PHOTOS if w[0] == "matplotlib"])
    alone = P.fetch_photos(tmp_path / "held_out", debian=True, extra_only=True)
    assert alone["test"] == [] and sorted(alone["train"] + alone["val"]) == ["fake-extra/Path.jpg"]
    assert sorted(p.name for p in (tmp_path / "held_out").rglob("*.*")) == ["Path.jpg", "splits.json"]
    with pytest.raises(InputError, match="--no-debian"):
        P.fetch_photos(tmp_path / "x", debian=False, extra_only=True)


#: a small polar-cnn in v2's layout (31 rings, 25 scale bins over [-4, 4], whole-circle last conv)
SMALL_POLAR = dict(
    arch="polar-cnn",
    num_scale_bins=25,
    scale_range=[-4.0, 4.0],
    polar_rings=31,
    polar_angles=36,
    polar_channels=[],
    polar_head_width=16,
    polar_harmonics=2,
    polar_ori_dilations=[1, 2],
    polar_ori_kernel=36,
)


def test_polar_orientation_head_can_ignore_the_innermost_rings():
    """polar_ori_min_ring=k: the orientation logits do not depend on rings 0..k-1 (the scale logits still
    do), with the same parameters as k=0, so weights move between the two."""
    from patchpose.models import ModelConfig, PoseNet

    base = SMALL_POLAR
    torch.manual_seed(0)
    m0 = PoseNet(ModelConfig.from_dict(base)).eval()
    m9 = PoseNet(ModelConfig.from_dict({**base, "polar_ori_min_ring": 9})).eval()
    m9.load_state_dict(m0.state_dict())  # same parameters
    x = torch.rand(4, 1, 31, 36)
    y = x.clone()
    y[:, :, :9] = torch.rand(4, 1, 9, 36)
    y[:, :, :9] += 0.5 * y[:, :, :9].mean()  # the per-grid standardisation sees the change too
    with torch.no_grad():
        a, b = m9(x), m9(y)
        a0, b0 = m0(x), m0(y)
    assert not torch.allclose(a0["ori_logits"], b0["ori_logits"], atol=1e-4)  # k=0 reads them
    assert not torch.allclose(a["scale_logits"], b["scale_logits"], atol=1e-4)
    # only the standardisation couples the inner rings to the others: with it off the logits are equal
    m9.cfg.standardize = False
    with torch.no_grad():
        torch.testing.assert_close(m9(x)["ori_logits"], m9(y)["ori_logits"])
    with pytest.raises(ValueError, match="ori_min_ring"):
        PoseNet(ModelConfig.from_dict({**base, "polar_ori_min_ring": 31}))


def test_polar_orientation_cut_follows_the_estimated_scale():
    """polar_ori_rings_below_scale=n: the orientation head sees a grid whose rings more than n rings inside
    the estimated characteristic ring (scale bin b sits at ring (rings − bins)/2 + b) are zeros."""
    from patchpose.models import ModelConfig, PoseNet

    base = {**SMALL_POLAR, "standardize": False}
    torch.manual_seed(1)
    m0 = PoseNet(ModelConfig.from_dict(base)).eval()
    mc = PoseNet(ModelConfig.from_dict({**base, "polar_ori_rings_below_scale": 4})).eval()
    mc.load_state_dict(m0.state_dict())
    x = torch.randn(6, 1, 31, 36)
    with torch.no_grad():
        out = mc(x)
        cut = 3 + out["scale_logits"].argmax(1) - 4
        xz = x.clone()
        for i, c in enumerate(cut.tolist()):
            xz[i, :, : max(c, 0)] = 0.0
        torch.testing.assert_close(out["ori_logits"], m0(xz)["ori_logits"])
        assert not torch.allclose(out["ori_logits"], m0(x)["ori_logits"])
    with pytest.raises(ValueError, match="scale head"):
        PoseNet(ModelConfig.from_dict({**base, "heads": ["orientation"], "polar_ori_rings_below_scale": 2}))


def test_polar_orientation_window_moves_with_the_zoom():
    """polar_ori_window=W: the orientation head reads the 2W + 1 rings centred on the characteristic ring
    that the scale head finds, so content zoomed by whole rings (the grid shifted along its rings) gives the
    scale logits shifted by as many bins and the same orientation logits; rotating it rolls them."""
    from patchpose.models import ModelConfig, PoseNet

    torch.manual_seed(3)
    m = PoseNet(ModelConfig.from_dict({**SMALL_POLAR, "standardize": False, "polar_ori_window": 5})).eval()
    x = torch.zeros(4, 1, 31, 36)
    x[:, :, 9:22] = torch.randn(4, 1, 13, 36)  # content well inside the grid: the ends see zeros only
    with torch.no_grad():
        out = m(x)
        for r in (-2, 1, 3):
            z = m(torch.roll(x, r, dims=2))  # zoomed by r rings (only zeros wrap around)
            torch.testing.assert_close(z["scale_logits"][:, 3:-3], out["scale_logits"][:, 3 - r : 22 - r])
            assert torch.equal(z["scale_logits"].argmax(1), out["scale_logits"].argmax(1) + r)
            torch.testing.assert_close(z["ori_logits"], out["ori_logits"])
        turned = m(torch.roll(x, 7, dims=3))["ori_logits"]
        torch.testing.assert_close(turned, torch.roll(out["ori_logits"], 7, dims=1))
    # the window itself: rings centre − W … centre + W, zeros where it leaves the grid
    logits = torch.full((2, 25), -1.0)
    logits[0, 0], logits[1, 20] = 1.0, 1.0  # centres at rings 3 and 23
    f = torch.arange(31.0)[None, None, :, None].expand(2, 1, 31, 36) + 1.0  # ring k holds k + 1
    w = m.polar._window(f, logits)[:, 0, :, 0]
    assert w[0].tolist() == [0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert w[1].tolist() == [float(k + 1) for k in range(18, 29)]
    with pytest.raises(ValueError, match="scale head"):
        PoseNet(ModelConfig.from_dict({**SMALL_POLAR, "heads": ["orientation"], "polar_ori_window": 2}))
    with pytest.raises(ValueError, match="replaces"):
        PoseNet(ModelConfig.from_dict({**SMALL_POLAR, "polar_ori_window": 2, "polar_ori_min_ring": 3}))


def test_gradient_orientation_histograms_vote_for_the_displayed_gradient_direction():
    """A brightness ramp rising towards θ (counter-clockwise as displayed, y down in the image) puts the
    votes of every ring in the bin of θ, split linearly between two bins when θ falls between them."""
    import math

    import numpy as np

    from patchpose.data.patches import Pyramid
    from patchpose.data.polar import PolarGrid, extract_polar
    from patchpose.models.polar import gradient_orientation_histograms

    grid = PolarGrid(31, 36, 3)
    yy, xx = np.mgrid[0:1300, 0:1300].astype(np.float32)
    for deg, bins in ((0, {0: 1.0}), (30, {3: 1.0}), (95, {9: 0.5, 10: 0.5}), (200, {20: 1.0})):
        t = math.radians(deg)
        img = xx * math.cos(t) - yy * math.sin(t)
        img = ((img - img.min()) / (img.max() - img.min())).astype(np.float32)
        x = torch.from_numpy(extract_polar(Pyramid(img), np.array([[650.0, 650.0]]), 0.0, 0.0, grid)[:, 0])
        h = gradient_orientation_histograms(x, 3)[0]
        assert h.shape == (31, 36)
        assert torch.all(h[[0, -1]] == 0)  # the end rings have no radial difference
        share = h.sum(0) / h.sum()
        for b, w in bins.items():
            assert share[b] == pytest.approx(w, abs=0.02), (deg, b)


def test_gradient_orientation_histograms_are_equivariant():
    """Rolling the grid along its angles (a turn by whole steps) rolls every histogram by as many bins;
    shifting it along its rings (a zoom by whole rings) shifts them by as many rings: the radial and
    tangential differences are per unit of log radius and of angle, so a zoom leaves them unchanged."""
    from patchpose.models.polar import gradient_orientation_histograms as goh

    torch.manual_seed(0)
    x = torch.randn(3, 31, 36)
    h = goh(x, 3)
    torch.testing.assert_close(goh(torch.roll(x, 5, 2), 3), torch.roll(h, 5, 2), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(goh(torch.roll(x, 2, 1), 3)[:, 3:-1], h[:, 1:-3])
    assert not torch.allclose(goh(torch.roll(x, 2, 1), 3), h)


def test_polar_model_with_gradient_histograms_is_equivariant_and_exports():
    """polar_grad_hist: the orientation head reads K more channels; turning the grid still rolls its logits
    exactly, and the ONNX graph gives the same numbers."""
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort

    from patchpose.models import ModelConfig, PoseNet
    from patchpose.onnx_backend import export_bytes

    torch.manual_seed(2)
    m = PoseNet(ModelConfig.from_dict({**SMALL_POLAR, "polar_grad_hist": True})).eval()
    plain = PoseNet(ModelConfig.from_dict(SMALL_POLAR))
    extra = sum(p.numel() for p in m.parameters()) - sum(p.numel() for p in plain.parameters())
    assert extra == 31 * 3 * SMALL_POLAR["polar_head_width"]  # one more input channel per ring
    x = torch.rand(4, 1, 31, 36)
    with torch.no_grad():
        out = m(x)
        turned = m(torch.roll(x, 11, dims=3))
    torch.testing.assert_close(turned["ori_logits"], torch.roll(out["ori_logits"], 11, dims=1))
    sess = ort.InferenceSession(export_bytes(m), providers=["CPUExecutionProvider"])
    got = dict(zip(["scale_logits", "ori_logits"], sess.run(None, {"x": x.numpy()})))
    for k in got:
        torch.testing.assert_close(torch.from_numpy(got[k]), out[k], atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="grad_hist"):
        PoseNet(ModelConfig.from_dict({**SMALL_POLAR, "polar_grad_hist": True, "polar_ori_window": 3}))


def test_orientation_vector_turns_with_the_content_and_exports():
    """polar_ori_vector: turning the grid by j angle steps multiplies the vector by e^{i·2πj/A} exactly (its
    angle moves by j·10°), the histograms are those of the same network without it, and ONNX agrees."""
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort

    from patchpose.models import PoseNet
    from patchpose.onnx_backend import export_bytes

    torch.manual_seed(3)
    m = PoseNet(ModelConfig.from_dict({**SMALL_POLAR, "polar_ori_vector": True})).eval()
    with torch.no_grad():  # give the hidden channels a say too
        m.polar.ori_vector.hidden_weight.normal_()
    x = torch.rand(4, 1, 31, 36)
    with torch.no_grad():
        out = m(x)
        turned = m(torch.roll(x, 7, dims=3))
    z = torch.complex(*out["ori_vector"].double().unbind(1))
    zt = torch.complex(*turned["ori_vector"].double().unbind(1))
    rot = torch.exp(torch.tensor(1j * 7 * 2 * torch.pi / 36, dtype=torch.complex128))
    torch.testing.assert_close(zt, z * rot, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(turned["ori_logits"], torch.roll(out["ori_logits"], 7, dims=1))
    sess = ort.InferenceSession(export_bytes(m), providers=["CPUExecutionProvider"])
    got = dict(zip(["scale_logits", "ori_logits", "ori_vector"], sess.run(None, {"x": x.numpy()})))
    assert set(got) == set(out)
    for k in got:
        torch.testing.assert_close(torch.from_numpy(got[k]), out[k], atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="ori_vector needs both heads"):
        PoseNet(ModelConfig.from_dict({**SMALL_POLAR, "polar_ori_vector": True, "heads": ["orientation"]}))
    # a Cartesian network has no vector: it listed one among its outputs and returned no orientation
    for opt in ("polar_ori_vector", "polar_grad_hist"):
        with pytest.raises(ValueError, match="polar-cnn only"):
            ModelConfig.from_dict({"arch": "small-cnn", opt: True}).validate()


def test_orientation_vector_ring_weights_move_with_the_scale_found():
    """The grid term weighs ring r by w(r − ρ), averaged over the scale head's characteristic ring ρ: content
    zoomed by one ring (one scale bin) with its scale estimate moved by one bin gives the same vector."""
    from patchpose.models.polar import OrientationVector

    torch.manual_seed(4)
    v = OrientationVector(rings=31, num_scale_bins=25, hidden=0)
    with torch.no_grad():
        v.profile.normal_()
    grid = torch.rand(2, 31, 36)
    grid[:, -1] = 0.0  # what a zoom by one ring pushes out of the grid
    p = torch.softmax(torch.randn(2, 25), 1)
    p[:, -1] = 0.0
    p = p / p.sum(1, keepdim=True)
    zoomed = torch.cat([torch.zeros_like(grid[:, :1]), grid[:, :-1]], 1)  # content one ring further out
    p_zoomed = torch.cat([torch.zeros_like(p[:, :1]), p[:, :-1]], 1)
    empty = torch.zeros(2, 0, 36)
    torch.testing.assert_close(v(zoomed, empty, p_zoomed), v(grid, empty, p), atol=1e-5, rtol=1e-5)
    # and the start: the weights of the rings up to 3 inside the characteristic ring, growing outwards
    # (an intensity centroid's), none beyond
    w = OrientationVector(31, 25, 0).profile.detach()
    delta = torch.arange(-30, 31)
    assert torch.all(w[delta > -3] == 0) and w[delta == -3].item() == 1.0
    assert torch.all(torch.diff(w[delta <= -3]) > 0)


@pytest.mark.parametrize("dilations, reach", [([1, 1], 3), ([1, 2, 4], 8)])
def test_polar_scale_head_sees_as_many_rings_as_its_dilations_say(dilations, reach):
    """polar_scale_dilations: a change to one ring moves exactly the scale logits within the head's reach
    (1 + Σ dilations rings), no others; the default [1, 1] is the layout the bundled weights load into."""
    torch.manual_seed(5)
    m = create_model({**SMALL_POLAR, "polar_scale_dilations": dilations}).eval()
    x = torch.rand(1, 1, 31, 36)
    y = x.clone()
    y[0, 0, 15] = torch.rand(36) * 3.0  # ring 15 = scale bin 12 (rings 3 … 27 hold bins 0 … 24)
    with torch.no_grad():  # the network itself (the model's per-grid standardisation would mix every ring)
        moved = (m.polar(x)["scale_logits"] - m.polar(y)["scale_logits"]).abs()[0] > 1e-6
    assert moved.nonzero()[:, 0].tolist() == list(range(12 - reach, 12 + reach + 1))
    with pytest.raises(ValueError, match="bad scale head"):
        create_model({**SMALL_POLAR, "polar_scale_dilations": [1, 16]})


@pytest.mark.parametrize("extra", [{}, {"polar_ori_window": 2}, {"polar_ori_vector": True}])
def test_a_read_can_run_the_scale_head_alone(extra):
    """``model(x, heads=("scale",))`` gives exactly the scale logits of a full read and nothing else (what a
    pass before the last runs); ``("orientation",)`` the orientation outputs only, even where the orientation
    head reads the scale found; a head the model lacks, or none, is a clear error."""
    from patchpose.models import ModelConfig, PoseNet

    torch.manual_seed(0)
    m = PoseNet(ModelConfig.from_dict({**SMALL_POLAR, **extra})).eval()
    x = torch.rand(5, 1, 31, 36)
    with torch.no_grad():
        full = m(x)
        s = m(x, heads=("scale",))
        o = m(x, heads=["orientation"])
    assert set(s) == {"scale_logits"} and set(o) == set(full) - {"scale_logits"}
    torch.testing.assert_close(s["scale_logits"], full["scale_logits"], rtol=0, atol=0)
    for k, v in o.items():
        torch.testing.assert_close(v, full[k], rtol=0, atol=0)
    for bad in [(), ("pose",)]:
        with pytest.raises(ValueError, match="subset"):
            m(x, heads=bad)
    cart = create_model("small-cnn", heads=["orientation"]).eval()
    assert set(cart(torch.rand(2, 1, 32, 32), heads=["orientation"])) == {"ori_logits"}
    with pytest.raises(ValueError, match="subset"):
        cart(torch.rand(2, 1, 32, 32), heads=["scale"])


def test_predict_histograms_runs_the_heads_asked_for():
    """``predict_histograms(..., heads=("scale",))`` returns the scale histogram of a full read, only."""
    import numpy as np

    from patchpose.inference import predict_histograms
    from patchpose.models import ModelConfig, PoseNet

    torch.manual_seed(0)
    m = PoseNet(ModelConfig.from_dict(SMALL_POLAR)).eval()
    x = np.random.default_rng(0).random((7, 1, 31, 36), dtype=np.float32)
    full = predict_histograms(m, x, batch_size=3)
    s = predict_histograms(m, x, batch_size=3, heads=("scale",))
    assert set(s) == {"scale_hist"} and set(full) == {"scale_hist", "orientation_hist"}
    np.testing.assert_array_equal(s["scale_hist"], full["scale_hist"])


class _OneDevicePerOp(TorchDispatchMode):
    """Fails any operation whose tensor arguments sit on different devices (a CPU scalar aside), as CUDA
    does; on the meta device it runs without a GPU, on a CPU-only build too."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        devices = {
            t.device
            for t in tree_leaves((args, kwargs))
            if isinstance(t, torch.Tensor) and not (t.device.type == "cpu" and t.dim() == 0)
        }
        if len(devices) > 1:
            raise AssertionError(f"{func} mixes devices {sorted(map(str, devices))}")
        return func(*args, **(kwargs or {}))


def test_one_device_per_op_mode_catches_a_mixed_operation():
    with pytest.raises(AssertionError, match="mixes devices"), _OneDevicePerOp():
        torch.ones(2, 3, device="meta") @ torch.ones(3, 2)


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"polar_channels": [4], "polar_ori_vector": True, "polar_ori_window": 2},
        {"polar_grad_hist": True, "polar_ori_vector": True},
        {"polar_ori_rings_below_scale": 3, "polar_scale_dilations": [1, 2, 4]},
    ],
)
def test_polar_model_runs_on_another_device(extra):
    """Every tensor a polar network makes on the fly lands on its input's device (a CUDA run failed on a
    cosine table made on the CPU): the network and its input on the meta device, and no operation may mix
    devices."""
    cfg = ModelConfig(**{**SMALL_POLAR, **extra})
    model = create_model(cfg).eval().to("meta")
    with _OneDevicePerOp():
        out = model(torch.empty(3, *cfg.input_shape, device="meta"))
    assert out and all(v.device.type == "meta" and v.shape[0] == 3 for v in out.values())
