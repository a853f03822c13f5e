"""The affine shape network, its loss and its weights files: exact values on hand-built cases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from patchpose.errors import WeightsError
from patchpose.losses import shape_alignment_loss, shape_misalignment
from patchpose.models.shapenet import ShapeNet, ShapeNetConfig, upright_inverse, upright_shape
from patchpose.weights import load_shape_weights, load_weights, save_shape_weights


def _rot(t: float) -> torch.Tensor:
    c, s = math.cos(t), math.sin(t)
    return torch.tensor([[c, s], [-s, c]], dtype=torch.float64)


def _upright_part(X: torch.Tensor) -> torch.Tensor:
    """X = L·Q with L upright (lower triangular), Q a rotation (an LQ decomposition by QR of Xᵀ)."""
    q, r = torch.linalg.qr(X.T)
    d = torch.diag(torch.sign(torch.diagonal(r)))
    return (d @ r).T


def test_misalignment_exact_values():
    """Identity shapes under a squeeze by 2 and 1/2: the log anisotropy ln 4; a pure rotation: 0."""
    eye = torch.eye(2, dtype=torch.float64)[None]
    B = torch.tensor([[[2.0, 0.0], [0.0, 0.5]]], dtype=torch.float64)
    assert shape_misalignment(eye, eye, B).item() == pytest.approx(math.log(4.0), abs=1e-9)
    assert shape_alignment_loss(eye, eye, B).item() == pytest.approx(math.log(4.0) ** 2, abs=1e-9)
    assert shape_misalignment(eye, eye, _rot(0.7)[None]).item() == pytest.approx(0.0, abs=1e-3)


def test_covariant_shapes_give_zero_whatever_the_rotation():
    """S2 = the upright part of B⁻¹·S1 makes S1⁻¹·B·S2 a rotation: zero loss for any B, any S1; and the
    same holds when the second view is also turned (B·R), and a frame turned in itself (S·Q) is the same
    shape to the loss."""
    g = torch.Generator().manual_seed(0)
    a, b = (
        torch.randn(16, generator=g, dtype=torch.float64) * 0.5,
        torch.randn(16, generator=g, dtype=torch.float64),
    )
    S1 = upright_shape(a, b)
    B = torch.stack(
        [
            _rot(0.3 * i) @ torch.diag(torch.tensor([1.7, 1 / 1.7], dtype=torch.float64)) @ _rot(-0.2 * i)
            for i in range(16)
        ]
    )
    S2 = torch.stack([_upright_part(torch.linalg.inv(B[i]) @ S1[i]) for i in range(16)])
    assert torch.allclose(torch.det(S2), torch.ones(16, dtype=torch.float64), atol=1e-9)
    assert shape_misalignment(S1, S2, B).max().item() < 1e-3
    wrong = shape_misalignment(S1, S1, B)  # the same shape in both views is not covariant under a squeeze
    assert wrong.min().item() > 0.5
    turned = torch.stack([B[i] @ _rot(0.9) for i in range(16)])  # the second view also turned
    S2t = torch.stack([_upright_part(torch.linalg.inv(turned[i]) @ S1[i]) for i in range(16)])
    assert shape_misalignment(S1, S2t, turned).max().item() < 1e-3
    # a frame turned in itself (S·Q) is the same shape: the loss does not see orientation
    assert torch.allclose(shape_misalignment(S1, S1 @ _rot(1.1), B), wrong, atol=1e-6)


def test_upright_shape_and_inverse():
    a, b = torch.tensor([0.3, -1.0]), torch.tensor([0.5, 2.0])
    S = upright_shape(a, b)
    assert torch.allclose(torch.det(S), torch.ones(2))
    assert (S[:, 0, 1] == 0).all()
    assert torch.allclose(upright_inverse(S) @ S, torch.eye(2).expand(2, 2, 2), atol=1e-6)


def test_untrained_network_gives_discs_and_checks_its_input():
    net = ShapeNet().eval()
    x = torch.rand(5, 1, 32, 32)
    assert torch.equal(net(x), torch.eye(2).expand(5, 2, 2))
    with pytest.raises(ValueError, match=r"\(N, 1, 32, 32\)"):
        net(torch.rand(5, 3, 32, 32))


def test_outputs_are_upright_of_determinant_one_and_bounded():
    torch.manual_seed(0)
    net = ShapeNet(ShapeNetConfig(max_log_stretch=0.5, max_shear=0.25))
    torch.nn.init.normal_(net.features[-1].weight, std=10.0)
    S = net.eval()(torch.rand(64, 1, 32, 32))
    assert torch.allclose(torch.det(S), torch.ones(64), atol=1e-5)
    assert (S[:, 0, 1] == 0).all()
    assert S[:, 0, 0].max() <= math.exp(0.5) + 1e-6 and S[:, 1, 0].abs().max() <= 0.25 + 1e-6


@pytest.mark.parametrize(
    "bad",
    [
        {"patch_size": 30},
        {"channels": [8, 8]},
        {"channels": 5},
        {"max_shear": 0},
        {"max_log_stretch": "1"},
        {"depth": 3},
    ],
)
def test_config_errors(bad):
    with pytest.raises(ValueError):
        ShapeNetConfig.from_dict(bad)


def test_weights_round_trip_and_foreign_files(tmp_path):
    torch.manual_seed(1)
    net = ShapeNet(ShapeNetConfig(channels=(4, 8, 8)))
    torch.nn.init.normal_(net.features[-1].weight)
    path = save_shape_weights(net, tmp_path / "s.safetensors", name="t", notes="n")
    back, meta = load_shape_weights(path)
    assert meta["name"] == "t" and back.cfg.channels == (4, 8, 8)
    x = torch.rand(3, 1, 32, 32)
    assert torch.equal(back(x), net.eval()(x))
    with pytest.raises(WeightsError, match="checksum mismatch"):
        load_shape_weights(path, expected_sha256="0" * 64)
    with pytest.raises(WeightsError, match="not a patchpose model"):
        load_weights(path)  # a shape file is not a pose network's
    from patchpose.weights import BUNDLED, DEFAULT_MODEL, WEIGHTS_DIR

    pose_file = WEIGHTS_DIR / BUNDLED[DEFAULT_MODEL][0]
    with pytest.raises(WeightsError, match="not an affine shape network \\(a pose network\\)"):
        load_shape_weights(pose_file)
    with pytest.raises(WeightsError, match="is a folder|not found"):
        load_shape_weights(tmp_path)


def test_weights_with_a_bad_config_or_nan_are_refused(tmp_path):
    from safetensors.torch import save_file

    net = ShapeNet()
    state = {k: v.contiguous() for k, v in net.state_dict().items()}
    meta = {"format": "patchpose-shape", "name": "x", "model_config": json.dumps({"patch_size": 31})}
    save_file(state, str(tmp_path / "a.safetensors"), metadata=meta)
    with pytest.raises(WeightsError, match="not a valid shape network config"):
        load_shape_weights(tmp_path / "a.safetensors")
    state["features.0.weight"] = state["features.0.weight"].clone().fill_(float("nan"))
    meta["model_config"] = json.dumps(net.cfg.to_dict())
    save_file(state, str(tmp_path / "b.safetensors"), metadata=meta)
    with pytest.raises(WeightsError, match="non-finite"):
        load_shape_weights(tmp_path / "b.safetensors")


def test_bundled_shape_network_is_covariant_on_a_photo():
    """The bundled network's shapes of one keypoint cut through r·I and through r·B agree (up to a rotation)
    far better than discs do: the property it was trained for, on a photo it never saw (the wheel's demo)."""
    from patchpose.data.keypoints import detect_gftt
    from patchpose.data.patches import Pyramid, extract_patches, load_photo, to_gray
    from patchpose.data.photos import demo_photo
    from patchpose.shape import AffineShapeEstimator
    from patchpose.training.shape import random_affine

    est = AffineShapeEstimator.from_pretrained()
    img = to_gray(load_photo(demo_photo(), 640))
    xy = detect_gftt(img, 200, margin=40)
    pyr = Pyramid(img)
    B = random_affine(np.random.default_rng(0), len(xy), 1.0)
    zero = np.zeros(len(xy))
    x1 = extract_patches(pyr, xy, zero, zero, 32)
    x2 = extract_patches(pyr, xy, zero, zero, 32, shape=B)
    with torch.no_grad():
        S1, S2 = est.model(torch.from_numpy(x1)), est.model(torch.from_numpy(x2))
    Bt = torch.from_numpy(B).float()
    ours = shape_alignment_loss(S1, S2, Bt).item()
    discs = shape_alignment_loss(torch.eye(2).expand_as(S1), torch.eye(2).expand_as(S1), Bt).item()
    assert ours < 0.35 * discs, (ours, discs)


def test_bundled_shape_network_records_the_run_that_made_it():
    """The bundled file carries its training settings: ``patchpose train-shape --photos data/photos`` with the
    defaults of today makes it (a change of a default is a change of the recipe and shows here)."""
    from patchpose.training.shape import ShapeTrainConfig
    from patchpose.weights import BUNDLED_SHAPES, DEFAULT_SHAPE_MODEL, load_shape_model

    assert DEFAULT_SHAPE_MODEL in BUNDLED_SHAPES
    net, meta = load_shape_model()
    assert meta["name"] == DEFAULT_SHAPE_MODEL and net.cfg == ShapeNetConfig()
    assert json.loads(meta["train_config"]) == ShapeTrainConfig().to_dict()
