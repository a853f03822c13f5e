"""``patchpose.fileio``: what is not a keypoint array is a clear error; writes leave a file whole or as it was."""

from __future__ import annotations

import signal
import subprocess
import sys

import numpy as np
import pytest

from patchpose.errors import InputError


def test_keypoint_files_that_are_not_keypoints_are_clear_errors(tmp_path):
    from patchpose.fileio import read_keypoints

    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(InputError, match="not a readable .npy"):
        read_keypoints(tmp_path / "bad.npy")
    np.save(tmp_path / "flat.npy", np.arange(6.0))
    with pytest.raises(InputError, match=r"\(N, 2\)"):
        read_keypoints(tmp_path / "flat.npy")
    (tmp_path / "bin.txt").write_bytes(bytes(range(256)))
    with pytest.raises(InputError, match="not a text file"):
        read_keypoints(tmp_path / "bin.txt")
    np.save(tmp_path / "ok.npy", np.array([[1.0, 2.0, 0.5]]))  # extra columns (e.g. a score) are dropped
    assert read_keypoints(tmp_path / "ok.npy").tolist() == [[1.0, 2.0]]
    (tmp_path / "ok.npy").rename(tmp_path / "OK.NPY")  # the suffix in any case (it was "not a text file")
    assert read_keypoints(tmp_path / "OK.NPY").tolist() == [[1.0, 2.0]]
    (tmp_path / "kp").mkdir()
    with pytest.raises(InputError, match="is a folder, not a keypoints file"):  # it was "not found"
        read_keypoints(tmp_path / "kp")


def test_a_header_that_names_x_and_y_is_followed_wherever_they_stand(tmp_path):
    """A pandas CSV (its index first), a ``y, x`` file and a commented header are read by their names; a header
    without those names leaves x, y first; extra columns are dropped."""
    from patchpose.fileio import read_keypoints

    cases = {
        "pandas.csv": (",x,y\n0,100.0,50.0\n1,3,4\n", [[100.0, 50.0], [3.0, 4.0]]),
        "yx.csv": ("Y;X\n50;100\n", [[100.0, 50.0]]),
        "comment.txt": ("# x y score\n1 2 0.5\n3 4 0.1\n", [[1.0, 2.0], [3.0, 4.0]]),
        "other.csv": ("u,v\n1,2\n", [[1.0, 2.0]]),
        "tabs.tsv": ("score\tx\ty\n0.5\t1\t2\n", [[1.0, 2.0]]),
        "to_string.txt": (
            "       x     y\n0  100.0  50.0\n1    3.0   4.0\n",
            [[100.0, 50.0], [3.0, 4.0]],
        ),  # pandas
        "short_header.csv": (
            "x,y\n0,100,50\n",
            [[100.0, 50.0]],
        ),  # as pandas reads it: the unnamed field an index
    }
    for name, (text, want) in cases.items():
        (tmp_path / name).write_text(text)
        assert read_keypoints(tmp_path / name).tolist() == want, name


def test_a_transposed_array_is_refused_and_a_wrong_shape_is_not_called_unreadable(tmp_path):
    from patchpose.fileio import read_keypoints

    np.save(tmp_path / "t.npy", np.zeros((2, 5)))  # 5 keypoints saved as (2, N)
    with pytest.raises(InputError, match="5 keypoints saved transposed"):
        read_keypoints(tmp_path / "t.npy")
    np.save(tmp_path / "flat.npy", np.arange(6.0))
    with pytest.raises(InputError) as e:
        read_keypoints(tmp_path / "flat.npy")
    assert "not a readable" not in str(e.value) and str(e.value).count("flat.npy") == 1
    # 2 keypoints with a score, or 3 saved transposed: not guessed
    np.save(tmp_path / "scored.npy", np.ones((2, 3)))
    with pytest.raises(InputError, match="2 keypoints with 3 columns or 3 keypoints saved transposed"):
        read_keypoints(tmp_path / "scored.npy")
    np.save(tmp_path / "scored.npy", np.ones((3, 3)))  # 3 keypoints with a score
    assert read_keypoints(tmp_path / "scored.npy").shape == (3, 2)


def test_a_byte_order_mark_does_not_hide_the_header_and_unfilled_named_columns_are_said(tmp_path):
    from patchpose.fileio import read_keypoints

    (tmp_path / "excel.csv").write_bytes("y,x\r\n50,100\r\n".encode("utf-8-sig"))  # Excel's "CSV UTF-8"
    assert read_keypoints(tmp_path / "excel.csv").tolist() == [[100.0, 50.0]]
    (tmp_path / "short.csv").write_text("id,x,y\n1,2\n")
    with pytest.raises(InputError, match="no line of x, y numbers in the columns its header names"):
        read_keypoints(tmp_path / "short.csv")


def test_a_header_alone_is_no_keypoints_as_an_empty_file_is(tmp_path):
    """pandas writes ``x,y`` for a frame with no rows: that is no keypoints (as an empty file and a ``(0, 2)`` array
    are), not an unreadable file; a header followed by a line of text stays an error."""
    from patchpose.fileio import read_keypoints

    for name, text in (("pandas.csv", ",x,y\n"), ("plain.csv", "x,y\n\n"), ("empty.csv", "")):
        (tmp_path / name).write_text(text)
        assert read_keypoints(tmp_path / name).shape == (0, 2), name
    (tmp_path / "notes.csv").write_text("x,y\nnone found today\n")
    with pytest.raises(InputError, match="no line of x, y numbers"):
        read_keypoints(tmp_path / "notes.csv")


def test_settings_difference_names_what_differs_nested_and_cut():
    from patchpose.fileio import settings_difference

    had = {"a": 1, "b": {"c": "x", "d": [1, 2]}, "e": None, "long": "y" * 60}
    want = {"a": 2, "b": {"c": "x", "d": [1, 3]}, "e": None, "long": "z" * 60, "new": True}
    text = settings_difference(had, want, limit=10)
    assert text.startswith(" (a: 1 -> 2; b.d: [1, 2] -> [1, 3]; long: yyy") and text.endswith(
        "new: none -> true)"
    )
    assert "..." in text and "e:" not in text and "b.c" not in text
    assert settings_difference(had, want, limit=2).endswith("; …)")
    assert settings_difference(None, want) == settings_difference(had, had) == ""


def test_files_written_together_appear_together_or_not_at_all(tmp_path):
    """estimate and match wrote their outputs one after another: an interrupt in between left a part of them (and
    their rerun refused, "exists: pass --overwrite"). Files written in a written_together block are renamed into
    place only once the block ends without an error; an error or Ctrl-C removes them all, the old files kept."""
    from patchpose.fileio import write_text_atomic, write_through, written_together

    (tmp_path / "b.txt").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with written_together():
            write_text_atomic(tmp_path / "a.txt", "new a")
            assert not (tmp_path / "a.txt").exists()  # not before the block ends
            write_text_atomic(tmp_path / "b.txt", "new b")
            raise KeyboardInterrupt
    assert [p.name for p in tmp_path.iterdir()] == ["b.txt"] and (tmp_path / "b.txt").read_text() == "old"
    with written_together():
        write_text_atomic(tmp_path / "a.txt", "new a")
        write_through(tmp_path / "c.png", lambda tmp: tmp.write_bytes(b"png"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "c.png"]
    assert (tmp_path / "a.txt").read_text() == "new a" and (tmp_path / "c.png").read_bytes() == b"png"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX's")
def test_a_signal_during_the_renames_acts_after_the_last_and_a_nested_block_joins_the_outer(
    tmp_path, monkeypatch
):
    """Signals were held by blocking them in the calling thread only: with torch's and OpenCV's threads in the
    process the system gave SIGTERM to another thread and only the first of three files was renamed. Now a SIGTERM
    or Ctrl-C during the renames acts once all are renamed; a block inside another renamed its files at its own end,
    and they stayed when the outer block then failed."""
    import os
    import signal
    import threading

    import patchpose.fileio as fileio

    real_rename = fileio._rename

    def rename(tmp, real):
        real_rename(tmp, real)
        if real.name == "a.txt":
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(fileio, "_rename", rename)
    keep = threading.Thread(
        target=threading.Event().wait, args=(5,), daemon=True
    )  # another thread, as torch's
    keep.start()
    with pytest.raises(SystemExit) as e:
        with fileio.written_together():
            for name in "abc":
                fileio.write_text_atomic(tmp_path / f"{name}.txt", name)
    assert e.value.code == 143 and sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "c.txt"]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    monkeypatch.setattr(fileio, "_rename", real_rename)
    with pytest.raises(RuntimeError):
        with fileio.written_together():
            fileio.write_text_atomic(tmp_path / "outer.txt", "x")
            with fileio.written_together():
                fileio.write_text_atomic(tmp_path / "inner.txt", "x")
            assert not (tmp_path / "inner.txt").exists()  # the outer block renames it
            raise RuntimeError("the outer block fails")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "c.txt"]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is POSIX's")
def test_a_sigterm_while_writing_leaves_no_temporary_file(tmp_path):
    """SIGTERM ended a process writing a file at once: its hidden temporary sibling (``.NAME.tmp-XXXX.png``)
    stayed. While a file is written SIGTERM now raises SystemExit (status 143, that of a process it ends), so that
    the temporary file is removed, as on Ctrl-C; in a written_together block the others written before it too."""
    code = (
        "import os, signal, sys, time\n"
        "from patchpose.fileio import write_through, written_together\n"
        "def killed(tmp):\n"
        "    tmp.write_bytes(b'part')\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(60)\n"
        "out = sys.argv[1]\n"
        "if sys.argv[2] == 'one':\n"
        "    write_through(out + '/a.png', killed)\n"
        "else:\n"
        "    with written_together():\n"
        "        write_through(out + '/a.json', lambda tmp: tmp.write_bytes(b'{}'))\n"
        "        write_through(out + '/b.png', killed)\n"
    )
    for case in ("one", "set"):
        out = tmp_path / case
        out.mkdir()
        r = subprocess.run(
            [sys.executable, "-c", code, str(out), case], capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 128 + signal.SIGTERM and "Traceback" not in r.stderr, (r.returncode, r.stderr)
        assert [p.name for p in out.iterdir()] == [], case
