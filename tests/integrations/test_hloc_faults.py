"""Fault injection for the hloc features files users keep (#62): kills in the middle of appends, a file-size limit
and a full disk, tiny files that claim huge datasets, and image names that would replace or break other images.
After each fault the file either equals the old one or the new complete one, compared dataset by dataset."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="h5py is not installed (the 'hloc' extra)")

from patchpose.errors import InputError  # noqa: E402
from patchpose.fileio import temp_siblings  # noqa: E402
from patchpose.integrations.formats import (  # noqa: E402
    HlocFeaturesWriter,
    read_hloc_features,
    write_hloc_features,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")

# the images the child processes write: image i is always the same arrays
DATA = """
import numpy as np

def image(i, n=400):
    rng = np.random.default_rng(i)
    return (rng.uniform(0, 500, (n, 2)), rng.uniform(-1, 1, n), rng.uniform(0, 6.28, n),
            rng.random((n, 128)).astype(np.float32), None, (500, 500))
"""
namespace: dict = {}
exec(DATA, namespace)
image = namespace["image"]


def datasets(path: Path) -> dict:
    """Every dataset of an HDF5 file by its path, as arrays."""
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, v: out.__setitem__(k, v[()]) if isinstance(v, h5py.Dataset) else None)
    return out


def expected(tmp_path: Path, indices) -> dict:
    """The datasets of a file that holds images ``im0000`` … for ``indices``, written without any fault."""
    ref = tmp_path / f"ref-{len(indices)}.h5"
    if not ref.exists():
        with HlocFeaturesWriter(ref) as w:
            for i in indices:
                w.add(f"im{i:04d}", *image(i))
    return datasets(ref)


def run_child(code: str, *args: str, limit: int | None = None, **kw) -> subprocess.Popen:
    def preexec():
        if limit is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.update(OMP_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, "-c", DATA + textwrap.dedent(code), *args],
        env=env,
        preexec_fn=preexec,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


APPEND = """
import sys
from patchpose.integrations import formats
from patchpose.integrations.formats import write_hloc_features
path, start = sys.argv[1], int(sys.argv[2])
if sys.argv[3] == "disk":  # every file changed in a copy on the disk, as large ones are
    formats.IN_MEMORY_BYTES = 0
print("ready", flush=True)
for i in range(start, start + 10_000):
    write_hloc_features(path, f"im{i:04d}", *image(i))
    if i == start:
        print("wrote", flush=True)
"""


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_a_kill_during_appends_leaves_the_old_file_or_the_new_one_whole(tmp_path, where, monkeypatch):
    """``kill -9`` at random moments of a loop of appends (each a rewrite of the whole file): after every kill the
    file reads, and holds exactly the images written before the one the kill interrupted, each as written."""
    path = tmp_path / "f.h5"
    rng = random.Random(0)
    for _ in range(5):
        have = len(datasets(path)) // 5 if path.exists() else 0
        child = run_child(APPEND, str(path), str(have), where)
        assert child.stdout.readline().strip() == "ready"
        assert child.stdout.readline().strip() == "wrote"  # one append at least, however busy the machine
        time.sleep(rng.uniform(0.1, 0.6))
        child.send_signal(signal.SIGKILL)
        child.wait()
        got = datasets(path) if path.exists() else {}
        n = len(got) // 5  # keypoints, descriptors, scales, oris, image_size per image
        assert sorted({k.split("/")[0] for k in got}) == [f"im{i:04d}" for i in range(n)]
        want = expected(tmp_path, range(n))
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in got)
    # what killed writers left (hidden siblings) is removed by a later writer once it is an hour old
    stale = tmp_path / ".f.h5.tmp-killed"
    stale.write_bytes(b"half")
    young = tmp_path / ".f.h5.tmp-young"  # perhaps a live writer's: kept
    for p in temp_siblings(path):
        os.utime(p, (time.time() - 7200, time.time() - 7200))
    if where == "disk":
        from patchpose.integrations import formats

        monkeypatch.setattr(formats, "IN_MEMORY_BYTES", 0)
    young.write_bytes(b"busy")
    write_hloc_features(path, "last", *image(99))
    assert temp_siblings(path) == [young]


FULL = """
import sys
from patchpose.errors import InputError
from patchpose.integrations import formats
if sys.argv[2] == "while-writing":  # no check before: the write itself hits the limit
    import patchpose.fileio as fileio
    fileio.room_for = lambda *a, **k: None
if sys.argv[3] == "disk":  # changed in a copy on the disk, as a large file is
    formats.IN_MEMORY_BYTES = 0
    if sys.argv[2] == "while-writing":
        formats.room_for = lambda *a, **k: None
try:
    formats.write_hloc_features(sys.argv[1], sys.argv[4] if len(sys.argv) > 4 else "big", *image(7, n=20_000))
except InputError as e:
    print(e)
    sys.exit(2)
"""


@pytest.mark.parametrize("when", ["before", "while-writing"])
@pytest.mark.parametrize("where", ["memory", "disk"])
def test_a_file_size_limit_is_one_line_and_leaves_the_file_as_it_was(tmp_path, when, where):
    """A process under a file-size limit (``ulimit -f``) adds an image that does not fit: one line naming the file
    and the limit, exit 2 and no crash, the file byte for byte as it was, no temporary file left."""
    path = tmp_path / "f.h5"
    write_hloc_features(path, "small", *image(1))
    before = path.read_bytes()
    child = run_child(FULL, str(path), when, where, limit=len(before) + 50_000)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 2, (child.returncode, err[-2000:])
    assert len(out.strip().splitlines()) == 1 and str(path) in out
    # while writing: our own write stopped, or HDF5's in the copy on the disk (a large file's way)
    want = {
        "before": "file-size limit",
        "while-writing": "stopped the write" if where == "memory" else "cannot add",
    }
    assert want[when] in out, out
    assert path.read_bytes() == before and not temp_siblings(path)


def test_a_full_disk_is_one_line_and_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    import shutil

    path = tmp_path / "f.h5"
    write_hloc_features(path, "small", *image(1))
    before = path.read_bytes()
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage._replace(free=1000))
    with pytest.raises(InputError, match=r"needed, 1,000 bytes free on its disk; nothing was written"):
        write_hloc_features(path, "more", *image(2))
    assert path.read_bytes() == before


FILL = """
import os, sys
from patchpose.integrations.formats import write_hloc_features
path, left = sys.argv[1], int(sys.argv[2])
write_hloc_features(path, "small", *image(1))
disk = os.statvfs(os.path.dirname(path))
with open(os.path.join(os.path.dirname(path), "filler"), "wb") as f:  # the disk full but for ``left`` bytes
    f.write(bytes(max(0, disk.f_bavail * disk.f_frsize - left)))
"""


@pytest.mark.parametrize(
    "when, where, name",
    [(w, p, "big") for w in ("before", "while-writing") for p in ("memory", "disk")]
    + [("while-writing", p, "small") for p in ("memory", "disk")],
)
def test_a_real_full_disk_is_one_line_and_leaves_the_file_as_it_was(tmp_path, when, where, name):
    """On a real disk that fills (a 4 MiB tmpfs with 1 MiB left), adding an image of 10 MB, or replacing the one
    there by it: refused before writing, or (the room check skipped) stopped by the disk in our write or in HDF5's:
    one line naming the file, exit 2, no crash, the file byte for byte as it was and no temporary file left."""
    from conftest import on_small_disk

    (tmp_path / "fill.py").write_text(DATA + FILL)
    (tmp_path / "full.py").write_text(DATA + FULL)
    t = tmp_path
    done = on_small_disk(
        tmp_path / "disk",
        "4m",
        f"""
        "$PY" {t}/fill.py "$DISK/f.h5" 1048576 || exit 98
        cp "$DISK/f.h5" {t}/before.h5
        "$PY" {t}/full.py "$DISK/f.h5" {when} {where} {name} > {t}/out.txt; echo $? > {t}/rc.txt
        cp "$DISK/f.h5" {t}/after.h5; ls -A "$DISK" > {t}/listing.txt
        """,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rc, out = int((t / "rc.txt").read_text()), (t / "out.txt").read_text()
    assert rc == 2, (rc, out, done.stderr[-2000:])
    assert len(out.strip().splitlines()) == 1 and "f.h5" in out, out
    want = {
        "before": ["free on its disk"],
        "while-writing": ["stopped the write", "cannot add", "cannot write"],
    }
    assert any(w in out for w in want[when]), out
    assert (t / "after.h5").read_bytes() == (t / "before.h5").read_bytes()
    assert sorted((t / "listing.txt").read_text().split()) == ["f.h5", "filler"]


def test_an_error_inside_a_writer_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "f.h5"
    write_hloc_features(path, "a.jpg", *image(1))
    before = path.read_bytes()
    with pytest.raises(InputError):
        with HlocFeaturesWriter(path) as w:
            w.add("b.jpg", *image(2))
            w.add(
                "c.jpg", np.zeros((3, 2)), np.zeros(3), np.zeros(3), np.full((3, 8), np.nan), None, (8, 8)
            )  # bad descriptors
    assert path.read_bytes() == before
    with pytest.raises(InputError, match="needs the writer open"):
        HlocFeaturesWriter(path).add("d.jpg", *image(3))


def test_names_replace_only_the_image_of_that_name(tmp_path):
    """``db`` beside ``db/1.jpg`` would delete it, ``q.jpg/keypoints`` would break ``q.jpg``, ``a\\0b`` would be
    ``a`` in HDF5: all refused in one line, the file unchanged; an image is replaced by its own name."""
    path = tmp_path / "f.h5"
    with HlocFeaturesWriter(path) as w:
        w.add("db/1.jpg", *image(1))
        w.add("q.jpg", *image(2))
        w.add("a", *image(3))
    before = path.read_bytes()
    cases = [
        ("db", "holds other images"),
        ("q.jpg/keypoints", "'q.jpg' is an image"),
        ("a\0b", "NUL"),
        ("db/", "end with '/'"),
        ("../x.jpg", "'.' or '..'"),
    ]
    for name, message in cases:
        with pytest.raises(InputError, match=message) as e:
            write_hloc_features(path, name, *image(4))
        assert len(str(e.value).splitlines()) == 1
    assert path.read_bytes() == before
    write_hloc_features(path, "q.jpg", *image(5, n=7))
    write_hloc_features(path, "x/keypoints/1.jpg", *image(6))  # a folder named keypoints is no image
    write_hloc_features(path, "x/2 b\tc.jpg", *image(7))  # spaces and tabs are names as any
    assert (
        len(read_hloc_features(path, "q.jpg")["xy"]) == 7
        and len(read_hloc_features(path, "db/1.jpg")["xy"]) == 400
    )


READ = """
import resource, sys
from patchpose.errors import InputError
from patchpose.integrations.formats import read_hloc_features
try:
    read_hloc_features(sys.argv[1], "im.jpg")
except InputError as e:
    print(e)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


@pytest.mark.parametrize("rows", [10**9, 6 * 10**6])
def test_a_tiny_file_that_claims_a_huge_dataset_is_refused_before_it_is_read(tmp_path, rows):
    """A file of a few KB whose keypoints claim 10⁹ rows (past the documented limit) or 6·10⁶ with nothing stored:
    a one-line error, and the process stays far under 1 GB."""
    path = tmp_path / "bomb.h5"
    with h5py.File(path, "w") as f:
        f.create_group("im.jpg").create_dataset("keypoints", shape=(rows, 2), dtype="f4", chunks=(1024, 2))
    assert path.stat().st_size < 10_000
    child = run_child(READ, str(path))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-2000:]
    message, rss_kb = out.strip().splitlines()
    assert "claims" in message and str(path) in message
    assert int(rss_kb) < 2**20  # KB: under 1 GB


EXTRACT = """
import sys
from patchpose.cli.main import main
sys.exit(main(["extract", sys.argv[1], "--out", sys.argv[2], "--max-keypoints", "300", "--no-progress"]))
"""


def test_extract_past_a_file_size_limit_is_one_line_and_resumes(tmp_path):
    """``patchpose extract`` under a file-size limit its first image's part exceeds: one line, exit 2, no crash; the
    same command without the limit then finishes the file."""
    import cv2

    from conftest import make_textured_image

    images = tmp_path / "images"
    images.mkdir()
    for k in range(2):
        cv2.imwrite(str(images / f"{k}.png"), (make_textured_image(160, seed=k) * 255).astype(np.uint8))
    out = tmp_path / "f.h5"
    child = run_child(EXTRACT, str(images), str(out), limit=20_000)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 2, err[-2000:]
    assert len(err.strip().splitlines()) == 1 and "file-size limit" in err, err
    assert not out.exists()
    child = run_child(EXTRACT, str(images), str(out))
    _, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-2000:]
    assert sorted(datasets(out)) and len(read_hloc_features(out, "0.png")["xy"]) > 10


FILL_TO = """
import os, sys
disk = os.statvfs(sys.argv[1])
with open(os.path.join(sys.argv[1], "filler"), "wb") as f:  # the disk full but for sys.argv[2] bytes
    f.write(bytes(max(0, disk.f_bavail * disk.f_frsize - int(sys.argv[2]))))
"""


def test_extract_on_a_real_full_disk_keeps_every_finished_image_and_resumes(tmp_path):
    """``patchpose extract`` onto a real disk that fills while it joins the finished images into the file (its room
    check skipped, as when another program fills the disk meanwhile): one line, exit 2, no crash, no ``OUT`` or
    its temporary file, the finished images kept; with room again the same command finishes a file equal to an
    uninterrupted run's, dataset by dataset."""
    import cv2

    from conftest import make_textured_image, on_small_disk

    images = tmp_path / "images"
    images.mkdir()
    for k in range(2):
        cv2.imwrite(str(images / f"{k}.png"), (make_textured_image(160, seed=k) * 255).astype(np.uint8))
    (tmp_path / "extract.py").write_text(EXTRACT)
    (tmp_path / "unchecked.py").write_text(
        "import patchpose.integrations.extract as ex\nex.room_for = lambda *a, **k: None\n" + EXTRACT
    )
    (tmp_path / "fill.py").write_text(FILL_TO)
    t = tmp_path
    done = on_small_disk(
        tmp_path / "disk",
        "4m",
        f"""
        "$PY" {t}/extract.py {images} "$DISK/whole.h5" || exit 97
        cp "$DISK/whole.h5" {t}/whole.h5
        size=$(stat -c %s "$DISK/whole.h5"); rm "$DISK/whole.h5"
        "$PY" {t}/fill.py "$DISK" $((size * 3 / 2)) || exit 98
        "$PY" {t}/unchecked.py {images} "$DISK/f.h5" 2> {t}/err.txt; echo $? > {t}/rc.txt
        ls -A "$DISK" > {t}/listing.txt; ls -A "$DISK/f.h5.parts" > {t}/parts.txt
        rm "$DISK/filler"
        "$PY" {t}/extract.py {images} "$DISK/f.h5" || exit 96
        cp "$DISK/f.h5" {t}/resumed.h5
        """,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    rc, err = int((t / "rc.txt").read_text()), (t / "err.txt").read_text()
    assert rc == 2 and len(err.strip().splitlines()) == 1, (rc, err)
    assert "cannot write it" in err and "nothing was lost: the finished images are in" in err, err
    assert sorted((t / "listing.txt").read_text().split()) == ["f.h5.parts", "filler"]
    assert len((t / "parts.txt").read_text().split()) == 3  # two images and the settings
    whole, resumed = datasets(t / "whole.h5"), datasets(t / "resumed.h5")
    assert sorted(whole) == sorted(resumed) and all(np.array_equal(whole[k], resumed[k]) for k in whole)


def test_a_link_is_kept_a_read_only_file_refused_and_the_mode_kept(tmp_path):
    """The file a symbolic link points to gets the new image (the link stays a link); a file the user may not write
    is refused as an in-place write would be; the file's permission bits survive the rename."""
    real = tmp_path / "real.h5"
    write_hloc_features(real, "a.jpg", *image(1))
    os.chmod(real, 0o640)
    link = tmp_path / "link.h5"
    link.symlink_to(real)
    write_hloc_features(link, "b.jpg", *image(2))
    assert (
        link.is_symlink()
        and sorted(datasets(real))[0].startswith("a.jpg")
        and "b.jpg/keypoints" in datasets(real)
    )
    assert (real.stat().st_mode & 0o777) == 0o640
    if os.geteuid() != 0:  # root may write anything
        os.chmod(real, 0o440)
        with pytest.raises(InputError, match="may not be written"):
            write_hloc_features(real, "c.jpg", *image(3))


def test_a_dataset_stored_in_another_file_is_refused(tmp_path):
    """External storage makes a tiny file read any file's bytes (a size check on the file cannot see them): refused."""
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(64, dtype=np.float32).tobytes())
    path = tmp_path / "ext.h5"
    with h5py.File(path, "w") as f:
        f.create_group("im.jpg").create_dataset(
            "keypoints", shape=(8, 2), dtype="f4", external=[(str(secret), 0, 64)]
        )
    with pytest.raises(InputError, match="other files"):
        read_hloc_features(path, "im.jpg")
