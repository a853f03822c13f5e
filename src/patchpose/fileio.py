"""Small file helpers: atomic writes (a temporary sibling, then a rename; several files together) and reading keypoint
files."""

from __future__ import annotations

import contextlib
import contextvars
import errno
import glob
import json
import os
import shutil
from pathlib import Path

import numpy as np

from .errors import InputError


def write_text_atomic(path: str | Path, text: str, what: str = "file") -> Path:
    """Write ``text`` (UTF-8) to ``path`` as :func:`write_bytes_atomic` writes: a new temporary sibling, flushed, then
    renamed; a full disk, a folder that cannot be written or a failed rename is a one-line :class:`InputError` naming
    ``what`` and the path, the old file as it was and no temporary file left behind."""
    return write_bytes_atomic(path, text.encode("utf-8"), what)


def size_text(n: int) -> str:
    """A byte count as people read it: ``12,345 bytes`` or ``3.2 MiB``."""
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def room_for(path: Path, nbytes: int, what: str, total: int | None = None) -> None:
    """A one-line :class:`InputError` unless the disk of ``path``'s folder has ``nbytes`` free and the process's
    file-size limit (``RLIMIT_FSIZE``, ``ulimit -f``) allows a file of that size (of ``total`` bytes, where a file
    grows by ``nbytes``): checked before writing, so that a
    full disk is a message, not a half-written file or a crash in a library that writes it."""
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError as e:  # a folder that is missing or cannot be read
        raise InputError(
            f"{what} {path}: cannot write there ({e.strerror or e}); nothing was written"
        ) from None
    if nbytes > free:
        raise InputError(
            f"{what} {path}: {size_text(nbytes)} needed, {size_text(free)} free on its disk; nothing was written"
        )
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):  # no such limit on this system
        return
    size = (
        nbytes if total is None else total
    )  # the file's size once written (``nbytes`` more, where it grows)
    if limit != resource.RLIM_INFINITY and size > limit:
        raise InputError(
            f"{what} {path}: {size_text(size)} needed, the file-size limit (ulimit -f) is {size_text(limit)}; nothing "
            "was written"
        )


#: the prefix of the temporary siblings :func:`write_bytes_atomic` writes (``.NAME.tmp-XXXX``)
TEMP_SUFFIX = ".tmp-"
#: seconds after which a temporary sibling no writer renamed (a killed one's) is removed by the next writer
STALE_SECONDS = 3600


def temp_siblings(path: Path) -> list[Path]:
    """The temporary siblings of ``path`` that writers (:func:`write_bytes_atomic`) made."""
    return sorted(path.parent.glob(f".{glob.escape(path.name)}{TEMP_SUFFIX}*"))


def _target(path: Path, what: str, keep_link: bool = True) -> Path:
    """The file a write to ``path`` replaces (a symbolic link's target; with ``keep_link`` false the link itself,
    which the new file replaces), refused if the user may not write it."""
    if path.is_symlink() and not keep_link:
        return path  # the link goes, its target is left alone: only the folder is written
    real = path.resolve() if path.is_symlink() else path
    if real.exists() and not os.access(real, os.W_OK):
        raise InputError(f"{what} {path}: the file may not be written (its permissions); nothing was written")
    return real


def _new_temp(real: Path, path: Path, what: str, suffix: str = "") -> tuple[int, Path]:
    """A new temporary sibling of ``real`` (unique, ``mkstemp``) and its open descriptor; siblings older than
    :data:`STALE_SECONDS` (killed writers') are removed first. A folder that cannot be written (read-only, its
    permissions, missing) is a one-line :class:`InputError` naming ``what`` and ``path``."""
    import tempfile
    import time

    for old in temp_siblings(real):
        try:
            if time.time() - old.stat().st_mtime > STALE_SECONDS:
                old.unlink()
        except OSError:  # another writer's, renamed or removed meanwhile
            pass
    try:
        fd, name = tempfile.mkstemp(prefix=f".{real.name}{TEMP_SUFFIX}", suffix=suffix, dir=real.parent)
    except OSError as e:
        raise _write_error(e, path, real, 0, what) from None
    return fd, Path(name)


def commit_temp(tmp: Path, real: Path) -> None:
    """Flush the finished temporary file ``tmp`` to the disk and rename it over ``real`` with ``real``'s permission
    bits (a new file: the umask's), and the rename to the disk."""
    _flush(tmp)
    _rename(tmp, real)
    _flush_folder(real)


def _flush(tmp: Path) -> None:
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())


def _rename(tmp: Path, real: Path) -> None:
    keep = real.exists() and not real.is_symlink()  # a link replaced by the file: a new file's bits
    os.chmod(tmp, (real.stat().st_mode & 0o7777) if keep else 0o666 & ~_umask())
    os.replace(tmp, real)


def _flush_folder(real: Path) -> None:
    try:
        dfd = os.open(real.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # a folder that cannot be opened or synced (some file systems): the rename stands
        pass


def _write_error(e: OSError, path: Path, real: Path, nbytes: int, what: str) -> InputError:
    if e.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        free = shutil.disk_usage(real.parent).free
        return InputError(
            f"{what} {path}: the disk or a file-size limit stopped the write ({size_text(nbytes)} needed, "
            f"{size_text(free)} free); the file is as it was"
        )
    return InputError(f"{what} {path}: cannot write it ({e.strerror or e}); the file is as it was")


def make_folder(folder: str | Path, what: str = "folder", for_file: str | Path | None = None) -> Path:
    """Make ``folder`` and its missing parents; one that cannot be made (a read-only disk, no permission, a file in
    the way) is a one-line :class:`InputError` naming it (and ``for_file``, the file it is made for), as a folder
    that exists but cannot be written is (:func:`write_bytes_atomic`)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        at = f": {e.filename}" if e.filename is not None and Path(e.filename) != folder else ""
        made_for = f" for {for_file}" if for_file is not None else ""
        raise InputError(
            f"cannot make the {what} {folder}{made_for} ({e.strerror or e}{at}); nothing was written"
        ) from None
    return folder


def write_bytes_atomic(path: str | Path, data: bytes, what: str = "file", keep_link: bool = True) -> Path:
    """Write ``data`` to ``path`` as a database would: into a new temporary sibling (a unique name, ``mkstemp``),
    flushed to the disk, then renamed over ``path``; a kill at any moment leaves the old file (or none) or the new one
    whole, never a part. ``path`` may be a symbolic link: the file it points to is replaced, the link kept (with
    ``keep_link`` false the link is replaced by the new file, its target left as it was); the old
    file's permission bits are kept, and a file the user may not write is refused, as an in-place write would be.
    A full disk or a file-size limit, found before (:func:`room_for`) or while writing, is a one-line
    :class:`InputError` and the file is left as it was. Temporary siblings older than :data:`STALE_SECONDS` (a killed
    writer's) are removed."""
    path = Path(path)
    room_for(_target(path, what, keep_link), len(data), what)
    return write_through(path, lambda tmp: tmp.write_bytes(data), what, nbytes=len(data), keep_link=keep_link)


def write_through(
    path: str | Path, write, what: str = "file", nbytes: int | None = None, keep_link: bool = True
) -> Path:
    """Write ``path`` by ``write(tmp)`` into a new temporary sibling that keeps ``path``'s suffix (for writers that
    choose the format by it: matplotlib, OpenCV), flushed and renamed, with :func:`write_bytes_atomic`'s guarantees:
    a failure or an interrupt (Ctrl-C, and SIGTERM where nothing else handles it: :func:`_terminate_raises`) leaves
    the old file (or none) and no temporary file; an ``OSError`` is a one-line :class:`InputError` naming ``what``
    (and ``nbytes``, the size to be written, where known). Within :func:`written_together` the rename waits for
    the block's end. ``keep_link``: as :func:`write_bytes_atomic`'s."""
    path = Path(path)
    real = _target(path, what, keep_link)
    tmp = None
    with _terminate_raises():
        try:
            fd, tmp = _new_temp(real, path, what, suffix=path.suffix)
            os.close(fd)
            write(tmp)
            staged = _STAGED.get()
            if staged is None:
                commit_temp(tmp, real)
            else:
                staged.append((tmp, real, path, what))
        except OSError as e:
            size = nbytes if nbytes is not None else (tmp.stat().st_size if tmp and tmp.exists() else 0)
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            raise _write_error(e, path, real, size, what) from None
        except BaseException:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            raise
    return path


def write_npz(path: str | Path, arrays: dict) -> Path:
    """``arrays`` as an uncompressed ``.npz`` at ``path``, through :func:`write_through` (a temporary sibling, then a
    rename: a stopped run leaves no half-written file and no temporary)."""

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    return write_through(path, write, "arrays file")


#: the files a :func:`written_together` block has written, not yet renamed: ``(tmp, real, path, what)``
_STAGED: contextvars.ContextVar[list | None] = contextvars.ContextVar("patchpose_staged", default=None)


@contextlib.contextmanager
def written_together():
    """A ``with`` block whose files appear together or not at all: what :func:`write_through` (and so
    :func:`write_bytes_atomic`, :func:`write_text_atomic`) writes in it stays a temporary sibling until the block
    ends without an error; then all are flushed to the disk and renamed over their paths, one after the other, with
    Ctrl-C and SIGTERM held back during the renames (in the main thread: :func:`_signals_held`; they act once the
    last is renamed). An error or an interrupt in the block (SIGTERM too, :func:`_terminate_raises`) removes the
    temporary files and leaves every old file as it was: a command killed while it writes its outputs leaves none
    of them, and its rerun is not refused for a part of them. A block inside another adds its files to the outer
    block's, which renames them all."""
    if _STAGED.get() is not None:  # nested: the outer block renames, or removes, these too
        yield
        return
    staged: list[tuple[Path, Path, Path, str]] = []
    token = _STAGED.set(staged)

    def failed(e: OSError, tmp: Path, real: Path, path: Path, what: str) -> InputError:
        return _write_error(e, path, real, tmp.stat().st_size if tmp.exists() else 0, what)

    try:
        with _terminate_raises():
            yield
            _STAGED.reset(token)
            token = None
            for tmp, real, path, what in staged:  # the slow part, before the renames
                try:
                    _flush(tmp)
                except OSError as e:
                    raise failed(e, tmp, real, path, what) from None
            with _signals_held():
                for tmp, real, path, what in staged:
                    try:
                        _rename(tmp, real)
                    except OSError as e:
                        raise failed(e, tmp, real, path, what) from None
            for real in {real.parent: real for _, real, _, _ in staged}.values():
                _flush_folder(real)
    finally:
        if token is not None:
            _STAGED.reset(token)
        for tmp, *_ in staged:  # none is left where all were renamed
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def _terminate_raises():
    """While the block runs, SIGTERM raises ``SystemExit(143)`` (the status of a process it ends) instead of ending
    the process at once, so that the ``finally`` clauses that remove temporary files run, as they do for Ctrl-C;
    only in the main thread, and only where SIGTERM has its default action (a handler of the program's own is
    left alone)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def _signals_held():
    """Ctrl-C and SIGTERM held back while the block runs and acted on when it ends: their handlers replaced by ones
    that only note the signal, the old ones put back after the block, and a noted signal raised again then. Python
    runs signal handlers in the main thread whichever thread the system delivers a signal to (torch's and OpenCV's
    threads included), which blocking the signal in one thread would not cover; off the main thread, where handlers
    cannot be set, nothing is held."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    before = {s: signal.getsignal(s) for s in held}
    for s in held:
        signal.signal(s, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)  # None: not set from Python
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


@contextlib.contextmanager
def atomic_copy(path: str | Path, what: str = "file"):
    """A copy of ``path`` (empty where there is none) as a new temporary sibling, to change in place and rename over
    ``path`` when the ``with`` block ends without an error (:func:`write_bytes_atomic`'s guarantees, links, modes and
    one-line errors; the copy removed on an error), for files too large to change in memory. Yields the copy's path."""
    path = Path(path)
    real = _target(path, what)
    size = real.stat().st_size if real.exists() else 0
    room_for(real, size, what)
    fd, tmp = _new_temp(real, path, what)
    os.close(fd)
    try:
        try:
            if size:
                shutil.copyfile(real, tmp)
        except OSError as e:
            raise _write_error(e, path, real, size, what) from None
        yield tmp
        try:
            commit_temp(tmp, real)
        except OSError as e:
            raise _write_error(e, path, real, tmp.stat().st_size if tmp.exists() else size, what) from None
    finally:
        tmp.unlink(
            missing_ok=True
        )  # an error (or a kill's next writer) leaves the old file; a committed copy is gone


def _umask() -> int:
    """This process's umask: from ``/proc/self/status`` where Linux gives it (reading it by setting it and setting it
    back, the fallback, is not safe while other threads create files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def settings_difference(had, want: dict, limit: int = 3) -> str:
    """What differs between the ``had`` settings a finished or partial output recorded and this run's ``want``
    (JSON-like dicts), for an error message: ``" (max_keypoints: 2048 -> 1000; unturn: none -> {...})"``, nested
    keys dotted, a setting both hold before one only one holds, long values cut; ``""`` where ``had`` is not a
    dict."""
    if not isinstance(had, dict):
        return ""
    want = json.loads(json.dumps(want))

    def short(v) -> str:
        t = "none" if v is None else json.dumps(v) if not isinstance(v, str) else v
        return t if len(t) <= 40 else t[:37] + "..."

    def walk(a: dict, b: dict, prefix: str):
        for key in sorted(set(a) | set(b)):
            x, y = a.get(key), b.get(key)
            if isinstance(x, dict) and isinstance(y, dict):
                yield from walk(x, y, f"{prefix}{key}.")
            elif x != y:
                yield key in a and key in b, f"{prefix}{key}: {short(x)} -> {short(y)}"

    # a setting both hold, changed, before one that only one of them holds
    diff = [text for both, text in sorted(walk(had, want, ""), key=lambda t: not t[0])]
    if not diff:
        return ""
    return f" ({'; '.join(diff[:limit])}{'; …' if len(diff) > limit else ''})"


def check_resume_plan(
    out: Path, what: str, had_settings, settings: dict, had_sources: dict, sources: dict, exists
) -> None:
    """Refuse to resume into ``out``, a folder of generated ``what`` whose manifest recorded
    ``had_settings`` (None: no manifest) and ``had_sources`` (output name → what made it), unless this run's
    ``settings`` are the same and each output it would make is from the same source; an output on disk
    (``exists(name)``) that no manifest accounts for is refused too. Otherwise a resume would keep outputs
    made another way beside what the run records."""
    if had_settings is not None and had_settings != json.loads(json.dumps(settings)):
        raise InputError(f"{out} holds {what} generated with other settings; choose another --out")
    for name, src in sources.items():
        had = had_sources.get(name)
        if had is not None and had != src:
            raise InputError(
                f"{out}/{name} was made from {had}, this run would make it from {src}; choose another --out"
            )
        if had is None and exists(name):
            raise InputError(f"{out}/{name} exists but no manifest says what made it; choose another --out")


def _fields(line: str) -> list[str]:
    """A line's fields: split at commas, else semicolons, else tabs, else runs of spaces (so that a CSV's empty
    first header field, as pandas writes for its index, stays a field)."""
    for sep in (",", ";", "\t"):
        if sep in line:
            return [f.strip() for f in line.split(sep)]
    return line.split()


def _header_columns(line: str) -> tuple[int, int, int] | None:
    """The x and y columns a header line names (``x`` and ``y``, any case) and its number of fields, or None where
    it names neither."""
    names = [f.strip().strip("\"'").lower() for f in _fields(line.strip().lstrip("#%").strip())]
    if "x" in names and "y" in names:
        return names.index("x"), names.index("y"), len(names)
    return None


def read_keypoints(path: str | Path) -> np.ndarray:
    """Keypoints ``(N, 2)`` x, y from a ``.npy`` array ``(N, ≥2)`` or a text/CSV file.

    The columns are x, y then anything else (e.g. a score, ignored), unless a header line names columns ``x``
    and ``y`` (any case): then those are read wherever they stand (``y, x``; a pandas file, whose index column
    has no name: rows with more fields than the header have their extra fields first, as pandas reads them).
    Header lines before the first keypoint are skipped (a header naming ``x`` and ``y`` with no row is no keypoints,
    as an empty file is); separators: commas, semicolons, tabs or spaces; a UTF-8 byte-order mark is dropped. A
    ``.npy`` array of 2 rows and more than 2 columns is refused: it may be 2 keypoints with more columns or keypoints
    saved transposed (``(2, N)``)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a keypoints file")
    if not path.is_file():
        raise InputError(f"keypoints file not found: {path}")
    if path.suffix.lower() == ".npy":
        try:
            # mapped, not read: the header's shape is checked against the file's size before any copy (a file of a
            # few bytes that claims 10⁹ rows would otherwise ask numpy for gigabytes)
            raw = np.load(path, allow_pickle=False, mmap_mode="r")
        except (ValueError, OSError, EOFError) as e:
            raise InputError(f"{path}: not a readable .npy array of keypoints ({e})") from None
        if raw.dtype.kind not in "iuf":  # booleans, strings and complex values are not coordinates
            raise InputError(f"{path}: {raw.dtype} values, not numbers (keypoints are x, y)")
        if raw.ndim != 2 or raw.shape[1] < 2:
            raise InputError(f"{path}: keypoints must be an (N, 2) array of x, y, got shape {raw.shape}")
        if raw.shape[0] == 2 and raw.shape[1] > 2:
            raise InputError(
                f"{path}: shape {raw.shape} is 2 keypoints with {raw.shape[1]} columns or {raw.shape[1]} keypoints "
                "saved transposed; save the x, y columns alone, as (N, 2)"
            )
        return np.array(raw[:, :2], dtype=np.float64)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file of x, y keypoints (nor a .npy array)") from None
    rows, header, lines = [], None, 0
    for n, line in enumerate(text.splitlines(), start=1):
        parts = _fields(line)
        if not any(parts):
            continue
        lines += 1
        cx, cy = 0, 1
        if header is not None:  # fields a header does not name come first (pandas' unnamed index)
            shift = max(0, len(parts) - header[2])
            cx, cy = header[0] + shift, header[1] + shift
        try:
            rows.append([float(parts[cx]), float(parts[cy])])
        except (ValueError, IndexError):
            if rows:  # non-numeric lines are a header only before the first keypoint
                raise InputError(f"{path}, line {n}: cannot parse {line.strip()!r} as x, y") from None
            header = _header_columns(line) or header
    if not rows and text.strip():
        if header is not None and lines == 1:  # a header alone (pandas writes one for no rows): no keypoints
            return np.zeros((0, 2), np.float64)
        if header is not None:
            raise InputError(f"{path}: no line of x, y numbers in the columns its header names")
        raise InputError(f"{path}: no line of x, y numbers (separators: comma, semicolon, tab or space)")
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


__all__ = [
    "check_resume_plan",
    "read_keypoints",
    "settings_difference",
    "write_text_atomic",
    "written_together",
]
