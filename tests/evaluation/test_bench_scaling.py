"""``patchpose bench --scaling``: the sizes, one measurement in a fresh process, the results file."""

import json

import pytest
import torch

from patchpose.cli.main import main
from patchpose.errors import InputError
from patchpose.evaluation.bench import SCALING_SIZES, scaling, scaling_sizes


def test_scaling_sizes_go_up_by_four_to_the_maximum():
    assert scaling_sizes() == list(SCALING_SIZES) == [2048, 8192, 32768, 131072]
    assert scaling_sizes(1_000_000) == [2048, 8192, 32768, 131072, 524288, 1_000_000]
    assert scaling_sizes(100) == [100]
    for bad in (0, -5, 2.5, "a"):
        with pytest.raises(InputError, match="scaling-max"):
            scaling_sizes(bad)


def test_scaling_measures_each_size_in_a_fresh_process_and_writes_its_file(tmp_path):
    res = scaling(max_keypoints=300, threads=1, out=tmp_path)
    (row,) = res["rows"]
    assert row["num_keypoints"] == 300 and row["torch_threads"] == 1
    assert row["keypoints_per_s"] > 0 and row["peak_rss_bytes"] >= row["baseline_rss_bytes"] > 0
    assert row["result_bytes"] == 300 * 277  # float32 histograms, nothing else per keypoint
    assert json.loads((tmp_path / "scaling.json").read_text()) == res


def test_scaling_options_are_checked(tmp_path, capsys):
    assert main(["bench", "--scaling", "--threads", "0", "--out", str(tmp_path)]) == 2
    assert main(["bench", "--scaling-max", "0", "--out", str(tmp_path)]) == 2
    assert "scaling-max" in capsys.readouterr().err
    # the plain bench too, before any timing
    assert main(["bench", "--threads", "-1", "--out", str(tmp_path)]) == 2
    assert "--threads must be a whole number from 1 to 1024" in capsys.readouterr().err


def test_flop_count_is_per_keypoint_follows_the_read_plan_and_leaves_the_model_as_it_was():
    """``conv_flops_per_keypoint``: the same per keypoint for 8 or 64 keypoints; one read of both heads costs the
    network's hand-counted convolutions, and so does the default plan (a scale read, then an orientation read);
    v9's plan (a second scale read) costs one scale head more; the FFT switch is restored."""
    import numpy as np

    from patchpose import PatchPoseEstimator
    from patchpose.evaluation.bench import conv_flops_per_keypoint, profile_default_read

    img = (np.random.default_rng(0).random((200, 240)) * 255).astype(np.uint8)
    xy = np.random.default_rng(1).uniform(40, 160, (64, 2))
    for name, scale_reads in (("patchpose-fast-v1", 1), ("patchpose-v9", 2)):
        est = PatchPoseEstimator.from_pretrained(name)
        f64 = conv_flops_per_keypoint(est, img, xy)
        assert conv_flops_per_keypoint(est, img, xy[:8]) == f64
        net, c = est.model.polar, est.model.cfg
        scale_head = sum(  # along the rings
            2 * c.polar_rings * m.in_channels * m.out_channels * m.kernel_size[0]
            for m in net.scale_head
            if isinstance(m, torch.nn.Conv1d)
        )
        ori_head = sum(  # along the angles
            2 * c.polar_angles * m.in_channels * m.out_channels * m.kernel_size[0] for m in net.ori_convs
        )
        one = est.with_plan(passes=1, orientation_offset=0.0)
        assert conv_flops_per_keypoint(one, img, xy) == scale_head + ori_head
        assert f64 == scale_head * scale_reads + ori_head, name
    est = PatchPoseEstimator.from_pretrained()
    f64 = conv_flops_per_keypoint(est, img, xy)  # the default's (fast-v1)
    assert all(m.use_fft for m in est.model.modules() if hasattr(m, "use_fft"))
    prof = profile_default_read(est, img, xy, repeats=2)
    shares = [prof[f"profile_{k}_share"] for k in ("sampling", "network", "pyramid", "other")]
    assert all(0.0 <= s <= 1.0 for s in shares[:3]) and abs(sum(shares) - 1.0) < 1e-9
    # the sampling (PolarReads) and the network are found (any share: how large depends on the machine's load,
    # and a busy CI machine once gave sampling 0.4 %); a renamed function would give exactly 0
    assert shares[0] > 0.0 and shares[1] > 0.0
    assert prof["network_mflop_per_keypoint"] == f64 / 1e6
