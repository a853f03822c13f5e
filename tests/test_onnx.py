"""ONNX export and the onnxruntime backend give the PyTorch model's numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import make_textured_image
from patchpose.errors import WeightsError
from patchpose.estimator import PatchPoseEstimator

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


@pytest.mark.parametrize(
    "name", ["patchpose-fast-v1", "patchpose-v9", "patchpose-v10", "v2-layout", "v1-layout"]
)
def test_onnx_backend_matches_pytorch(name, tmp_path, legacy_weights):
    """Each bundled model, and untrained networks of the layouts of patchpose-v2 (log-polar, narrow scale head,
    rings at any sharpness) and patchpose-v1 (Cartesian CNN on 3 windows), no longer bundled."""
    from patchpose.cli.main import main

    if name.endswith("-layout"):
        name = str(legacy_weights[name.removesuffix("-layout")])
    img = make_textured_image(300)
    xy = np.random.default_rng(0).uniform(40, 260, (70, 2))
    ref = PatchPoseEstimator.load(name).estimate(img, xy, top_k=2)
    mem = PatchPoseEstimator.load(name, backend="onnx").estimate(img, xy, top_k=2)
    assert main(["export", "onnx", "--weights", name, "--out", str(tmp_path / "m.ONNX")]) == 0
    est = PatchPoseEstimator.load(tmp_path / "m.ONNX", backend="onnx")  # the suffix in any case
    base = PatchPoseEstimator.load(name)
    assert est.cfg.to_dict() == base.cfg.to_dict()
    # the file carries what the weights recommend: it reads and describes as they do
    assert (est.name, est.plan) == (base.name, base.plan)
    got = est.estimate(img, xy, top_k=2)
    # float rounding only (onnxruntime's direct whole-circle convolution against PyTorch's FFT): sharp
    # histograms (patchpose-v7's) differed by up to 2e-5 in probability; a wrong graph differs by far more
    for out in (mem, got):
        np.testing.assert_allclose(out.orientation_hist, ref.orientation_hist, atol=1e-4)
        np.testing.assert_allclose(out.scale_hist, ref.scale_hist, atol=1e-4)
        np.testing.assert_allclose(np.exp(1j * out.orientation), np.exp(1j * ref.orientation), atol=1e-3)
    # two reads: the first runs the scale head alone in PyTorch; the graph computes both and drops one
    ref2 = PatchPoseEstimator.load(name).with_plan(passes=2).estimate(img, xy)
    got2 = est.with_plan(passes=2).estimate(img, xy)
    np.testing.assert_allclose(got2.scale_hist, ref2.scale_hist, atol=1e-4)
    np.testing.assert_allclose(got2.orientation_hist, ref2.orientation_hist, atol=1e-4)


def test_fft_free_path_equals_the_fft_path():
    est = PatchPoseEstimator.load("patchpose-v9")
    x = torch.rand(5, *est.cfg.input_shape)
    with torch.no_grad():
        a = est.model(x)
        est.model.polar.use_fft = False
        try:
            b = est.model(x)
        finally:
            est.model.polar.use_fft = True
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=1e-4, rtol=1e-5)


def test_foreign_onnx_file_is_refused(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    onnx.save(helper.make_model(g), tmp_path / "foreign.onnx")
    with pytest.raises(WeightsError, match="not a patchpose model"):
        PatchPoseEstimator.load(tmp_path / "foreign.onnx", backend="onnx")
    (tmp_path / "junk.onnx").write_bytes(b"not onnx")
    with pytest.raises(WeightsError, match="cannot read"):
        PatchPoseEstimator.load(tmp_path / "junk.onnx", backend="onnx")


def test_onnx_file_carries_and_checks_the_weights_recommendations(tmp_path):
    """``export onnx`` stores the weights' reads per keypoint and descriptor window (the command line may
    override them); a bad value is a clear error at export, and a tampered file a WeightsError at load."""
    import onnx

    from patchpose.cli.main import main

    out = tmp_path / "m.onnx"
    assert main(["export", "onnx", "--weights", "patchpose-v9", "--out", str(out)]) == 0
    est = PatchPoseEstimator.load(out, backend="onnx")
    assert (est.name, est.plan.passes, est.plan.descriptor_region) == ("patchpose-v9", 2, 2.25)
    args = [
        "export",
        "onnx",
        "--weights",
        "patchpose-v10",
        "--out",
        str(out),
        "--overwrite",
        "--read",
        "passes=3",
    ]
    assert main([*args, "--read", "descriptor_region=1.5", "--read", "reread_scale=false"]) == 0
    est = PatchPoseEstimator.load(out, backend="onnx")
    assert (est.name, est.plan.passes, est.plan.descriptor_region) == ("patchpose-v10", 3, 1.5)
    assert est.plan.reread_scale is False
    assert main([*args[:-1], "passes=0"]) == 2  # passes 0: refused, nothing written over the good file
    assert PatchPoseEstimator.load(out, backend="onnx").plan.passes == 3
    # --name and --notes are stored too (they were ignored); --weights with a checkpoint is an error
    assert main([*args, "--name", "mine", "--notes", "hi"]) == 0
    est = PatchPoseEstimator.load(out, backend="onnx")
    assert (est.name, est.meta["notes"], est.plan.passes) == ("mine", "hi", 3)
    assert (
        main(["export", str(tmp_path / "ck.pt"), "--weights", "patchpose-v9", "--out", str(tmp_path / "w")])
        == 2
    )
    proto = onnx.load(out)
    for p in proto.metadata_props:
        if p.key == "patchpose_meta":
            p.value = '{"passes": "many"}'
    onnx.save(proto, out)
    with pytest.raises(WeightsError, match="'passes' must be an integer"):
        PatchPoseEstimator.load(out, backend="onnx")


def test_an_onnx_model_whose_weights_point_outside_is_refused(tmp_path):
    """#62: a model whose weights are external data (a path that may escape its folder) is refused in one line before
    onnx reads any other file."""
    import onnx

    from patchpose.cli.main import main

    out = tmp_path / "m.onnx"
    assert main(["export", "onnx", "--weights", "patchpose-fast-v1", "--out", str(out)]) == 0
    proto = onnx.load(out)
    init = proto.graph.initializer[0]
    init.ClearField("raw_data")
    init.data_location = onnx.TensorProto.EXTERNAL
    init.external_data.add(key="location", value="../../etc/passwd")
    (tmp_path / "ext.onnx").write_bytes(proto.SerializeToString())
    with pytest.raises(WeightsError, match="external file") as e:
        PatchPoseEstimator.load(tmp_path / "ext.onnx", backend="onnx")
    assert len(str(e.value).splitlines()) == 1 and "../../etc/passwd" in str(e.value)


@pytest.mark.parametrize("device", ["cuda", "banana", "cuda:0", "gpu"])
def test_the_onnx_backend_refuses_any_device_but_the_cpu(device):
    """onnxruntime runs on its CPU provider: ``device="cuda"`` (or "banana") was accepted and the model ran on
    the CPU without a word; now it is one line saying so, before any file is read."""
    from patchpose.errors import InputError

    with pytest.raises(
        InputError, match=r"^backend='onnx' runs on the CPU only .*got '.+'; for a GPU use"
    ) as e:
        PatchPoseEstimator.load("patchpose-fast-v1", backend="onnx", device=device)
    assert "\n" not in str(e.value)
    assert str(PatchPoseEstimator.load("patchpose-fast-v1", backend="onnx", device="cpu").device) == "cpu"


def test_export_onnx_refuses_an_existing_out_unless_overwrite(tmp_path, capsys):
    """``export onnx --out EXISTING`` replaced the file without a word while ``estimate`` refuses without
    ``--overwrite``: now one line before any work, the file untouched; with ``--overwrite`` it is replaced
    (written beside, then renamed: no temporary left)."""
    from patchpose.cli.main import main

    out = tmp_path / "m.onnx"
    out.write_bytes(b"an earlier file")
    args = ["export", "onnx", "--weights", "patchpose-fast-v1", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out} exists: pass --overwrite" in err
    assert out.read_bytes() == b"an earlier file"
    assert main([*args, "--overwrite"]) == 0
    assert PatchPoseEstimator.load(out, backend="onnx").name == "patchpose-fast-v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_an_onnx_file_loaded_as_weights_says_how_to_load_it(tmp_path, capsys):
    """An ``.onnx`` file given to ``load`` without ``backend="onnx"`` (or to the command line's ``--weights``)
    said "not a readable safetensors file (... header too large)"; now it says what the file is and how to
    load it, also under another suffix."""
    import shutil

    from patchpose.cli.main import main
    from patchpose.onnx_backend import export_onnx
    from patchpose.weights import load_model

    path = export_onnx(PatchPoseEstimator.load("patchpose-fast-v1").model, tmp_path / "m.onnx")
    shutil.copy(path, tmp_path / "m.safetensors")
    for f in (path, tmp_path / "m.safetensors"):
        for load in (PatchPoseEstimator.load, load_model):
            with pytest.raises(
                WeightsError, match=r"is an ONNX file, not safetensors weights: .*backend='onnx'"
            ) as e:
                load(f)
            assert "\n" not in str(
                e.value
            ) and "--weights takes a bundled model's name or a .safetensors" in str(e.value)
    img = tmp_path / "img.png"
    import cv2

    cv2.imwrite(str(img), (make_textured_image(96) * 255).astype(np.uint8))
    assert main(["estimate", str(img), "--weights", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is an ONNX file" in err


@pytest.mark.parametrize("device", ["cpu:0", torch.device("cpu")])
def test_the_onnx_backend_takes_any_spelling_of_the_cpu_that_torch_takes(device):
    """``device="cpu:0"`` (which torch takes for the CPU, as the torch backend does) was refused as not the CPU."""
    assert str(PatchPoseEstimator.load("patchpose-fast-v1", backend="onnx", device=device).device) == "cpu"
