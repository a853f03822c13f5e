"""Model registry, named configurations and the training presets."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

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


@pytest.mark.parametrize("extra", [{}, {"polar_channels": [4], "polar_scale_dilations": [1, 2, 4]}])
def test_a_read_can_run_the_scale_head_alone(extra):
    """``model(x, heads=("scale",))`` gives exactly the scale logits of a full read and nothing else (what a
    pass before the last runs); ``("orientation",)`` the orientation outputs only; a head the model lacks,
    or none, is a clear error."""
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
        {"polar_channels": [4]},
        {"polar_scale_dilations": [1, 2, 4], "polar_view_min_step": 1.0},
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


def test_predict_histograms_reads_in_eval_mode_and_leaves_the_mode_as_it_found_it():
    """A model in training mode is read in eval mode and put back; one in eval mode is never switched (reading
    threads share the estimator's model: switching it back and forth raced, and walked every module twice a
    read)."""
    import numpy as np

    from patchpose.inference import predict_histograms
    from patchpose.models import ModelConfig, PoseNet

    m = PoseNet(ModelConfig.from_dict(SMALL_POLAR))
    seen = []
    m.register_forward_pre_hook(lambda mod, args: seen.append([s.training for s in mod.modules()]))
    x = np.random.default_rng(0).random((5, 1, 31, 36), dtype=np.float32)
    m.train()
    predict_histograms(m, x, batch_size=2)
    assert seen and not any(any(flags) for flags in seen)  # every module in eval mode while read
    assert all(s.training for s in m.modules())  # and back in training mode after
    m.eval()
    switched = []
    m.train = lambda mode=True: switched.append(mode)  # type: ignore[method-assign]
    m.eval = lambda: switched.append("eval")  # type: ignore[method-assign]
    predict_histograms(m, x, batch_size=2)
    assert switched == []
