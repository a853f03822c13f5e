"""Posed image pairs: the pairs-file format of the ScanNet/YFCC/MegaDepth-1500 test lists, and a generator.

**Format** (one pair per line, whitespace-separated, ``#`` comments allowed)::

    name0 name1 rot0 rot1 K0[9] K1[9] T_0to1[16]

``name0``/``name1`` are image paths relative to the images folder; ``rot0``/``rot1`` are EXIF-style
rotations in quarter turns (our generated pairs use 0; ``eval pose`` does not apply them and refuses
non-zero ones); ``K0``/``K1`` the 3×3 intrinsics row-major; ``T_0to1`` the 4×4 row-major transform that maps camera-0 coordinates to camera-1
coordinates (``X1 = R·X0 + t``). Pixel centres at integers, as everywhere in patchpose.

**Generator** (``patchpose generate posed-pairs``): pairs with exactly known relative pose made here.

* *rotation*: a photo and the same photo seen by the camera turned by a random rotation ``R`` (roll up
  to ±180°, pan and tilt up to ±20°): image 1 is image 0 warped by ``K·R·K⁻¹`` and ``T_0to1 = [R | 0]``.
  The baseline is zero, so only the rotation error is defined (:mod:`patchpose.evaluation.pose_eval`).
* *stereo*: scikit-image's Middlebury motorcycle pair (``f = 994.978`` px, principal points
  ``(311.193, 254.877)`` and ``(311.193 + 31.086, 254.877)``, baseline 193.001 mm along x, so
  ``X1 = X0 − (b, 0, 0)``), with the right camera additionally turned by a random ``R``: image 1 is the
  right image warped by ``K1·R·K1⁻¹`` and ``T_0to1 = [R | −R·(b, 0, 0)]``.
* ``--zoom`` (:data:`ZOOM_SETTINGS`): camera 1 of either kind also zooms in or out by ``2**z``: ``K1``'s
  focal lengths are ``2**z`` times camera 0's (the right camera's), and the warp is ``K1·R·K⁻¹`` with ``K``
  the camera before the zoom.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ...data.patches import load_photo
from ...errors import InputError, require
from ...fileio import check_resume_plan, write_text_atomic

#: Middlebury 2014 motorcycle at 1/4 resolution, as documented by skimage.data.stereo_motorcycle.
MOTORCYCLE = {"f": 994.978, "cx": 311.193, "cy": 254.877, "doffs": 31.086, "baseline_mm": 193.001}


@dataclass
class PosedPair:
    name0: str
    name1: str
    K0: np.ndarray  # (3, 3)
    K1: np.ndarray  # (3, 3)
    T_0to1: np.ndarray  # (4, 4)
    rot0: int = 0
    rot1: int = 0
    line_no: int = 0  # its line number in the pairs file it was read from (0: not read from a file)

    @property
    def R(self) -> np.ndarray:
        return self.T_0to1[:3, :3]

    @property
    def t(self) -> np.ndarray:
        return self.T_0to1[:3, 3]

    def line(self) -> str:
        nums = np.concatenate([self.K0.ravel(), self.K1.ravel(), self.T_0to1.ravel()])
        return " ".join(
            [self.name0, self.name1, str(self.rot0), str(self.rot1)] + [f"{v:.10g}" for v in nums]
        )


def read_pairs_file(path: str | Path) -> list[PosedPair]:
    """Pairs of a pairs file; a malformed line raises :class:`InputError` naming the line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"pairs file not found: {path}")
    pairs = []
    for no, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        tok = line.split()
        if len(tok) != 38:
            raise InputError(
                f"{path}:{no}: expected 38 fields (name0 name1 rot0 rot1 K0[9] K1[9] T[16]), got {len(tok)}"
            )
        try:
            rot0, rot1 = int(tok[2]), int(tok[3])
            nums = np.array([float(v) for v in tok[4:]], np.float64)
        except ValueError:
            raise InputError(f"{path}:{no}: rotations and matrices must be numbers") from None
        if not np.isfinite(nums).all():
            raise InputError(f"{path}:{no}: NaN or infinite values")
        K0, K1, T = nums[:9].reshape(3, 3), nums[9:18].reshape(3, 3), nums[18:].reshape(4, 4)
        if abs(np.linalg.det(K0)) < 1e-12 or abs(np.linalg.det(K1)) < 1e-12:
            raise InputError(f"{path}:{no}: singular intrinsics")
        R = T[:3, :3]
        if not np.allclose(R @ R.T, np.eye(3), atol=1e-4) or np.linalg.det(R) < 0:
            raise InputError(f"{path}:{no}: the rotation part of T_0to1 is not a rotation")
        pairs.append(PosedPair(tok[0], tok[1], K0, K1, T, rot0, rot1, line_no=no))
    if not pairs:
        raise InputError(f"{path}: no pairs")
    return pairs


def write_pairs_file(path: str | Path, pairs: list[PosedPair]) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(p.line() + "\n" for p in pairs))
    os.replace(tmp, path)


def rotation_from_angles(roll: float, pan: float, tilt: float) -> np.ndarray:
    """Camera rotation: ``roll`` about the optical axis, ``pan`` about y, ``tilt`` about x (radians)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pan), math.sin(pan)
    ct, st = math.cos(tilt), math.sin(tilt)
    Rz = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1.0]])
    Ry = np.array([[cp, 0, sp], [0, 1.0, 0], [-sp, 0, cp]])
    Rx = np.array([[1.0, 0, 0], [0, ct, -st], [0, st, ct]])
    return Rz @ Ry @ Rx


def default_intrinsics(shape) -> np.ndarray:
    """A pinhole camera for a photo without calibration: f = 1.2 · the longer side, centred."""
    h, w = shape[:2]
    f = 1.2 * max(h, w)
    return np.array([[f, 0, (w - 1) / 2.0], [0, f, (h - 1) / 2.0], [0, 0, 1.0]])


def rotate_camera(img: np.ndarray, K: np.ndarray, R: np.ndarray, K1: np.ndarray | None = None) -> np.ndarray:
    """The image seen by the same camera turned by ``R`` (``x1 ~ K·R·K⁻¹·x0``), same size, black outside;
    ``K1``: the turned camera's intrinsics where they differ (a zoom: ``x1 ~ K1·R·K⁻¹·x0``)."""
    H = (K if K1 is None else K1) @ R @ np.linalg.inv(K)
    h, w = img.shape[:2]
    return cv2.warpPerspective(img, H, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)


def _rng(seed: int, key: str) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:16], 16))


def random_rotation(rng: np.random.Generator, max_roll_deg: float, max_tilt_deg: float) -> np.ndarray:
    a = np.radians([rng.uniform(-max_roll_deg, max_roll_deg), *rng.uniform(-max_tilt_deg, max_tilt_deg, 2)])
    return rotation_from_angles(*a)


def zoomed(K: np.ndarray, octaves: float) -> np.ndarray:
    """``K`` with its focal lengths multiplied by ``2**octaves`` (the principal point kept): the camera
    zoomed in (positive) or out."""
    Kz = np.array(K, np.float64)
    Kz[:2, :2] *= 2.0**octaves
    return Kz


def random_zoom(rng: np.random.Generator, max_octaves: float) -> float:
    """A zoom in log2: in or out (drawn), by between half of ``max_octaves`` and all of it; 0 when it is 0."""
    if max_octaves <= 0:
        return 0.0
    return float(rng.choice([-1.0, 1.0]) * rng.uniform(max_octaves / 2, max_octaves))


#: ``patchpose generate posed-pairs --zoom``: camera 1 also zooms by 2**±(0.75…1.5) (1.7× to 2.8×, in or
#: out); pan and tilt kept within ±5° so that a view zoomed in still looks at the photo
ZOOM_SETTINGS = {"max_zoom_octaves": 1.5, "max_tilt_deg": 5.0}


def _write(path: Path, img_rgb: np.ndarray) -> None:
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    if not cv2.imwrite(str(tmp), cv2.cvtColor(img_rgb, cv2.COLOR_RGB2BGR)):
        raise InputError(f"cannot write {path}")
    os.replace(tmp, path)


def generate_posed_pairs(
    photos: list[Path],
    out: str | Path,
    per_photo: int = 2,
    stereo_pairs: int = 6,
    max_side: int = 640,
    max_roll_deg: float = 180.0,
    max_tilt_deg: float = 20.0,
    seed: int = 0,
    progress: bool = True,
    max_zoom_octaves: float = 0.0,
) -> Path:
    """Write images to ``out/images/`` and the pairs to ``out/pairs.txt``; returns the pairs file.

    ``per_photo`` rotation pairs per photo and ``stereo_pairs`` rotated motorcycle pairs (0 = none);
    ``max_zoom_octaves``: camera 1 also zooms (:func:`random_zoom`, its focal lengths scaled: ``K1`` says by
    how much; :data:`ZOOM_SETTINGS`).
    Every image draws from its own seed; images already written are kept (resume), but only in a folder
    made with the same settings and with each image from the same photo (``out/manifest.json``, written
    before any image): otherwise the pairs file would pair new poses with old images."""
    tqdm = require("tqdm", "eval").tqdm

    if not (
        isinstance(max_zoom_octaves, (int, float))
        and not isinstance(max_zoom_octaves, bool)
        and np.isfinite(max_zoom_octaves)
        and 0 <= max_zoom_octaves <= 3
    ):
        raise InputError(f"max_zoom_octaves must be a number in [0, 3], got {max_zoom_octaves!r}")
    out = Path(out)
    imgdir = out / "images"
    imgdir.mkdir(parents=True, exist_ok=True)
    settings = {
        "per_photo": per_photo,
        "stereo_pairs": stereo_pairs,
        "max_side": max_side,
        "max_roll_deg": max_roll_deg,
        "max_tilt_deg": max_tilt_deg,
        "seed": seed,
    }
    if max_zoom_octaves:  # only then in the manifest: folders made before the setting existed still resume
        settings["max_zoom_octaves"] = max_zoom_octaves
    jobs, sources, used = [], {}, set()
    for p in sorted(photos, key=str):
        base = "".join(c for c in Path(p).stem if c.isalnum()).lower() or "photo"
        stem, k = base, 2
        while stem in used:  # two photos of one name (x/cat.png, y/cat.png) get images of their own
            stem, k = f"{base}{k}", k + 1
        used.add(stem)
        for i in range(per_photo):
            jobs.append(("rot", p, f"{stem}_0.png", f"{stem}_r{i}.png"))
            sources[f"{stem}_0.png"] = sources[f"{stem}_r{i}.png"] = str(Path(p).resolve())
    for i in range(stereo_pairs):
        jobs.append(("stereo", None, "motorcycle_left.png", f"motorcycle_right_r{i}.png"))
        sources["motorcycle_left.png"] = sources[f"motorcycle_right_r{i}.png"] = "skimage:stereo_motorcycle"
    if not jobs:
        raise InputError("nothing to generate: no photos and no stereo pairs")
    manifest = out / "manifest.json"
    old = json.loads(manifest.read_text()) if manifest.is_file() else {}
    zoom = {"max_zoom_octaves": float(max_zoom_octaves)}  # compared as 0 where a manifest has none
    check_resume_plan(
        imgdir,
        "posed pairs",
        {**{k: old.get(k) for k in settings}, "max_zoom_octaves": float(old.get("max_zoom_octaves", 0.0))}
        if old
        else None,
        {**settings, **zoom},
        old.get("sources", {}),
        sources,
        lambda name: (imgdir / name).is_file(),
    )
    write_text_atomic(manifest, json.dumps({**settings, "sources": sources}, indent=1))  # the plan first
    pairs: list[PosedPair] = []
    for kind, p, name0, name1 in tqdm(jobs, desc="posed pairs", disable=not progress):
        if kind == "rot":
            img = load_photo(p, max_side)
            K0 = default_intrinsics(img.shape)
            rng = _rng(seed, name1)
            R = random_rotation(rng, max_roll_deg, max_tilt_deg)
            K1 = zoomed(K0, random_zoom(rng, max_zoom_octaves))
            T = np.eye(4)
            T[:3, :3] = R
            if not (imgdir / name0).is_file():
                _write(imgdir / name0, img)
            if not (imgdir / name1).is_file():
                _write(imgdir / name1, rotate_camera(img, K0, R, K1))
        else:
            import skimage.data

            m = MOTORCYCLE
            K0 = np.array([[m["f"], 0, m["cx"]], [0, m["f"], m["cy"]], [0, 0, 1.0]])
            K_right = K0.copy()
            K_right[0, 2] += m["doffs"]
            rng = _rng(seed, name1)
            R = random_rotation(rng, max_roll_deg, max_tilt_deg)
            K1 = zoomed(K_right, random_zoom(rng, max_zoom_octaves))
            T = np.eye(4)
            T[:3, :3] = R
            T[:3, 3] = -R @ np.array([m["baseline_mm"], 0.0, 0.0])
            if not (imgdir / name0).is_file() or not (imgdir / name1).is_file():
                left, right, _ = skimage.data.stereo_motorcycle()
                if not (imgdir / name0).is_file():
                    _write(imgdir / name0, left)
                _write(imgdir / name1, rotate_camera(right, K_right, R, K1))
        pairs.append(PosedPair(name0, name1, K0, K1, T))
    path = out / "pairs.txt"
    write_pairs_file(path, pairs)
    write_text_atomic(manifest, json.dumps({"pairs": len(pairs), **settings, "sources": sources}, indent=1))
    return path


__all__ = [
    "PosedPair",
    "read_pairs_file",
    "write_pairs_file",
    "generate_posed_pairs",
    "rotation_from_angles",
    "rotate_camera",
    "zoomed",
    "random_zoom",
    "ZOOM_SETTINGS",
    "default_intrinsics",
    "MOTORCYCLE",
]
