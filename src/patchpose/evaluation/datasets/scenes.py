"""Multi-view scenes rendered from photos: folders of frames with known cameras, for ``patchpose eval colmap``
on photos no choice was made on (``patchpose generate scenes``).

A scene is a room seen from its open side: a back wall, two side walls, a floor and three boxes standing on it
(each box's front, sides and top), every face a rectangle textured with a crop of one photo of the split, lit
by a constant factor of its own. The frames are rendered by casting each pixel's ray (pixel centres at integers)
to the nearest face and sampling that face's photo from a pyramid by the pixel's footprint on it (anti-aliased:
blended between the two levels around it), then written as JPEG with a little noise. Two kinds of scene:

* ``walk``: a hand-held sequence: the camera slides 3 m sideways and 2 m forwards through the frames, looking
  into the room with a few degrees of pan, tilt and roll; one focal length.
* ``orbit``: photos of one place by different people: each camera somewhere in front of the boxes (±35° around
  them, 4–8 m away), looking at them from its own height, rolled by up to ±8°, zoomed by 0.75–1.5×, its own
  exposure and gamma.

Each scene is a folder ``OUT/{kind}_{k}/`` of frames ``frame_00.jpg, …`` and ``cameras.json`` (per frame: ``K``,
``R``, ``t`` with ``x_camera = R·x_world + t``, OpenCV's camera axes, metres; ``size`` ``[width, height]``);
``OUT/manifest.json`` holds the settings and each scene's photos. A frame already written is kept (resume), but
only in a folder made with the same settings and photos. Geometry by construction, so the cameras are exact; the
look is not a real photo's (flat faces, no parallax inside a face, no occlusion but the boxes').
"""

from __future__ import annotations

import functools
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

#: the kinds of scene
KINDS = ("walk", "orbit")
#: the room (metres; world x right, y down, z into the room): the walls' half width, the floor's height below the
#: cameras' mean height, the ceiling's height above it (no ceiling is drawn), the back wall's depth
ROOM = {"half_width": 5.0, "floor": 1.5, "top": 4.0, "depth": 10.0}
#: the longest side a photo is read at for texture
TEXTURE_SIDE = 1024
#: the renderer's version, in the manifest: a folder rendered by another is not resumed (1: a pyramid level k
#: sampled half a pixel of level k off; 2: level k's pixel j is level 0's pixel j·2**k, as cv2.pyrDown keeps them)
RENDERER = 2


@dataclass
class Face:
    """A textured rectangle: corner ``origin`` (world), unit axes ``u`` (along the texture's columns) and ``v``
    (its rows), ``width`` × ``height`` metres, ``texture`` (RGB uint8), ``light`` (a factor on its colours)."""

    origin: np.ndarray
    u: np.ndarray
    v: np.ndarray
    width: float
    height: float
    texture: np.ndarray
    light: float = 1.0

    @functools.cached_property
    def pyramid(self) -> list[np.ndarray]:
        """The texture's Gaussian pyramid (float32, ``cv2.pyrDown`` until a side is 8 px or 8 levels), built once
        for every frame that sees the face."""
        return _pyramid(self.texture, 8)


def _rng(seed: int, name: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}/{name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _crop(photo: np.ndarray, aspect: float, rng: np.random.Generator) -> np.ndarray:
    """A random crop of ``photo`` of width / height ``aspect``, covering 60–100 % of the largest such crop,
    flipped left-right half of the time (one photo then textures two faces differently)."""
    h, w = photo.shape[:2]
    cw, ch = (w, w / aspect) if w / h < aspect else (h * aspect, h)
    f = rng.uniform(0.6, 1.0)
    cw, ch = max(8, int(cw * f)), max(8, int(ch * f))
    x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
    out = photo[y0 : y0 + ch, x0 : x0 + cw]
    return np.ascontiguousarray(out[:, ::-1] if rng.random() < 0.5 else out)


def room_faces(photos: list[np.ndarray], rng: np.random.Generator) -> list[Face]:
    """The faces of one room (module docstring): photos drawn from ``photos`` without replacement while they
    last, a random crop of each."""
    hw, floor, top, depth = ROOM["half_width"], ROOM["floor"], ROOM["top"], ROOM["depth"]
    x, y, z = np.eye(3)
    rects = [
        (np.array([-hw, -top, depth]), x, y, 2 * hw, top + floor),  # back wall, facing the cameras
        (np.array([-hw, -top, 0.0]), z, y, depth, top + floor),  # left wall, facing +x
        (np.array([hw, -top, depth]), -z, y, depth, top + floor),  # right wall, facing -x
        (np.array([-hw, floor, 0.0]), x, z, 2 * hw, depth),  # floor, seen from above
    ]
    boxes: list[tuple[float, float, float, float]] = []
    while len(boxes) < 3:  # centre x, front z, width, depth; footprints apart by 0.5 m
        bx, bz, bw, bd = (
            rng.uniform(-3.0, 3.0),
            rng.uniform(4.0, 7.0),
            rng.uniform(1.0, 2.2),
            rng.uniform(0.8, 1.6),
        )
        if all(
            abs(bx - ox) > (bw + ow) / 2 + 0.5 or abs(bz - oz) > (bd + od) / 2 + 0.5
            for ox, oz, ow, od in boxes
        ):
            boxes.append((bx, bz, bw, bd))
    for bx, bz, bw, bd in boxes:
        bh = rng.uniform(1.0, 2.8)
        x0, x1, y0 = bx - bw / 2, bx + bw / 2, floor - bh
        rects += [
            (np.array([x0, y0, bz]), x, y, bw, bh),  # front
            (np.array([x0, y0, bz + bd]), -z, y, bd, bh),  # left side
            (np.array([x1, y0, bz]), z, y, bd, bh),  # right side
            (np.array([x0, y0, bz + bd]), x, -z, bw, bd),  # top
        ]
    order = rng.permutation(len(photos))
    faces = []
    for i, (o, u, v, w, h) in enumerate(rects):
        photo = photos[int(order[i % len(photos)])]
        faces.append(Face(o, u, v, w, h, _crop(photo, w / h, rng), float(rng.uniform(0.65, 1.0))))
    return faces


def look_at(centre: np.ndarray, target: np.ndarray, roll_deg: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``(R, t)`` of a camera at ``centre`` looking at ``target`` (world y down is the image's down), turned
    about its optical axis by ``roll_deg`` (counter-clockwise in the image)."""
    f = target - centre
    f = f / np.linalg.norm(f)
    r = np.cross(np.array([0.0, 1.0, 0.0]), f)  # image right: y down × forward
    r /= np.linalg.norm(r)
    d = np.cross(f, r)
    R = np.stack([r, d, f])
    a = math.radians(roll_deg)
    Rz = np.array([[math.cos(a), math.sin(a), 0.0], [-math.sin(a), math.cos(a), 0.0], [0.0, 0.0, 1.0]])
    R = Rz @ R
    return R, -R @ centre


def scene_cameras(kind: str, frames: int, size: tuple[int, int], rng: np.random.Generator) -> list[dict]:
    """The cameras of one scene of ``kind`` (module docstring): ``[{"K", "R", "t", "gain", "gamma"}]``."""
    w, h = size
    f0 = 0.78 * w  # about 65° across
    cams = []
    for i in range(frames):
        s = i / max(frames - 1, 1)
        if kind == "walk":
            centre = np.array([-1.5 + 3.0 * s, rng.normal(0, 0.05), -2.0 + 2.0 * s])
            target = np.array([0.4 * centre[0], 0.3, 7.0]) + rng.normal(0, 0.15, 3)
            roll, zoom, gain, gamma = rng.normal(0, 2.0), 1.0, rng.uniform(0.95, 1.05), 1.0
        else:
            a, dist = math.radians(rng.uniform(-35, 35)), rng.uniform(4.0, 8.0)
            look = np.array([0.0, 0.2, 5.5])
            centre = look + dist * np.array([math.sin(a), 0.0, -math.cos(a)])
            centre[0] = np.clip(centre[0], -ROOM["half_width"] + 0.5, ROOM["half_width"] - 0.5)
            centre[1] = rng.uniform(-0.8, 0.4)
            target = look + rng.normal(0, 0.5, 3)
            roll, zoom = rng.uniform(-8, 8), 2 ** rng.uniform(-0.415, 0.585)
            gain, gamma = rng.uniform(0.75, 1.25), 2 ** rng.uniform(-0.32, 0.32)
        R, t = look_at(centre, target, roll)
        f = f0 * zoom
        K = np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1.0]])
        cams.append({"K": K, "R": R, "t": t, "gain": float(gain), "gamma": float(gamma)})
    return cams


def _pyramid(texture: np.ndarray, levels: int) -> list[np.ndarray]:
    out = [texture.astype(np.float32)]
    while len(out) < levels and min(out[-1].shape[:2]) > 8:
        out.append(cv2.pyrDown(out[-1]))
    return out


def render(
    faces: list[Face], K: np.ndarray, R: np.ndarray, t: np.ndarray, size: tuple[int, int]
) -> np.ndarray:
    """The view of ``faces`` from the camera ``K``, ``R``, ``t`` (``x_camera = R·x_world + t``): an RGB float32
    image of ``size`` (width, height), 0–255, a dark grey where no face is."""
    w, h = size
    u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    rays = np.stack([u, v, np.ones_like(u)], -1) @ np.linalg.inv(K).T  # camera coordinates, z = 1
    image = np.full((h, w, 3), 40.0, np.float32)
    depth = np.full((h, w), np.inf)
    for face in faces:
        o, a, b = R @ face.origin + t, R @ face.u, R @ face.v
        n = np.cross(a, b)
        denom = rays @ n
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = (n @ o) / denom
        pts = rays * lam[..., None] - o
        s, q = pts @ a / face.width, pts @ b / face.height
        seen = (lam > 0.05) & (s >= 0) & (s <= 1) & (q >= 0) & (q <= 1) & (lam < depth)
        if not seen.any():
            continue
        th, tw = face.texture.shape[:2]
        mx = np.nan_to_num(s * tw - 0.5, nan=-1.0, posinf=-1.0, neginf=-1.0).astype(np.float32)
        my = np.nan_to_num(q * th - 0.5, nan=-1.0, posinf=-1.0, neginf=-1.0).astype(np.float32)
        # the pixel's footprint in texture pixels, from the map's finite differences
        gy_x, gx_x = np.gradient(mx)
        gy_y, gx_y = np.gradient(my)
        foot = np.maximum(np.hypot(gx_x, gx_y), np.hypot(gy_x, gy_y))
        level = np.log2(np.clip(np.nan_to_num(foot, nan=1.0, posinf=1.0), 1.0, None))
        pyr = face.pyramid
        level = np.minimum(level, len(pyr) - 1)
        lo = np.floor(level).astype(np.int64)
        frac = (level - lo)[..., None].astype(np.float32)
        colour = np.zeros((h, w, 3), np.float32)
        for k in np.unique(np.concatenate([lo[seen], np.minimum(lo[seen] + 1, len(pyr) - 1)])):
            sx, sy = mx / np.float32(2**k), my / np.float32(2**k)  # pyrDown keeps the even samples
            sample = cv2.remap(pyr[k], sx, sy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
            colour += np.where((lo == k)[..., None], (1 - frac) * sample, 0)
            colour += np.where((np.minimum(lo + 1, len(pyr) - 1) == k)[..., None], frac * sample, 0)
        image[seen] = colour[seen] * face.light
        depth[seen] = lam[seen]
    return image


def _photo_rgb(path: Path) -> np.ndarray:
    img = load_photo(path, TEXTURE_SIDE)
    return cv2.cvtColor(img, cv2.COLOR_GRAY2RGB) if img.ndim == 2 else img[..., :3]


def generate_scenes(
    photos: list[Path],
    out: str | Path,
    kinds: tuple[str, ...] = KINDS,
    scenes: int = 4,
    frames: int = 12,
    size: tuple[int, int] = (640, 480),
    seed: int = 0,
    progress: bool = True,
) -> list[Path]:
    """Render ``scenes`` scenes of each of ``kinds`` with ``frames`` frames of ``size`` each from ``photos``
    (module docstring) into ``out``; returns the scenes' folders."""
    tqdm = require("tqdm", "eval").tqdm
    bad = [k for k in kinds if k not in KINDS]
    if not kinds or bad or len(set(kinds)) < len(kinds):
        raise InputError(f"kinds must be some of {KINDS}, got {list(kinds)}")
    if not (
        isinstance(scenes, int) and 1 <= scenes <= 100 and isinstance(frames, int) and 3 <= frames <= 200
    ):
        raise InputError(f"scenes must be in [1, 100] and frames in [3, 200], got {scenes} and {frames}")
    if not (len(size) == 2 and all(isinstance(s, int) and 64 <= s <= 4096 for s in size)):
        raise InputError(f"size must be two integers in [64, 4096], got {size}")
    if len(photos) < 2:
        raise InputError(f"a scene needs at least 2 photos, got {len(photos)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sources = sorted(str(Path(p).resolve()) for p in photos)
    settings = {"renderer": RENDERER, "kinds": list(kinds), "scenes": scenes, "frames": frames, "size": list(size), "seed": seed,
                "texture_side": TEXTURE_SIDE, "room": ROOM, "photos": sources}  # fmt: skip
    manifest = out / "manifest.json"
    old = None
    if manifest.is_file():
        try:
            old = json.loads(manifest.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            old = {}
        old = old if isinstance(old, dict) else {}
    jobs = [(kind, k) for kind in kinds for k in range(scenes)]
    scene_names = {f"{kind}_{k}": "scene" for kind, k in jobs}
    check_resume_plan(out, "scenes", None if old is None else {k: old.get(k) for k in settings}, settings,
                      {} if old is None else scene_names, scene_names, lambda name: (out / name).exists())  # fmt: skip
    write_text_atomic(manifest, json.dumps(settings, indent=1))  # the plan first
    loaded: list[np.ndarray] = []  # the photos, read once a scene is to be rendered
    folders = []
    for kind, k in tqdm(jobs, desc="scenes", disable=not progress):
        folder = out / f"{kind}_{k}"
        folders.append(folder)
        if (folder / "cameras.json").is_file():  # written last: the scene is finished
            continue
        folder.mkdir(exist_ok=True)
        loaded = loaded or [_photo_rgb(Path(p)) for p in sources]
        rng = _rng(seed, f"{kind}_{k}")
        faces = room_faces(loaded, rng)
        cams = scene_cameras(kind, frames, size, rng)
        record = {}
        for i, cam in enumerate(cams):
            name = f"frame_{i:03d}.jpg"
            record[name] = {"K": cam["K"].tolist(), "R": cam["R"].tolist(), "t": cam["t"].tolist(),
                            "size": list(size)}  # fmt: skip
            if (folder / name).is_file():
                continue
            img = render(faces, cam["K"], cam["R"], cam["t"], size)
            img = 255.0 * (np.clip(img * cam["gain"], 0, 255) / 255.0) ** cam["gamma"]
            img = img + _rng(seed, f"{kind}_{k}/{name}").normal(0, 2.0, img.shape)
            bgr = cv2.cvtColor(np.clip(img, 0, 255).round().astype(np.uint8), cv2.COLOR_RGB2BGR)
            tmp = folder / f"{name}.tmp.jpg"
            if not cv2.imwrite(str(tmp), bgr, [cv2.IMWRITE_JPEG_QUALITY, 92]):
                raise InputError(f"cannot write {tmp}")
            os.replace(tmp, folder / name)
        write_text_atomic(folder / "cameras.json", json.dumps(record, indent=1))
    return folders


def read_cameras(folder: str | Path) -> dict[str, dict] | None:
    """The cameras ``generate_scenes`` wrote for the frames of ``folder`` (``{name: {"K", "R", "t", "size"}}``,
    arrays), or None where it has no ``cameras.json``."""
    path = Path(folder) / "cameras.json"
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
        cams = {n: {k: np.asarray(c[k], np.float64) for k in ("K", "R", "t", "size")} for n, c in doc.items()}
    except (
        OSError,
        UnicodeDecodeError,
        json.JSONDecodeError,
        KeyError,
        TypeError,
        AttributeError,
        ValueError,
    ) as e:
        raise InputError(f"{path}: not a cameras file of 'generate scenes' ({type(e).__name__})") from None
    shapes = {"K": (3, 3), "R": (3, 3), "t": (3,), "size": (2,)}
    for n, c in cams.items():
        bad = [k for k, shape in shapes.items() if c[k].shape != shape or not np.isfinite(c[k]).all()]
        if bad:
            raise InputError(f"{path}: not a cameras file of 'generate scenes' ({n}: {', '.join(bad)})")
    return cams


def fit_similarity(found: np.ndarray, true: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(scale, R, t)`` of the similarity that best maps the points ``found`` onto ``true`` (both ``(N, 3)``,
    N ≥ 3; least squares, Umeyama, by OpenCV: ``true ≈ scale·R·found + t``). An :class:`InputError` where the
    points do not fix one (fewer than 3, or all on a line)."""
    src, dst = np.asarray(found, np.float64), np.asarray(true, np.float64)
    if len(src) < 3 or len(src) != len(dst):
        raise InputError(
            f"a similarity needs the same N >= 3 points on both sides, got {len(src)}, {len(dst)}"
        )
    try:
        T, scale = cv2.estimateAffine3D(src, dst, force_rotation=True)
    except cv2.error:
        T, scale = None, 0.0
    if T is None or not np.isfinite(scale) or scale <= 0:
        raise InputError("the points fix no similarity (all on a line or at one place)")
    return float(scale), T[:, :3], T[:, 3]


__all__ = ["KINDS", "ROOM", "Face", "room_faces", "look_at", "scene_cameras", "render", "generate_scenes",
           "read_cameras", "fit_similarity", "RENDERER"]  # fmt: skip
