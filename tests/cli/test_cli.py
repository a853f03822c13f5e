"""The command line: outputs written, bad input gives one clear line and exit status 2 (no traceback)."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from patchpose.cli.main import main
from patchpose.data.photos import demo_photo, wheel_photo_paths


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "patchpose.cli.main", *args], capture_output=True, text=True, timeout=300
    )


def test_demo_writes_poses_and_picture(tmp_path):
    assert main(["demo", "--out", str(tmp_path), "--max-keypoints", "50"]) == 0
    doc = json.loads((tmp_path / "astronaut_poses.json").read_text())
    assert 0 < len(doc["keypoints"]) <= 50
    k = doc["keypoints"][0]
    # patchpose-fast-v1: 25 bins over [−4, 4]
    assert 0 <= k["orientation"] < 2 * np.pi and -4 <= k["scale"] <= 4
    img = cv2.imread(str(tmp_path / "astronaut_poses.png"))
    assert img is not None and img.shape[0] > 100
    # the README's set-up command run again: the demo replaces its own outputs
    assert main(["demo", "--out", str(tmp_path), "--max-keypoints", "20"]) == 0
    assert 0 < len(json.loads((tmp_path / "astronaut_poses.json").read_text())["keypoints"]) <= 20


def test_estimate_with_keypoint_file_csv_top_k(tmp_path):
    kp = tmp_path / "kp.csv"
    kp.write_text("x,y\n100,120\n200.5,300\n")
    assert (
        main(
            [
                "estimate",
                str(demo_photo()),
                "--keypoints",
                str(kp),
                "--out",
                str(tmp_path),
                "--format",
                "csv",
                "--top-k",
                "2",
            ]
        )
        == 0
    )
    lines = (tmp_path / "astronaut_poses.csv").read_text().splitlines()
    assert lines[0].split(",") == ["x", "y", "scale0", "scale1", "orientation0", "orientation1", "valid"]
    assert len(lines) == 3


@pytest.mark.parametrize("content, match", [(b"this is not an image", "cannot decode"), (None, "tiny")])
def test_bad_images_exit_2_with_a_message(tmp_path, content, match):
    path = tmp_path / "bad.png"
    if content is None:
        cv2.imwrite(str(path), np.zeros((10, 10), np.uint8))
        match = "too small"
    else:
        path.write_bytes(content)
    r = run_cli("estimate", str(path), "--out", str(tmp_path))
    assert r.returncode == 2
    assert match in r.stderr and "Traceback" not in r.stderr


def test_missing_file_and_wrong_weights(tmp_path):
    r = run_cli("estimate", str(tmp_path / "nope.jpg"))
    assert r.returncode == 2 and "not found" in r.stderr and "Traceback" not in r.stderr
    w = tmp_path / "w.safetensors"
    w.write_bytes(b"garbage")
    r = run_cli("demo", "--weights", str(w), "--out", str(tmp_path))
    assert r.returncode == 2 and "safetensors" in r.stderr and "Traceback" not in r.stderr


def test_flat_image_has_no_keypoints(tmp_path):
    path = tmp_path / "flat.png"
    cv2.imwrite(str(path), np.full((100, 100), 128, np.uint8))
    r = run_cli("estimate", str(path), "--out", str(tmp_path))
    assert r.returncode == 2 and "no SIFT keypoints" in r.stderr


def test_empty_keypoint_file(tmp_path):
    """No keypoints (an empty file, or a header alone as pandas writes an empty frame) give 0 poses, not an error;
    rows that are not numbers are one line. (This test once passed on "empty" in its own folder's name.)"""
    for k, (name, text) in enumerate((("empty.csv", ""), ("header.csv", "x,y\n"))):
        (tmp_path / name).write_text(text)
        out = str(tmp_path / f"o{k}")  # a folder each: a second run would not replace the first's outputs
        r = run_cli("estimate", str(demo_photo()), "--keypoints", str(tmp_path / name), "--out", out)
        assert r.returncode == 0 and r.stdout.startswith("0 keypoints"), r.stdout + r.stderr
    (tmp_path / "words.csv").write_text("x,y\nnone found today\n")
    r = run_cli(
        "estimate",
        str(demo_photo()),
        "--keypoints",
        str(tmp_path / "words.csv"),
        "--out",
        str(tmp_path / "o"),
    )
    assert (
        r.returncode == 2
        and "no line of x, y numbers" in r.stderr
        and len(r.stderr.strip().splitlines()) == 1
    )


@pytest.mark.parametrize(
    "text, match",
    [
        ("100,100\n200\n300,300\n", "line 2"),  # a broken line is not skipped silently
        ("x;y\nfoo;bar\n", "no line of x, y numbers"),
    ],
)
def test_malformed_keypoint_files_name_the_problem(tmp_path, capsys, text, match):
    kp = tmp_path / "kp.txt"
    kp.write_text(text)
    assert main(["estimate", str(demo_photo()), "--keypoints", str(kp), "--out", str(tmp_path)]) == 2
    assert match in capsys.readouterr().err


def test_semicolon_separated_keypoints_are_read(tmp_path):
    from patchpose.fileio import read_keypoints

    (tmp_path / "kp.csv").write_text("x;y;score\n10.5;20;0.9\n30;40;0.1\n")
    assert read_keypoints(tmp_path / "kp.csv").tolist() == [[10.5, 20.0], [30.0, 40.0]]


@pytest.mark.parametrize(
    "args, match",
    [
        (["--max-keypoints", "0"], "--max-keypoints"),
        (["--top-k", "0"], "--top-k"),
        (
            ["--top-k", "99"],
            "(--top-k) must be a whole number from 1 to",
        ),  # past the model's bins: the option named
    ],
)
def test_estimate_rejects_bad_counts(tmp_path, capsys, args, match):
    assert main(["estimate", str(demo_photo()), "--out", str(tmp_path), *args]) == 2
    assert match in capsys.readouterr().err


def test_match_threshold_and_bench_counts_are_checked(tmp_path, capsys):
    photo = str(demo_photo())
    assert main(["match", photo, photo, "--threshold", "-1", "--out", str(tmp_path)]) == 2
    assert "threshold must be a positive number of pixels" in capsys.readouterr().err
    # a threshold without a homography would be ignored: said, before any work
    assert main(["match", photo, photo, "--threshold", "2", "--out", str(tmp_path)]) == 2
    assert "--threshold needs --homography" in capsys.readouterr().err
    # an output "folder" that is a file: one line naming it, before any work (was a raw "[Errno 17] File exists")
    (tmp_path / "afile").write_text("mine")
    for cmd in (["match", photo, photo], ["estimate", photo]):
        assert main([*cmd, "--out", str(tmp_path / "afile")]) == 2
        err = capsys.readouterr().err.strip()
        assert "output folder" in err and "is a file" in err and len(err.splitlines()) == 1, err
        # a file further up the path: named, before any work (was a raw "[Errno 20] Not a directory" after it)
        assert main([*cmd, "--out", str(tmp_path / "afile" / "sub")]) == 2
        err = capsys.readouterr().err.strip()
        assert "in the output folder's path, is a file" in err and len(err.splitlines()) == 1, err
    assert (tmp_path / "afile").read_text() == "mine"
    # keypoints files: the one at fault named (it said "keypoints is empty", "lie outside", of neither image)
    (tmp_path / "k1.csv").write_text("10,10\n20,20\n")
    (tmp_path / "k2.csv").write_text("x,y\n")
    (tmp_path / "k3.csv").write_text("10,10\n99999,5\n")
    for k2, what in (("k2.csv", "is empty"), ("k3.csv", "outside")):
        argv = ["--keypoints1", str(tmp_path / "k1.csv"), "--keypoints2", str(tmp_path / k2)]
        assert main(["match", photo, photo, *argv, "--out", str(tmp_path / "m")]) == 2
        err = capsys.readouterr().err.strip()
        assert f"{k2}: " in err and what in err and len(err.splitlines()) == 1, err
    # --detector and --max-keypoints choose detected keypoints: with yours they were ignored without a word
    argv = ["--keypoints1", str(tmp_path / "k1.csv"), "--keypoints2", str(tmp_path / "k1.csv")]
    assert main(["match", photo, photo, *argv, "--detector", "gftt", "--out", str(tmp_path / "m")]) == 2
    assert "--detector chooses detected keypoints: not with --keypoints1/2" in capsys.readouterr().err
    assert main(["bench", "--repeats", "0", "--out", str(tmp_path)]) == 2
    assert "repeats" in capsys.readouterr().err


def test_unknown_override_is_an_error(tmp_path):
    r = run_cli("train", "--out", str(tmp_path / "r"), "optim.lrr=1")
    assert r.returncode == 2 and "lrr" in r.stderr and "Traceback" not in r.stderr


def test_bench_reports_times_and_ratios(tmp_path):
    import torch

    from patchpose.evaluation.bench import bench

    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # 1,100 keypoints: two chunks read side by side
    try:
        res = bench(num_keypoints=1100, repeats=1, out=tmp_path, backends=())
    finally:
        torch.set_num_threads(threads)
    assert res["num_keypoints"] == 1100 and res["sift_detect_s"] > 0 and res["patchpose_default_s"] > 0
    # the profile reads one chunk at a time on its own thread (cProfile sees no other): it finds both parts
    assert res["profile_sampling_share"] > 0 and res["profile_network_share"] > 0  # 0.0 where it saw none
    assert res["ratio_default_to_sift"] == pytest.approx(res["patchpose_default_s"] / res["sift_detect_s"])
    assert res["ratio_one_read_to_sift"] == pytest.approx(res["patchpose_one_read_s"] / res["sift_detect_s"])
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["model"] == "patchpose-fast-v1" and doc["plan"]["passes"] == 2


def test_eval_synthetic_writes_results(tmp_path):
    from patchpose.evaluation.synthetic import eval_synthetic

    doc = eval_synthetic(None, None, 40, 0, tmp_path)
    res = doc["results"]
    assert set(res) == {"scale", "rotation", "joint"}
    assert res["rotation"]["patchpose (refined)"]["n_pairs"] == 40
    assert 0 <= res["joint"]["dominant-gradient + LoG"]["ori_acc@10"] <= 100
    assert (tmp_path / "results.md").read_text().startswith("# Synthetic pose pairs")


def test_photos_fetch_wheels_only(tmp_path):
    """The test split is the 15 photos shipped in our dependencies; splits.json lists them by path."""
    assert main(["photos", "fetch", "--out", str(tmp_path), "--no-debian"]) == 0
    splits = json.loads((tmp_path / "splits.json").read_text())
    assert len(splits["test"]) == 15 and splits["train"] == [] and splits["val"] == []
    assert all((tmp_path / p).is_file() for p in splits["test"])
    assert not list(tmp_path.glob("*.tmp"))


def test_photos_fetch_extra_without_debian_is_an_error(tmp_path, capsys):
    """--extra names Debian packages: with --no-debian it would be silently dropped."""
    assert main(["photos", "fetch", "--out", str(tmp_path), "--no-debian", "--extra"]) == 2
    assert "--extra" in capsys.readouterr().err
    assert not (tmp_path / "splits.json").exists()


def test_eval_rotation_split_without_images_is_an_error(tmp_path, capsys):
    """--split picks a split of --images; alone it used to be ignored (the 15 test photos were used)."""
    assert main(["eval", "rotation", "--split", "val", "--out", str(tmp_path)]) == 2
    assert "--images" in capsys.readouterr().err


def test_read_option_changes_the_plan_and_bad_values_exit_2(tmp_path, capsys):
    """``--read`` is a benchmark's option (the user commands read each model as its weights file says): ``eval
    patchpose --read passes=1`` parses to that change; a bad or unknown setting is a clear error (exit 2, no
    traceback) on every command that takes it, and the user commands refuse the option."""
    from patchpose.cli.main import build_parser
    from patchpose.cli.options import read_plan

    parser = build_parser()
    assert read_plan(parser.parse_args(["eval", "patchpose", "--data", "D", "--read", "passes=1"])) == {
        "passes": 1
    }
    img = str(demo_photo())
    for cmd in (
        ["estimate", img],
        ["match", img, img],
        ["extract", "I", "--out", "f.h5"],
        ["colmap", "I", "--out", "o"],
    ):
        with pytest.raises(SystemExit):
            parser.parse_args([*cmd, "--read", "passes=1"])
    capsys.readouterr()
    # in this process (a subprocess each would take half a minute): any exception but exit 2 fails the test
    for cmd in (["eval", "rotation", "--step", "90", "--out", str(tmp_path)],):
        for bad in (
            "passes=0",
            "turns=3",
            "orientation_offset=9",
            "descriptor_region=nan",
            "passes",
            "reread_scale=2",
        ):
            capsys.readouterr()
            try:
                code = main([*cmd, "--read", bad])
            except SystemExit as e:  # argparse's own usage error
                code = e.code
            err = capsys.readouterr().err
            assert code == 2 and "error" in err and len(err.strip().splitlines()) <= 2, (cmd, bad, err)


def test_export_stores_the_read_plan(tmp_path):
    from patchpose.estimator import PatchPoseEstimator

    out = tmp_path / "m.onnx"
    args = ["export", "onnx", "--weights", "patchpose-v9", "--out", str(out)]
    assert main([*args, "--read", "orientation_offset=-0.5"]) == 0
    plan = PatchPoseEstimator.load(out, backend="onnx").plan
    assert (plan.passes, plan.orientation_offset, plan.descriptor_region) == (2, -0.5, 2.25)


def test_train_recipe_errors_exit_2(tmp_path):
    r = run_cli("train", "--recipe", "patchpose-v9", "--config", "polar", "--out", str(tmp_path / "a"))
    assert r.returncode == 2 and "not both" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("train", "--recipe", "nope", "--out", str(tmp_path / "b"))
    assert r.returncode == 2 and "patchpose-v9" in r.stderr  # the recipes there are
    r = run_cli("train", "--recipe", "patchpose-v9", "--out", str(tmp_path / "c"), "optim.stepz=3")
    assert r.returncode == 2 and "stepz" in r.stderr and not (tmp_path / "c" / "stage1").exists()


class _Reached(Exception):
    pass


@pytest.mark.parametrize(
    "module, func, argv",
    [
        (
            "patchpose.evaluation.patchpose_eval",
            "evaluate",
            ["eval", "patchpose", "--data", "D", "--out", "O"],
        ),
        ("patchpose.evaluation.hpatches_eval", "evaluate_hpatches", ["eval", "hpatches", "--root", "R"]),
        (
            "patchpose.evaluation.hpatches_eval",
            "evaluate_hpatches",
            ["eval", "hpatches", "--root", "R", "--detector", "harris", "--keypoints", "K"],
        ),
        (
            "patchpose.evaluation.pose_eval",
            "evaluate_pose",
            ["eval", "pose", "--pairs", "P", "--images", "I"],
        ),
        ("patchpose.evaluation.rotation_eval", "evaluate_rotation", ["eval", "rotation"]),
        (
            "patchpose.evaluation.synthetic",
            "eval_synthetic",
            ["eval", "synthetic", "--images", "I", "--split", "val"],
        ),
    ],
)
def test_every_eval_command_calls_its_function_with_arguments_it_takes(monkeypatch, module, func, argv):
    """The parser's options reach the evaluation function as arguments it accepts (a stub binds them to
    the real signature), so an option wired to the wrong command fails here, not in a user's run."""
    import importlib
    import inspect

    mod = importlib.import_module(module)
    sig = inspect.signature(getattr(mod, func))

    def stub(*args, **kwargs):
        sig.bind(*args, **kwargs)  # TypeError on an argument the function does not take
        raise _Reached

    monkeypatch.setattr(mod, func, stub)
    with pytest.raises(_Reached):
        main(argv)


def test_output_paths_that_cannot_be_written_exit_2(tmp_path, capsys):
    img = str(demo_photo())
    (tmp_path / "afile").write_text("x")
    assert main(["estimate", img, "--out", str(tmp_path / "afile" / "sub")]) == 2
    (tmp_path / "o" / "astronaut_poses.json").mkdir(parents=True)  # a folder where the file goes
    assert main(["estimate", img, "--out", str(tmp_path / "o"), "--overwrite"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("patchpose estimate: error:") for e in err)


def test_images_with_dots_in_their_names_keep_their_own_poses_file(tmp_path):
    src = cv2.imread(str(demo_photo()))
    for n in (1, 2):
        cv2.imwrite(str(tmp_path / f"scene.{n}.png"), src[::4, ::4])
        assert main(["estimate", str(tmp_path / f"scene.{n}.png"), "--out", str(tmp_path / "o")]) == 0
    names = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert names == ["scene.1_poses.json", "scene.1_poses.png", "scene.2_poses.json", "scene.2_poses.png"]


def test_float_image_files_outside_0_1_and_huge_budgets_exit_2(tmp_path, capsys):
    f = (np.random.default_rng(0).random((120, 160, 3)) * 2 + 0.5).astype(np.float32)
    assert cv2.imwrite(str(tmp_path / "f.tiff"), f)
    assert main(["estimate", str(tmp_path / "f.tiff"), "--out", str(tmp_path / "o")]) == 2
    assert "is read as values in [0, 1]" in capsys.readouterr().err
    cv2.imwrite(str(tmp_path / "ok.tiff"), f / 3.0)  # within [0, 1]: read
    assert main(["estimate", str(tmp_path / "ok.tiff"), "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    img = str(demo_photo())
    assert main(["estimate", img, "--max-keypoints", "3000000000", "--out", str(tmp_path / "o")]) == 2
    assert main(["bench", "--keypoints", "600000000"]) == 2
    assert main(["bench", "--out", ""]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "max_keypoints must be an integer from 0 to" in err[0] and "--out" in err[2]


def test_generate_patchpose_names_a_bad_setting(tmp_path, capsys):
    for opt, val, name in (
        ("--long-side", "-5", "long_side"),
        ("--keypoints-per-image", "0", "keypoints_per"),
    ):
        assert (
            main(["generate", "patchpose", "--images", str(tmp_path), "--out", str(tmp_path / "o"), opt, val])
            == 2
        )
        assert name in capsys.readouterr().err


def test_complex_keypoints_are_refused(tmp_path):
    import patchpose
    from patchpose.errors import InputError

    est = patchpose.PatchPoseEstimator.from_pretrained()
    img = cv2.imread(str(demo_photo()))[..., ::-1]
    with pytest.raises(InputError, match="real numbers"):
        est.estimate(img, np.array([[40 + 5j, 30]]))
    np.save(tmp_path / "kp.npy", np.array([[40 + 5j, 30]]))
    assert (
        main(["estimate", str(demo_photo()), "--keypoints", str(tmp_path / "kp.npy"), "--out", str(tmp_path)])
        == 2
    )


def _fake_runs(monkeypatch):
    """Replace the recipe runner and the one-config trainer by stubs that record their calls (no training;
    the trainer module is replaced whole, so this works whatever it imports)."""
    import types

    import patchpose.training.recipe as recipe_mod

    calls = []

    def fake_recipe(recipe, out_dir, overrides=(), resume=False, progress=True):
        calls.append(("recipe", recipe, str(out_dir), list(overrides), resume))
        return {"name": recipe, "stages": [], "finished": True, "weights": None}

    def fake_train(cfg, out_dir, resume=False, progress=True):
        calls.append(("config", cfg, str(out_dir), None, resume))
        return {"step": 0}

    monkeypatch.setattr(recipe_mod, "train_recipe", fake_recipe)
    monkeypatch.setitem(sys.modules, "patchpose.training.trainer", types.SimpleNamespace(train=fake_train))
    return calls


def test_train_without_config_or_recipe_trains_the_default_models_recipe(tmp_path, monkeypatch):
    from patchpose.training.recipe import load_recipe
    from patchpose.weights import DEFAULT_MODEL

    calls = _fake_runs(monkeypatch)
    assert main(["train", "--out", str(tmp_path / "a"), "run.threads=1", "--resume"]) == 0
    assert calls == [("recipe", "patchpose-fast-v1", str(tmp_path / "a"), ["run.threads=1"], True)]
    assert DEFAULT_MODEL == "patchpose-fast-v1" and load_recipe(DEFAULT_MODEL)["name"] == DEFAULT_MODEL
    calls.clear()
    assert main(["train", "--recipe", "patchpose-v9", "--out", str(tmp_path / "b")]) == 0
    assert [c[:2] for c in calls] == [("recipe", "patchpose-v9")]


def test_train_with_config_runs_that_config_alone(tmp_path, monkeypatch):
    calls = _fake_runs(monkeypatch)
    assert main(["train", "--config", "v1", "--out", str(tmp_path), "optim.lr=0.003"]) == 0
    (kind, cfg, out, _, resume), *rest = calls
    assert kind == "config" and not rest and out == str(tmp_path) and not resume
    assert cfg.optim.lr == 0.003 and cfg.model.arch == "small-cnn"  # the Cartesian v1 preset, overridden


def test_only_the_cli_imports_argparse_or_the_cli():
    """Library modules take typed arguments, never an argparse Namespace: no module under patchpose/ but
    patchpose/cli imports argparse, and none imports patchpose.cli except ``python -m patchpose.train``'s
    entry point."""
    import ast
    from pathlib import Path

    import patchpose

    root = Path(patchpose.__file__).parent
    bad, scanned = [], 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("cli/"):
            continue
        scanned += 1
        package = ["patchpose", *rel.split("/")[:-1]]
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                names = [mod] + [f"{mod}.{a.name}" for a in node.names]
            else:
                continue
            if any(n.split(".")[0] == "argparse" for n in names):
                bad.append(f"{rel}: imports argparse")
            if rel != "train.py" and any(
                n == "patchpose.cli" or n.startswith("patchpose.cli.") for n in names
            ):
                bad.append(f"{rel}: imports patchpose.cli")
    assert scanned > 20 and not bad, bad


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "hpatches", "--root", "R"],
        ["eval", "rotation"],
        ["eval", "pose", "--pairs", "P", "--images", "I"],
        ["bench", "--upright"],
    ],
)
def test_peers_folder_is_one_option_wherever_it_is_taken(argv, capsys):
    """``--peers DIR`` (cli.options.add_peers) parses to the folder in every benchmark that takes it, is None
    without it, and its help says what it adds to that command; no user command takes it."""
    from patchpose.cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args([*argv, "--peers", "PEERS"]).peers == "PEERS"
    assert parser.parse_args(argv).peers is None
    with pytest.raises(SystemExit):
        parser.parse_args([*argv[: 2 if argv[0] == "eval" else 1], "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--peers DIR folder of the peers' weights (its README names the files)" in out
    assert "never bundled: " in out
    for user in (
        ["match", "a.png", "b.png"],
        ["extract", "IMAGES", "--out", "f.h5"],
        ["colmap", "I", "--out", "o"],
    ):
        with pytest.raises(SystemExit):
            parser.parse_args([*user, "--peers", "PEERS"])


def test_mistakes_a_newcomer_makes_are_one_line_that_says_what_is_wrong(tmp_path, capsys):
    """A folder given as the image or the weights, a binary homography, a misspelt model name: each a line naming the problem
    (and the bundled models), exit 2; `--version` answers."""
    cases = [
        (["estimate", str(tmp_path)], "is a folder, not an image file"),
        (
            ["estimate", str(demo_photo()), "--weights", "patchpose-fast", "--out", str(tmp_path)],
            "patchpose-fast-v1",
        ),
        (
            ["estimate", str(demo_photo()), "--weights", str(tmp_path), "--out", str(tmp_path)],
            "is a folder, not a weights file",
        ),
    ]
    np.save(tmp_path / "h.npy", np.eye(3))
    photo = str(demo_photo())
    cases.append((["match", photo, photo, "--homography", str(tmp_path / "h.npy"), "--out", str(tmp_path)],
                  "not a text file (a 3×3 matrix"))  # fmt: skip
    for argv, match in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert match in err and len(err.splitlines()) == 1, (argv, err)
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("patchpose 1.")


def test_help_shows_each_options_default():
    from patchpose.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.choices and "estimate" in a.choices)
    text = " ".join(sub.choices["match"].format_help().split())
    assert "keypoints detected per image, not with --keypoints1/2 (default: 2000)" in text
    assert "(default: None)" not in text and "(default: False)" not in text
    assert "output folder (default: ./patchpose_match)" in text  # a help that says its default says it once


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "hpatches", "--root", "R"],
        ["eval", "upright", "--root", "R", "--peers", "P"],
        ["eval", "colmap", "I"],
    ],
)
@pytest.mark.parametrize("n", ["0", "-5"])
def test_a_benchmarks_max_keypoints_below_1_is_one_line_naming_the_option(tmp_path, capsys, argv, n):
    """``eval hpatches --max-keypoints 0`` once fell through to the protocol's 2,000 (``0 or 2000``) and -5 failed
    mid-run; 0 or less is a line naming the option, before any work (the folders here do not exist)."""
    assert main([*argv, "--out", str(tmp_path / "o"), "--max-keypoints", n]) == 2
    err = capsys.readouterr().err.strip()
    assert "--max-keypoints" in err and f"got {n}" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["extract", "I"],
        ["extract", "I", "--aliked", "A.pth"],
        ["colmap", "I"],
        ["colmap", "I", "--aliked", "A.pth"],
    ],
)
def test_extract_and_colmaps_max_keypoints_below_1_names_the_option(tmp_path, capsys, argv):
    """``--max-keypoints 0`` with ``--aliked`` (ALIKED's extractor checks it first) and in ``colmap`` answered
    ``max_keypoints must be ...``, the library's keyword; it names the option, before any work."""
    assert main([*argv, "--out", str(tmp_path / "o"), "--max-keypoints", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "error: --max-keypoints must be an integer from 1 to 10,000,000, got 0" in err, err
    assert len(err.splitlines()) == 1 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("which", ["--recipes", "--upright"])
def test_bench_recipes_and_upright_refuse_weights_they_would_not_read(tmp_path, capsys, which):
    """``bench --recipes`` times match_pair's recipes and ``--upright`` the votes, each with the bundled models they
    read (as ``patchpose match`` runs them): a ``--weights`` given there was ignored without a word (the default
    models timed under its name's expectations). One line, before any work."""
    peers = ["--peers", str(tmp_path)] if which == "--upright" else []
    assert main(["bench", which, *peers, "--weights", "patchpose-v9", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"--weights is not read by {which}" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def _small_pool(root, val: bool):
    """A photo folder of two small train photos (and, with ``val``, one val photo) and its splits.json."""
    root.mkdir()
    splits = {"train": [], "val": [], "test": []}
    for name, split in (("astronaut", "train"), ("coffee", "train"), ("chelsea", "val")):
        if split == "val" and not val:
            continue
        src = next(p for p in wheel_photo_paths() if p.stem == name)
        cv2.imwrite(str(root / f"{name}.png"), cv2.resize(cv2.imread(str(src)), (256, 256)))
        splits[split].append(f"{name}.png")
    (root / "splits.json").write_text(json.dumps(splits))
    return root


#: a few steps of a small network, as fast as a training run goes
TINY_RUN = [
    "model.windows=[1.0]",
    "model.width=0.5",
    "model.embed_dim=128",
    "optim.steps=2",
    "optim.batch_size=8",
    "optim.warmup_steps=1",
    "optim.amp=none",
    "data.num_workers=0",
    "data.long_side=256",
    "run.threads=2",
    "run.log_every=1",
]


def test_train_no_progress_hides_the_bar_not_the_logs(tmp_path, caplog, capsys):
    """``--no-progress`` ("no progress bar (logs only)") hid the bar, and with it the only running account of the
    run (step, losses, validation accuracies): nothing came between the first warnings and the end. The bar's line
    is now a log line every run.log_every steps; the warnings and info lines print as before; no bar is drawn."""
    photos = _small_pool(tmp_path / "photos", val=False)
    argv = ["train", "--config", "v1", "--out", str(tmp_path / "r"), "--resume", "--no-progress"]
    with caplog.at_level("INFO", logger="patchpose"):
        assert main([*argv, f"data.photos={photos}", "data.val_pairs=0", *TINY_RUN]) == 0
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("patchpose")]
    assert any(lv == "WARNING" and "--resume: no checkpoint" in m for lv, m in logged), logged
    steps = [m for lv, m in logged if lv == "INFO" and m.startswith("step ")]
    assert [m.split(":")[0] for m in steps] == ["step 1/2", "step 2/2"] and "total" in steps[-1], logged
    assert "train:" not in capsys.readouterr().err  # no bar


def test_train_shape_no_progress_logs_the_bars_line(tmp_path, caplog):
    """``train-shape --no-progress`` alike: its bar's loss line is a log line every log_every steps."""
    photos = _small_pool(tmp_path / "photos", val=False)
    tiny = [
        "steps=2",
        "batch=8",
        "photos_per_batch=2",
        "long_side=256",
        "keypoints=50",
        "margin=20",
        "log_every=1",
    ]
    with caplog.at_level("INFO", logger="patchpose"):
        assert (
            main(
                ["train-shape", "--photos", str(photos), "--out", str(tmp_path / "s"), "--no-progress", *tiny]
            )
            == 0
        )
    steps = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    assert [m.split(":")[0] for m in steps] == ["step 1/2", "step 2/2"] and "identity" in steps[-1], steps


@pytest.mark.parametrize("val", [False, True])
def test_train_warns_when_the_val_split_is_empty(tmp_path, caplog, val):
    """A photo folder whose val split holds no photo, with data.val_pairs > 0, trained without a word: nothing was
    validated and best.pt was simply the last step's. Training goes on (checkpoint.pt is what a recipe's next stage
    and export read) with a warning naming the folder; a folder with val photos gives none."""
    photos = _small_pool(tmp_path / "photos", val=val)
    argv = ["train", "--config", "v1", "--out", str(tmp_path / "r"), "--no-progress", f"data.photos={photos}"]
    with caplog.at_level("INFO", logger="patchpose"):
        assert main([*argv, "data.val_pairs=8", *TINY_RUN]) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "val" in r.getMessage()]
    if val:
        assert not warned, warned
    else:
        assert len(warned) == 1 and f"{photos} holds no val photos" in warned[0], warned
        assert (tmp_path / "r" / "best.pt").is_file() and (tmp_path / "r" / "checkpoint.pt").is_file()


def test_estimate_and_match_refuse_to_replace_an_earlier_runs_outputs(tmp_path, capsys):
    """``estimate`` and ``match`` run again into the same folder replaced the earlier run's files without a word
    (``extract`` and ``colmap`` refuse). They are now one line naming the file, before any work, unless
    ``--overwrite``; other files in the folder (another image's poses) are not in the way; every file is still
    written whole (no temporary file left)."""
    small = tmp_path / "small.png"
    cv2.imwrite(str(small), cv2.imread(str(demo_photo()))[::4, ::4])
    out = tmp_path / "o"
    (out / "notes.txt").parent.mkdir()
    (out / "notes.txt").write_text("mine")  # a folder that holds something else: not in the way
    est = ["estimate", str(small), "--out", str(out), "--max-keypoints", "20"]
    assert main(est) == 0
    first = (out / "small_poses.json").read_bytes()
    assert main(est) == 2
    err = capsys.readouterr().err.strip()
    assert f"{out / 'small_poses.json'} exists (and 1 more of its outputs): pass --overwrite" in err, err
    assert len(err.splitlines()) == 1 and (out / "small_poses.json").read_bytes() == first
    assert main([*est, "--format", "csv"]) == 2  # the picture is the same file
    assert "small_poses.png exists: pass --overwrite" in capsys.readouterr().err
    assert main([*est, "--max-keypoints", "10", "--overwrite"]) == 0
    assert len(json.loads((out / "small_poses.json").read_text())["keypoints"]) <= 10
    mt = ["match", str(small), str(small), "--out", str(out), "--max-keypoints", "50"]
    assert main(mt) == 0
    (out / "summary.json").write_text("an earlier summary")
    capsys.readouterr()
    assert main(mt) == 2
    err = capsys.readouterr().err.strip()
    assert (
        f"{out / 'matches.png'} exists (and 2 more of its outputs)" in err and len(err.splitlines()) == 1
    ), err
    assert (out / "summary.json").read_text() == "an earlier summary"
    assert main([*mt, "--overwrite"]) == 0 and json.loads((out / "summary.json").read_text())["matches"] > 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "matches.csv",
        "matches.png",
        "notes.txt",
        "small_poses.json",
        "small_poses.png",
        "summary.json",
    ]
    assert (out / "notes.txt").read_text() == "mine"


def test_an_interrupt_while_estimate_or_match_writes_leaves_none_of_their_outputs(
    tmp_path, monkeypatch, capsys
):
    """estimate and match wrote their files one at a time: Ctrl-C between them left the poses without the picture
    (matches.png without the rest), and the rerun was refused ("exists: pass --overwrite"). The files are renamed
    into place together: an interrupt leaves none of them, no temporary file, and the rerun works as a first run."""
    import patchpose.apps as apps

    small = tmp_path / "small.png"
    cv2.imwrite(str(small), cv2.imread(str(demo_photo()))[::4, ::4])
    out = tmp_path / "o"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    runs = (
        ("draw_poses", ["estimate", str(small), "--max-keypoints", "20"]),
        ("write_matches_csv", ["match", str(small), str(small), "--max-keypoints", "50"]),
    )
    names = lambda: sorted(p.name for p in out.iterdir()) if out.exists() else []  # noqa: E731
    for writer, argv in runs:
        before = names()
        with monkeypatch.context() as m:
            m.setattr(apps, writer, interrupted)  # after the poses file, or the matches' picture, is written
            assert main([*argv, "--out", str(out)]) == 130
        assert names() == before, writer
        assert main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    assert names() == ["matches.csv", "matches.png", "small_poses.json", "small_poses.png", "summary.json"]


def test_an_output_that_is_an_input_is_refused_even_with_overwrite(tmp_path, capsys):
    """``match OUT/matches.png b.png --out OUT --overwrite`` wrote its picture over the photo it read, and ``estimate
    … --keypoints OUT/x_poses.csv --format csv --overwrite`` its poses over the keypoints file; an output that is
    one of the files a run reads (by any name: a link to the folder) is one line before any work, files unchanged."""
    small = cv2.imread(str(demo_photo()))[::4, ::4]
    out = tmp_path / "o"
    out.mkdir()
    (tmp_path / "link").symlink_to(out)
    photo, other = out / "matches.png", tmp_path / "small.png"
    cv2.imwrite(str(photo), small)
    cv2.imwrite(str(other), small)
    keypoints = out / "small_poses.csv"
    keypoints.write_text("x,y\n100,120\n")
    before = {p: p.read_bytes() for p in (photo, keypoints)}
    for argv, named in (
        (["match", str(photo), str(other), "--out", str(out)], "matches.png"),
        (["match", str(tmp_path / "link" / "matches.png"), str(other), "--out", str(out)], "matches.png"),
        (
            ["estimate", str(other), "--keypoints", str(keypoints), "--format", "csv", "--out", str(out)],
            "csv",
        ),
    ):
        assert main([*argv, "--overwrite", "--max-keypoints", "20"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "which this run reads; choose another --out" in err, err
        assert named in err
    assert {p: p.read_bytes() for p in (photo, keypoints)} == before
    assert sorted(p.name for p in out.iterdir()) == ["matches.png", "small_poses.csv"]


def test_eval_synthetic_split_picks_the_photos_of_one_split(tmp_path, capsys):
    """``eval synthetic --images`` read every photo of a pool (its train photos too) with no way to ask for one
    split; ``--split`` picks one as ``generate hpatches --split`` does, and its default, ``all``, reads the folder
    as before (the documented numbers stay reproducible)."""
    photos = _small_pool(tmp_path / "photos", val=True)
    base = ["eval", "synthetic", "--images", str(photos), "--pairs", "8"]
    assert main([*base, "--split", "val", "--out", str(tmp_path / "val")]) == 0
    doc = json.loads((tmp_path / "val" / "results.json").read_text())
    assert doc["split"] == "val" and [Path(p).name for p in doc["photos"]] == ["chelsea.png"]
    assert "1 photos of the val split" in (tmp_path / "val" / "results.md").read_text()
    assert main([*base, "--out", str(tmp_path / "all")]) == 0
    doc = json.loads((tmp_path / "all" / "results.json").read_text())
    assert doc["split"] == "all" and len(doc["photos"]) == 3
    capsys.readouterr()
    for argv, match in (
        (["eval", "synthetic", "--split", "test"], "give --images"),
        (["eval", "synthetic", "--images", str(photos), "--split", "test"], "no photos of the 'test' split"),
    ):
        assert main([*argv, "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err.strip()
        assert match in err and len(err.splitlines()) == 1, err


def test_a_killed_colmap_command_ends_without_pycolmaps_stack_trace():
    """pycolmap, imported, puts glog's failure handler on SIGTERM (some 24 lines of native stack trace on a kill);
    the commands that run COLMAP put the default back first: a kill ends them as it ends any process."""
    pytest.importorskip("pycolmap")
    code = (
        "import os, signal\n"
        "import cv2, pycolmap\n"  # glog's handler in place first: a plain_sigterm that did nothing would fail
        "from patchpose.cli.options import plain_sigterm\n"
        "plain_sigterm()\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGTERM and "stack trace" not in r.stderr and r.stderr == ""


@pytest.fixture
def read_only_fs(tmp_path, monkeypatch):
    """``tmp_path / "rofs"``, a folder on what acts as a read-only file system: making a folder inside it fails
    with EROFS, as on a real one (root writes anywhere else, so permissions cannot stand in for it)."""
    import errno
    import os
    import pathlib

    rofs = tmp_path / "rofs"
    rofs.mkdir()
    real_mkdir = pathlib.Path.mkdir

    def mkdir(self, *args, **kwargs):
        if rofs in Path(self).parents:
            first = rofs / Path(self).relative_to(rofs).parts[0]
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(first))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
    return rofs


def test_an_output_in_a_missing_folder_of_a_read_only_disk_is_one_line_naming_it(read_only_fs, capsys):
    """``estimate --out`` and ``export --out`` in a folder that cannot be made said Python's "[Errno 30] Read-only
    file system: '...'"; now one line that says which folder could not be made (and for which file), and that
    nothing was written."""
    kp = read_only_fs.parent / "kp.csv"
    kp.write_text("x,y\n100,120\n")
    out = read_only_fs / "sub" / "deeper"
    assert main(["estimate", str(demo_photo()), "--keypoints", str(kp), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Errno" not in err
    assert (
        f"cannot make the output folder {out} (Read-only file system: {read_only_fs / 'sub'}); nothing" in err
    )
    from patchpose.errors import InputError
    from patchpose.models import create_model
    from patchpose.weights import save_weights

    weights = read_only_fs / "sub" / "w.safetensors"
    with pytest.raises(
        InputError, match=rf"^cannot make the folder \S+sub for {weights} \(Read-only file system"
    ):
        save_weights(create_model("small-cnn", width=0.5), weights)
    assert list(read_only_fs.iterdir()) == []


def test_export_onnx_on_a_read_only_disk_is_one_line_naming_the_file(read_only_fs, capsys, monkeypatch):
    """``export onnx --out`` in a missing folder of a read-only disk, or in its existing folder (the write fails),
    said "[Errno 30] Read-only file system: '.../m.onnx.tmp'" (a temporary name); now one line naming the file."""
    pytest.importorskip("onnx")
    import errno
    import os
    import tempfile

    args = ["export", "onnx", "--weights", "patchpose-fast-v1", "--out"]
    out = read_only_fs / "sub" / "m.onnx"
    assert main([*args, str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Errno" not in err
    assert (
        f"cannot make the folder {out.parent} for {out} (Read-only file system); nothing was written" in err
    )

    def mkstemp(*a, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    assert main([*args, str(read_only_fs / "m.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Errno" not in err and ".tmp" not in err
    assert f"ONNX file {read_only_fs / 'm.onnx'}: cannot write it (Read-only file system)" in err
    assert list(read_only_fs.iterdir()) == []


def test_every_option_says_its_default_in_the_help():
    """argparse shows no text, and so no default, for an option without a help text: every option of every
    command has one (the common ones say what they are), and the help of each with a default worth saying (not
    None, a flag's False, an empty list) ends with it, e.g. eval hpatches' --out (default: outputs/eval_hpatches)."""
    import argparse

    from patchpose.cli.main import build_parser

    def parsers(p, path=()):
        yield path, p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    yield from parsers(sub, (*path, name))

    missing, silent = [], []
    for path, p in parsers(build_parser()):
        fmt = p._get_formatter()
        for a in p._actions:
            if not a.option_strings or a.help is argparse.SUPPRESS or isinstance(a, argparse._HelpAction):
                continue
            if a.help is None:
                missing.append((" ".join(path), a.option_strings[0]))
            d = a.default
            worth = d is not None and d is not argparse.SUPPRESS and not isinstance(d, bool) and d != []
            if worth and "default" not in fmt._get_help_string(a).lower():
                silent.append((" ".join(path), a.option_strings[0]))
    assert not missing and not silent, (missing, silent)
    hp = build_parser()._subparsers._group_actions[0].choices["eval"]
    out = hp._subparsers._group_actions[0].choices["hpatches"].format_help()
    assert "output folder (default: outputs/eval_hpatches)" in " ".join(out.split())


def test_eval_hpatches_help_lists_every_row_and_the_defaults():
    """--rows' help names the rows computed by default and those computed by name only, as the rows say."""
    import re

    from patchpose.cli.main import build_parser
    from patchpose.evaluation.rows import ROWS, default_rows

    ev = build_parser()._subparsers._group_actions[0].choices["eval"]
    hp = ev._subparsers._group_actions[0].choices["hpatches"]
    text = " ".join(next(a for a in hp._actions if "--rows" in a.option_strings).help.split())
    default, by_name = re.search(r"default, of those allowed: (.*); by name only: (.*)$", text).groups()
    assert tuple(default.split(", ")) == default_rows(ROWS)
    assert by_name.split(", ") == [r for r in ROWS if r not in default_rows(ROWS)]


@pytest.mark.parametrize(
    "argv, removed",
    [
        (["eval", "hpatches", "--root", "x", "--protocol", "keynet"], "--protocol"),
        (["eval", "pose", "--pairs", "p", "--images", "i", "--estimator", "magsac"], "--estimator"),
        (["eval", "hpatches", "--root", "x", "--descriptor", "hardnet"], "hardnet"),
        (["generate", "patchpose", "--out", "o", "--b-scale-dist", "log"], "--b-scale-dist"),
    ],
)
def test_a_removed_option_is_said_as_such(argv, removed, capsys):
    """An option (or choice) that left patchpose is named as removed, with the git tag that has it, in argparse's one
    line (a training setting: tests/training/test_training.py)."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert e.value.code == 2 and f"{removed}: removed; git tag options-before-cleanup-2026-12-01" in err
