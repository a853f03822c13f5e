"""``patchpose extract``: a folder of images → one hloc features file with the recipe ``pose``'s poses (each
keypoint described once at SIFT's scale, or our scale at Harris corners, and the dominant gradient's angle there,
:data:`patchpose.recipes.RECIPES`; with ``unturn``, the angle that shows each photo upright in the collection),
resumable and sharded.

Each image is a group named by its path relative to the folder (``/`` makes nested groups, as in hloc) with
what :func:`~patchpose.integrations.formats.write_hloc_features` writes: ``keypoints (N, 2)``, ``scales``,
``oris``, ``descriptors (D, N)`` (OpenCV SIFT computed at those poses, or none), ``scores`` (SIFT's responses)
and ``image_size``.

How a run survives a kill: every finished image is committed as its own small HDF5 file in
``OUT.parts/`` (written under a temporary name, then renamed: a part exists whole or not at all, and its
group carries :data:`COMPLETE` as its last write). A rerun with the same settings skips the images whose part
is there, unless the image's file has changed since (its size and a hash of its bytes, :data:`STAMP`). When every
image of the run is done, the parts are copied into ``OUT.parts/joined.h5``, renamed to ``OUT``, and the parts are
removed; ``OUT`` itself is never half-written. One run at a time writes ``OUT``: it holds ``OUT.parts/lock``
(:data:`LOCK`) while it lasts, and a second run started meanwhile is refused, naming the first's pid (the end of the
first removed the folder under it); the system lets go of a killed run's lock, which the rerun takes.

``shard=(i, n)`` takes images ``i, i + n, i + 2n, …`` of the folder's images sorted by relative path, so that
``n`` machines (or processes) each write their own file; :func:`merge_features` joins the ``n`` files, and
refuses overlapping images, a missing shard, or files made with other settings.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import cv2
import numpy as np

from ..data.image_header import check_image_file
from ..data.keypoints import MAX_KEYPOINTS, as_uint8_gray, detect_harris, detect_sift
from ..data.patches import check_image_shape, check_warp_size, load_image
from ..data.photos import IMAGE_EXTS, photos_of
from ..errors import InputError, about, is_int_in, require
from ..estimator import EstimatorLike, as_estimator
from ..fileio import atomic_copy, commit_temp, room_for, settings_difference, size_text, write_text_atomic
from ..matching.candidates import recipe_poses
from ..matching.collection import neighbour_pairs, unturn_settings, upright_collection
from ..matching.features import features_at, sift_features
from ..matching.retrieval import NEIGHBOURS, retrieval_settings
from ..matching.upright import Extractor, applied_turn, extract_turned
from .formats import HlocFeaturesWriter, read_pairs
from .opencv import keypoints_at_poses

log = logging.getLogger(__name__)

DETECTORS = ("sift", "harris")
DESCRIPTORS = ("sift", "none")
#: attribute written last on each image group: a group without it is not taken as done
COMPLETE = "patchpose_complete"
#: root attributes of an extracted file: the settings (JSON), the shard ``i/n``, the images of all shards
SETTINGS, SHARD, TOTAL = "patchpose_settings", "patchpose_shard", "patchpose_images_total"
#: root attribute of an un-turned extraction: every image's applied turn (JSON); each group's ``TURN_degrees``,
#: ``TURN_applied`` and ``TURN_found`` attributes: its voted turn, the turn extracted at, whether one was found
TURNS, TURN = "patchpose_turns", "patchpose_turn"
#: attribute of each image group: its image file's size and a hash of its bytes (:func:`_image_stamp`) when it was
#: extracted; a rerun redoes (a part) or refuses (a finished file) an image whose file has changed since (a copy of
#: the folder, whose files have new times, has not)
STAMP = "patchpose_image_stamp"


def parse_shard(spec: str | Sequence[int] | None) -> tuple[int, int]:
    """``"i/n"`` (or ``(i, n)``) as ``(i, n)`` with ``0 <= i < n``; None is ``(0, 1)``, every image."""
    if spec is None:
        return 0, 1
    if isinstance(spec, str):
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec)
        i, n = (int(m.group(1)), int(m.group(2))) if m else (-1, 0)
    else:
        i, n = tuple(spec) if len(spec) == 2 else (-1, 0)
    if not (is_int_in(n, 1) and is_int_in(i, 0, n - 1)):
        raise InputError(f"--shard must be i/n with 0 <= i < n (e.g. 0/4 to 3/4), got {spec!r}")
    return int(i), int(n)


def image_names(images: str | Path) -> list[tuple[str, Path]]:
    """``(name, path)`` of every image below the folder ``images``, ``name`` its relative path with ``/``,
    sorted by name; an :class:`InputError` for a missing folder or one without images."""
    folder = Path(images)
    paths = photos_of(folder, allow_none=True)
    if not paths:
        raise InputError(f"{folder} holds no images (files ending {', '.join(sorted(IMAGE_EXTS))})")
    return sorted((p.relative_to(folder).as_posix(), p) for p in paths)


def check_choices(detector: str, descriptor: str) -> None:
    """A one-line :class:`InputError` unless ``detector`` is one of :data:`DETECTORS` and ``descriptor`` one of
    :data:`DESCRIPTORS`."""
    if detector not in DETECTORS:
        raise InputError(f"detector must be one of {DETECTORS}, got {detector!r}")
    if descriptor not in DESCRIPTORS:
        raise InputError(f"descriptor must be one of {DESCRIPTORS}, got {descriptor!r}")


def features_of_image(
    image: np.ndarray, estimator: EstimatorLike = None, detector: str = "sift", descriptor: str = "sift",
    max_keypoints: int = 2048, turn: float | None = None,
) -> dict:  # fmt: skip
    """Keypoints, the ``pose`` recipe's poses (:func:`~patchpose.matching.candidates.recipe_poses`: at SIFT's
    keypoints SIFT's scale, at Harris corners our scale; the dominant gradient's angle on the descriptor window at
    it) and descriptors of one image: ``{"xy" (N, 2), "scale" (N,) log2, "ori" (N,) radians, "descriptors" (N,
    128) float32 or None, "scores" (N,) or None}``.

    ``detector``: ``"sift"`` (OpenCV SIFT, one keypoint per location, strongest first; no model read) or
    ``"harris"``; ``estimator``: at Harris corners, an estimator, a bundled model's name or a weights file
    (default: the recipe ``pose``'s, :data:`patchpose.recipes.MODELS`). ``descriptor``: ``"sift"``
    (``cv2.SIFT.compute`` at the poses, as :func:`~patchpose.integrations.opencv.assign` sizes them, each
    descriptor scaled to unit length, as hloc's matchers read SIFT, 2 − 2·cosine; hloc's own ``sift`` configuration
    writes RootSIFT, so match a file with files of its own settings; a keypoint OpenCV drops is dropped) or ``"none"``. ``turn``: the photo's turn in its collection (degrees counter-clockwise
    that show it upright, :attr:`~patchpose.matching.collection.CollectionTurns.degrees`): every keypoint at the
    angle that shows the photo upright instead of the gradient's (upright in the collection; not resampled)."""
    check_choices(detector, descriptor)
    est = _pose_estimator(estimator, detector)
    if detector == "sift":
        xy, kps = detect_sift(image, max_keypoints)
        scores = np.array([k.response for k in kps], np.float64)
        feats, ours = sift_features(image, xy, kps), None
    else:
        xy, scores = detect_harris(image, max_keypoints), None
        kps = [cv2.KeyPoint(float(x), float(y), 1.0) for x, y in xy]
        feats, ours = features_at(image, xy), est.estimate(image, xy)
    upright = None if turn is None else np.full(len(xy), -math.radians(float(turn)))
    poses = recipe_poses(feats, ours, orientation=upright)
    scale, ori = poses.scale, poses.orientation
    desc = None
    if descriptor == "sift":
        # class_id carries each keypoint's index through compute, which may drop keypoints
        kps = [cv2.KeyPoint(*k.pt, k.size, k.angle, k.response, k.octave, i) for i, k in enumerate(kps)]
        kept, desc = cv2.SIFT_create().compute(as_uint8_gray(image), keypoints_at_poses(kps, poses))
        keep = np.array([k.class_id for k in kept], np.int64)
        desc = np.zeros((0, 128), np.float32) if desc is None else np.asarray(desc, np.float32)
        # unit length: hloc's matchers read 2 - 2·cosine as the distance (its own sift configuration writes RootSIFT)
        desc = desc / np.maximum(np.linalg.norm(desc, axis=1, keepdims=True), 1e-12)
        xy, scale, ori = xy[keep], scale[keep], ori[keep]
        scores = None if scores is None else scores[keep]
    return {"xy": xy, "scale": scale, "ori": ori, "descriptors": desc, "scores": scores}


def _pose_estimator(estimator: EstimatorLike, detector: str):
    """The estimator the ``pose`` recipe reads at ``detector``'s keypoints: none at SIFT's (its scale is SIFT's, its
    angle the gradient's; an ``estimator`` given there is an :class:`InputError`), else ``estimator`` (default: the
    recipe's model)."""
    if detector == "sift":
        if estimator is not None:
            raise InputError(
                "at SIFT's keypoints the recipe pose reads no model (SIFT's scale, the gradient's angle); "
                "a model applies to --detector harris, or to --unturn (the votes')"
            )
        return None
    return as_estimator(estimator, "pose")


def _settings(est, detector: str, descriptor: str, max_keypoints: int) -> dict:
    """What a resume must match: the recipe, detector, descriptor, keypoints, the gradient's angle and, at Harris
    corners, the model and read plan that give the scale; at SIFT's keypoints ``"scale": "detector"`` (since
    2026-11-29: no model read there), so that a file made when our scale and angle were taken there is not
    resumed (at Harris corners the recipe and so the settings are as they were)."""
    settings = {
        "recipe": "pose",
        "detector": detector,
        "descriptor": descriptor,
        "max_keypoints": int(max_keypoints),
    }
    # SIFT's descriptors are unit length since 2026-11-30 (OpenCV's ~512 before): older files are not resumed
    if descriptor == "sift":
        settings["descriptor_length"] = 1.0
    if detector == "sift":
        settings["scale"] = "detector"
    else:
        settings.update(model=est.name, model_fingerprint=est.fingerprint, plan=asdict(est.plan))
    settings["angle"] = "gradient"
    return settings


def _learned_settings(extract, unturn, estimator, detector: str, descriptor: str, max_keypoints: int) -> dict:
    """What a resume with a learned feature must match: the feature's ``name`` (the model, its weights), the
    keypoints and, with ``unturn``, every rule of the turns (:func:`~patchpose.matching.collection.unturn_settings`);
    one-line errors for what does not apply to a learned feature."""
    if not callable(extract):
        raise InputError(
            f"extract must be a callable image -> (xy, descriptors), got {type(extract).__name__}"
        )
    name = getattr(extract, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise InputError(
            "extract needs a name attribute saying what it is (the model and its weights): a resumed run must "
            "not mix two features"
        )
    if (detector, descriptor) != ("sift", "sift"):
        raise InputError(
            "a learned feature (extract) brings its own keypoints and descriptors: no detector or descriptor"
        )
    if not isinstance(unturn, bool):
        raise InputError(f"unturn must be True or False, got {unturn!r}")
    if estimator is not None and not unturn:
        raise InputError("a model (estimator) is read only to un-turn the photos (unturn)")
    return {
        "feature": name,
        "max_keypoints": int(max_keypoints),
        "unturn": unturn_settings(estimator, canvas=True) if unturn else None,
    }


def vote_pairs(
    names: list[str],
    unturn: bool,
    window: int | None = None,
    pairs: str | Path | Sequence[tuple[str, str]] | None = None,
    retrieval: int | None = None,
) -> tuple[list[tuple[int, int]] | None, int | None, dict | None]:
    """Which pairs of the images ``names`` have their turns voted: ``(pairs, k, stated)`` — the pairs (indices, each
    unordered pair once, sorted; None where retrieval chooses them, or without ``unturn``), ``k`` (retrieval's
    neighbours, else None) and what the settings record of the choice (their ``"unturn"``'s ``"pairs"``, apart from
    the turns' own rules): ``{"by": "pairs", "count", "sha256"}`` of given ``pairs`` (their count and a digest),
    ``{"by": "retrieval"}`` with :func:`~patchpose.matching.retrieval.retrieval_settings`' keys, or ``{"by":
    "window", "window": N}``; None without ``unturn``. The choice: a sequence's neighbours (``window``, :func:`~patchpose.matching.collection.neighbour_pairs`), given
    ``pairs`` (an hloc pairs file or ``(name, name)`` pairs), or each image's ``retrieval`` most similar images
    (:func:`~patchpose.matching.collection.upright_collection`'s; :data:`~patchpose.matching.retrieval.NEIGHBOURS`
    where nothing is chosen). A pair naming an image not among ``names``, no pairs at all, a choice without
    ``unturn``, or two choices, is a one-line :class:`InputError`."""
    given = [f for f, v in (("--unturn-window", window), ("--unturn-pairs", pairs), ("--unturn-retrieval", retrieval))
             if v is not None]  # fmt: skip
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)} each choose the pairs voted: give one of them")
    if window is not None:
        return neighbour_pairs(len(names), window, unturn), None, {"by": "window", "window": int(window)}
    if given and unturn is not True:
        raise InputError(f"{given[0]} chooses the pairs whose turns --unturn votes: give --unturn too")
    if unturn is not True:
        return None, None, None
    if pairs is None:
        retrieval = NEIGHBOURS if retrieval is None else retrieval
        if not is_int_in(retrieval, 1):
            raise InputError(f"--unturn-retrieval must be a whole number >= 1, got {retrieval!r}")
        return None, int(retrieval), {"by": "retrieval", **retrieval_settings(retrieval)}
    if isinstance(pairs, (str, Path)):
        source, named = str(pairs), read_pairs(pairs)
    else:
        source = "unturn_pairs"
        if isinstance(pairs, (bytes, np.ndarray)) or not isinstance(pairs, Sequence):
            raise InputError(
                f"unturn_pairs must be a pairs file or (name, name) pairs, got {type(pairs).__name__}"
            )
        named = [tuple(p) if isinstance(p, (tuple, list)) else (p,) for p in pairs]
        for p in named:
            if len(p) != 2 or not all(isinstance(k, str) for k in p) or p[0] == p[1]:
                raise InputError(f"unturn_pairs must be pairs of two different image names, got {p!r}")
    index = {name: k for k, name in enumerate(names)}
    unknown = sorted({k for p in named for k in p if k not in index})
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise InputError(
            f"{source}: {unknown[0]!r}{more} is not an image of the folder (names are relative to it)"
        )
    voted = sorted({(min(index[a], index[b]), max(index[a], index[b])) for a, b in named})
    if not voted:
        raise InputError(f"{source}: no pairs")
    text = "\n".join(f"{names[i]} {names[j]}" for i, j in voted)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return voted, None, {"by": "pairs", "count": len(voted), "sha256": digest}


def _collection_turns(
    parts: Path,
    everything: list[tuple[str, Path]],
    estimator,
    progress: bool,
    snap: bool = True,
    pairs: list[tuple[int, int]] | None = None,
    retrieval: int | None = None,
) -> dict:
    """Each image's turn in the collection of every image of the folder (all shards alike): ``{name: {"degrees":
    voted, "applied": the turn extracted or described at, "found": bool}}``, voted once (:func:`upright_collection`,
    the photos read one at a time) and kept in ``parts/turns.json`` for a resumed run (with every image's
    :func:`_image_stamp`: a changed image is voted again with the others). ``snap``: within
    :data:`~patchpose.matching.upright.SNAP_DEG` of a quarter turn that quarter turn is applied (a learned
    feature's photo is turned); else the voted turn itself (a description at an angle). ``pairs``: the pairs voted,
    indices into ``everything`` (None: every pair; :func:`vote_pairs`); ``retrieval``: instead, each image's
    ``retrieval`` most similar images."""

    def applied(degrees: float) -> float:
        return applied_turn(degrees) if snap else round(round(degrees, 3) % 360.0, 3)

    saved = parts / "turns.json"
    names = [name for name, _ in everything]
    stamps = {name: _image_stamp(path) for name, path in everything}
    if saved.is_file():
        try:
            doc = json.loads(saved.read_text())
            turns = doc["turns"]
            ok = doc["stamps"] == stamps and sorted(turns) == sorted(names) and all(
                isinstance(t, dict) and {type(t.get(k)) for k in ("degrees", "applied")} <= {float, int}
                and isinstance(t.get("found"), bool) and math.isfinite(t["degrees"])
                and abs(t["applied"] - applied(float(t["degrees"]))) < 0.01 for t in turns.values()
            )  # fmt: skip
        except (ValueError, TypeError, AttributeError, KeyError):  # a damaged file: voted again
            ok = False
        if ok:  # the same folder: the same turns (another folder's, a changed one's or a damaged file's: voted again)
            return turns
    photos = _Photos([path for _, path in everything])
    got = upright_collection(photos, pairs=pairs, estimator=estimator, progress=progress, retrieval=retrieval)
    turns = {
        name: {
            "degrees": round(float(t), 3) % 360.0,
            "applied": applied(round(float(t), 3)),
            "found": bool(f),
        }
        for name, t, f in zip(names, got.degrees, got.found)
    }
    write_text_atomic(saved, json.dumps({"stamps": stamps, "turns": turns}, indent=1))
    return turns


class _Photos(Sequence):
    """Photos read from their files when indexed (a collection's votes read each once, not all at a time);
    ``exif_orientation`` as :func:`~patchpose.data.patches.load_image` takes it (COLMAP's pixels: False)."""

    def __init__(self, paths: list[Path], exif_orientation: bool = True) -> None:
        self.paths, self.exif_orientation = paths, exif_orientation

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, k):
        image = load_image(self.paths[k], exif_orientation=self.exif_orientation)
        return _usable(image, self.paths[k])


def _usable(image: np.ndarray, path: Path, warps: bool = True) -> np.ndarray:
    """``image``, read from ``path``, if its size is one the extraction takes (:func:`check_image_shape`: not too
    small; with ``warps``, where a model or an un-turned extraction reads the whole image through OpenCV's warps,
    not too large for them: SIFT's own keypoints, described where they are, take panoramas of any width); else a
    one-line :class:`InputError` naming the file, as :func:`load_image` names a file it cannot decode (the error said
    ``photo 5``, or no file at all)."""
    with about(path):
        check_image_shape(image)
        if warps:
            check_warp_size(image.shape)
    return image


#: turns of two shards that differ by less than this (degrees) are the same vote (a description at a turn is not
#: snapped to a quarter turn: another machine's arithmetic may move its last decimal)
TURN_TOLERANCE_DEG = 0.01


def _same_turns(a: dict | None, b: dict | None) -> bool:
    """Whether two files' applied turns (``patchpose_turns``: name → degrees, or None) are the same vote."""
    if a is None or b is None:
        return a is b
    return a.keys() == b.keys() and all(
        abs((a[k] - b[k] + 180.0) % 360.0 - 180.0) < TURN_TOLERANCE_DEG for k in a
    )


def _part_path(parts: Path, name: str) -> Path:
    return parts / (hashlib.sha1(name.encode()).hexdigest()[:20] + ".h5")


def _make_folder(path: Path, parents: bool = False) -> None:
    """``path`` made a folder if it is none (an existing one kept); where it cannot be (a file of that name on the
    way, no permission, a read-only disk) a one-line :class:`InputError` naming it."""
    try:
        path.mkdir(parents=parents, exist_ok=True)
    except OSError as e:
        on_way = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
        why = f"{on_way} is a file, not a folder" if on_way is not None else (e.strerror or str(e))
        raise InputError(f"cannot make the folder {path}: {why}") from None


#: the file in ``OUT.parts/`` that a run holds while it writes there: an advisory lock (``flock``) that the system
#: lets go of when the process ends, however it ends, so a killed run's lock is the rerun's; it holds the run's pid,
#: for the message of a run refused while it lives
LOCK = "lock"


def _lock(parts: Path, out: Path) -> int | None:
    """Take ``parts/LOCK`` (:data:`LOCK`, made where missing) for this run: its open descriptor, or None where this
    system has no ``flock`` (Windows) or the disk takes none (the run goes on unlocked, as before, the lock file it
    made removed at once). Held by another run: a one-line :class:`InputError` naming its pid."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    lock = parts / LOCK
    while True:
        made = True  # whether this call made the file (a disk without locks: removed again)
        try:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                made = False
                fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:  # the folder (or the lock), removed by the run that held it as it ended
            _make_folder(parts)
            continue
        except OSError as e:
            raise InputError(f"cannot make the lock {lock}: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.read(fd, 32).decode("ascii", "replace").strip()
            os.close(fd)
            who = f"another run (pid {pid})" if pid.isdigit() else "another run"
            raise InputError(
                f"{out}: {who} is writing it now (it holds {lock}); wait for it to end, or choose another --out"
            ) from None
        except OSError:  # a disk without locks (some network disks): unlocked, as before, no lock file left
            os.close(fd)
            if made:  # (one there before is another's: a run on a machine whose mount takes locks)
                lock.unlink(missing_ok=True)
            log.debug("%s: no lock on this disk", lock)
            return None
        try:  # the run that held it may have ended meanwhile, removing it (and the folder): taken anew
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except OSError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            return fd
        os.close(fd)
        _make_folder(parts)


@contextlib.contextmanager
def _holding(parts: Path, out: Path):
    """Hold ``parts``' :data:`LOCK` while the block runs (:func:`_lock`: refused while another run holds it), then
    remove it and let it go, and ``parts`` with it where nothing else is left there."""
    fd = _lock(parts, out)
    try:
        yield
    finally:
        if fd is not None:
            (parts / LOCK).unlink(missing_ok=True)  # ours while held: no other run made it
            os.close(fd)
        with contextlib.suppress(OSError):
            parts.rmdir()  # only where empty: the finished parts of a run stopped by an error are kept


def _clear(parts: Path) -> None:
    """Remove everything in ``parts`` but the :data:`LOCK` this run holds."""
    for p in parts.iterdir():
        if p.name == LOCK:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)


def _image_stamp(path: Path) -> list[int]:
    """An image file's size and the first 8 bytes of its BLAKE2b hash (as a signed 64-bit number): what tells a rerun
    that the file has changed since, whatever its times say (a ``cp -r`` or a git checkout gives every file new ones);
    ``[]`` where it cannot be read (a broken link, which the extraction names). Read in blocks, for the checks that
    stamp every image before any work; an image extracted is stamped from the bytes it is decoded from
    (:func:`_read_stamped`)."""
    try:
        h = hashlib.blake2b(digest_size=8)
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return _stamp(path.stat().st_size, h)
    except OSError:
        return []


def _stamp(size: int, h) -> list[int]:
    """:data:`STAMP`: a file's size and its BLAKE2b-64 hash ``h`` as a signed 64-bit number."""
    return [int(size), int.from_bytes(h.digest(), "little", signed=True)]


def _read_stamped(path: Path) -> tuple[list[bytes], list[int]]:
    """An image file's bytes, read once, as a one-item list for :func:`~patchpose.data.patches.load_image`'s
    ``data`` (decoded from them, not read again, and let go once decoded), and its :func:`_image_stamp` from the
    same bytes (the stamp recorded is that of the pixels extracted); ``([], [])`` where it cannot be read
    (``load_image`` then reads the path itself, and says why it cannot).

    The file is opened once and its header's size checked first on that handle
    (:func:`~patchpose.data.image_header.check_image_file`, as ``load_image`` checks it): a file over the pixel
    limit is refused with ``load_image``'s :class:`InputError` having read its header only, not its bytes; a
    file whose bytes do not fit in memory is a one-line :class:`InputError` too, not a MemoryError."""
    try:
        with open(path, "rb") as f:
            check_image_file(path, f)  # more pixels than the limit: refused from the header, before the bytes
            f.seek(0)
            try:
                data = f.read()
                h = hashlib.blake2b(data, digest_size=8)
            except MemoryError:
                data = None
                size = size_text(path.stat().st_size)
                raise InputError(f"{path}: not enough memory to read its {size}") from None
    except OSError:
        return [], []
    return [data], _stamp(len(data), h)


def _part_done(h5py, path: Path, name: str, stamp: list[int], turn: float | None = None) -> bool:
    """Whether ``path`` is a finished part of image ``name`` (its group carries :data:`COMPLETE`) of its file as it
    is (``stamp``, :func:`_image_stamp`: a part of a file replaced since is made again), extracted at the turn
    ``turn`` where one is given (a part of an earlier vote, before the folder changed, is made again)."""
    if not path.is_file():
        return False
    try:
        with h5py.File(path, "r") as f:
            if name not in f or not bool(f[name].attrs.get(COMPLETE, False)):
                return False
            if [int(v) for v in f[name].attrs.get(STAMP, [])] != stamp:
                log.info("%s changed since its part was made: extracted again", name)
                return False
            return turn is None or float(f[name].attrs.get(f"{TURN}_applied", float("nan"))) == float(turn)
    except OSError:  # a damaged part is made again
        return False


def _check_out(out) -> Path:
    if out is None or not str(out).strip():
        raise InputError("--out must name the features file to write (e.g. features.h5)")
    out = Path(out)
    if out.is_dir():
        raise InputError(f"--out {out} is a folder; name the features file to write (e.g. {out}/features.h5)")
    return out


def extract_features(
    images: str | Path,
    out: str | Path,
    *,
    estimator: EstimatorLike = None,
    detector: str = "sift",
    descriptor: str = "sift",
    max_keypoints: int = 2048,
    shard: str | Sequence[int] | None = None,
    progress: bool = True,
    extract: Extractor | None = None,
    unturn: bool = False,
    unturn_window: int | None = None,
    unturn_pairs: str | Path | Sequence[tuple[str, str]] | None = None,
    unturn_retrieval: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the hloc features file ``out`` for the images below the folder ``images`` (the module
    docstring: groups, resuming after a kill, shards) and return its path.

    Args:
        images: a folder; every image below it, named by its relative path.
        out: the features file (``.h5``); while the run lasts, ``OUT.parts/`` holds the finished images and the
            run's lock (another run onto ``out`` meanwhile is an :class:`InputError`).
        estimator: at Harris corners, a :class:`~patchpose.PatchPoseEstimator`, a bundled model's name or a
            weights file (default: the recipe ``pose``'s, :data:`patchpose.recipes.MODELS`); at SIFT's keypoints
            the recipe reads no model, and one given is an :class:`InputError` but with ``unturn`` (the votes'
            model).
        detector: ``"sift"`` or ``"harris"``; descriptor: ``"sift"`` or ``"none"`` (:func:`features_of_image`).
        max_keypoints: keypoints detected per image, at most.
        shard: ``"i/n"``: only images ``i, i + n, …`` of the sorted names (:func:`parse_shard`).
        progress: a progress bar (tqdm) on stderr.
        extract: a learned feature instead of the recipe (:data:`~patchpose.matching.upright.Extractor`: ``image ->
            (xy, descriptors)`` with a ``name`` saying what it is, e.g.
            :func:`~patchpose.integrations.kornia.aliked_extractor`): its keypoints (at most ``max_keypoints``) and
            descriptors, no ``scales``/``oris`` (as hloc writes ALIKED's); ``detector`` and ``descriptor`` stay
            their defaults.
        unturn: each image's turn in the collection
            (:func:`~patchpose.matching.collection.upright_collection` over every image of the folder, reading
            ``estimator``, default :data:`patchpose.recipes.MODELS` ``["upright"]``; kept in ``OUT.parts/turns.json``
            while the run lasts). With ``extract`` each image is extracted once, un-turned by it; without, every
            keypoint is described at the angle that shows its photo upright (upright in the collection,
            :func:`features_of_image`'s ``turn``) instead of the gradient's, but in a photo whose turn is not found
            (no pair voted one), which keeps the gradient's. Each group's attributes say the turn
            voted, the turn applied and whether one was found, and the file's root attribute ``patchpose_turns``
            every image's applied turn (shards of one folder must agree on it to merge).
        unturn_window: with ``unturn``, vote only the pairs of images at most this many apart in the sorted names
            (a sequence's neighbours: ``N·window`` pairs instead of every one of the ``N(N−1)/2``).
        unturn_pairs: with ``unturn``, vote only these pairs of images: an hloc pairs file (e.g. hloc's
            ``pairs_from_retrieval``'s, for an unordered folder; :func:`~patchpose.integrations.formats.read_pairs`)
            or ``(name, name)`` pairs, names relative to ``images``; a photo in no pair keeps its own angle
            (the gradient's) or is extracted as it is.
        unturn_retrieval: with ``unturn``, vote only each image's ``k`` most similar images (retrieval by the
            votes' own descriptors, :mod:`patchpose.matching.retrieval`; every pair where ``k`` ≥ the images − 1).
            Where none of ``unturn_window``, ``unturn_pairs`` and ``unturn_retrieval`` is given (one at most),
            :data:`~patchpose.matching.retrieval.NEIGHBOURS`.

    A rerun with other settings than the parts on disk, or onto a finished file of other settings or
    images, is an :class:`InputError` naming what differs, unless ``overwrite`` (``--overwrite``): then those parts
    are removed and the file is replaced when the new one is whole (a file that is not a features file of
    ``patchpose extract`` is refused still); onto a finished file of the same ones it does nothing. Images that cannot
    be read, or are too small or too large to extract (:func:`~patchpose.data.patches.check_image_shape`), are one
    :class:`InputError` naming them once every other image is extracted (no file is written; the rerun, once they
    are mended or removed, takes the finished images as they are); with ``unturn``, the votes, which read every
    image first, stop at the first of them, naming it."""
    h5py = require("h5py", "hloc")
    i, n = parse_shard(shard)
    if not is_int_in(max_keypoints, 1, MAX_KEYPOINTS, integral_floats=True):
        raise InputError(
            f"--max-keypoints must be an integer from 1 to {MAX_KEYPOINTS:,}, got {max_keypoints!r}"
        )
    check_choices(detector, descriptor)
    out = _check_out(out)
    neighbour_pairs(0, unturn_window, unturn)  # a bad window: its one-line error before any work
    everything = image_names(images)
    voted, neighbours, pairs_stated = vote_pairs(
        [name for name, _ in everything], unturn, unturn_window, unturn_pairs, unturn_retrieval
    )
    todo = everything[i::n]
    if extract is None:
        if not isinstance(unturn, bool):
            raise InputError(f"unturn must be True or False, got {unturn!r}")
        # un-turned at SIFT's keypoints, the model (estimator) is the votes'; at corners the scale's and the votes'
        est = _pose_estimator(None if unturn and detector == "sift" else estimator, detector)
        settings = _settings(est, detector, descriptor, max_keypoints)
        if unturn:
            settings.update(angle="upright in the collection", unturn=unturn_settings(estimator))
    else:
        settings = _learned_settings(extract, unturn, estimator, detector, descriptor, max_keypoints)
    if pairs_stated is not None:  # which pairs were voted: a rerun with others is not a resume
        # under their own key: retrieval's k-means "rounds" are not the turns' reweighting rounds (they were merged
        # into one dict before 2026-11-30, the one hiding the other)
        settings["unturn"] = {**settings["unturn"], "pairs": pairs_stated}
    # each group records its image's size and a BLAKE2b hash of its bytes (STAMP): a file or parts without them is not resumed
    settings["image_stamp"] = "size, blake2b-64"
    parts = out.with_name(out.name + ".parts")
    manifest = parts / "settings.json"
    stated = json.loads(json.dumps({**settings, "shard": f"{i}/{n}"}))  # as the manifest reads back
    # each image's stamp: taken where its file is read to be extracted (once: hashed, then decoded from the same
    # bytes); a finished file is first checked against every image's
    stamps: dict[str, list[int]] = {}

    def finished(held: bool) -> bool:
        """Whether ``out`` exists and is this run's result (refused where it is another's, unless ``overwrite``
        replaces it); with ``held``, under the lock."""
        if not out.exists():
            return False
        if not stamps:  # (once: the look under the lock takes the first's)
            stamps.update((name, _image_stamp(path)) for name, path in todo)
        if overwrite and _replaceable(h5py, out, settings, stamps):
            return False
        _check_finished(h5py, out, settings, stamps)
        if manifest.is_file() and json.loads(manifest.read_text()) == stated:
            # the parts of this very file, left by a kill after its rename (not while their run ends)
            if held:
                _clear(parts)
            else:
                with contextlib.suppress(InputError), _holding(parts, out):
                    _clear(parts)
        log.debug("%s is complete already (%d images)", out, len(todo))  # the CLI says so on stdout
        return True

    if finished(held=False):  # a look before any folder is made (a finished file on a read-only disk)
        return out
    _make_folder(out.parent, parents=True)
    _make_folder(parts)
    # one run at a time writes OUT.parts (another's end would remove the folder under it): the lock is held
    # until the run ends (the system lets go of it however the run ends; the rerun takes it)
    with _holding(parts, out):
        # looked at again: another run may have renamed its OUT into place and let go since
        if finished(held=True):
            return out
        if manifest.is_file():
            had = json.loads(manifest.read_text())
            if had != stated:
                if not overwrite:
                    why = (
                        " by an older patchpose's --unturn (its settings recorded another way)"
                        if _older_unturn(had, stated)
                        else f" with other settings or another shard{settings_difference(had, stated)}"
                    )
                    raise InputError(
                        f"{parts} holds images extracted{why}; remove it, choose another --out or pass --overwrite"
                    )
                _clear(parts)  # ours, of other settings: begun again (the lock kept: this run's)
                write_text_atomic(manifest, json.dumps(stated, indent=1))
        elif any(p.name != LOCK for p in parts.iterdir()):  # not ours (no manifest): removed at the end
            raise InputError(
                f"{parts} exists and was not made by patchpose extract; remove it or choose another --out"
            )
        else:
            write_text_atomic(manifest, json.dumps(stated, indent=1))
        for stale in parts.glob("*.tmp*"):  # a part a kill interrupted (the writer's own, and an older run's)
            stale.unlink()
        (parts / "joined.h5").unlink(missing_ok=True)  # a join a kill interrupted: its room is the rerun's
        # a learned feature's photo is turned (a quarter turn near one exactly); a description is read at the angle
        snap = extract is not None
        voting = (parts, everything, estimator, progress, snap, voted, neighbours)
        turns = _collection_turns(*voting) if unturn else None
        tqdm = require("tqdm", "hloc").tqdm if progress else None
        bar = todo if tqdm is None else tqdm(todo, desc="images", unit="image")
        unreadable = []  # (name, why): the others are extracted first, then the run stops naming these
        for name, path in bar:
            part = _part_path(parts, name)
            turned = None if turns is None else turns[name]["applied"]
            try:
                data, stamps[name] = _read_stamped(path)
            except InputError as e:  # over the pixel limit (header read only), or more bytes than memory has
                # (a part made before, under a higher limit, is kept, as before: stamped in blocks, only then)
                data, stamps[name] = [], _image_stamp(path) if part.is_file() else []
                if not _part_done(h5py, part, name, stamps[name], turned):
                    unreadable.append((name, str(e)))
                continue
            if _part_done(h5py, part, name, stamps[name], turned):
                data = None  # its bytes let go before the next image's are read
                continue
            try:
                image = load_image(path, data=data) if data else load_image(path)
                image = _usable(image, path, warps=detector != "sift" or unturn or extract is not None)
            except InputError as e:
                unreadable.append((name, str(e)))
                continue
            turn = turns[name] if turns is not None else None
            attrs = {} if turn is None else {f"{TURN}_{k}": v for k, v in turn.items()}
            if extract is None:  # a photo without a found turn keeps the gradient's angle (it may be turned)
                at = None if turn is None or not turn["found"] else turn["applied"]
                feats = features_of_image(image, est, detector, descriptor, max_keypoints, turn=at)
            else:
                xy, d = extract_turned(image, extract, turn["applied"] if turn else 0.0)
                xy, d = xy[:max_keypoints], d[:max_keypoints]
                feats = {"xy": xy, "scale": None, "ori": None, "descriptors": d, "scores": None}
            # the part is written whole beside itself and renamed (HlocFeaturesWriter): never half a part; one that
            # is not finished (damaged) is made anew
            part.unlink(missing_ok=True)
            with HlocFeaturesWriter(part) as w:
                w.add(
                    name,
                    feats["xy"],
                    feats["scale"],
                    feats["ori"],
                    feats["descriptors"],
                    scores=feats["scores"],
                    image_size=(image.shape[1], image.shape[0]),
                    poses_only=descriptor == "none",
                    attrs={**attrs, STAMP: np.array(stamps[name], np.int64), COMPLETE: True},
                )
        if unreadable:
            others = [n for n, _ in unreadable[1:4]] + (["…"] if len(unreadable) > 4 else [])
            raise InputError(
                f"{len(unreadable)} of {len(todo)} images could not be read or used ({unreadable[0][1]}"
                + (f"; and {', '.join(others)}" if others else "")
                + f"); the others are extracted in {parts}: mend or remove those and run again to finish {out.name}"
            )
        sources = [(name, _part_path(parts, name)) for name, _ in todo]
        applied = None if turns is None else {name: turns[name]["applied"] for name, _ in everything}
        _assemble(
            h5py,
            out,
            sources,
            settings,
            (i, n),
            len(everything),
            f"the finished images are in {parts}",
            applied,
            parts,
        )
        _clear(parts)  # the lock last, as it is let go (the folder then too)
    return out


def _assemble(
    h5py,
    out: Path,
    sources: list[tuple[str, Path]],
    settings: dict,
    shard,
    total: int,
    kept: str,
    turns=None,
    work: Path | None = None,
) -> None:
    """Copy each ``(name, file)`` image group into a new file, write the root attributes (``turns``: every image's
    applied turn, where un-turned), flush it and rename it to ``out``; ``kept`` says where the sources stay if the
    write fails. The new file is ``work/joined.h5`` where the run owns a folder ``work`` beside ``out`` (a kill leaves
    it there, for the rerun to remove), else a new hidden sibling of ``out``."""
    # a full disk or a file-size limit is a message before HDF5 writes (it crashes on one), the parts kept
    room_for(out, sum(p.stat().st_size for p in {src for _, src in sources}) + 2**20, "features file")

    def join(path: Path) -> None:
        with h5py.File(path, "w", libver="latest") as f:
            f.attrs[SETTINGS] = json.dumps(settings, sort_keys=True)
            f.attrs[SHARD] = f"{shard[0]}/{shard[1]}"
            f.attrs[TOTAL] = int(total)
            if turns is not None:
                f.attrs[TURNS] = json.dumps(turns, sort_keys=True)
            for name, src in sources:
                with h5py.File(src, "r") as s:
                    parent = name.rpartition("/")[0]
                    f.copy(s[name], f.require_group(parent) if parent else f, name=name.rpartition("/")[2])

    try:
        if work is None:
            with atomic_copy(out, "features file") as partial:
                join(partial)
        else:
            joined = work / "joined.h5"
            try:
                join(joined)
                commit_temp(joined, out)
            finally:
                joined.unlink(missing_ok=True)
    except (
        OSError,
        RuntimeError,
    ) as e:  # the disk filled meanwhile (HDF5 raises either): the sources are kept
        free = size_text(shutil.disk_usage(out.parent).free)
        raise InputError(
            f"features file {out}: cannot write it ({' '.join(str(e).split())[:120]}; {free} free on its disk); "
            f"nothing was lost: {kept}; run the same command again once there is room"
        ) from None


def _groups(h5py, f) -> dict[str, object]:
    """Image name → group, for every finished image group (:data:`COMPLETE`) of an extracted file."""
    found: dict = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Group) and obj.attrs.get(COMPLETE, False):
            found[name] = obj

    f.visititems(visit)
    return found


def _finished_state(h5py, out: Path) -> tuple[dict | None, dict[str, list[int]]]:
    """An existing ``out``'s recorded settings (None where it is not a features file of ``patchpose extract``: not
    HDF5, or HDF5 without our settings) and its images: name → the :data:`STAMP` its group records (``[]``: none)."""
    try:
        with h5py.File(out, "r") as f:
            had = json.loads(f.attrs.get(SETTINGS, "null"))
            have = {name: [int(v) for v in g.attrs.get(STAMP, [])] for name, g in _groups(h5py, f).items()}
    except (OSError, ValueError):
        return None, {}
    return (had if isinstance(had, dict) else None), have


def _changed(have: dict[str, list[int]], stamps: dict[str, list[int]]) -> tuple[dict, dict]:
    """The images of a finished file (``have``: name → stamp) whose files have changed since (``stamps``: as they
    are now), as :func:`~patchpose.fileio.settings_difference` takes them: ``({name: {size, blake2b}} as recorded,
    the same as they are)``."""
    keys = ("size", "blake2b")
    changed = sorted(name for name in stamps if name in have and have[name] != stamps[name])
    return (
        {name: dict(zip(keys, have[name])) for name in changed},
        {name: dict(zip(keys, stamps[name])) for name in changed},
    )


def _replaceable(h5py, out: Path, settings: dict, stamps: dict[str, list[int]]) -> bool:
    """Whether ``--overwrite`` replaces ``out``: a features file of ``patchpose extract`` made with other settings
    or images, or of image files changed since (one of these very settings and images is finished: nothing to
    replace; any other file is refused)."""
    had, have = _finished_state(h5py, out)
    return had is not None and (
        had != json.loads(json.dumps(settings))
        or sorted(have) != sorted(stamps)
        or bool(_changed(have, stamps)[0])
    )


#: the keys an ``--unturn`` run's settings held directly under ``"unturn"`` before the pairs' own ``"pairs"`` dict
#: (2026-11-30): retrieval's (``retrieval``, its ``rounds`` over the turns'), a window's, given pairs' (``pairs``: their
#: count, ``sha256``)
OLDER_UNTURN_KEYS = ("retrieval", "window", "sha256")


def _older_unturn(had: dict, now: dict) -> bool:
    """Whether recorded settings ``had`` are an older patchpose's ``--unturn`` (the pairs' settings directly under
    ``"unturn"``: :data:`OLDER_UNTURN_KEYS`) where this run's ``now`` records them under ``"unturn"``'s ``"pairs"``:
    a difference that is the layout's, not said key by key (``unturn.rounds: 20 -> 10``, which no one changed)."""
    was, now = had.get("unturn"), now.get("unturn")
    return (
        isinstance(was, dict)
        and isinstance(now, dict)
        and isinstance(now.get("pairs"), dict)
        and not isinstance(was.get("pairs"), dict)
        and any(k in was for k in OLDER_UNTURN_KEYS)
    )


def _check_finished(h5py, out: Path, settings: dict, stamps: dict[str, list[int]]) -> None:
    """Refuse an existing ``out`` unless it is this run's result: the same settings and images (``stamps``: name →
    :func:`_image_stamp`), none changed since."""
    names = list(stamps)
    had, have = _finished_state(h5py, out)
    if had is None:  # a file of someone else's
        raise InputError(f"{out} exists and is not a features file of patchpose extract; remove it")
    if had != json.loads(json.dumps(settings)):
        if _older_unturn(had, settings):
            raise InputError(
                f"{out} was made by an older patchpose's --unturn (its settings recorded another way); remove it, "
                "choose another --out or pass --overwrite"
            )
        raise InputError(
            f"{out} exists with other settings{settings_difference(had, settings)}; remove it, choose another --out "
            "or pass --overwrite"
        )
    if sorted(have) != sorted(names):
        added, gone = sorted(set(names) - set(have)), sorted(set(have) - set(names))
        what = "; ".join(
            f"{len(v)} {k}, e.g. {v[0]}"
            for k, v in (("images here that it lacks", added), ("images in it not here", gone))
            if v
        )
        raise InputError(
            f"{out} exists with other images ({what}); remove it, choose another --out or pass --overwrite"
        )
    was, now = _changed(have, stamps)
    if was:
        raise InputError(
            f"{out} exists, but {len(was)} of its images changed since it was made{settings_difference(was, now)}; "
            "remove it, choose another --out or pass --overwrite"
        )


def merge_features(shards: Sequence[str | Path], out: str | Path) -> Path:
    """Join the files of ``patchpose extract --shard i/n`` (``i`` from 0 to ``n − 1``, each once) into one
    features file ``out`` (written beside it, then renamed) and return its path.

    A missing or repeated shard, an image in two files, files of other settings or another ``n``, or an
    image count that differs from the folder's, is an :class:`InputError` naming it."""
    h5py = require("h5py", "hloc")
    out = _check_out(out)
    if not shards:
        raise InputError("give the shard files to merge")
    if out.exists():
        raise InputError(f"{out} exists; remove it or choose another --out")
    seen: dict[int, Path] = {}
    owner: dict[str, Path] = {}
    sources: list[tuple[str, Path]] = []
    settings = n = total = turns = None
    for path in map(Path, shards):
        if not path.is_file():
            raise InputError(f"shard file not found: {path}")
        try:
            with h5py.File(path, "r") as f:
                s, sh, t = json.loads(f.attrs[SETTINGS]), str(f.attrs[SHARD]), int(f.attrs[TOTAL])
                u = json.loads(f.attrs.get(TURNS, "null"))
                names = sorted(_groups(h5py, f))
        except (OSError, KeyError, ValueError):
            raise InputError(f"{path} is not a features file of patchpose extract") from None
        i, n_here = parse_shard(sh)
        if settings is None:
            settings, n, total, turns = s, n_here, t, u
        elif s != settings:  # what differs named, as extract names it
            raise InputError(
                f"{path} was extracted with other settings than {shards[0]}{settings_difference(settings, s)}"
            )
        elif (n_here, t) != (n, total):
            raise InputError(
                f"{path} is shard {i}/{n_here} of {t} images, {shards[0]} one of {n} shards of {total}: "
                "shards of one run of extract --shard i/n merge"
            )
        elif not _same_turns(u, turns):
            raise InputError(
                f"{path} and {shards[0]} un-turned the photos by different turns (their votes differ on these "
                "machines): extract the folder in one run, or merge shards of one machine"
            )
        if i in seen:
            raise InputError(f"{path} and {seen[i]} are both shard {i}/{n}")
        seen[i] = path
        for name in names:
            if name in owner:
                raise InputError(f"image {name!r} is in both {owner[name]} and {path}")
            owner[name] = path
            sources.append((name, path))
    missing = sorted(set(range(n)) - set(seen))
    if missing:
        raise InputError(f"missing shard(s) {', '.join(f'{m}/{n}' for m in missing)} of the {n}")
    if len(owner) != total:
        raise InputError(f"the shards hold {len(owner)} images, the folder had {total}")
    _make_folder(out.parent, parents=True)
    _assemble(h5py, out, sorted(sources), settings, (0, 1), total, "the shard files are as they were", turns)
    return out


__all__ = [
    "extract_features",
    "merge_features",
    "features_of_image",
    "parse_shard",
    "image_names",
    "vote_pairs",
]
