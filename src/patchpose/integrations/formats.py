"""Feature files and dicts of other tools, with our poses in their units.

=========== ============================ ====================================== ===========================
tool        keypoint centre              scale                                  orientation
=========== ============================ ====================================== ===========================
ours        top-left pixel at (0, 0)     log2; radius ``16·2**σ`` px            radians, CCW as displayed
LightGlue   (0, 0) (OpenCV)              ``scales``: OpenCV size = diameter px  ``oris``: radians of OpenCV's
            (its SIFT/DoG extractors)                                           angle (clockwise as displayed)
hloc h5     (0, 0); hloc adds 0.5 when   ``scales``: radius px                  ``oris``: degrees, clockwise
            importing into COLMAP                                               as displayed (as its DoG)
COLMAP txt  top-left pixel at (0.5, 0.5) radius px                              radians, clockwise as
                                                                                displayed (image y down)
=========== ============================ ====================================== ===========================

"Clockwise as displayed" is the sign of an angle measured in image coordinates with y down, which
OpenCV, COLMAP and hloc all use; ours is the opposite sign (:mod:`patchpose.conventions`).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from .. import checks
from ..conventions import REFERENCE_RADIUS, TWO_PI, from_colmap_xy, to_colmap_xy, to_cv2_size_angle
from ..errors import InputError, require
from ..fileio import atomic_copy, room_for, write_bytes_atomic, write_text_atomic

#: descriptor values per keypoint that COLMAP's text feature import reads (SIFT's, as uint8)
COLMAP_DESCRIPTOR_DIM = 128


def _check(xy, scale, ori, descriptors=None):
    """``xy (N, 2)``, ``scale (N,)`` log2 within ±:data:`~patchpose.checks.SCALE_LIMIT`, ``ori (N,)``
    radians (a number each is broadcast), all finite, and ``descriptors (N, D)`` real numbers (kept in their
    dtype) or None; an :class:`InputError` for anything else."""
    xy, scale, ori = checks.poses(xy, scale, ori, "ori")
    n = len(xy)
    if descriptors is not None:
        if hasattr(descriptors, "detach"):  # a torch tensor: to numpy once (half and bfloat16 as float32)
            descriptors = checks.real_array(descriptors, "descriptors", "numbers").astype(np.float32)
        # checked on real_array's float64 copy; what is returned keeps the caller's dtype
        d = checks.real_array(descriptors, "descriptors", f"an (N, D) array of numbers with N = {n}")
        if d.ndim != 2 or len(d) != n:
            raise InputError(f"descriptors must be (N, D) with N = {n} (one row per keypoint), got {d.shape}")
        if not np.isfinite(d).all():
            raise InputError("descriptors contain NaN or infinite values")
        if d.size and np.abs(d).max() > np.finfo(np.float32).max:  # stored or handed on as float32: inf there
            raise InputError("descriptors hold values past float32's range (about 3.4e38)")
        descriptors = np.asarray(descriptors)
    return xy, scale, ori, descriptors


def _scores(scores, n: int) -> np.ndarray:
    return checks.per_point(scores, n, "scores", "one detection score per keypoint")


def _radii(radius: np.ndarray, where: str) -> np.ndarray:
    """log2 scales of radii in px read from a file, refused unless finite and within the scales we read."""
    lo, hi = REFERENCE_RADIUS * 2.0**-checks.SCALE_LIMIT, REFERENCE_RADIUS * 2.0**checks.SCALE_LIMIT
    bad = ~(np.isfinite(radius) & (radius >= lo) & (radius <= hi))
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        raise InputError(
            f"{where}: scales must be radii in px within [{lo:.3g}, {hi:g}]; #{i} is {radius[i]:g}"
        )
    return np.log2(radius / REFERENCE_RADIUS)


def _below_float32(v: np.ndarray, top: float) -> np.ndarray:
    """``v`` in ``[0, top)``, with what float32 would round up to ``top`` set to 0 (the same angle)."""
    return np.where(np.float32(v) >= np.float32(top), 0.0, v)


def radius_px(log2_scale) -> np.ndarray:
    """Characteristic radius in pixels of a log2 scale."""
    return REFERENCE_RADIUS * np.power(2.0, np.asarray(log2_scale, np.float64))


def to_lightglue(xy, scale, ori, descriptors=None, scores=None, image_size=None) -> dict:
    """A LightGlue feature dict (batched, ``torch.float32``) with the conventions of LightGlue's own
    SIFT/DoG extractors (OpenCV backend): ``keypoints (1, N, 2)``, ``scales (1, N)`` = OpenCV size
    (diameter px), ``oris (1, N)`` = OpenCV angle in radians (clockwise as displayed), and if given
    ``descriptors (1, N, D)``, ``keypoint_scores (1, N)``, ``image_size (1, 2)`` as (width, height).

    ``xy`` must be ``(N, 2)`` (N may be 0), ``scale`` and ``ori`` a number or ``(N,)`` each, finite, the scale
    within ±:data:`~patchpose.checks.SCALE_LIMIT` octaves; anything else is an :class:`InputError`.

    ``scales`` is :func:`~patchpose.conventions.to_cv2_size_angle` of ``scale``: for keypoints described by
    OpenCV's SIFT (e.g. :func:`~patchpose.assign`'s) pass ``from_cv2_size_angle(sizes, angles)`` of those
    keypoints, so that ``scales`` is the ``size`` they were described at, as LightGlue's SIFT extractor reports it;
    :attr:`~patchpose.Poses.scale` itself gives our region's diameter, about 4.7 times that size."""
    import torch

    xy, scale, ori, descriptors = _check(xy, scale, ori, descriptors)
    scores = None if scores is None else _scores(scores, len(xy))
    image_size = None if image_size is None else _sized(image_size, xy)
    size, angle_deg = to_cv2_size_angle(scale, ori)
    out = {
        "keypoints": torch.from_numpy(xy.reshape(1, -1, 2)).float(),
        "scales": torch.from_numpy(np.asarray(size, np.float64)[None]).float(),
        "oris": torch.from_numpy(_below_float32(np.radians(angle_deg), TWO_PI)[None]).float(),
    }
    if descriptors is not None:
        out["descriptors"] = torch.from_numpy(np.asarray(descriptors, np.float32)[None])
    if scores is not None:
        out["keypoint_scores"] = torch.from_numpy(scores.astype(np.float32)[None])
    if image_size is not None:
        out["image_size"] = torch.tensor([list(image_size)], dtype=torch.float32)
    return out


def _sized(image_size, xy: np.ndarray) -> tuple[int, int]:
    """``image_size`` checked (:func:`~patchpose.checks.image_size`) and holding the keypoints ``xy`` (pixel
    centres at integers, so from −0.5 to width − 0.5; half a pixel of slack each side): a swapped (height, width),
    where a keypoint lies past the smaller side, is an
    :class:`InputError`, not a file whose keypoints lie outside its image."""
    w, h = checks.image_size(image_size)
    out = (xy[:, 0] < -1.0) | (xy[:, 0] > w) | (xy[:, 1] < -1.0) | (xy[:, 1] > h)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise InputError(
            f"{int(out.sum())} keypoint(s) lie outside image_size {w}×{h} (width, height), e.g. #{i} at "
            f"({xy[i, 0]:g}, {xy[i, 1]:g}): is it (height, width)?"
        )
    return w, h


def write_hloc_features(
    path, name: str, xy, scale, ori, descriptors, scores=None, image_size=None, *, poses_only: bool = False
) -> None:
    """Add (or replace) image ``name`` in an hloc features file: a group with ``keypoints (N, 2)`` (centre
    of the top-left pixel at 0, as hloc stores them), ``descriptors (D, N)``, ``scales (N,)`` radius px,
    ``oris (N,)`` degrees clockwise as displayed, ``image_size`` (width, height; needed: hloc's matchers read it, and
    the keypoints must lie inside it) and ``scores`` if given.

    ``scale`` and ``ori`` None: the group has no ``scales`` and ``oris`` (a feature without poses, as hloc writes
    SuperPoint's or ALIKED's). ``poses_only``: ``descriptors`` may be None, and the group then has none (keypoints
    and poses for a describer that runs later). The file is never changed in place (:class:`HlocFeaturesWriter`): each call
    rewrites it whole, so for many images use one writer, ``with HlocFeaturesWriter(path) as w: w.add(...)``."""
    with HlocFeaturesWriter(path) as w:
        w.add(name, xy, scale, ori, descriptors, scores, image_size, poses_only=poses_only)


#: files up to this size are changed in memory; larger ones in a copy beside them on the disk (flat memory)
IN_MEMORY_BYTES = 256 * 2**20


class HlocFeaturesWriter:
    """Add or replace images in an hloc features file as a database would: the file is read into memory (a file past
    :data:`IN_MEMORY_BYTES`: copied beside itself on the disk), changed there, and written whole to a new file beside
    it, flushed to the disk and renamed over the old one when the ``with`` block ends without an error
    (:func:`~patchpose.fileio.write_bytes_atomic`, :func:`~patchpose.fileio.atomic_copy`). A kill, an error or a full
    disk at any moment leaves the old file as it was, or the new one complete; a full disk or a file-size limit is a
    one-line :class:`InputError`. One writer per file at a time (two would each keep only their own images).

    ``add`` takes :func:`write_hloc_features`'s arguments; an image name replaces only the image of that name: a name
    that is a folder of other images (``db`` beside ``db/1.jpg``), one inside an image (``q.jpg/keypoints``) or one
    with NUL, ``.`` or ``..`` parts, or a trailing ``/`` is refused (tabs and spaces are names as any)."""

    def __init__(self, path) -> None:
        self.h5py = require("h5py", "hloc")
        self.path = checks.output_file(path, "hloc features file")
        if self.path.is_file() and not self.h5py.is_hdf5(self.path):
            raise InputError(f"{self.path} exists and is not an HDF5 file (not an hloc features file)")
        self._buffer = None
        self._file = None
        self._copy = None
        self._tmp = None

    def __enter__(self) -> HlocFeaturesWriter:
        large = self.path.is_file() and self.path.stat().st_size > IN_MEMORY_BYTES
        if large:  # changed in a copy on the disk, not in memory
            self._copy = atomic_copy(self.path, "hloc features file")
            self._tmp = self._copy.__enter__()
            source = self._tmp
        else:
            self._buffer = io.BytesIO(self.path.read_bytes() if self.path.is_file() else b"")
            source = self._buffer
        try:
            self._file = self.h5py.File(source, "a")
        except OSError as e:  # a damaged file that starts like HDF5
            if self._copy is not None:  # its copy removed
                copy, self._copy, self._tmp = self._copy, None, None
                copy.__exit__(type(e), e, None)
            raise InputError(
                f"{self.path}: cannot read it as HDF5 ({' '.join(str(e).split())[:160]})"
            ) from None
        return self

    def add(
        self,
        name: str,
        xy,
        scale,
        ori,
        descriptors,
        scores=None,
        image_size=None,
        *,
        poses_only: bool = False,
        attrs: dict | None = None,
    ) -> None:
        """Add (or replace) image ``name`` (:func:`write_hloc_features`'s arguments; ``attrs``: attributes of its
        group, e.g. ``patchpose extract``'s mark of a finished image)."""
        if self._file is None:
            raise InputError(
                "HlocFeaturesWriter.add needs the writer open: `with HlocFeaturesWriter(path) as w`"
            )
        if (scale is None) != (ori is None):
            raise InputError("give both scale and ori, or neither (a feature without poses, as ALIKED's)")
        posed = scale is not None
        xy, scale, ori, descriptors = _check(xy, scale if posed else 0.0, ori if posed else 0.0, descriptors)
        if descriptors is None and not poses_only:
            raise InputError("hloc features need descriptors")
        scores = None if scores is None else _scores(scores, len(xy))
        if image_size is None:
            raise InputError(
                f"image {name!r}: image_size (width, height) is needed: hloc's matchers read each image's size"
            )
        image_size = _sized(image_size, xy)
        _check_group_name(name)
        f = self._file
        _check_replaceable(self.h5py, f, self.path, name)
        if self._tmp is not None:  # HDF5 writes this copy: the room for what is added, checked first
            arrays = (xy, scale, ori) + ((descriptors,) if descriptors is not None else ())
            new = 2 * sum(np.asarray(a).nbytes for a in arrays) + 2**20
            room_for(self.path.resolve(), new, "hloc features file", total=self._tmp.stat().st_size + new)
        try:
            if name in f:
                del f[name]
            g = f.create_group(name)
            g.create_dataset("keypoints", data=xy.astype(np.float32))
            if descriptors is not None:
                g.create_dataset("descriptors", data=np.ascontiguousarray(descriptors.T))
            if posed:
                g.create_dataset("scales", data=radius_px(scale).astype(np.float32))
                g.create_dataset("oris", data=to_cv2_size_angle(scale, ori)[1].astype(np.float32))
            if scores is not None:
                g.create_dataset("scores", data=np.asarray(scores, np.float32))
            if image_size is not None:
                g.create_dataset("image_size", data=np.asarray(image_size, np.int64))
            for key, value in (attrs or {}).items():
                g.attrs[key] = value
        except (
            OSError,
            RuntimeError,
        ) as e:  # HDF5 writing the copy on the disk (a full disk): the file unchanged
            raise InputError(
                f"{self.path}: cannot add {name!r} ({_one_line(e)}); the file is as it was"
            ) from None

    def __exit__(self, kind, value, traceback) -> None:
        f, self._file = self._file, None
        failed = None
        try:
            f.close()
        except (OSError, RuntimeError) as e:  # HDF5 flushing the copy on the disk (a full disk)
            failed = InputError(f"{self.path}: cannot write it ({_one_line(e)}); the file is as it was")
        copy, self._copy, self._tmp = self._copy, None, None
        buffer, self._buffer = self._buffer, None
        ok = kind is None and failed is None
        if copy is not None:  # renamed over the file, or removed
            if ok:
                copy.__exit__(None, None, None)
            else:
                why = failed or value
                copy.__exit__(type(why), why, None)
        elif ok:  # the whole new file, or nothing
            write_bytes_atomic(self.path, buffer.getvalue(), "hloc features file")
        if failed is not None and kind is None:
            raise failed


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:200]


def _check_replaceable(h5py, f, path: Path, name: str) -> None:
    """Refuse an image name that would replace or break something else in the file: a name that is a folder of
    other images (deleting it would delete them), or one inside an existing image."""

    def image(obj) -> bool:  # an image group holds a keypoints *dataset* (a group of that name is a folder)
        return isinstance(obj, h5py.Group) and isinstance(obj.get("keypoints"), h5py.Dataset)

    parts = name.split("/")
    for k in range(1, len(parts)):
        parent = "/".join(parts[:k])
        if parent in f and (not isinstance(f[parent], h5py.Group) or image(f[parent])):
            raise InputError(f"{path}: {parent!r} is an image; {name!r} cannot go inside it")
    if name in f and not image(f[name]):
        raise InputError(
            f"{path}: {name!r} holds other images (a folder, e.g. {name!r}/...); an image cannot replace it"
        )


def _check_group_name(name) -> str:
    """An image name as hloc uses it for a group (a relative path; ``/`` makes nested groups)."""
    if not isinstance(name, str) or not name.strip("/") or name.startswith("/") or "//" in name:
        raise InputError(
            f"name must be an image name such as 'db/1.jpg' (a non-empty relative path), got {name!r}"
        )
    if any(part in (".", "..") for part in name.split("/")):
        raise InputError(f"name must not hold '.' or '..' parts, got {name!r}")
    if "\0" in name or name.endswith("/"):  # HDF5 would cut the name at a NUL ('a\0b' is 'a')
        raise InputError(f"name must not hold NUL or end with '/', got {name!r}")
    return name


def read_hloc_features(path, name: str) -> dict:
    """``{"xy", "scale" (log2), "ori" (radians CCW), "descriptors" (N, D)}`` of one image of an hloc file.

    hloc writes ``scales`` and ``oris`` only for detectors that have them (its DoG); for the others
    (SuperPoint, DISK, ALIKED, …) ``scale`` and ``ori`` are None, which is where our poses come in, and
    ``descriptors`` is None where the group has none."""
    h5py = require("h5py", "hloc")

    path = checks.input_file(path, "hloc features file")
    _check_group_name(name)
    if not h5py.is_hdf5(path):
        raise InputError(f"{path} is not an HDF5 file (not an hloc features file)")
    try:
        with h5py.File(path, "r") as f:
            return _read_hloc_group(h5py, f, path, name)
    except OSError as e:  # a damaged file that starts like HDF5
        raise InputError(f"{path}: cannot read it as HDF5 ({' '.join(str(e).split())[:160]})") from None


#: the largest dataset an hloc reader reads: ``MAX_KEYPOINTS`` keypoints, descriptors of at most this many values
MAX_DESCRIPTOR_DIM = 4096
#: the most bytes one dataset of an hloc file is read into (10⁷ keypoints' 128-D float32 descriptors are 5 GB)
MAX_DATASET_BYTES = 2**32
#: how many times its stored bytes a dataset may claim (compression of keypoints and descriptors gives a few times,
#: not this): a file of a few KB that claims gigabytes is refused before anything is read
MAX_EXPANSION = 1000


def _check_stored_size(d, path: Path, what: str) -> None:
    """Refuse a dataset whose shape is past the documented limits (:data:`~patchpose.data.keypoints.MAX_KEYPOINTS`
    rows or columns of keypoints, :data:`MAX_DESCRIPTOR_DIM` descriptor values) or that claims more than
    :data:`MAX_EXPANSION` times the bytes it has on disk (a fill value, or a crafted file): before it is read."""
    from ..data.keypoints import MAX_KEYPOINTS

    if (
        d.external or d.is_virtual
    ):  # bytes from other files: a size that cannot be trusted, files not ours to read
        raise InputError(f"{path}: {what} reads its values from other files (external or virtual storage)")
    shape = d.shape
    if d.nbytes > MAX_DATASET_BYTES:
        raise InputError(
            f"{path}: {what} claims {d.nbytes:,} bytes, past the {MAX_DATASET_BYTES:,} read at most"
        )
    if any(n > MAX_KEYPOINTS for n in shape) or (len(shape) == 2 and min(shape) > MAX_DESCRIPTOR_DIM):
        raise InputError(
            f"{path}: {what} claims shape {shape}: past {MAX_KEYPOINTS:,} keypoints or {MAX_DESCRIPTOR_DIM:,} "
            "descriptor values"
        )
    stored = d.id.get_storage_size()
    if d.nbytes > 2**20 and d.nbytes > MAX_EXPANSION * max(stored, 1):
        raise InputError(
            f"{path}: {what} claims {d.nbytes:,} bytes but stores {stored:,}: a damaged or crafted file"
        )


def _read_hloc_group(h5py, f, path: Path, name: str) -> dict:
    if name not in f:
        raise InputError(f"{path} has no image {name!r}")
    g = f[name]
    if not isinstance(g, h5py.Group) or "keypoints" not in g:
        raise InputError(f"{path}: {name!r} is not an hloc features group (it has no 'keypoints')")

    def dataset(key: str, ndim: int):
        """The dataset ``key`` checked before anything of it is read (None: the group has none)."""
        if key not in g:
            return None
        d = g.get(key, getlink=True)
        if not isinstance(d, h5py.HardLink):  # a link into another file, or a name to follow
            raise InputError(f"{path}: {name!r}/{key} is a link, not a dataset of this file")
        d = g[key]
        if not isinstance(d, h5py.Dataset) or d.dtype.kind not in "iuf" or d.ndim != ndim:
            raise InputError(f"{path}: {name!r}/{key} must be a {ndim}-d array of numbers")
        _check_stored_size(d, path, f"{name!r}/{key}")
        return d

    def values(key: str, d) -> np.ndarray | None:
        if d is None:
            return None
        v = d[()]  # read once, kept in its dtype (descriptors stay as stored)
        if not np.isfinite(v).all():
            raise InputError(f"{path}: {name!r}/{key} holds NaN or infinite values")
        return v

    k = dataset("keypoints", 2)
    if k.shape[1] != 2:  # every shape checked before anything is read
        raise InputError(f"{path}: {name!r}/keypoints must be (N, 2), got {k.shape}")
    n = k.shape[0]
    found = {key: dataset(key, ndim) for key, ndim in (("scales", 1), ("oris", 1), ("descriptors", 2))}
    for key in ("scales", "oris"):
        if found[key] is not None and found[key].shape[0] != n:
            raise InputError(f"{path}: {name!r}/{key} has {found[key].shape[0]} values for {n} keypoints")
    if found["descriptors"] is not None and found["descriptors"].shape[1] != n:
        raise InputError(
            f"{path}: {name!r}/descriptors must be (D, N) with N = {n}, got {found['descriptors'].shape}"
        )
    xy = values("keypoints", k).astype(np.float64)
    radius, oris, desc = (values(key, found[key]) for key in ("scales", "oris", "descriptors"))
    return {
        "xy": xy,
        "scale": None if radius is None else _radii(radius.astype(np.float64), f"{path}: {name!r}"),
        "ori": None if oris is None else np.mod(-np.radians(oris.astype(np.float64)), TWO_PI),
        "descriptors": None if desc is None else desc.T,
    }


def to_colmap_rows(xy, scale, ori) -> np.ndarray:
    """``(N, 4)`` rows ``x, y, scale, orientation`` in COLMAP's conventions (top-left pixel centre at
    (0.5, 0.5), scale = radius px, orientation radians clockwise as displayed in [−π, π)) from our ``xy``,
    log2 ``scale`` and ``ori`` (checked: an :class:`InputError` for bad poses)."""
    xy, scale, ori = checks.poses(xy, scale, ori, "ori")
    a = np.mod(-ori + np.pi, TWO_PI) - np.pi  # clockwise, in [−π, π)
    return np.column_stack([to_colmap_xy(xy), radius_px(scale), a]).reshape(-1, 4)


def from_colmap_rows(rows: np.ndarray, where: str) -> dict:
    """Inverse of :func:`to_colmap_rows` for ``(N, 4)`` finite rows read from ``where`` (named in the
    :class:`InputError` for a radius outside the scales we read): ``{"xy", "scale", "ori"}``."""
    rows = np.asarray(rows, np.float64).reshape(-1, 4)
    return {
        "xy": from_colmap_xy(rows[:, :2]),
        "scale": _radii(rows[:, 2], where),
        "ori": np.mod(-rows[:, 3], TWO_PI),
    }


def write_colmap_keypoints(path, xy, scale, ori, descriptors=None) -> None:
    """COLMAP's text feature import: a header ``N 128`` and one line ``x y scale orientation d1 … d128`` per
    keypoint (x, y with the top-left pixel centre at 0.5; scale = radius px; orientation radians clockwise
    as displayed, in [−π, π)).

    COLMAP's reader takes exactly 128 descriptor values per keypoint, each an integer in [0, 255]; other
    descriptors are refused with an :class:`InputError` rather than written in a form COLMAP refuses or
    misreads (float SIFT descriptors, e.g. kornia's, convert as COLMAP converts its own:
    ``np.clip(np.round(512 * d), 0, 255)``). Without descriptors every keypoint gets 128 zeros (for matches
    imported by COLMAP's custom matching, which does not read them)."""
    xy, scale, ori, descriptors = _check(xy, scale, ori, descriptors)
    path = checks.output_file(path, "COLMAP keypoint file")
    if descriptors is None:
        descriptors = np.zeros((len(xy), COLMAP_DESCRIPTOR_DIM), np.uint8)
    if descriptors.shape[1] != COLMAP_DESCRIPTOR_DIM:
        raise InputError(
            f"COLMAP's text import needs 128 descriptor values per keypoint, got {descriptors.shape[1]}"
        )
    d = np.asarray(descriptors, np.float64)
    if not (np.isfinite(d).all() and (d == np.round(d)).all() and (d >= 0).all() and (d <= 255).all()):
        raise InputError(
            "COLMAP's descriptors are integers in [0, 255]; convert float SIFT descriptors as COLMAP does, "
            "np.clip(np.round(512 * d), 0, 255)"
        )
    k = to_colmap_rows(xy, scale, ori)
    lines = [f"{len(xy)} {COLMAP_DESCRIPTOR_DIM}"]
    for i in range(len(xy)):
        row = [f"{k[i, 0]:.4f}", f"{k[i, 1]:.4f}", f"{k[i, 2]:.4f}", f"{k[i, 3]:.6f}"]
        row += [str(int(v)) for v in d[i]]
        lines.append(" ".join(row))
    write_text_atomic(path, "\n".join(lines) + "\n", "COLMAP keypoint file")


def read_colmap_keypoints(path) -> dict:
    """Inverse of :func:`write_colmap_keypoints`: ``{"xy", "scale", "ori", "descriptors"}`` (descriptors
    None for a file without descriptor columns, ``N 0``).

    The file must hold what COLMAP reads: a header ``N D`` (D 128, or 0), then N lines of ``4 + D`` numbers;
    finite values, radii > 0 (within the scales we read), descriptor values integers in [0, 255]. Anything
    else is an :class:`InputError` naming the line."""
    path = checks.input_file(path, "COLMAP keypoint file")
    not_colmap = f"{path} is not a COLMAP keypoint text file"
    try:
        rows = path.read_text().split("\n")
    except UnicodeDecodeError:
        raise InputError(f"{not_colmap} (it is not text)") from None
    try:
        n, d = (int(v) for v in rows[0].split())
    except ValueError:
        raise InputError(f"{not_colmap}: its first line must be 'N D' (keypoints, descriptor size)") from None
    if n < 0 or d not in (0, COLMAP_DESCRIPTOR_DIM):
        raise InputError(f"{not_colmap}: header 'N D' needs N >= 0 and D = 128 (or 0), got {rows[0]!r}")
    body = rows[1 : 1 + n]
    if len(body) < n or any(r.strip() for r in rows[1 + n :]):
        raise InputError(f"{not_colmap}: the header says {n} keypoints, the file has {len(rows) - 1} lines")
    data = np.zeros((n, 4 + d))
    for i, r in enumerate(body):
        try:
            data[i] = [float(v) for v in r.split()]
        except ValueError:  # not numbers, or another count
            raise InputError(
                f"{path}, line {i + 2}: expected {4 + d} numbers, got {r.strip()[:60]!r}"
            ) from None
    if not np.isfinite(data).all():
        i = int(np.nonzero(~np.isfinite(data).all(1))[0][0])
        raise InputError(f"{path}, line {i + 2}: NaN or infinite values")
    desc = data[:, 4:]
    if d and not ((desc == np.round(desc)) & (desc >= 0) & (desc <= 255)).all():
        i = int(np.nonzero(~((desc == np.round(desc)) & (desc >= 0) & (desc <= 255)).all(1))[0][0])
        raise InputError(f"{path}, line {i + 2}: descriptor values must be integers in [0, 255]")
    return {**from_colmap_rows(data[:, :4], str(path)), "descriptors": desc.astype(np.uint8) if d else None}


def read_pairs(path) -> list[tuple[str, str]]:
    """The image pairs of an hloc pairs file (what hloc's ``pairs_from_retrieval``, ``pairs_from_exhaustive`` and
    ``pairs_from_sequence`` write): one pair a line, two image names separated by white space; blank lines, lines
    starting with ``#`` (hloc writes neither) and a leading BOM are skipped. A missing file, a line without exactly two
    names, or a photo paired with itself is a one-line :class:`InputError` naming the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM some editors write is not part of the first name
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the pairs file {path}: {_one_line(e)}") from None
    pairs = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        names = line.split()
        if len(names) != 2:
            raise InputError(f"{path}, line {i}: a pair is two image names, got {line.strip()!r}")
        if names[0] == names[1]:
            raise InputError(f"{path}, line {i}: {names[0]!r} is paired with itself")
        pairs.append((names[0], names[1]))
    return pairs


__all__ = [
    "read_pairs",
    "to_lightglue",
    "write_hloc_features",
    "HlocFeaturesWriter",
    "IN_MEMORY_BYTES",
    "MAX_DATASET_BYTES",
    "MAX_DESCRIPTOR_DIM",
    "MAX_EXPANSION",
    "read_hloc_features",
    "write_colmap_keypoints",
    "read_colmap_keypoints",
    "radius_px",
]
