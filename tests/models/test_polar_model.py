"""The polar-cnn (``patchpose.models.polar``): exact equivariance, the loss's direction on its outputs, its
configuration, and the estimator on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from conftest import make_textured_image
from patchpose.data.patches import Pyramid
from patchpose.data.polar import extract_polar
from patchpose.estimator import PatchPoseEstimator
from patchpose.losses import LossConfig, entropy, pose_loss
from patchpose.models import ModelConfig, create_model

NET_GRID = create_model("polar-cnn").cfg.polar_grid  # 31 rings


@pytest.fixture(scope="module")
def pyr():
    return Pyramid(make_textured_image(400))


def _random_polar_net(**kw):
    torch.manual_seed(0)
    m = create_model("polar-cnn", **kw).eval()
    for mod in m.modules():  # non-trivial BN statistics, so that eval mode is not an identity
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.1, 0.1)
            mod.running_var.uniform_(0.5, 1.5)
    return m


@pytest.fixture(scope="module")
def net():
    return _random_polar_net()


def test_polar_net_is_exactly_equivariant(pyr, net):
    """Orientation logits roll with the angle steps; scale logits shift with whole rings (interior).

    The per-input standardisation uses the whole grid, whose ends change with scale, so the scale part is
    exact only without it."""
    xy = np.array([[190.0, 205.0], [210.0, 185.0], [200.0, 200.0]])
    a = torch.from_numpy(extract_polar(pyr, xy, 0.2, 1.0, NET_GRID))
    b = torch.from_numpy(extract_polar(pyr, xy, 0.2 - 2 / 3, 1.0 - 3 * math.pi / 18, NET_GRID))
    with torch.no_grad():
        oa = net(a)
        rolled = net(torch.roll(a, 3, dims=3))["ori_logits"]
        plain = _random_polar_net(standardize=False)
        sa, sb = plain(a)["scale_logits"], plain(b)["scale_logits"]
    torch.testing.assert_close(rolled, torch.roll(oa["ori_logits"], 3, dims=1), rtol=1e-4, atol=1e-4)
    # scale: b's logits are a's moved up by 2 bins, away from the ends of the grid
    torch.testing.assert_close(sb[:, 2:11], sa[:, 0:9], rtol=1e-4, atol=1e-4)


def test_loss_agrees_with_the_direction_of_the_shifts(pyr):
    """For grid-aligned pairs and the true Δ, the symmetric cross-entropy reaches its floor, the two
    histograms' entropies (it does so only if the shifted histograms coincide); with −Δ it does not."""
    net = _random_polar_net()
    with torch.no_grad():  # peakier histograms
        net.polar.ori_convs[-1].weight.mul_(30.0)
    xy = np.array([[200.0, 200.0]]) + np.arange(4)[:, None] * 7.0
    cfg = LossConfig(ori_entropy=0.0, ori_batch_entropy=0.0)
    n = len(xy)
    a = torch.from_numpy(extract_polar(pyr, xy, 0.0, 0.0, NET_GRID))
    rot = torch.from_numpy(extract_polar(pyr, xy, 0.0, -4 * math.pi / 18, NET_GRID))  # content turned +40°
    zero = torch.zeros(n)
    with torch.no_grad():
        oa, orot = net(a), net(rot)
    # shifts in bins: +4 orientation bins, +1 scale bin
    floor = (entropy(oa["ori_logits"].softmax(1)) + entropy(orot["ori_logits"].softmax(1))).mean()
    right = pose_loss(oa, orot, zero, torch.full((n,), 4.0), cfg)["orientation"]
    wrong = pose_loss(oa, orot, zero, torch.full((n,), -4.0), cfg)["orientation"]
    assert right == pytest.approx(float(floor), abs=1e-4) and wrong > right + 0.1
    # scale, with an exactly equivariant stand-in for the scale head (a random network peaks at the grid
    # ends): logits = ring means of an image that is a bright ring of radius 16 px about the keypoint
    yy, xx = np.mgrid[0:400, 0:400]
    annulus = np.exp(-((np.hypot(xx - 200, yy - 200) - 16.0) ** 2) / 8.0).astype(np.float32)
    apyr = Pyramid(annulus)
    c = np.array([[200.0, 200.0]])

    def ring_logits(log2_scale):
        x = extract_polar(apyr, c, log2_scale, 0.0, NET_GRID)[0, 0].mean(1)
        return {"scale_logits": torch.from_numpy(20.0 * x[3:28])[None]}

    la, lb = ring_logits(0.0), ring_logits(-1 / 3)  # b: content enlarged by 2^(1/3)
    assert int(la["scale_logits"].argmax()) == 12 and int(lb["scale_logits"].argmax()) == 13
    one, z1 = torch.ones(1), torch.zeros(1)
    floor = (entropy(la["scale_logits"].softmax(1)) + entropy(lb["scale_logits"].softmax(1))).mean()
    right = pose_loss(la, lb, one, z1, cfg)["scale"]
    wrong = pose_loss(la, lb, -one, z1, cfg)["scale"]
    assert right == pytest.approx(float(floor), rel=0.05) and wrong > right + 0.5


def test_whole_circle_conv_matches_the_direct_convolution():
    from patchpose.models.polar import whole_circle_conv

    torch.manual_seed(2)
    for a in (36, 72, 9):
        conv = torch.nn.Conv1d(5, 2, a)
        h = torch.randn(4, 5, a)
        p = (a - 1) // 2
        direct = conv(torch.nn.functional.pad(h, (p, a - 1 - p), mode="circular"))
        torch.testing.assert_close(whole_circle_conv(h, conv), direct, rtol=1e-4, atol=1e-4)


def test_wide_orientation_head_stays_equivariant():
    """Dilated hidden convs and a last conv over the whole circle (even kernel) still roll exactly."""
    torch.manual_seed(1)
    m = create_model("polar-cnn", polar_ori_dilations=[1, 2, 4], polar_ori_kernel=36).eval()
    x = torch.rand(3, 1, 31, 36)
    with torch.no_grad():
        a, b = m(x)["ori_logits"], m(torch.roll(x, 7, dims=3))["ori_logits"]
    torch.testing.assert_close(b, torch.roll(a, 7, dims=1), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="orientation head"):
        create_model("polar-cnn", polar_ori_kernel=37)
    with pytest.raises(ValueError, match="orientation head"):
        create_model("polar-cnn", polar_ori_dilations=[18])


def test_polar_config_validation():
    with pytest.raises(ValueError, match="even number"):
        create_model("polar-cnn", polar_rings=24)
    with pytest.raises(ValueError, match="multiple"):
        create_model("polar-cnn", polar_angles=40)
    with pytest.raises(ValueError, match="windows"):
        create_model("polar-cnn", windows=[1.0, 2.0])
    with pytest.raises(ValueError, match="whole fraction"):
        create_model("polar-cnn", num_scale_bins=14)
    with pytest.raises(ValueError, match="centred on 0"):
        create_model("polar-cnn", scale_range=[-4.0, 3.0], num_scale_bins=22, polar_rings=28)
    with pytest.raises(ValueError, match="scale_range"):
        create_model("small-cnn", scale_range=[1.0, 2.0])
    m = create_model("polar-cnn")
    assert m.cfg.scale_bins_per_octave == 3.0 and m.cfg.polar_grid.rings_per_octave == 3
    m = create_model("polar-cnn", polar_angles=72)
    assert m.cfg.input_shape == (1, 31, 72)
    assert m(torch.rand(2, 1, 31, 72))["ori_logits"].shape == (2, 36)
    with pytest.raises(ValueError, match="expected inputs"):
        m(torch.rand(2, 1, 32, 32))
    assert ModelConfig().polar_grid is None


def test_estimator_on_a_polar_model_follows_the_conventions(net):
    """Turning the image by 90° CCW adds 9 orientation bins, exactly, through the whole estimator."""
    img = (make_textured_image(400) * 255).astype(np.uint8)
    est = PatchPoseEstimator(net)
    kps = np.array([[150.0, 170.0], [250.0, 260.0], [5.0, 200.0]])
    r0 = est.estimate(img, kps)
    assert r0.valid.tolist() == [True, True, False]  # 5 px from the border < 64 px margin
    rot = np.ascontiguousarray(np.rot90(img))  # CCW as displayed: (x, y) → (y, W − 1 − x)
    kr = np.stack([kps[:, 1], 399 - kps[:, 0]], 1)
    r1 = est.estimate(rot, kr)
    np.testing.assert_allclose(
        r1.orientation_hist[:2], np.roll(r0.orientation_hist[:2], 9, axis=1), rtol=1e-3, atol=1e-5
    )
    np.testing.assert_allclose(r1.scale_hist[:2], r0.scale_hist[:2], rtol=1e-3, atol=1e-5)
