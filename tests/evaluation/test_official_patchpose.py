"""The released PatchPose layout: file names, the R/B swap, pairs, and the official metric on a tiny replica."""

import cv2
import numpy as np
import pytest
import skimage.data

from patchpose.data.patches import Pyramid, extract_patches
from patchpose.errors import InputError
from patchpose.evaluation.datasets.official_patchpose import OfficialPatchPose, parse_name
from patchpose.evaluation.official_layout import evaluate_official_layout

ANGLES = [0, 10, 90, 180]
SCALES = [0.6300, 1.0000, 1.5874]


@pytest.fixture(scope="module")
def replica(tmp_path_factory):
    """Two keypoint groups written the way the official code wrote them (PIL from a BGR array)."""
    root = tmp_path_factory.mktemp("ppofficial")
    img = skimage.data.astronaut().astype(np.float32) / 255.0
    pyr = Pyramid(img)
    truth = {}
    for v in ("A", "B"):
        (root / f"patchPose{v}").mkdir()
        for g, xy in (("cow_2007_000001_0", (200.0, 180.0)), ("dog_2008_000002_1", (300.0, 320.0))):
            for a in ANGLES:
                for s in SCALES:
                    if a and s != 1.0:
                        continue
                    p = extract_patches(pyr, np.array([xy]), -np.log2(s), -np.radians(a), 32)[0]
                    rgb = np.clip(p.transpose(1, 2, 0) * 255 + 0.5, 0, 255).astype(np.uint8)
                    name = f"{g}_angle{a:03d}_scale{s:06.4f}.png"
                    cv2.imwrite(
                        str(root / f"patchPose{v}" / name), rgb
                    )  # RGB array as "BGR": R/B swapped on disk
                    truth[name] = rgb
    (root / "patchPoseAImageList").mkdir()
    (root / "patchPoseAImageList" / "test_acquired.txt").write_text("cow_2007_000001\n")
    return root, truth


def test_parse_name():
    assert parse_name("cow_2007_007772_0_angle010_scale0.7937.jpg") == ("cow_2007_007772_0", 10.0, 0.7937)
    with pytest.raises(InputError):
        parse_name("cow.jpg")


def test_reading_undoes_the_rb_swap(replica):
    root, truth = replica
    ds = OfficialPatchPose(root, "A")
    for name, rgb in zip(ds.names, ds.rgb):
        np.testing.assert_array_equal(rgb, truth[name])
    swapped = OfficialPatchPose(root, "A", swap_rb=False)
    assert not np.array_equal(swapped.rgb, ds.rgb)


def test_pairs_follow_the_official_subsets(replica):
    root, _ = replica
    ds = OfficialPatchPose(root, "A")
    ps, po = ds.pairs("scale"), ds.pairs("orientation")
    assert len(ps["trg"]) == 2 * len(SCALES) and len(po["trg"]) == 2 * len(ANGLES)
    assert (ds.angle_deg[ps["trg"]] == 0).all() and np.allclose(ds.scale_factor[po["trg"]], 1.0)
    assert (ds.group[ps["ref"]] == ds.group[ps["trg"]]).all()
    listed = OfficialPatchPose(root, "A", root / "patchPoseAImageList" / "test_acquired.txt")
    assert set(listed.groups) == {"cow_2007_000001_0"}


def test_official_layout_needs_a_single_window_model(replica, tmp_path, legacy_weights, capsys):
    from patchpose.cli.main import main

    root, _ = replica
    with pytest.raises(InputError, match="log-polar grid"):
        evaluate_official_layout(root)  # the default model reads a log-polar grid
    # the command takes no default (every bundled model is log-polar): --weights is required, a bundled one a line
    with pytest.raises(SystemExit) as e:
        main(["eval", "patchpose-official", "--root", str(root)])
    assert e.value.code == 2 and "--weights" in capsys.readouterr().err
    argv = ["eval", "patchpose-official", "--root", str(root), "--out", str(tmp_path / "o")]
    assert main([*argv, "--weights", "patchpose-v10"]) == 2
    err = capsys.readouterr().err.strip()
    assert "log-polar grid" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()
    with pytest.raises(InputError, match="single 32-px windows"):
        evaluate_official_layout(root, str(legacy_weights["v1"]))  # patchpose-v1's layout: 3 windows
    from patchpose.models import create_model
    from patchpose.weights import save_weights

    w = save_weights(create_model("small-cnn", width=0.5), tmp_path / "one.safetensors")
    res = evaluate_official_layout(root, str(w))
    assert set(res) == {"A", "B"} and {"patchpose", "dominant_gradient", "orb_centroid"} <= set(res["A"])
    # identity pairs are always right, so no method scores 0
    assert res["A"]["patchpose"]["scale_acc@1/3"] > 0 and res["A"]["orb_centroid"]["ori_acc@10"] > 0


def test_a_list_scores_its_patches_against_references_it_does_not_hold(replica, tmp_path):
    """The official lists are split by patch: a listed patch's reference is mostly not listed, and the
    official test reads it from disk anyway. Requiring it in the list dropped about 99 % of the pairs."""
    root, _ = replica
    lf = tmp_path / "list.txt"
    lf.write_text("cow_2007_000001_0_angle010_scale1.0000.png\ncow_2007_000001_0_angle000_scale0.6300.png\n")
    ds = OfficialPatchPose(root, "A", lf)
    ps, po = ds.pairs("scale"), ds.pairs("orientation")
    assert [ds.names[i] for i in ps["trg"]] == ["cow_2007_000001_0_angle000_scale0.6300.png"]
    assert [ds.names[i] for i in po["trg"]] == ["cow_2007_000001_0_angle010_scale1.0000.png"]
    assert {ds.names[i] for i in (*ps["ref"], *po["ref"])} == {"cow_2007_000001_0_angle000_scale1.0000.png"}


def test_official_layout_scores_other_bin_widths_in_the_metrics_bins_and_one_variant(
    replica, tmp_path, monkeypatch
):
    """Perfect histograms of a model with 25 scale bins over [-4, 4] and 72 orientation bins score 100 on
    every column (they were read as bins of the metric's width); a copy with patchPoseA/ alone evaluates."""
    import shutil

    import patchpose.evaluation.official_layout as layout
    from patchpose.models import create_model
    from patchpose.weights import save_weights

    root, _ = replica
    w = save_weights(
        create_model("small-cnn", width=0.5, num_scale_bins=25, scale_range=[-4.0, 4.0], num_ori_bins=72),
        tmp_path / "w.safetensors",
    )
    ds = OfficialPatchPose(root, "A")

    def perfect(model, x, batch_size=256, **kw):
        n = len(x)
        assert n == len(ds.names)
        s = np.zeros((n, 25), np.float32)
        o = np.zeros((n, 72), np.float32)
        s[np.arange(n), 12 + np.round(3 * np.log2(ds.scale_factor)).astype(int)] = 1.0
        o[np.arange(n), np.round(ds.angle_deg / 5.0).astype(int) % 72] = 1.0
        return {"scale_hist": s, "orientation_hist": o}

    monkeypatch.setattr(layout, "predict_histograms", perfect)
    only_a = tmp_path / "onlyA"
    shutil.copytree(root / "patchPoseA", only_a / "patchPoseA")
    res = evaluate_official_layout(only_a, str(w))
    assert set(res) == {"A"}
    acc = res["A"]["patchpose"]
    assert [acc[c] for c in ("scale_acc@1/6", "scale_acc@1/3", "ori_acc@5", "ori_acc@10")] == [100.0] * 4
