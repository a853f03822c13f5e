"""PatchPose-A/B generation: geometry of the stored patches, splits, pruning, resuming, and the evaluation
command's outputs on a tiny generated set."""

import json
import shutil

import h5py
import numpy as np
import pytest

from patchpose.data.photos import wheel_photo_paths
from patchpose.errors import InputError
from patchpose.evaluation.datasets.patchpose_dataset import SERIES, GenerateConfig, PatchPoseData, generate

PHOTOS = {"astronaut": "train", "chelsea": "train", "coffee": "val", "rocket": "test", "china": "test"}


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    root = tmp_path_factory.mktemp("pp_photos")
    splits = {"train": [], "val": [], "test": []}
    for p in wheel_photo_paths():
        if p.stem in PHOTOS:
            shutil.copy(p, root / p.name)
            splits[PHOTOS[p.stem]].append(p.name)
    (root / "splits.json").write_text(json.dumps(splits))
    return root


CFG = GenerateConfig(keypoints_per_image=4, long_side=320, margin=40, b_scales=3, b_angles=4, b_joint=3)


@pytest.fixture(scope="module")
def dataset(photos, tmp_path_factory):
    out = tmp_path_factory.mktemp("pp_data")
    generate(photos, out, CFG, workers=1, progress=False)
    return out


def _shard_arrays(path):
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f.keys()}


def test_splits_by_photo_and_manifest(dataset):
    m = json.loads((dataset / "manifest.json").read_text())
    assert m["splits"]["train"]["photos"] == 2 and m["splits"]["test"]["photos"] == 2
    names = {s: set(m["splits"][s]["shards"]) for s in ("train", "val", "test")}
    assert not (names["train"] & names["test"]) and not (names["val"] & names["test"])
    assert m["config"]["keypoints_per_image"] == 4
    info = m["splits"]["test"]
    assert (
        info["kept_keypoints"] == round(0.8 * info["keypoints"])
        or info["kept_keypoints"] >= 0.75 * info["keypoints"]
    )
    per_kp = 1 + 13 + 36 + (1 + 3) + (1 + 4) + 3
    assert info["samples"] == per_kp * info["keypoints"]


def test_series_ground_truth(dataset):
    d = _shard_arrays(next((dataset / "shards" / "test").glob("*.h5")))
    k0 = d["kp_index"] == 0
    a_scale = d["scale_factor"][k0 & (d["series"] == SERIES.index("A_scale"))]
    np.testing.assert_allclose(a_scale, 2.0 ** ((np.arange(13) - 6) / 3))
    a_rot = d["angle_deg"][k0 & (d["series"] == SERIES.index("A_rot"))]
    np.testing.assert_allclose(a_rot, 10.0 * np.arange(36))
    b = d["scale_factor"][d["series"] == SERIES.index("B_scale")]
    assert b.min() >= 0.25 and b.max() <= 4.0
    np.testing.assert_allclose(d["frame_sigma"], -np.log2(d["scale_factor"]))
    np.testing.assert_allclose(d["frame_theta"], -np.radians(d["angle_deg"]))


def test_rotated_sample_is_the_rotated_reference(dataset):
    """The A sample at 90° shows the reference turned 90° counter-clockwise (exact pixel permutation)."""
    d = _shard_arrays(next((dataset / "shards" / "test").glob("*.h5")))
    for k in range(len(d["keypoints"])):
        ref = d["patches"][(d["kp_index"] == k) & (d["series"] == 0)][0, 0].astype(int)
        sel = (d["kp_index"] == k) & (d["series"] == SERIES.index("A_rot")) & (d["angle_deg"] == 90.0)
        rot = d["patches"][sel][0, 0].astype(int)
        assert np.abs(rot - np.rot90(ref)).max() <= 1
        assert np.abs(rot - np.rot90(ref, -1)).mean() > 2  # and not the other way round


def test_killed_run_resumes_to_the_same_content(photos, dataset, tmp_path):
    out = tmp_path / "resumed"
    generate(photos, out, CFG, workers=1, progress=False, limit=2)  # "killed" after two shards
    (out / "shards" / "test").mkdir(parents=True, exist_ok=True)
    (out / "shards" / "test" / "china.jpg.h5.tmp").write_bytes(b"half-written")  # a shard cut off mid-write
    generate(photos, out, CFG, workers=1, progress=False)
    for ref in (dataset / "shards").rglob("*.h5"):
        a, b = _shard_arrays(ref), _shard_arrays(out / ref.relative_to(dataset))
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    m1, m2 = (json.loads((p / "manifest.json").read_text()) for p in (dataset, out))
    assert m1["splits"] == m2["splits"]


def test_shards_of_n_parts_equal_a_single_process_run(photos, dataset, tmp_path):
    from patchpose.cli.main import main
    from patchpose.evaluation.datasets.patchpose_dataset import merge

    parts = [tmp_path / f"part{i}" for i in range(3)]
    for i, part in enumerate(parts):
        m = generate(photos, part, CFG, workers=1, progress=False, shard=(i, 3))
        assert "part" in m and not (part / "manifest.json").exists()  # the manifest needs every part
    counts = [len(list((p / "shards").rglob("*.h5"))) for p in parts]
    assert sum(counts) == 5 and min(counts) >= 1  # every photo in exactly one part
    merged = merge(tmp_path / "all", parts)
    ref = json.loads((dataset / "manifest.json").read_text())
    assert merged["splits"] == ref["splits"]  # same shards, counts, pruning threshold and kept keypoints
    for shard in (dataset / "shards").rglob("*.h5"):
        a, b = _shard_arrays(shard), _shard_arrays(tmp_path / "all" / shard.relative_to(dataset))
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    with pytest.raises(InputError, match="i/n"):
        generate(photos, tmp_path / "bad", CFG, progress=False, shard=(3, 3))
    assert main(["generate", "merge", "--out", str(tmp_path / "cli"), *map(str, parts)]) == 0
    assert json.loads((tmp_path / "cli" / "manifest.json").read_text())["splits"] == ref["splits"]


def test_other_config_in_the_same_folder_is_refused(photos, dataset):
    with pytest.raises(InputError, match="another config"):
        generate(photos, dataset, GenerateConfig(keypoints_per_image=5), progress=False)


def test_a_folder_generated_before_a_setting_was_removed(photos, dataset, tmp_path, capsys):
    """``b_scale_dist`` (``--b-scale-dist``) was removed: a folder whose config holds it at the value left ("log")
    resumes and merges as the same dataset; one generated with "linear" is refused in one line, never a traceback."""
    from patchpose.cli.main import main
    from patchpose.evaluation.datasets.patchpose_dataset import merge

    for value in ("log", "linear"):
        out = tmp_path / value
        shutil.copytree(dataset, out)
        cp = out / "generate_config.json"
        cp.write_text(json.dumps({**json.loads(cp.read_text()), "b_scale_dist": value}))
        if value == "log":
            assert (
                generate(photos, out, CFG, workers=1, progress=False)["splits"]
                == json.loads((dataset / "manifest.json").read_text())["splits"]
            )
            assert (
                merge(tmp_path / "merged", [out, dataset])["config"]
                == json.loads((dataset / "manifest.json").read_text())["config"]
            )
            continue
        with pytest.raises(InputError, match="b_scale_dist this patchpose no longer has"):
            generate(photos, out, CFG, workers=1, progress=False)
        with pytest.raises(InputError, match="no longer has"):
            merge(tmp_path / "merged2", [out])
        argv = [
            "generate",
            "patchpose",
            "--images",
            str(photos),
            "--out",
            str(out),
            "--keypoints-per-image",
            "4",
        ]
        assert main([*argv, "--long-side", "320", "--workers", "1", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert "no longer has" in err and len(err.splitlines()) == 1, err


def test_photos_of_one_stem_get_a_shard_each(tmp_path):
    """The shipped pool has lxqt-themes/butterfly.png and opencv-doc/butterfly.jpg, both in train: a shard
    named by the stem held only one of them (and two workers wrote the same temporary file)."""
    src = {p.stem: p for p in wheel_photo_paths()}
    root = tmp_path / "photos"
    for folder, name, stem in (("a", "butterfly.png", "chelsea"), ("b", "butterfly.jpg", "coffee")):
        (root / folder).mkdir(parents=True)
        shutil.copy(src[stem], root / folder / name)
    (root / "splits.json").write_text(json.dumps({"test": ["a/butterfly.png", "b/butterfly.jpg"]}))
    m = generate(root, tmp_path / "out", CFG, splits=("test",), workers=1, progress=False)
    assert m["splits"]["test"]["shards"] == ["a__butterfly.png.h5", "b__butterfly.jpg.h5"]
    photos = set()
    for name in m["splits"]["test"]["shards"]:
        with h5py.File(tmp_path / "out" / "shards" / "test" / name, "r") as f:
            photos.add(f.attrs["photo"])
    assert photos == {"butterfly.png", "butterfly.jpg"}


def test_a_run_of_one_split_keeps_the_others_in_the_manifest(photos, dataset, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(dataset, out)
    m = generate(photos, out, CFG, splits=("test",), workers=1, progress=False)
    ref = json.loads((dataset / "manifest.json").read_text())
    assert list(m["splits"]) == ["train", "val", "test"] and m["splits"] == ref["splits"]
    assert len(PatchPoseData(out, "train").load()["series"]) > 0


def test_resume_with_the_same_config_given_as_a_tuple(photos, tmp_path):
    cfg = GenerateConfig(**{**CFG.__dict__, "windows": (1.0,)})
    generate(photos, tmp_path / "t", cfg, workers=1, progress=False, limit=1)
    generate(photos, tmp_path / "t", cfg, workers=1, progress=False)  # the JSON of a tuple is a list
    assert json.loads((tmp_path / "t" / "manifest.json").read_text())["splits"]["test"]["photos"] == 2


def test_resume_into_shards_of_the_older_layout_is_refused(photos, dataset, tmp_path):
    out = tmp_path / "old"
    shutil.copytree(dataset, out)
    shard = next((out / "shards" / "test").glob("*.h5"))
    with h5py.File(shard, "a") as f:
        f.attrs["format_version"] = 1  # shards named by stem: a resume would write every photo again
    with pytest.raises(InputError, match="older patchpose"):
        generate(photos, out, CFG, workers=1, progress=False)
    assert len(PatchPoseData(out, "test").load()["series"]) > 0  # still readable


def test_loader_pairs_and_pruning(dataset):
    kept = PatchPoseData(dataset, "test")
    nk = len(np.unique(kept.load()["keypoint"]))
    assert nk == kept.info["kept_keypoints"] < kept.info["keypoints"]  # the pruned ones are left out
    p = kept.pairs("A_scale")
    assert len(p["ref"]) == 13 * nk
    d = kept.load()
    assert (d["series"][p["ref"]] == 0).all() and (d["keypoint"][p["ref"]] == d["keypoint"][p["trg"]]).all()
    np.testing.assert_allclose(p["d_scale"], np.log2(p["scale_factor"]))
    with pytest.raises(InputError):
        PatchPoseData(dataset, "nope")
    with pytest.raises(InputError):
        kept.pairs("C_scale")


def test_eval_patchpose_writes_results_and_figures(dataset, tmp_path):
    from patchpose.evaluation.patchpose_eval import PROTOCOLS, evaluate

    doc = evaluate(dataset, tmp_path, split="test", progress=False)
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res["protocols"]) == set(PROTOCOLS)
    ours = res["protocols"]["official_AB"]["patchpose"]
    assert set(ours) >= {"scale_acc@1/6", "scale_acc@1/3", "ori_acc@5", "ori_acc@10", "n_pairs"}
    assert (
        "log" in res["protocols"]["official_AB"] and "scale_acc@1/3" in res["protocols"]["official_AB"]["log"]
    )
    assert "ori_acc@10" not in res["protocols"]["official_AB"]["log"]
    assert set(res["topk"]) == {"patchpose", "sift"} and set(res["topk"]["patchpose"]) == {"1", "2", "3", "4"}
    k = res["topk"]["patchpose"]
    assert k["4"]["ori_acc@10"] >= k["1"]["ori_acc@10"]
    assert doc["data"]["pairs"]["A_rot"] > 0
    for f in ("results.md", "prediction_ranges.png", "rangewise_accuracy.png"):
        assert (tmp_path / f).stat().st_size > 1000
    # bootstrap intervals: their point values are the protocol tables' numbers, per column and method
    iv = res["intervals"]
    assert set(iv) == {"official_AB", "joint"}
    for proto, cols in iv.items():
        table = res["protocols"][proto]
        for col, r in cols.items():
            assert r["accuracy"]["patchpose"]["value"] == pytest.approx(table["patchpose"][col])
            lo, hi = r["accuracy"]["patchpose"]["interval"]
            assert lo <= table["patchpose"][col] <= hi
            for m, d in r["difference"].items():
                assert d["value"] == pytest.approx(table["patchpose"][col] - table[m][col])
    assert "log" in iv["official_AB"]["scale_acc@1/3"]["difference"]
    assert "log" not in iv["official_AB"]["ori_acc@10"]["difference"]
    assert "How sure" in (tmp_path / "results.md").read_text()
    none = evaluate(dataset, tmp_path / "nb", split="test", progress=False, bootstrap=0)
    assert none["intervals"] == {} and "How sure" not in (tmp_path / "nb" / "results.md").read_text()


def test_eval_patchpose_with_a_polar_model(dataset, tmp_path):
    """A log-polar model is scored on views rendered as warped crops (not on its own sampling grid)."""
    from patchpose.evaluation.patchpose_eval import evaluate, render_polar
    from patchpose.models import create_model
    from patchpose.weights import save_weights

    model = create_model("polar-cnn", polar_rings=27)
    w = save_weights(model, tmp_path / "polar.safetensors")
    data = PatchPoseData(dataset, "test").load()
    x = render_polar(data, np.arange(3), model.cfg.polar_grid)
    assert x.shape == (3, 1, 27, 36) and np.isfinite(x).all() and x.std() > 0.01
    evaluate(dataset, tmp_path / "out", weights=str(w), split="test", progress=False)
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    ours = res["protocols"]["official_AB"]["patchpose"]
    assert ours["n_pairs"] == res["protocols"]["official_AB"]["sift"]["n_pairs"] > 0


def test_eval_patchpose_reads_twice_like_the_estimator(dataset, tmp_path):
    """``passes=2``: every view read again, from its own rendered pixels, with the grid at the scale found
    (whole bins), and its scale histogram moved back into the view's frame; ``results.json`` states the plan."""
    from patchpose.estimator import PatchPoseEstimator
    from patchpose.evaluation.patchpose_eval import evaluate, model_passes, render_polar
    from patchpose.inference import decode_poses, predict_histograms
    from patchpose.reading import shift_bins

    data = PatchPoseData(dataset, "test").load()
    v9 = PatchPoseEstimator.from_pretrained("patchpose-v9")
    h1, p1 = model_passes(data, v9.with_plan(passes=1))
    h2, p2 = model_passes(data, v9.with_plan(passes=2, orientation_offset=0))
    k = np.round(p1["scale"][:, 0] * 3).astype(int)
    x = render_polar(data, np.arange(len(k)), v9.cfg.polar_grid, read_scale=k / 3)
    h = predict_histograms(v9.model, x, 256)
    np.testing.assert_allclose(h2["orientation_hist"], h["orientation_hist"], atol=1e-6)
    np.testing.assert_allclose(h2["scale_hist"], shift_bins(h["scale_hist"], k), atol=1e-6)
    s = decode_poses(h, scale_range=v9.cfg.scale_range)["scale"][:, 0] + k / 3
    np.testing.assert_allclose(p2["scale"][:, 0], s, atol=1e-5)
    assert np.any(k != 0)
    # an orientation offset: the orientation read at that frame moved by it, as the estimator does
    h3, p3 = model_passes(data, v9.with_plan(passes=2, orientation_offset=-1))
    xo = render_polar(data, np.arange(len(k)), v9.cfg.polar_grid, read_scale=k / 3 - 1)
    np.testing.assert_allclose(
        h3["orientation_hist"], predict_histograms(v9.model, xo, 256)["orientation_hist"], atol=1e-6
    )
    np.testing.assert_allclose(h3["scale_hist"], h2["scale_hist"], atol=1e-6)
    np.testing.assert_allclose(p3["scale"], p2["scale"], atol=1e-6)
    assert not np.allclose(h3["orientation_hist"], h2["orientation_hist"], atol=1e-3)
    # without rereading the scale: the first read's scale, the same orientation read
    h4, p4 = model_passes(data, v9.with_plan(passes=2, orientation_offset=-1, reread_scale=False))
    np.testing.assert_array_equal(p4["scale"], p1["scale"])
    np.testing.assert_array_equal(h4["scale_hist"], h1["scale_hist"])
    np.testing.assert_array_equal(h4["orientation_hist"], h3["orientation_hist"])
    evaluate(dataset, tmp_path / "out", split="test", progress=False, read_plan={"passes": 3})
    assert json.loads((tmp_path / "out" / "results.json").read_text())["plan"]["passes"] == 3


def test_eval_renders_no_detail_finer_than_a_view_pixel(dataset):
    """A window whose patch pixels would be finer than the view's (the LoG baseline's small windows) is
    rendered at the view's pixels and resized up: a view rendered at half resolution of a 1-px checkerboard
    stays flat however small the window; at the view's own resolution the checkerboard shows."""
    from patchpose.evaluation.patchpose_eval import render, resize_patches, view_window

    yy, xx = np.mgrid[0:256, 0:256]
    data = {
        "images": [((xx + yy) % 2 * 255).astype(np.uint8)],
        "photo": np.zeros(2, int),
        "xy": np.array([[128.3, 128.6], [128.3, 128.6]]),
        "frame_sigma": np.array([1.0, 0.0]),  # view 0: half resolution; view 1: the photo's own
        "frame_theta": np.array([0.3, 0.3]),
    }
    x = render(data, np.arange(2), 24, [0.25, 2.0], color="gray")
    assert x.shape == (2, 2, 24, 24)
    assert x[0, 0].std() < 0.01 and x[1, 0].std() > 0.05  # window 0.25: 8 view pixels over 24 patch pixels
    assert view_window(24, 0.25) == 8 and view_window(24, 2.0) == 24
    ramp = np.broadcast_to((np.arange(4) + 0.5) / 4, (4, 4)).astype(np.float32)[None, None]
    np.testing.assert_allclose(resize_patches(ramp, 8)[0, 0, 0, 1:-1], (np.arange(1, 7) + 0.5) / 8, atol=1e-6)


def test_eval_rereads_of_a_cartesian_model_are_refused(dataset, legacy_weights):
    """Later reads of a rendered view are emulated for log-polar models only: a Cartesian model asked for
    them is a clear InputError, not numbers from the photo re-rendered at the pose found."""
    from patchpose.errors import InputError
    from patchpose.estimator import PatchPoseEstimator
    from patchpose.evaluation.patchpose_eval import model_passes, model_patches

    data = PatchPoseData(dataset, "test").load()
    est = PatchPoseEstimator.load(legacy_weights["v1"])  # patchpose-v1's CNN on 3 windows
    assert model_patches(data, est).shape[0] == len(data["series"])
    with pytest.raises(InputError, match="log-polar models only"):
        model_passes(data, est.with_plan(passes=2))


def _tiny_split(root):
    """A hand-made dataset folder: split 'val' of one shard, one keypoint with a reference and one A_rot
    sample (the layout ``generate`` writes, without running it)."""
    (root / "shards" / "val").mkdir(parents=True)
    with h5py.File(root / "shards" / "val" / "p.h5", "w") as f:
        f.attrs.update({"photo": "p.png", "windows": [1.0]})
        f.create_dataset("image", data=np.zeros((64, 64, 3), np.uint8))
        f.create_dataset("keypoints", data=np.array([[32.0, 32.0]]))
        f.create_dataset("kp_index", data=np.zeros(2, np.int32))
        f.create_dataset("series", data=np.array([0, SERIES.index("A_rot")], np.int8))
        f.create_dataset("scale_factor", data=np.ones(2))
        f.create_dataset("angle_deg", data=np.array([0.0, 90.0]))
        f.create_dataset("frame_sigma", data=np.zeros(2))
        f.create_dataset("frame_theta", data=np.array([0.0, -np.pi / 2]))
        f.create_dataset("patches", data=np.zeros((2, 1, 32, 32), np.uint8))
    info = {"shards": ["p.h5"], "photos": 1, "kept": {"p.h5": [0]}}
    (root / "manifest.json").write_text(json.dumps({"format_version": 1, "splits": {"val": info}}))
    return root


def _truncate(root):
    shard = root / "shards" / "val" / "p.h5"
    shard.write_bytes(shard.read_bytes()[:1000])


def _drop_kept(root):
    m = json.loads((root / "manifest.json").read_text())
    del m["splits"]["val"]["kept"]
    (root / "manifest.json").write_text(json.dumps(m))


def _drop_patches(root):
    with h5py.File(root / "shards" / "val" / "p.h5", "a") as f:
        del f["patches"]


@pytest.mark.parametrize(
    "corrupt,where,msg",
    [
        (_truncate, "p.h5", "cannot read shard"),
        (lambda r: (r / "shards" / "val" / "p.h5").write_bytes(b""), "p.h5", "cannot read shard"),
        (lambda r: (r / "shards" / "val" / "p.h5").unlink(), "p.h5", "is missing"),
        (_drop_patches, "p.h5", "incomplete .*'patches'"),
        (lambda r: (r / "manifest.json").write_text('{"splits": '), "manifest.json", "invalid JSON"),
        (lambda r: (r / "manifest.json").write_text("[1, 2]"), "manifest.json", "no 'splits'"),
        (lambda r: (r / "manifest.json").write_text('{"format_version": 1}'), "manifest.json", "no 'splits'"),
        (_drop_kept, "manifest.json", "kept keypoints"),
    ],
)
def test_loader_names_a_broken_manifest_or_shard_and_says_to_regenerate(
    tmp_path, capsys, corrupt, where, msg
):
    """A truncated, empty, missing or incomplete shard and a manifest that is not one give one InputError
    naming the file and the command that writes it again; the CLI prints it on one line, status 2."""
    from patchpose.cli.main import main

    root = _tiny_split(tmp_path / "ok")
    assert len(PatchPoseData(root, "val").load()["series"]) == 2  # the hand-made split is readable
    root = _tiny_split(tmp_path / "d")
    corrupt(root)
    with pytest.raises(InputError, match=msg) as e:
        PatchPoseData(root, "val").load()
    assert where in str(e.value) and "patchpose generate patchpose" in str(e.value)
    assert (
        main(["eval", "patchpose", "--data", str(root), "--split", "val", "--out", str(tmp_path / "o")]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and where in err and "Traceback" not in err


def test_unusable_photos_are_skipped_and_none_usable_is_an_error(tmp_path, caplog):
    """A tiny photo and a flat one give no shard, with a warning; a folder with nothing usable is an
    error rather than an empty dataset. The HPatches generator refuses a tiny photo too."""
    import cv2

    from patchpose.evaluation.datasets.hpatches import generate_hpatches

    root = tmp_path / "photos"
    root.mkdir()
    cv2.imwrite(str(root / "tiny.png"), np.zeros((5, 5, 3), np.uint8))
    cv2.imwrite(str(root / "flat.png"), np.full((200, 200, 3), 90, np.uint8))
    (root / "splits.json").write_text(json.dumps({"train": [], "val": [], "test": ["tiny.png", "flat.png"]}))
    with pytest.raises(InputError, match="no photo could be used"):
        generate(root, tmp_path / "out", CFG, splits=("test",), progress=False)
    assert "too small" in caplog.text and "no keypoints found" in caplog.text
    assert not list((tmp_path / "out").rglob("*.h5"))
    with pytest.raises(InputError, match="tiny.png: image is too small"):
        generate_hpatches([root / "tiny.png"], tmp_path / "hp", progress=False)


def test_bins_sweep_decodes_in_each_models_range_and_reuses_only_matching_runs(
    dataset, tmp_path, monkeypatch
):
    """eval bins (Table 3), training stubbed: decoding used the default scale range whatever the model's, and
    a finished run was reused whatever --minutes or the overrides had become."""
    import torch

    import patchpose.inference as inf
    import patchpose.training.trainer as trainer
    from patchpose.evaluation.bins_ablation import run
    from patchpose.models import ModelConfig, PoseNet
    from patchpose.training.checkpoint import save_checkpoint
    from patchpose.training.config import to_container

    trained, ranges = [], []

    def fake_train(cfg, out_dir, resume=False, progress=True):
        c = to_container(cfg)
        out_dir.mkdir(parents=True, exist_ok=True)
        net = PoseNet(ModelConfig.from_dict(c["model"]))
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        save_checkpoint(
            out_dir / "checkpoint.pt", net, opt, torch.optim.lr_scheduler.StepLR(opt, 1), c, 5, {}, 0.0
        )
        trained.append(out_dir.name)

    decode = inf.decode_poses

    def spy(h, k=1, refine=True, scale_range=inf.SCALE_RANGE):
        ranges.append(tuple(scale_range))
        return decode(h, k, refine, scale_range=scale_range)

    monkeypatch.setattr(trainer, "train", fake_train)
    monkeypatch.setattr(inf, "decode_poses", spy)
    over = ["model.scale_range=[-4.0,4.0]", "model.width=0.25"]
    doc = run(dataset, tmp_path / "b", 0.01, grid=((7, 9),), overrides=over, progress=False)
    assert trained == ["Bs7_Bo9"] and set(ranges) == {(-4.0, 4.0)} and doc["rows"]["Bs7_Bo9"]["steps"] == 5
    run(dataset, tmp_path / "b", 0.01, grid=((7, 9),), overrides=over, progress=False)
    assert trained == ["Bs7_Bo9"]  # the same settings: reused
    with pytest.raises(InputError, match="other settings"):
        run(dataset, tmp_path / "b", 0.02, grid=((7, 9),), overrides=over, progress=False)
    # a run made before settings were removed names them at their "off" values: the same run, reused
    ck_path = tmp_path / "b" / "Bs7_Bo9" / "checkpoint.pt"
    ck = torch.load(ck_path, weights_only=True)
    ck["config"]["data"]["harris"], ck["config"]["optim"]["ema"] = False, 0.0
    torch.save(ck, ck_path)
    run(dataset, tmp_path / "b", 0.01, grid=((7, 9),), overrides=over, progress=False)
    assert trained == ["Bs7_Bo9"]
    ck["config"]["data"]["harris"] = True  # trained with one: another run
    torch.save(ck, ck_path)
    with pytest.raises(InputError, match="other settings"):
        run(dataset, tmp_path / "b", 0.01, grid=((7, 9),), overrides=over, progress=False)
