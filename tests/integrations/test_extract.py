"""``patchpose extract``: hloc features of a folder, sharded and merged, resumed after SIGKILL, bad input."""

import copy
import io
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import cv2
import h5py
import numpy as np
import pytest
import torch

from patchpose.cli.main import main
from patchpose.errors import InputError
from patchpose.integrations import extract as ex
from patchpose.integrations.formats import read_hloc_features
from patchpose.matching.candidates import recipe_poses

N_IMAGES, KEYPOINTS = 200, 30


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """200 small textured images, a third of them in a subfolder (nested hloc groups), one flat."""
    root = tmp_path_factory.mktemp("extract") / "images"
    rng = np.random.default_rng(0)
    for k in range(N_IMAGES):
        d = root / "sub" if k % 3 == 0 else root
        d.mkdir(parents=True, exist_ok=True)
        im = cv2.GaussianBlur((rng.random((64, 64)) * 255).astype(np.uint8), (0, 0), 1.5)
        im = np.full_like(im, 128) if k == 7 else cv2.normalize(im, None, 0, 255, cv2.NORM_MINMAX)
        cv2.imwrite(str(d / f"{k:03d}.png"), im)
    return root


@pytest.fixture(scope="module")
def reference(images):
    torch.set_num_threads(1)  # the same threads as the CLI runs below (OMP_NUM_THREADS=1)
    return ex.extract_features(images, images.parent / "one.h5", max_keypoints=KEYPOINTS, progress=False)


def contents(path) -> dict:
    """Image name -> {dataset: array} of an extracted file."""
    out = {}
    with h5py.File(path, "r") as f:
        for name, g in ex._groups(h5py, f).items():
            assert g.attrs[ex.COMPLETE]
            out[name] = {k: g[k][()] for k in g}
    return out


def assert_same_features(a, b):
    ca, cb = contents(a), contents(b)
    assert sorted(ca) == sorted(cb)
    for name in ca:
        assert sorted(ca[name]) == sorted(cb[name]), name
        for k in ca[name]:
            assert ca[name][k].dtype == cb[name][k].dtype
            np.testing.assert_array_equal(ca[name][k], cb[name][k], err_msg=f"{name}/{k}")


def test_one_run_writes_every_image_in_hlocs_format(images, reference):
    c = contents(reference)
    assert len(c) == N_IMAGES and "sub/000.png" in c and "001.png" in c
    g = c["001.png"]
    n = len(g["keypoints"])
    assert 0 < n <= KEYPOINTS and g["keypoints"].dtype == np.float32
    assert g["descriptors"].shape == (128, n) and g["scales"].shape == g["oris"].shape == (n,)
    assert list(g["image_size"]) == [64, 64]
    # unit length, as hloc's SIFT: its matchers read 2 - 2·cosine as the distance (OpenCV's are ~512 long)
    np.testing.assert_allclose(np.linalg.norm(g["descriptors"], axis=0), 1.0, atol=1e-5)
    assert len(c["007.png"]["keypoints"]) == 0  # a flat image: no keypoints, still a group
    back = read_hloc_features(reference, "sub/000.png")
    assert back["descriptors"].shape[1] == 128 and np.isfinite(back["scale"]).all()
    assert not reference.with_name("one.h5.parts").exists()
    # a rerun onto the finished file does nothing; with other settings it is refused
    assert ex.extract_features(images, reference, max_keypoints=KEYPOINTS, progress=False) == reference
    with pytest.raises(
        InputError, match=rf"other settings \(max_keypoints: {KEYPOINTS} -> {KEYPOINTS + 1}\)"
    ):
        ex.extract_features(images, reference, max_keypoints=KEYPOINTS + 1, progress=False)


def test_two_shards_merged_equal_one_run(images, reference, tmp_path, capsys):
    shards = [tmp_path / f"s{i}.h5" for i in range(2)]
    for i, s in enumerate(shards):
        ex.extract_features(images, s, max_keypoints=KEYPOINTS, shard=f"{i}/2", progress=False)
    assert len(contents(shards[0])) == N_IMAGES // 2
    assert main(["extract-merge", str(shards[1]), str(shards[0]), "--out", str(tmp_path / "m.h5")]) == 0
    assert_same_features(tmp_path / "m.h5", reference)
    # a missing or repeated shard, or a file given twice, is one line and exit 2
    for args, msg in (([shards[0]], "missing shard"), ([shards[0], shards[0]], "both shard")):
        assert main(["extract-merge", *map(str, args), "--out", str(tmp_path / "x.h5")]) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x.h5").exists()


def test_merging_shards_of_other_settings_names_what_differs(tmp_path, capsys):
    """``extract-merge`` of shards made with other settings names the setting that differs, as ``extract`` does
    (:func:`~patchpose.fileio.settings_difference`); shards of another count say which."""
    folder = few_images(tmp_path / "images", 4)
    a, b, c = (tmp_path / f"{k}.h5" for k in "abc")
    ex.extract_features(folder, a, max_keypoints=20, shard="0/2", progress=False)
    ex.extract_features(folder, b, max_keypoints=30, shard="1/2", progress=False)
    ex.extract_features(folder, c, max_keypoints=20, shard="1/3", progress=False)
    assert main(["extract-merge", str(a), str(b), "--out", str(tmp_path / "m.h5")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"{b} was extracted with other settings than {a} (max_keypoints: 20 -> 30)")
    with pytest.raises(
        InputError, match=r"is shard 1/3 of 4 images, .* one of 2 shards of 4: shards of one run"
    ):
        ex.merge_features([a, c], tmp_path / "m.h5")
    assert not (tmp_path / "m.h5").exists()


def test_a_run_killed_part_way_resumes_to_the_same_file(images, reference, tmp_path, monkeypatch):
    out = tmp_path / "k.h5"
    parts = tmp_path / "k.h5.parts"
    args = [sys.executable, "-m", "patchpose.cli.main", "extract", str(images), "--out", str(out)]
    args += ["--max-keypoints", str(KEYPOINTS), "--no-progress"]
    proc = subprocess.Popen(args, env={**os.environ, "OMP_NUM_THREADS": "1"}, stderr=subprocess.PIPE)
    t = time.monotonic()

    def finished():  # a part the kill caught mid-write is a hidden temporary sibling, not a part
        return [p for p in parts.glob("*.h5") if not p.name.startswith(".")]

    while len(finished()) < 40 and proc.poll() is None and time.monotonic() - t < 120:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    done = finished()
    assert 40 <= len(done) < N_IMAGES and not out.exists()
    done[0].write_bytes(b"not hdf5")  # a damaged part is made again
    (parts / "x.h5.tmp").write_bytes(b"")  # so is what a kill leaves mid-write
    made = []
    real = ex.features_of_image
    monkeypatch.setattr(ex, "features_of_image", lambda *a, **k: made.append(1) or real(*a, **k))
    torch.set_num_threads(1)
    ex.extract_features(images, out, max_keypoints=KEYPOINTS, progress=False)
    assert len(made) == N_IMAGES - len(done) + 1
    assert_same_features(out, reference)
    assert not parts.exists()


def few_images(root, n: int = 3):
    """A folder of ``n`` small textured images."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    for k in range(n):
        im = cv2.GaussianBlur((rng.random((64, 64)) * 255).astype(np.uint8), (0, 0), 1.5)
        cv2.imwrite(str(root / f"{k:03d}.png"), cv2.normalize(im, None, 0, 255, cv2.NORM_MINMAX))
    return root


def test_one_run_at_a_time_writes_an_output(tmp_path, capsys, monkeypatch):
    """A run holds ``OUT.parts/lock`` (``flock``; its pid in it) while it lasts: a second run onto that ``--out`` is a
    one-line error naming the first's pid, and leaves its lock and folder alone (it went on before, and the first's
    end removed the folder under it: "the folder OUT.parts does not exist"); a lock left by a run that is gone (the
    system let go of it) is taken over, and removed with the folder at the end; a lock its holder removes, ending,
    while another run takes it is taken anew."""
    import fcntl

    folder = few_images(tmp_path / "images")
    out, parts = tmp_path / "f.h5", tmp_path / "f.h5.parts"
    argv = ["extract", str(folder), "--out", str(out), "--max-keypoints", "20", "--no-progress"]
    parts.mkdir()
    held = os.open(parts / "lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another run's, as the system sees it
        os.write(held, b"4242")
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{out}: another run (pid 4242) is writing it now (it holds {parts}/lock)" in err
        assert len(err.strip().splitlines()) == 1
        assert not out.exists() and os.listdir(parts) == ["lock"]
        assert (parts / "lock").read_text() == "4242"
    finally:
        os.close(held)  # that run ends, killed: its lock file stays, let go of
    assert main(argv) == 0 and out.exists() and not parts.exists()
    # the holder ends (removing its lock and the folder) between this run's open and its lock: taken anew
    real, calls = fcntl.flock, []
    parts = tmp_path / "g.h5.parts"

    def late(fd, op):
        if not calls:
            (parts / "lock").unlink()
            parts.rmdir()
        calls.append(op)
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", late)
    ex.extract_features(folder, tmp_path / "g.h5", max_keypoints=20, progress=False)
    monkeypatch.undo()
    assert len(calls) == 2 and (tmp_path / "g.h5").exists() and not parts.exists()


def test_a_disk_without_locks_leaves_no_lock_behind(tmp_path, monkeypatch):
    """Where the disk takes no ``flock`` (``ENOLCK``: some network disks) a run goes on unlocked, as before, and
    leaves neither ``OUT.parts/lock`` nor ``OUT.parts`` (the lock file it made was left behind by every run); a lock
    file that was there before, not this run's, is left alone."""
    import errno
    import fcntl

    def nolock(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    folder = few_images(tmp_path / "images")
    monkeypatch.setattr(fcntl, "flock", nolock)
    out, parts = tmp_path / "f.h5", tmp_path / "f.h5.parts"
    assert ex.extract_features(folder, out, max_keypoints=20, progress=False) == out
    assert out.is_file() and not parts.exists()
    # finished: the rerun takes it as it is, and leaves nothing either
    assert ex.extract_features(folder, out, max_keypoints=20, progress=False) == out
    assert not parts.exists()
    # another's lock file (a run on a machine whose mount takes locks): kept
    parts = tmp_path / "g.h5.parts"
    parts.mkdir()
    (parts / "lock").write_text("4242")
    ex.extract_features(folder, tmp_path / "g.h5", max_keypoints=20, progress=False)
    assert os.listdir(parts) == ["lock"] and (parts / "lock").read_text() == "4242"


def test_an_output_another_run_finishes_while_this_one_waits_for_the_lock_is_checked(tmp_path, monkeypatch):
    """The checks of an existing ``OUT`` are made again once the lock is held: a run that finished ``OUT`` with other
    settings between this run's first look and its lock is the usual refusal naming ``--overwrite`` (this run
    extracted everything and renamed over it); one with these settings is taken as it is (nothing extracted)."""
    folder = few_images(tmp_path / "images")
    other, same = tmp_path / "other.h5", tmp_path / "same.h5"
    ex.extract_features(folder, other, max_keypoints=10, progress=False)
    ex.extract_features(folder, same, max_keypoints=20, progress=False)
    out = tmp_path / "f.h5"
    real = ex._lock

    def finished_meanwhile(source):
        def lock(parts, where):
            if not out.exists():
                shutil.copyfile(source, out)  # the other run renames its OUT into place and lets go
            return real(parts, where)

        return lock

    monkeypatch.setattr(ex, "_lock", finished_meanwhile(other))
    with pytest.raises(
        InputError, match=r"f\.h5 exists with other settings \(max_keypoints: 10 -> 20\); .*--overwrite"
    ):
        ex.extract_features(folder, out, max_keypoints=20, progress=False)
    assert out.read_bytes() == other.read_bytes() and not (tmp_path / "f.h5.parts").exists()
    out.unlink()
    monkeypatch.setattr(ex, "_lock", finished_meanwhile(same))
    made = []
    monkeypatch.setattr(ex, "features_of_image", lambda *a, **k: made.append(1))
    assert ex.extract_features(folder, out, max_keypoints=20, progress=False) == out
    assert made == [] and out.read_bytes() == same.read_bytes() and not (tmp_path / "f.h5.parts").exists()


def test_resuming_with_other_settings_is_refused(images, tmp_path):
    parts = tmp_path / "r.h5.parts"
    parts.mkdir()
    (parts / "settings.json").write_text('{"detector": "harris"}')
    with pytest.raises(InputError, match=r"other settings or another shard \(.*detector: harris -> sift"):
        ex.extract_features(images, tmp_path / "r.h5", max_keypoints=KEYPOINTS, progress=False)
    # a folder OUT.parts that no run made (no manifest) is a user's: refused, not emptied when the run ends
    (tmp_path / "u.h5.parts").mkdir()
    (tmp_path / "u.h5.parts" / "notes.txt").write_text("keep")
    with pytest.raises(InputError, match="not made by patchpose extract"):
        ex.extract_features(images, tmp_path / "u.h5", max_keypoints=KEYPOINTS, progress=False)
    assert (tmp_path / "u.h5.parts" / "notes.txt").read_text() == "keep"


def test_at_sifts_keypoints_the_recipe_reads_no_model_and_says_so(images, reference, tmp_path):
    """``--detector sift`` (the default): SIFT's own scale and the dominant gradient's angle on SIFT's window
    (:func:`~patchpose.matching.candidates.recipe_poses`), no model: the settings say ``"scale": "detector"`` and name
    none, a model given is a one-line error, and a finished file of the settings before 2026-11-29 (our pose there)
    is refused, not returned as this recipe's."""
    from patchpose.data.keypoints import detect_sift
    from patchpose.data.patches import load_image
    from patchpose.matching.features import sift_features

    with h5py.File(reference, "r") as f:
        settings = json.loads(f.attrs[ex.SETTINGS])
    assert settings["scale"] == "detector" and settings["angle"] == "gradient" and "model" not in settings
    image = load_image(images / "001.png")
    xy, kps = detect_sift(image, KEYPOINTS)
    want = recipe_poses(sift_features(image, xy, kps))
    got = read_hloc_features(reference, "001.png")
    assert len(got["ori"]) == len(want.orientation) > 5
    np.testing.assert_allclose(got["ori"], want.orientation, atol=1e-5)  # the file stores float32
    # the scale is SIFT's own: its radius, half its size
    np.testing.assert_allclose(np.exp2(got["scale"]) * 16.0, [k.size / 2 for k in kps], rtol=1e-5)
    with pytest.raises(InputError, match="reads no model"):
        ex.extract_features(images, tmp_path / "m.h5", estimator="patchpose-v10", progress=False)
    assert main(["extract", str(images), "--out", str(tmp_path / "m.h5"), "--weights", "patchpose-v10"]) == 2
    assert not (tmp_path / "m.h5").exists()
    old = tmp_path / "old.h5"
    shutil.copy(reference, old)
    with h5py.File(old, "a") as f:
        f.attrs[ex.SETTINGS] = json.dumps(
            {k: v for k, v in settings.items() if k not in ("scale", "angle")} | {"model": "patchpose-v10"},
            sort_keys=True,
        )
    with pytest.raises(InputError, match="other settings"):
        ex.extract_features(images, old, max_keypoints=KEYPOINTS, progress=False)


def test_at_harris_corners_the_recipe_takes_our_scale_and_the_gradients_angle(images, tmp_path):
    """``--detector harris``: the ``oris`` are the dominant gradient's on the descriptor window at our scale
    (:func:`~patchpose.matching.candidates.recipe_poses`), the settings say ``"angle": "gradient"`` and name the
    model, and a finished file of the settings before 2026-11-29 (our angle there, no ``"angle"``) is refused."""
    from patchpose import PatchPoseEstimator
    from patchpose.data.keypoints import detect_harris
    from patchpose.data.patches import load_image
    from patchpose.matching.features import features_at
    from patchpose.recipes import MODELS

    out = tmp_path / "harris.h5"
    ex.extract_features(images, out, detector="harris", max_keypoints=KEYPOINTS, progress=False)
    with h5py.File(out, "a") as f:
        settings = json.loads(f.attrs[ex.SETTINGS])
        assert settings["angle"] == "gradient" and settings["model"] == MODELS["pose"]
    image = load_image(images / "001.png")
    xy = detect_harris(image, KEYPOINTS)
    est = PatchPoseEstimator.load(MODELS["pose"])
    ours = est.estimate(image, xy)
    want = recipe_poses(features_at(image, xy), ours)
    got = read_hloc_features(out, "001.png")
    assert len(got["ori"]) == len(want.orientation) > 5
    np.testing.assert_allclose(got["ori"], want.orientation, atol=1e-5)  # the file stores float32
    np.testing.assert_allclose(got["scale"], ours.scale, atol=1e-5)  # our scale
    assert (
        np.mean(np.abs(np.angle(np.exp(1j * (got["ori"] - ours.orientation)))) > 0.1) > 0.3
    )  # not our angle
    # another network of the same name (a retrained copy, a file without a name) does not resume this file
    other = copy.deepcopy(est.model)
    with torch.no_grad():
        next(other.parameters()).add_(0.01)
    twin = PatchPoseEstimator(other, est.meta)
    assert twin.name == est.name and twin.fingerprint != est.fingerprint == settings["model_fingerprint"]
    with pytest.raises(InputError, match="other settings"):
        ex.extract_features(
            images, out, detector="harris", max_keypoints=KEYPOINTS, estimator=twin, progress=False
        )
    with h5py.File(out, "a") as f:
        del settings["angle"]
        f.attrs[ex.SETTINGS] = json.dumps(settings, sort_keys=True)
    with pytest.raises(InputError, match="other settings"):
        ex.extract_features(images, out, detector="harris", max_keypoints=KEYPOINTS, progress=False)


@pytest.mark.parametrize("spec", ["3/2", "0/0", "a/b", "2/2", "-1/2", "1", ""])
def test_bad_shard_specs_are_one_line_errors(images, tmp_path, capsys, spec):
    assert main(["extract", str(images), "--out", str(tmp_path / "f.h5"), f"--shard={spec}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--shard must be i/n" in err and len(err.splitlines()) == 1
    assert ex.parse_shard("1/3") == (1, 3) and ex.parse_shard(None) == (0, 1)


def test_an_empty_or_missing_folder_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no images")
    for folder, msg in ((tmp_path / "empty", "holds no images"), (tmp_path / "nope", "not found")):
        assert main(["extract", str(folder), "--out", str(tmp_path / "f.h5"), "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1
    assert not (tmp_path / "f.h5").exists()
    (tmp_path / "a_file").write_text("not a folder")  # under a file: it was "[Errno 17] File exists: ..."
    cv2.imwrite(str(tmp_path / "empty" / "a.png"), np.full((32, 32), 128, np.uint8))
    assert main(["extract", str(tmp_path / "empty"), "--out", str(tmp_path / "a_file" / "f.h5")]) == 2
    err = capsys.readouterr().err.strip()
    assert "a_file is a file, not a folder" in err and len(err.splitlines()) == 1


def test_unreadable_images_are_named_after_the_others_are_extracted_and_the_rerun_finishes(
    images, tmp_path, capsys
):
    """Two broken files among four: the two good images are extracted, then one line names both broken ones and
    no features file is written; once they are removed the rerun extracts nothing again and writes the file a
    clean run writes."""
    folder = tmp_path / "photos"
    folder.mkdir()
    for k in (1, 2):
        shutil.copy(images / f"{k:03d}.png", folder / f"{k:03d}.png")
    (folder / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    (folder / "empty.png").write_bytes(b"")
    out = tmp_path / "f.h5"
    argv = ["extract", str(folder), "--out", str(out), "--max-keypoints", str(KEYPOINTS), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "2 of 4 images could not be read" in err
    assert "broken.jpg" in err and "empty.png" in err and not out.exists()
    parts = sorted(p.name for p in (tmp_path / "f.h5.parts").glob("*.h5"))
    assert len(parts) == 2  # the good images are done
    (folder / "broken.jpg").unlink()
    (folder / "empty.png").unlink()
    done = {p: p.stat().st_mtime_ns for p in (tmp_path / "f.h5.parts").glob("*.h5")}
    calls = []
    real = ex.load_image
    ex.load_image = lambda path: calls.append(path) or real(path)
    try:
        assert main(argv) == 0
    finally:
        ex.load_image = real
    assert calls == [] and len(done) == 2  # nothing extracted twice
    ex.extract_features(folder, tmp_path / "clean.h5", max_keypoints=KEYPOINTS, progress=False)
    assert_same_features(out, tmp_path / "clean.h5")


@pytest.mark.parametrize("n", ["0", "-1", "99999999999"])
def test_a_keypoint_budget_out_of_range_is_refused_before_anything_is_written(images, tmp_path, capsys, n):
    assert main(["extract", str(images), "--out", str(tmp_path / "f.h5"), "--max-keypoints", n]) == 2
    err = capsys.readouterr().err.strip()
    assert "--max-keypoints must be an integer from 1 to 10,000,000" in err and len(err.splitlines()) == 1, (
        err
    )
    assert not list(tmp_path.glob("f.h5*"))


def named(extract, name: str):
    """``extract`` with a ``name`` (what a resumed run checks)."""

    def run(image):
        return extract(image)

    run.name = name
    return run


def stopping(extract, name: str, at: int):
    """``extract`` (named ``name``) that raises ``RuntimeError("stopped")`` on its ``at``-th image: a run stopped
    part-way, its finished parts kept."""
    seen = []

    def run(image):
        seen.append(1)
        if len(seen) == at:
            raise RuntimeError("stopped")
        return extract(image)

    run.name = name
    return run


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    """Four views of a textured plane (``views``) and the same with the 2nd and 4th turned 90° clockwise (``turned``)."""
    from conftest import plane_views
    from patchpose.evaluation.colmap_eval import turn_every_other

    root = tmp_path_factory.mktemp("plane")
    views = plane_views(root / "views")
    return views, turn_every_other(views, root / "turned")


def groups(path) -> dict:
    """Image name → ``{dataset: array, attribute: value}`` of an extracted file."""
    out = {}
    with h5py.File(path, "r") as f:
        for name, g in f.items():
            out[name] = {**{k: v[()] for k, v in g.items()}, **dict(g.attrs)}
    return out


def assert_same_groups(got: dict, want: dict) -> None:
    """Two files' :func:`groups`: the same images, each with the same datasets and attributes."""
    assert got.keys() == want.keys()
    for name in want:
        for k in want[name]:
            np.testing.assert_array_equal(got[name][k], want[name][k], err_msg=f"{name}/{k}")


def test_a_learned_feature_unturned_equals_it_on_the_upright_photos(plane, tmp_path):
    """``extract=`` a feature that does not turn with the photo, ``unturn=True``, on views of which two are turned
    90° clockwise: each is extracted once at the turn that shows it upright (voted, snapped to the quarter turn): its
    descriptors are the upright view's, its keypoints the upright view's mapped into the turned photo, exactly; the
    upright views are as they were. Groups carry no scales or oris (as hloc writes ALIKED's) and say their turns."""
    from conftest import upright_sift_extractor

    views, turned = plane
    feature = named(upright_sift_extractor, "upright SIFT (test)")
    upright = groups(ex.extract_features(views, tmp_path / "up.h5", extract=feature, progress=False))
    out = ex.extract_features(turned, tmp_path / "un.h5", extract=feature, unturn=True, progress=False)
    got = groups(out)
    assert sorted(got) == sorted(upright) == ["00.png", "01.png", "02.png", "03.png"]
    for k, name in enumerate(sorted(got)):
        g, u = got[name], upright[name]
        assert "scales" not in g and "oris" not in g and g["patchpose_turn_found"]
        assert g["patchpose_turn_applied"] == (90.0 if k % 2 else 0.0), (name, g["patchpose_turn_degrees"])
        np.testing.assert_array_equal(g["descriptors"], u["descriptors"])
        h = u["image_size"][1]  # a view turned 90° clockwise: (x, y) upright is (h - 1 - y, x) in it
        want = np.stack([h - 1 - u["keypoints"][:, 1], u["keypoints"][:, 0]], 1) if k % 2 else u["keypoints"]
        np.testing.assert_allclose(g["keypoints"], want, atol=1e-3)
    with h5py.File(out, "r") as f:
        assert json.loads(f.attrs[ex.TURNS]) == {"00.png": 0.0, "01.png": 90.0, "02.png": 0.0, "03.png": 90.0}
        assert json.loads(f.attrs[ex.SETTINGS])["unturn"]["model"] == "patchpose-v10"
    # as it comes: the turned views' descriptors are not the upright ones'
    asis = groups(ex.extract_features(turned, tmp_path / "asis.h5", extract=feature, progress=False))
    assert len(asis["01.png"]["keypoints"]) != len(upright["01.png"]["keypoints"]) or not np.array_equal(
        asis["01.png"]["descriptors"], upright["01.png"]["descriptors"]
    )


def test_an_unturned_run_resumes_with_its_turns_and_shards_merge(plane, tmp_path, monkeypatch):
    """A run stopped by an error part-way keeps its turns (``OUT.parts/turns.json``): the rerun votes nothing and
    ends with the file of a run never stopped; shards vote the same turns over the whole folder and merge into that
    file; shards whose turns differ are refused."""
    from conftest import upright_sift_extractor
    from patchpose.matching import collection

    _, turned = plane
    feature = named(upright_sift_extractor, "upright SIFT (test)")
    whole = groups(
        ex.extract_features(turned, tmp_path / "whole.h5", extract=feature, unturn=True, progress=False)
    )
    stops_at_third = stopping(upright_sift_extractor, feature.name, 3)
    with pytest.raises(RuntimeError, match="stopped"):
        ex.extract_features(turned, tmp_path / "f.h5", extract=stops_at_third, unturn=True, progress=False)
    assert (tmp_path / "f.h5.parts" / "turns.json").is_file()
    from patchpose.matching import upright

    with monkeypatch.context() as m:  # parts extracted on another canvas are not resumed
        m.setattr(upright, "CANVAS_PIXELS", upright.CANVAS_PIXELS + 0.2)
        with pytest.raises(InputError, match="other settings"):
            ex.extract_features(turned, tmp_path / "f.h5", extract=feature, unturn=True, progress=False)

    def no_votes(*a, **k):
        raise AssertionError("voted again")

    monkeypatch.setattr(ex, "upright_collection", no_votes)
    resumed = groups(
        ex.extract_features(turned, tmp_path / "f.h5", extract=feature, unturn=True, progress=False)
    )
    assert_same_groups(resumed, whole)
    monkeypatch.setattr(ex, "upright_collection", collection.upright_collection)
    shards = [
        ex.extract_features(
            turned, tmp_path / f"s{i}.h5", extract=feature, unturn=True, shard=f"{i}/2", progress=False
        )
        for i in range(2)
    ]
    merged = groups(ex.merge_features(shards, tmp_path / "merged.h5"))
    assert merged.keys() == whole.keys() and all(
        np.array_equal(merged[n]["keypoints"], whole[n]["keypoints"]) for n in whole
    )
    with h5py.File(shards[1], "a") as f:
        f.attrs[ex.TURNS] = json.dumps({"00.png": 0.0, "01.png": 0.0, "02.png": 0.0, "03.png": 90.0})
    with pytest.raises(InputError, match="different turns"):
        ex.merge_features(shards, tmp_path / "merged2.h5")


def test_sift_described_upright_in_the_collection_reads_the_turned_views_as_the_upright_ones(
    plane, tmp_path, capsys
):
    """``unturn=True`` without a learned feature (``patchpose extract --unturn``): our votes find the 2nd and 4th
    views turned by 90° (within 1°; applied as voted, not snapped: nothing is resampled), every keypoint is
    described at the angle that shows its photo upright, and a turned view's descriptors are, keypoint for keypoint,
    those of the upright view (OpenCV's SIFT finds nearly the same keypoints in a view turned by 90°); the recipe's
    gradient angle is replaced, the detector's keypoints and scales kept."""
    views, turned = plane
    assert main(["extract", str(turned), "--out", str(tmp_path / "un.h5"), "--unturn", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "wrote" in printed and "un-turned 2 of 4 photos (by more than 8°)" in printed  # as colmap says it
    # the same run again finds the file finished: says so, and does not claim to have written it
    stamp = (tmp_path / "un.h5").stat().st_mtime_ns
    assert main(["extract", str(turned), "--out", str(tmp_path / "un.h5"), "--unturn", "--no-progress"]) == 0
    assert "was complete already: nothing written" in capsys.readouterr().out
    assert (tmp_path / "un.h5").stat().st_mtime_ns == stamp
    got = groups(tmp_path / "un.h5")
    up = groups(ex.extract_features(views, tmp_path / "up.h5", unturn=True, progress=False))
    plain = groups(ex.extract_features(turned, tmp_path / "plain.h5", progress=False))
    with h5py.File(tmp_path / "un.h5", "r") as f:
        settings = json.loads(f.attrs[ex.SETTINGS])
    assert settings["angle"] == "upright in the collection" and settings["unturn"]["model"] == "patchpose-v10"
    for k, name in enumerate(sorted(got)):
        g = got[name]
        assert g["patchpose_turn_applied"] == g["patchpose_turn_degrees"] and g["patchpose_turn_found"]
        assert abs((g["patchpose_turn_applied"] - 90.0 * (k % 2) + 180) % 360 - 180) < 1.0
        ori = read_hloc_features(tmp_path / "un.h5", name)["ori"]  # ours: radians counter-clockwise
        np.testing.assert_allclose(
            np.angle(np.exp(1j * (ori + np.radians(g["patchpose_turn_applied"])))), 0, atol=1e-5
        )
        np.testing.assert_array_equal(g["keypoints"], plain[name]["keypoints"])
        np.testing.assert_array_equal(g["scales"], plain[name]["scales"])
    for name in ("01.png", "03.png"):  # turned 90° clockwise: (x, y) upright is (h - 1 - y, x) in it
        u, g = up[name], got[name]
        h = u["image_size"][1]
        mapped = np.stack([h - 1 - u["keypoints"][:, 1], u["keypoints"][:, 0]], 1)
        dist = np.linalg.norm(mapped[:, None] - g["keypoints"][None], axis=2)
        i, j = np.arange(len(mapped)), dist.argmin(1)
        same = dist[i, j] < 0.5
        assert same.mean() > 0.9
        du = u["descriptors"].T[i[same]]
        dg = g["descriptors"].T[j[same]]
        cos = np.sum(du * dg, 1) / np.linalg.norm(du, axis=1) / np.linalg.norm(dg, axis=1)
        assert np.median(cos) > 0.99, np.median(
            cos
        )  # measured: 0.99997 (97 % and 98 % of the keypoints found again)


def test_a_sift_unturned_run_resumes_with_its_turns_and_shards_merge(plane, tmp_path, monkeypatch):
    """SIFT described upright in the collection (no learned feature): a run stopped part-way keeps its turns and
    the rerun votes nothing and ends with the file of a run never stopped; shards merge into that file, also where
    their turns differ in the last decimals (another machine's arithmetic), not where they differ by a degree."""
    from patchpose.matching import collection

    _, turned = plane
    whole = groups(ex.extract_features(turned, tmp_path / "whole.h5", unturn=True, progress=False))
    real, calls = ex.features_of_image, []

    def stops_at_third(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("stopped")
        return real(*a, **k)

    monkeypatch.setattr(ex, "features_of_image", stops_at_third)
    with pytest.raises(RuntimeError, match="stopped"):
        ex.extract_features(turned, tmp_path / "f.h5", unturn=True, progress=False)
    monkeypatch.setattr(ex, "features_of_image", real)
    monkeypatch.setattr(ex, "upright_collection", lambda *a, **k: pytest.fail("voted again"))
    resumed = groups(ex.extract_features(turned, tmp_path / "f.h5", unturn=True, progress=False))
    assert_same_groups(resumed, whole)
    monkeypatch.setattr(ex, "upright_collection", collection.upright_collection)
    shards = [
        ex.extract_features(turned, tmp_path / f"s{i}.h5", unturn=True, shard=f"{i}/2", progress=False)
        for i in range(2)
    ]
    with h5py.File(shards[1], "a") as f:
        turns = json.loads(f.attrs[ex.TURNS])
        f.attrs[ex.TURNS] = json.dumps({k: (v + 0.002) % 360 for k, v in turns.items()})
    merged = groups(ex.merge_features(shards, tmp_path / "merged.h5"))
    assert all(np.array_equal(merged[n]["descriptors"], whole[n]["descriptors"]) for n in whole)
    with h5py.File(shards[1], "a") as f:
        f.attrs[ex.TURNS] = json.dumps({k: (v + 1.0) % 360 for k, v in turns.items()})
    with pytest.raises(InputError, match="different turns"):
        ex.merge_features(shards, tmp_path / "merged2.h5")


def test_a_window_of_neighbours_votes_fewer_pairs_for_the_same_turns(plane, tmp_path, monkeypatch, capsys):
    """``unturn_window=1`` (``--unturn-window 1``): only neighbouring photos in the sorted names are voted (3 pairs
    of 4 photos instead of 6), the turns within 1° of every pair's, the window in the settings; a window below 1, or
    one without ``unturn``, is a one-line error before anything is written."""
    _, turned = plane
    real, asked = ex.upright_collection, []

    def recording(photos, pairs=None, **kw):
        asked.append(pairs)
        return real(photos, pairs=pairs, **kw)

    monkeypatch.setattr(ex, "upright_collection", recording)
    window = groups(
        ex.extract_features(turned, tmp_path / "w.h5", unturn=True, unturn_window=1, progress=False)
    )
    every = groups(ex.extract_features(turned, tmp_path / "a.h5", unturn=True, progress=False))
    assert asked == [[(0, 1), (1, 2), (2, 3)], None]
    for name in every:
        a, b = window[name]["patchpose_turn_degrees"], every[name]["patchpose_turn_degrees"]
        assert abs((a - b + 180) % 360 - 180) < 1.0, name
    with h5py.File(tmp_path / "w.h5", "r") as f:
        assert json.loads(f.attrs[ex.SETTINGS])["unturn"]["pairs"] == {"by": "window", "window": 1}
    with h5py.File(tmp_path / "a.h5", "r") as f:
        assert json.loads(f.attrs[ex.SETTINGS])["unturn"]["pairs"]["by"] == "retrieval"
    for kw in (dict(unturn=True, unturn_window=0), dict(unturn_window=2)):
        with pytest.raises(InputError, match="--unturn-window must be a whole number >= 1") as e:
            ex.extract_features(turned, tmp_path / "x.h5", progress=False, **kw)
        assert len(str(e.value).splitlines()) == 1
    assert main(["extract", str(turned), "--out", str(tmp_path / "y.h5"), "--unturn-window", "2"]) == 2
    assert "without --unturn" in capsys.readouterr().err
    assert not (tmp_path / "x.h5").exists() and not (tmp_path / "y.h5").exists()


def test_given_pairs_are_the_only_ones_voted_and_a_photo_in_none_keeps_its_angle(
    plane, tmp_path, monkeypatch
):
    """``unturn_pairs`` (``--unturn-pairs FILE``, hloc's pairs format): only those pairs are voted (each unordered
    pair once, in the sorted names' indices), their turns are every pair's where the pairs join the photos, a photo
    in no pair keeps the gradient's angle (no turn found), the pairs' count and digest are in the settings (so a
    rerun with other pairs is refused, not resumed), and the CLI reads the file."""
    _, turned = plane
    names = [n for n, _ in ex.image_names(turned)]
    real, asked = ex.upright_collection, []

    def recording(photos, pairs=None, **kw):
        asked.append(pairs)
        return real(photos, pairs=pairs, **kw)

    monkeypatch.setattr(ex, "upright_collection", recording)
    pairs = tmp_path / "pairs.txt"
    # hloc writes one pair a line; a pair given both ways and a comment count once / not at all
    # (written with a BOM, as some editors do, and Windows line ends)
    pairs.write_bytes(
        f"\ufeff# retrieval\r\n{names[1]} {names[0]}\r\n\r\n{names[0]} {names[1]}\r\n{names[2]} {names[1]}\n".encode()
    )
    got = groups(
        ex.extract_features(turned, tmp_path / "p.h5", unturn=True, unturn_pairs=pairs, progress=False)
    )
    every = groups(ex.extract_features(turned, tmp_path / "a.h5", unturn=True, progress=False))
    assert asked == [[(0, 1), (1, 2)], None]
    for name in names[:3]:
        assert got[name]["patchpose_turn_found"]
        a, b = got[name]["patchpose_turn_degrees"], every[name]["patchpose_turn_degrees"]
        assert abs((a - b + 180) % 360 - 180) < 1.0, name
    assert not got[names[3]]["patchpose_turn_found"] and every[names[3]]["patchpose_turn_found"]
    plain = groups(ex.extract_features(turned, tmp_path / "g.h5", progress=False))  # the gradient's angle
    np.testing.assert_array_equal(got[names[3]]["oris"], plain[names[3]]["oris"])
    with h5py.File(tmp_path / "p.h5", "r") as f:
        stated = json.loads(f.attrs[ex.SETTINGS])["unturn"]
    assert stated["pairs"]["by"] == "pairs" and stated["pairs"]["count"] == 2
    assert len(stated["pairs"]["sha256"]) == 64
    # other pairs are other settings: the finished file is not taken for theirs
    with pytest.raises(InputError, match="other settings"):
        ex.extract_features(turned, tmp_path / "p.h5", unturn=True, unturn_pairs=[(names[0], names[3])])
    assert main(["extract", str(turned), "--out", str(tmp_path / "c.h5"), "--unturn", "--unturn-pairs",
                 str(pairs), "--no-progress"]) == 0  # fmt: skip
    assert_same_groups(groups(tmp_path / "c.h5"), got)


def test_retrieval_pairs_vote_each_photos_nearest_with_every_pairs_turns(
    plane, tmp_path, capsys, monkeypatch
):
    """``unturn_retrieval=K`` (``--unturn-retrieval K``): the turns of each photo's K most similar photos, here
    within 1° of every pair's, K and the codebook's words in the settings; with a window or pairs, or without
    ``unturn``, a one-line error before anything is written."""
    from patchpose.matching import collection
    from patchpose.matching.retrieval import retrieval_settings

    _, turned = plane
    real, voted = collection.nearest_pairs, []

    def recording(v, k):
        voted.append((len(v), k, real(v, k)))
        return voted[-1][2]

    monkeypatch.setattr(collection, "nearest_pairs", recording)
    got = groups(
        ex.extract_features(turned, tmp_path / "r.h5", unturn=True, unturn_retrieval=1, progress=False)
    )
    every = groups(ex.extract_features(turned, tmp_path / "a.h5", unturn=True, progress=False))
    # the four photos' vectors, each paired with its nearest: fewer pairs than every one (6), and every pair's turns;
    # the default, 10 neighbours, is every pair of four photos
    assert [(n, k) for n, k, _ in voted] == [(4, 1), (4, 10)] and 2 <= len(voted[0][2]) < 6
    assert len(voted[1][2]) == 6
    for name in every:
        assert got[name]["patchpose_turn_found"]
        a, b = got[name]["patchpose_turn_degrees"], every[name]["patchpose_turn_degrees"]
        assert abs((a - b + 180) % 360 - 180) < 1.0, name
    with h5py.File(tmp_path / "r.h5", "r") as f:
        stated = json.loads(f.attrs[ex.SETTINGS])["unturn"]
    assert stated["pairs"] == {"by": "retrieval", **retrieval_settings(1)}
    for kw, message in (
        (dict(unturn=True, unturn_retrieval=0), "--unturn-retrieval must be a whole number >= 1"),
        (dict(unturn_retrieval=2), "give --unturn too"),
        (
            dict(unturn=True, unturn_retrieval=2, unturn_window=1),
            "--unturn-window and --unturn-retrieval each",
        ),
        (
            dict(unturn=True, unturn_retrieval=2, unturn_pairs=[("a", "b")]),
            "--unturn-pairs and --unturn-retrieval",
        ),
    ):
        with pytest.raises(InputError, match=message) as e:
            ex.extract_features(turned, tmp_path / "x.h5", progress=False, **kw)
        assert len(str(e.value).splitlines()) == 1
    assert main(["extract", str(turned), "--out", str(tmp_path / "y.h5"), "--unturn-retrieval", "2"]) == 2
    assert "give --unturn too" in capsys.readouterr().err
    assert not (tmp_path / "x.h5").exists() and not (tmp_path / "y.h5").exists()


def _extracted_unturned(plane, tmp_path, capsys):
    """``patchpose extract --unturn`` of the turned views into ``r.h5``: the folder, the file, the command and the
    settings the file records."""
    _, turned = plane
    out = tmp_path / "r.h5"
    argv = ["extract", str(turned), "--out", str(out), "--unturn", "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()
    with h5py.File(out, "r") as f:
        return turned, out, argv, json.loads(f.attrs[ex.SETTINGS])


def test_the_pairs_settings_keep_their_own_key_beside_the_turns_rules(plane, tmp_path, capsys, monkeypatch):
    """The pairs' settings are kept under ``unturn.pairs``: retrieval's k-means ``rounds`` (20) no longer hide the
    turns' own reweighting ``rounds`` (:data:`~patchpose.matching.collection.ROUNDS`, 10), so a rerun with another
    choice of pairs (``--unturn-window 2`` after retrieval) is refused naming the pairs' setting that differs, and a
    change of the turns' rounds stops a resume."""
    from patchpose.matching import collection, retrieval

    turned, out, argv, settings = _extracted_unturned(plane, tmp_path, capsys)
    stated = settings["unturn"]
    assert retrieval.ROUNDS != collection.ROUNDS  # else the test below would not tell them apart
    assert stated["rounds"] == collection.ROUNDS and stated["pairs"]["rounds"] == retrieval.ROUNDS
    assert stated["pairs"]["by"] == "retrieval" and stated["pairs"]["retrieval"] == ex.NEIGHBOURS
    assert main([*argv, "--unturn-window", "2"]) == 2
    err = capsys.readouterr().err
    assert "other settings (unturn.pairs.by: retrieval -> window;" in err and "unturn.rounds" not in err
    assert len(err.strip().splitlines()) == 1
    monkeypatch.setattr(collection, "ROUNDS", collection.ROUNDS + 1)
    with pytest.raises(InputError, match=rf"unturn.rounds: {collection.ROUNDS - 1} -> {collection.ROUNDS}\)"):
        ex.extract_features(turned, out, unturn=True, progress=False)


def test_a_file_of_an_older_unturn_rerun_says_so(plane, tmp_path, capsys):
    """A features file (or ``OUT.parts``) of ``--unturn`` made before the pairs' settings had their own key (they
    were directly under ``unturn``: ``retrieval``, ``window``, or ``pairs`` and ``sha256``), rerun unchanged, is
    refused in one line saying it was made by an older patchpose's ``--unturn`` and to pass ``--overwrite`` (it
    named ``unturn.rounds: 20 -> 10`` and other keys that did not change); ``--overwrite`` makes it anew."""
    turned, out, argv, settings = _extracted_unturned(plane, tmp_path, capsys)
    new = settings["unturn"]
    old = {
        **{k: v for k, v in new.items() if k != "pairs"},
        **{k: v for k, v in new["pairs"].items() if k != "by"},
    }
    assert (
        "retrieval" in old and old["rounds"] != new["rounds"]
    )  # the older layout: retrieval's rounds over the turns'
    with h5py.File(out, "r+") as f:
        f.attrs[ex.SETTINGS] = json.dumps({**settings, "unturn": old})
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        f"patchpose extract: error: {out} was made by an older patchpose's --unturn (its settings recorded another way); "
        "remove it, choose another --out or pass --overwrite"
    ), err
    # the older layouts of a window and of given pairs, and OUT.parts of one (no OUT yet): said alike
    parts = tmp_path / "w.h5.parts"
    parts.mkdir()
    for older in ({"window": 2}, {"pairs": 3, "sha256": "0" * 64}):
        stated = {**settings, "unturn": {**old, **older}, "shard": "0/1"}
        (parts / "settings.json").write_text(json.dumps(stated))
        with pytest.raises(InputError) as e:
            ex.extract_features(turned, tmp_path / "w.h5", unturn=True, progress=False)
        assert str(e.value) == (
            f"{parts} holds images extracted by an older patchpose's --unturn (its settings recorded another way); "
            "remove it, choose another --out or pass --overwrite"
        )
    assert main([*argv, "--overwrite"]) == 0
    with h5py.File(out, "r") as f:
        assert json.loads(f.attrs[ex.SETTINGS]) == settings


@pytest.mark.parametrize(
    ("lines", "kw", "message"),
    [
        ("a.png\n", {}, "line 1: a pair is two image names"),
        ("x y z\n", {}, "line 1: a pair is two image names"),
        ("{0} {0}\n", {}, "line 1: '{0}' is paired with itself"),
        ("{0} nowhere.png\n", {}, "'nowhere.png' is not an image of the folder"),
        ("# nothing\n", {}, "no pairs"),
        ("{0} {1}\n", {"unturn": False}, "give --unturn too"),
        ("{0} {1}\n", {"unturn_window": 1}, "give one of them"),
    ],
)
def test_bad_pairs_are_one_line_errors_before_any_work(plane, tmp_path, lines, kw, message):
    """A pairs file that is not two names a line, names an image not in the folder or none, pairs given without
    ``unturn`` or with a window: a one-line error, nothing written."""
    _, turned = plane
    names = [n for n, _ in ex.image_names(turned)]
    pairs = tmp_path / "pairs.txt"
    pairs.write_text(lines.format(*names))
    with pytest.raises(InputError, match=message.format(*names)) as e:
        ex.extract_features(
            turned, tmp_path / "x.h5", unturn_pairs=pairs, progress=False, **{"unturn": True, **kw}
        )
    assert len(str(e.value).splitlines()) == 1
    with pytest.raises(InputError, match="cannot read the pairs file"):
        ex.extract_features(turned, tmp_path / "x.h5", unturn=True, unturn_pairs=tmp_path / "none.txt")
    assert not (tmp_path / "x.h5").exists() and not (tmp_path / "x.h5.parts").exists()


def test_a_photo_without_a_found_turn_keeps_the_gradients_angle(plane, tmp_path, monkeypatch):
    """SIFT described upright in the collection: a photo no pair found a turn for (it may be turned) is described as
    without ``unturn`` (the gradient's angle), the others at their turns; its group says the turn was not found."""
    from patchpose.matching.collection import CollectionTurns

    _, turned = plane
    none = np.zeros(0)
    votes = CollectionTurns(np.array([0.0, 90.0, 0.0, 0.0]), np.array([True, True, True, False]),
                            np.zeros((0, 2), int), none, none, np.array([0, 0, 0, -1]))  # fmt: skip
    monkeypatch.setattr(ex, "upright_collection", lambda *a, **k: votes)
    got = groups(ex.extract_features(turned, tmp_path / "un.h5", unturn=True, progress=False))
    plain = groups(ex.extract_features(turned, tmp_path / "plain.h5", progress=False))
    assert not got["03.png"]["patchpose_turn_found"]
    np.testing.assert_array_equal(got["03.png"]["oris"], plain["03.png"]["oris"])
    np.testing.assert_array_equal(got["03.png"]["descriptors"], plain["03.png"]["descriptors"])
    assert not np.array_equal(got["01.png"]["oris"], plain["01.png"]["oris"])


def test_a_learned_feature_refuses_what_does_not_apply_in_one_line(plane, tmp_path, capsys):
    from conftest import upright_sift_extractor

    views, _ = plane
    feature = named(upright_sift_extractor, "upright SIFT (test)")
    cases = [
        (dict(extract=upright_sift_extractor), "needs a name"),
        (dict(extract=feature, detector="harris"), "its own keypoints"),
        (dict(extract=feature, estimator="patchpose-v10"), "only to un-turn"),
        (dict(extract=feature, unturn=1), "True or False"),
        (dict(extract="aliked"), "callable"),
    ]
    for kw, message in cases:
        with pytest.raises(InputError, match=message) as e:
            ex.extract_features(views, tmp_path / "x.h5", progress=False, **kw)
        assert len(str(e.value).splitlines()) == 1
    assert not (tmp_path / "x.h5").exists()
    for args, message in [
        (["--aliked-model", "aliked-n16"], "--aliked-model needs --aliked FILE"),
    ]:
        assert main(["extract", str(views), "--out", str(tmp_path / "y.h5"), *args]) == 2
        assert message in capsys.readouterr().err


def test_the_writer_leaves_out_scales_and_oris_for_a_feature_without_poses(tmp_path):
    from patchpose.integrations.formats import write_hloc_features

    xy, d = np.array([[1.0, 2.0], [3.0, 4.0]]), np.ones((2, 8), np.float32)
    write_hloc_features(tmp_path / "f.h5", "a.jpg", xy, None, None, d, image_size=(8, 8))
    got = read_hloc_features(tmp_path / "f.h5", "a.jpg")
    assert got["scale"] is None and got["ori"] is None and got["descriptors"].shape == (2, 8)
    with pytest.raises(InputError, match="both scale and ori, or neither"):
        write_hloc_features(tmp_path / "f.h5", "b.jpg", xy, None, 0.0, d, image_size=(8, 8))


def test_a_users_file_beside_the_output_is_never_touched(plane, tmp_path):
    """The file is joined in the run's own ``OUT.parts/joined.h5`` (it was ``OUT.partial``, deleted if a user had a
    file of that name, #62)."""
    from conftest import upright_sift_extractor

    views, _ = plane
    mine = tmp_path / "f.h5.partial"
    mine.write_text("a user's notes")
    ex.extract_features(views, tmp_path / "f.h5", extract=named(upright_sift_extractor, "t"), progress=False)
    assert mine.read_text() == "a user's notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.h5", "f.h5.partial"]


def test_a_resume_votes_again_where_the_folder_changed_and_redoes_parts_of_other_turns(
    plane, tmp_path, monkeypatch
):
    """A damaged ``turns.json`` is voted again (not a traceback); a part extracted at another turn than the new vote
    (the folder changed between the runs) is extracted again, so that every group is at the file's turns."""
    from conftest import upright_sift_extractor

    _, turned = plane
    feature = named(upright_sift_extractor, "upright SIFT (test)")
    out = tmp_path / "f.h5"
    parts = tmp_path / "f.h5.parts"
    calls = []
    real = ex.upright_collection

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(ex, "upright_collection", counted)
    stops_at_third = stopping(upright_sift_extractor, feature.name, 3)
    with pytest.raises(RuntimeError):
        ex.extract_features(turned, out, extract=stops_at_third, unturn=True, progress=False)
    # the turns, and the stamps (size, hash) of the images they were voted on
    doc = json.loads((parts / "turns.json").read_text())
    saved = doc["turns"]
    # the turns change under the finished parts (as if the folder had changed): 01.png now un-turned by 0
    saved["01.png"].update(degrees=0.0, applied=0.0)
    (parts / "turns.json").write_text(json.dumps(doc))
    monkeypatch.setattr(ex, "upright_collection", lambda *a, **k: pytest.fail("voted again"))
    got = groups(ex.extract_features(turned, out, extract=feature, unturn=True, progress=False))
    assert got["01.png"]["patchpose_turn_applied"] == 0.0  # redone at the file's turn, not kept at 90
    with h5py.File(out, "r") as f:
        assert json.loads(f.attrs[ex.TURNS])["01.png"] == 0.0
    out.unlink()
    monkeypatch.setattr(ex, "upright_collection", counted)
    nan = {n: {"degrees": float("nan"), "applied": float("nan"), "found": True} for n in saved}
    off = {
        n: {"degrees": 90.0, "applied": 0.0, "found": True} for n in saved
    }  # not the turn its vote applies
    stamps = doc["stamps"]
    for bad in (
        "{not json",
        "[1, 2]",
        json.dumps(saved),  # the turns alone (as before the stamps were kept)
        json.dumps(
            {"stamps": {**stamps, "01.png": [1, 1]}, "turns": saved}
        ),  # an image changed since the votes
        json.dumps({"stamps": stamps, "turns": {n: {"degrees": "x"} for n in saved}}),
        json.dumps({"stamps": stamps, "turns": nan}),
        json.dumps({"stamps": stamps, "turns": off}),
    ):
        with pytest.raises(RuntimeError):
            stops_at_third = stopping(upright_sift_extractor, feature.name, 3)
            ex.extract_features(
                turned, tmp_path / "g.h5", extract=stops_at_third, unturn=True, progress=False
            )
        (tmp_path / "g.h5.parts" / "turns.json").write_text(bad)
        before = len(calls)
        ex.extract_features(turned, tmp_path / "g.h5", extract=feature, unturn=True, progress=False)
        assert len(calls) == before + 1  # voted again, no traceback
        (tmp_path / "g.h5").unlink()


def test_what_a_kill_in_the_join_or_after_it_leaves_the_rerun_removes(plane, tmp_path, monkeypatch):
    """A join killed half-way leaves ``OUT.parts/joined.h5``: the rerun removes it before it asks for room; a kill
    after the rename, before the parts are removed, leaves them: the rerun (the file complete) removes them."""
    from conftest import upright_sift_extractor

    views, _ = plane
    feature = named(upright_sift_extractor, "t")
    out, parts = tmp_path / "f.h5", tmp_path / "f.h5.parts"
    monkeypatch.setattr(ex, "_assemble", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("killed")))
    with pytest.raises(RuntimeError):
        ex.extract_features(views, out, extract=feature, progress=False)
    (parts / "joined.h5").write_bytes(bytes(5_000_000))  # what the killed join left
    monkeypatch.undo()
    asked = []
    real = ex.room_for

    def watch(path, nbytes, what, total=None):
        asked.append((parts / "joined.h5").exists())
        return real(path, nbytes, what, total)

    monkeypatch.setattr(ex, "room_for", watch)
    monkeypatch.setattr(ex, "_clear", lambda p: (_ for _ in ()).throw(RuntimeError("killed after")))
    with pytest.raises(RuntimeError, match="killed after"):
        ex.extract_features(views, out, extract=feature, progress=False)
    assert asked == [False] and out.is_file() and parts.is_dir()
    monkeypatch.undo()
    ex.extract_features(views, out, extract=feature, progress=False)
    assert not parts.exists()


def test_hidden_files_and_folders_are_not_images(tmp_path):
    """A folder copied from a Mac holds ``._NAME.JPG`` beside each photo (metadata, not an image): it made the
    whole folder fail as unreadable. Hidden files and folders are skipped; upper-case extensions still count."""
    good = (np.arange(64 * 64) % 251).astype(np.uint8).reshape(64, 64)
    (tmp_path / "sub").mkdir()
    (tmp_path / ".thumbnails").mkdir()
    for name in ("A.JPG", "sub/b.png", ".thumbnails/c.png"):
        cv2.imwrite(str(tmp_path / name), good)
    (tmp_path / "._A.JPG").write_bytes(b"\x00\x05\x16\x07 mac metadata")
    assert [n for n, _ in ex.image_names(tmp_path)] == ["A.JPG", "sub/b.png"]


def test_overwrite_replaces_a_features_file_of_other_settings_and_nothing_else(images, reference, tmp_path):
    """``--overwrite``: a features file of other settings (and its OUT.parts of other settings) is replaced by this
    run's, whole; one of the same settings is left as it is; a file that is not ours is refused still."""
    out = tmp_path / "o.h5"
    shutil.copy(reference, out)  # made with max_keypoints=KEYPOINTS
    parts = tmp_path / "o.h5.parts"
    parts.mkdir()
    (parts / "settings.json").write_text('{"detector": "harris"}')
    with pytest.raises(InputError, match="or pass --overwrite"):
        ex.extract_features(images, out, max_keypoints=KEYPOINTS - 1, progress=False)
    ex.extract_features(images, out, max_keypoints=KEYPOINTS - 1, progress=False, overwrite=True)
    with h5py.File(out, "r") as f:
        assert json.loads(f.attrs[ex.SETTINGS])["max_keypoints"] == KEYPOINTS - 1
    assert not parts.exists() and max(len(g["keypoints"]) for g in contents(out).values()) <= KEYPOINTS - 1
    stamp = out.stat().st_mtime_ns
    ex.extract_features(images, out, max_keypoints=KEYPOINTS - 1, progress=False, overwrite=True)
    assert out.stat().st_mtime_ns == stamp  # the same settings: finished, nothing to replace
    theirs = tmp_path / "theirs.h5"
    theirs.write_text("a user's notes")
    assert main(["extract", str(images), "--out", str(theirs), "--overwrite", "--no-progress"]) == 2
    assert theirs.read_text() == "a user's notes"
    with h5py.File(tmp_path / "plain.h5", "w") as f:  # HDF5, but not a features file of ours
        f.create_dataset("x", data=np.zeros(3))
    with pytest.raises(InputError, match="is not a features file of patchpose extract"):
        ex.extract_features(
            images, tmp_path / "plain.h5", max_keypoints=KEYPOINTS, progress=False, overwrite=True
        )


def test_an_image_replaced_under_its_name_is_extracted_again_or_refused_naming_it(images, tmp_path, capsys):
    """extract knew images by name alone: an image replaced by another of the same name kept its old part in a
    resumed run, and a finished file of it reran as "complete already". Each group records its file's size and a
    hash of its bytes: a resumed run extracts a changed image again, and a finished file of one is refused in one
    line naming it, as other settings are (``--overwrite`` makes it anew); new times alone change nothing."""
    folder = tmp_path / "photos"
    folder.mkdir()
    for k in (1, 2, 4):
        shutil.copy(images / f"{k:03d}.png", folder / f"{k:03d}.png")
    (folder / "broken.jpg").write_bytes(b"not a jpeg")  # the run stops once the others' parts are made
    out, clean = tmp_path / "f.h5", tmp_path / "clean.h5"
    argv = ["extract", str(folder), "--out", str(out), "--max-keypoints", str(KEYPOINTS), "--no-progress"]
    assert main(argv) == 2 and len(list((tmp_path / "f.h5.parts").glob("*.h5"))) == 3
    capsys.readouterr()

    def replace(name: str, by: str) -> None:
        later = (folder / name).stat().st_mtime_ns + 10**9
        shutil.copy(images / by, folder / name)
        os.utime(folder / name, ns=(later, later))

    replace("002.png", "005.png")
    (folder / "broken.jpg").unlink()
    assert main(argv) == 0
    ex.extract_features(folder, clean, max_keypoints=KEYPOINTS, progress=False)
    assert_same_features(out, clean)  # 002.png's features are the new image's
    replace("004.png", "008.png")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "1 of its images changed since it was made (004.png." in err, err
    assert "pass --overwrite" in err
    assert main([*argv, "--overwrite"]) == 0
    clean.unlink()
    ex.extract_features(folder, clean, max_keypoints=KEYPOINTS, progress=False)
    assert_same_features(out, clean)
    capsys.readouterr()
    for path in folder.iterdir():  # new times, the same bytes (a cp -r, a git checkout): nothing changed
        later = path.stat().st_mtime_ns + 10**10
        os.utime(path, ns=(later, later))
    assert main(argv) == 0 and "complete already" in capsys.readouterr().out


#: paths opened while :func:`_opened` listens (an audit hook cannot be removed: it is added once, and listens only
#: while the list is there)
_OPENED: list | None = None


def _opened(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, os.PathLike)):
        _OPENED.append(os.fspath(args[0]))


def test_each_image_file_is_read_once_hashed_and_decoded_from_the_same_bytes(
    images, reference, tmp_path, monkeypatch
):
    """An extraction opened each image file three times (its stamp's hash, the header's size, the decode): it reads
    each once, hashes those bytes and decodes them. The features are those of the whole folder's run, each stamp is
    the file's as the checks before any work take it (in blocks), so a rerun finds the file complete."""
    global _OPENED
    folder = tmp_path / "photos"
    (folder / "sub").mkdir(parents=True)
    for name in ("001.png", "002.png", "sub/003.png"):
        shutil.copy(images / name, folder / name)
    if not getattr(sys, "_patchpose_open_hook", False):
        sys.addaudithook(_opened)
        sys._patchpose_open_hook = True
    out = tmp_path / "f.h5"
    _OPENED = []
    try:
        ex.extract_features(folder, out, max_keypoints=KEYPOINTS, progress=False)
        opened = [p for p in _OPENED if p.endswith(".png")]
    finally:
        _OPENED = None
    assert sorted(opened) == sorted(str(folder / n) for n in ("001.png", "002.png", "sub/003.png")), opened
    got, want = contents(out), contents(reference)
    assert sorted(got) == ["001.png", "002.png", "sub/003.png"]
    for name, datasets in got.items():
        assert sorted(datasets) == sorted(want[name])
        for k, v in datasets.items():
            np.testing.assert_array_equal(v, want[name][k], err_msg=f"{name}/{k}")
    with h5py.File(out, "r") as f:
        for name, g in ex._groups(h5py, f).items():
            assert list(g.attrs[ex.STAMP]) == ex._image_stamp(folder / name)
    monkeypatch.setattr(ex, "load_image", None)  # complete already: nothing decoded
    assert ex.extract_features(folder, out, max_keypoints=KEYPOINTS, progress=False) == out


class _Counted(io.BufferedReader):
    """A file opened for reading that counts the bytes its reads return (``_Counted.read_from[path]``), and raises
    MemoryError where a read of the whole file is asked of a path in ``_Counted.no_room``."""

    read_from: dict = {}
    no_room: set = set()

    def read(self, size=-1):
        if (size is None or size < 0) and self.name in _Counted.no_room:
            raise MemoryError
        got = super().read(size)
        _Counted.read_from[self.name] = _Counted.read_from.get(self.name, 0) + len(got)
        return got


def _counted_open(path, mode="r", *args, **kwargs):
    if mode != "rb" or args or kwargs:
        return open(path, mode, *args, **kwargs)
    return _Counted(io.FileIO(os.fspath(path), "rb"))


def test_an_image_over_the_pixel_limit_is_refused_from_its_header_before_its_bytes_are_read(
    images, tmp_path, monkeypatch
):
    """An image over ``PATCHPOSE_MAX_IMAGE_PIXELS`` is refused having read its header only (the file opened once,
    not read whole: a huge file is not loaded to be refused), with the one-line error and the very message
    ``load_image`` gives; the others are extracted. A part made of it before, under a higher limit, is kept by a
    rerun under the lower one, as parts always were."""
    from patchpose.data.image_header import MAX_PIXELS_ENV
    from patchpose.data.patches import load_image

    folder = tmp_path / "photos"
    folder.mkdir()
    for k in (1, 2):
        shutil.copy(images / f"{k:03d}.png", folder / f"{k:03d}.png")
    rng = np.random.default_rng(5)
    big = folder / "big.png"  # 480 × 360: over a limit of 10,000 pixels; about 500 KB stored
    texture = cv2.GaussianBlur((rng.random((360, 480, 3)) * 255).astype(np.uint8), (0, 0), 1.5)
    assert cv2.imwrite(str(big), texture, [cv2.IMWRITE_PNG_COMPRESSION, 0])
    size = big.stat().st_size
    assert size > 400_000
    whole = []
    real_read_bytes = pathlib.Path.read_bytes
    monkeypatch.setattr(pathlib.Path, "read_bytes", lambda p: whole.append(p.name) or real_read_bytes(p))
    monkeypatch.setattr(ex, "open", _counted_open, raising=False)
    monkeypatch.setattr(_Counted, "read_from", {})
    monkeypatch.setenv(MAX_PIXELS_ENV, "10000")
    with pytest.raises(InputError, match="pixels") as refused:
        load_image(big)
    want = str(refused.value)
    out = tmp_path / "f.h5"
    with pytest.raises(InputError) as e:
        ex.extract_features(folder, out, max_keypoints=KEYPOINTS, progress=False)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("1 of 3 images could not be read or used (")
    assert f"({want})" in msg  # load_image's message, word for word
    assert "big.png" not in whole, "read whole to be refused"
    assert 0 < _Counted.read_from[str(big)] <= 16_384 < size  # its header (a buffer's worth at most)
    assert sorted(p.name for p in (tmp_path / "f.h5.parts").glob("*.h5")) == sorted(
        ex._part_path(tmp_path / "f.h5.parts", n).name for n in ("001.png", "002.png")
    )
    # a part made under a higher limit (and a broken file, so that the run stops before the file is joined) ...
    (folder / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    monkeypatch.setenv(MAX_PIXELS_ENV, "1000000")
    with pytest.raises(InputError, match="1 of 4 images could not be read or used .*broken.jpg"):
        ex.extract_features(folder, out, max_keypoints=KEYPOINTS, progress=False)
    # ... is kept by a rerun under the lower limit: the file is joined, nothing refused
    (folder / "broken.jpg").unlink()
    monkeypatch.setenv(MAX_PIXELS_ENV, "10000")
    monkeypatch.setattr(ex, "load_image", None)  # nothing decoded again
    assert ex.extract_features(folder, out, max_keypoints=KEYPOINTS, progress=False) == out
    assert sorted(contents(out)) == ["001.png", "002.png", "big.png"]


def test_an_image_whose_bytes_do_not_fit_in_memory_is_a_one_line_error_not_a_memory_error(
    images, tmp_path, monkeypatch
):
    """Where reading a file's bytes raises MemoryError, the run names it in its one-line error (after the others
    are extracted), as any file that cannot be read: the run does not die of the MemoryError."""
    folder = tmp_path / "photos"
    folder.mkdir()
    for k in (1, 2):
        shutil.copy(images / f"{k:03d}.png", folder / f"{k:03d}.png")
    monkeypatch.setattr(ex, "open", _counted_open, raising=False)
    monkeypatch.setattr(_Counted, "no_room", {str(folder / "002.png")})
    real_read_bytes = pathlib.Path.read_bytes

    def read_bytes(p):  # the file read whole another way: no room either
        if str(p) in _Counted.no_room:
            raise MemoryError
        return real_read_bytes(p)

    monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)
    with pytest.raises(InputError) as e:
        ex.extract_features(folder, tmp_path / "f.h5", max_keypoints=KEYPOINTS, progress=False)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("1 of 2 images could not be read or used (")
    assert f"{folder / '002.png'}: not enough memory to read its " in msg
    assert len(list((tmp_path / "f.h5.parts").glob("*.h5"))) == 1  # 001.png is extracted
