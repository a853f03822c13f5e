"""HPatches sequences: a loader for the real layout, and a generator that writes that same layout.

The layout of the release (``hpatches-sequences-release/``)::

    ROOT/
      i_ajuntament/ 1.ppm 2.ppm … 6.ppm  H_1_2 … H_1_6     # illumination: H is the identity
      v_boat/       1.ppm 2.ppm … 6.ppm  H_1_2 … H_1_6     # viewpoint
      …

``H_1_k`` is a 3×3 ASCII matrix that maps pixel coordinates of image 1 to image ``k`` (pixel centres at
integers, as everywhere in patchpose). :func:`load_hpatches` reads a real copy or a generated one alike,
optionally without the 8 high-resolution sequences (the D2-Net protocol) or restricted to a list of names.

``patchpose generate hpatches --images DIR --out DIR`` (:func:`generate_hpatches`) makes, from each photo,
one **viewpoint** sequence (images 2–6 are image 1 warped by random homographies that grow with ``k``:
rotation up to ±36°·(k−1), zoom up to 2^±(k−1)/5·1.25, corners moved by up to 3 %·(k−1) of the image
for perspective) and one **illumination** sequence (identity geometry; gain, gamma, colour cast, a smooth
shading ramp and noise, growing with ``k``). Each sequence folder is written under a temporary name and
renamed, and draws from its own seed, so an interrupted run resumes to the same content.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from ...data.patches import load_image, load_photo
from ...data.warps import (
    ViewpointConfig,
    random_viewpoint_homography,
    read_homography,
    warp_image,
    write_homography,
)
from ...errors import InputError, require
from ...fileio import check_resume_plan, write_text_atomic

log = logging.getLogger(__name__)

#: Sequences the D2-Net protocol drops (too large for most methods' memory): 52 i + 56 v remain.
HIGH_RES_SEQUENCES = (
    "i_contruction",
    "i_crownnight",
    "i_dc",
    "i_pencils",
    "i_whitebuilding",
    "v_artisans",
    "v_astronautis",
    "v_talent",
)
IMAGE_SUFFIXES = (".ppm", ".png", ".jpg", ".jpeg")


@dataclass
class Sequence:
    """One HPatches sequence: image 1 and the targets ``k`` with their homographies ``H_1_k``."""

    name: str
    path: Path
    images: dict[int, Path]  # k -> image file (1 is the reference)
    homographies: dict[int, np.ndarray] = field(repr=False)  # k -> H_1_k, for every k ≥ 2

    @property
    def kind(self) -> str:
        """``"illumination"`` (``i_*``) or ``"viewpoint"`` (``v_*``)."""
        return "illumination" if self.name.startswith("i_") else "viewpoint"

    @property
    def targets(self) -> list[int]:
        return sorted(self.homographies)

    def image(self, k: int) -> np.ndarray:
        """Image ``k`` as ``H×W×3`` uint8 RGB."""
        return load_image(self.images[k])


def _read_sequence(folder: Path) -> Sequence:
    images = {}
    for p in folder.iterdir():
        if p.suffix.lower() in IMAGE_SUFFIXES and p.stem.isdigit():
            k = int(p.stem)
            if k in images:
                raise InputError(f"{folder}: two files for image {k} ({images[k].name}, {p.name})")
            images[k] = p
    if 1 not in images:
        raise InputError(f"{folder}: no reference image 1.ppm")
    homs = {}
    for k in sorted(images):
        if k == 1:
            continue
        hp = folder / f"H_1_{k}"
        if not hp.is_file():
            raise InputError(f"{folder}: image {images[k].name} has no homography H_1_{k}")
        homs[k] = read_homography(hp)
    if not homs:
        raise InputError(f"{folder}: only image 1; a sequence needs at least one target image")
    return Sequence(folder.name, folder, images, homs)


def _check_finished(root: Path, kinds: str = "vi") -> None:
    """InputError where ``root`` is a :func:`generate_hpatches` folder (its ``manifest.json``, written first, lists
    the sequences planned) that lacks some of them (of ``kinds``: ``v`` viewpoint, ``i`` illumination): a run stopped
    half-way, which would otherwise be scored, or pooled, on the sequences it finished without a word."""
    try:
        planned = json.loads((root / "manifest.json").read_text())["sequences"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # not a generated folder (the release itself has no manifest)
    if not isinstance(planned, dict):
        return
    missing = [name for name in planned if name[:1] in kinds and not (root / name).is_dir()]
    if missing:
        raise InputError(
            f"{root} is unfinished: {len(missing)} of the {len(planned)} sequences its manifest.json plans are "
            f"missing (e.g. {missing[0]}): a 'patchpose generate hpatches' was stopped; rerun it to finish"
        )


def load_hpatches(
    root: str | Path, drop_high_res: bool = False, names: list[str] | None = None
) -> list[Sequence]:
    """Sequences under ``root`` (the release folder itself, or a folder that holds
    ``hpatches-sequences-release/``), sorted by name.

    Args:
        drop_high_res: skip :data:`HIGH_RES_SEQUENCES` (D2-Net protocol).
        names: keep only these sequences (e.g. Key.Net's ``splits.json`` list); unknown names are an error.
    """
    root = Path(root)
    if (root / "hpatches-sequences-release").is_dir():
        root = root / "hpatches-sequences-release"
    if not root.is_dir():
        raise InputError(f"HPatches folder not found: {root}")
    folders = sorted(p for p in root.iterdir() if p.is_dir() and re.match(r"^[iv]_", p.name))
    _check_finished(root)
    if not folders:
        raise InputError(f"no HPatches sequences (folders named i_* or v_*) in {root}")
    if names is not None:
        have = {p.name for p in folders}
        missing = sorted(set(names) - have)
        if missing:
            raise InputError(f"sequences not found in {root}: {', '.join(missing[:5])}")
        folders = [p for p in folders if p.name in set(names)]
    if drop_high_res:
        folders = [p for p in folders if p.name not in HIGH_RES_SEQUENCES]
        if not folders:
            raise InputError(
                f"every sequence in {root} is one of the 8 high-resolution ones that the D2-Net protocol "
                "drops; nothing is left to evaluate"
            )
    return [_read_sequence(p) for p in folders]


# ----------------------------------------------------------------------------- generation
@dataclass
class HPatchesGenConfig(ViewpointConfig):
    """How ``generate hpatches`` makes its sequences: the viewpoint change of image k
    (:class:`~patchpose.data.warps.ViewpointConfig`, per step k − 1) and these."""

    max_side: int = 640  # image 1 is the photo resized so that its longer side is at most this
    targets: int = 5  # images 2 … targets + 1
    illumination: float = 1.0  # strength of the photometric changes (0 = none)
    seed: int = 0


#: ``patchpose generate hpatches --zoom``: viewpoint sequences where scale matters: image k zoomed by exactly
#: 2^±0.4·(k−1) (in or out; image 6 by 4× or 1/4), turned by up to ±3°·(k−1), corners moved by up to 1 %·(k−1)
ZOOM_SETTINGS = {"max_zoom_octaves": 0.4, "zoom_exact": True, "max_rotation_deg": 3.0, "perspective": 0.01}
#: ``patchpose generate hpatches --turn``: turned photos: image k turned by exactly ±30°·(k−1) (either way; image 6 by
#: 150°), no zoom, no perspective
TURN_SETTINGS = {"max_rotation_deg": 30.0, "turn_exact": True, "max_zoom_octaves": 0.0, "perspective": 0.0}
#: ``patchpose generate hpatches --tilt``: photos seen at a slant, where a keypoint's shape matters: image k squeezed
#: by exactly 2^0.25·(k−1) across a drawn direction (image 6 by 2.4×: a plane turned 65° away), turned by up to
#: ±3°·(k−1), no zoom, no perspective
TILT_SETTINGS = {"tilt_octaves": 0.25, "max_rotation_deg": 3.0, "max_zoom_octaves": 0.0, "perspective": 0.0}


def _sequence_rng(cfg: HPatchesGenConfig, name: str) -> np.random.Generator:
    h = int(hashlib.sha256(f"{cfg.seed}:{name}".encode()).hexdigest()[:16], 16)
    return np.random.default_rng(h)


def photometric_change(rng: np.random.Generator, img: np.ndarray, step: int, strength: float) -> np.ndarray:
    """Gain, gamma, colour cast, a smooth shading ramp and noise, stronger with ``step``."""
    t = strength * step / 5.0
    x = img.astype(np.float32) / 255.0
    h, w = x.shape[:2]
    gain = 2.0 ** rng.uniform(-1.2 * t, 0.6 * t)
    gamma = 2.0 ** rng.uniform(-0.8 * t, 0.8 * t)
    cast = 2.0 ** rng.uniform(-0.3 * t, 0.3 * t, size=3)
    d = rng.normal(size=2)
    d /= np.linalg.norm(d) + 1e-9
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    ramp = ((xx / max(w - 1, 1) - 0.5) * d[0] + (yy / max(h - 1, 1) - 0.5) * d[1]).astype(np.float32)
    shade = 2.0 ** (1.2 * t * ramp)
    y = np.clip(x, 0, 1) ** gamma * gain * cast[None, None, :] * shade[..., None]
    y = y + rng.normal(scale=0.01 * t, size=y.shape).astype(np.float32)
    return np.clip(y * 255.0 + 0.5, 0, 255).astype(np.uint8)


def _sequence_name(kind: str, photo: Path, taken: set) -> str:
    stem = re.sub(r"[^A-Za-z0-9]+", "", photo.stem).lower() or "photo"
    name, i = f"{kind}_{stem}", 2
    while name in taken:
        name, i = f"{kind}_{stem}{i}", i + 1
    taken.add(name)
    return name


def _write_sequence(out: Path, name: str, img1: np.ndarray, kind: str, cfg: HPatchesGenConfig) -> None:
    rng = _sequence_rng(cfg, name)
    tmp = out / f".tmp_{name}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    bgr = cv2.cvtColor(img1, cv2.COLOR_RGB2BGR)
    cv2.imwrite(str(tmp / "1.ppm"), bgr)
    for k in range(2, cfg.targets + 2):
        if kind == "v":
            H = random_viewpoint_homography(rng, img1.shape, k - 1, cfg)
            imk = warp_image(bgr, H)
        else:
            H = np.eye(3)
            imk = cv2.cvtColor(photometric_change(rng, img1, k - 1, cfg.illumination), cv2.COLOR_RGB2BGR)
        cv2.imwrite(str(tmp / f"{k}.ppm"), imk)
        write_homography(tmp / f"H_1_{k}", H)
    os.replace(tmp, out / name)


def _check_kinds(kinds: str) -> None:
    """``kinds``: viewpoint (``v``) and/or illumination (``i``) sequences, at least one."""
    if set(kinds) - {"v", "i"} or not kinds:
        raise InputError(f"kinds must be made of 'v' and 'i', got {kinds!r}")


def generate_hpatches(
    photos: list[Path],
    out: str | Path,
    cfg: HPatchesGenConfig | None = None,
    kinds: str = "vi",
    progress: bool = True,
) -> list[str]:
    """Write one viewpoint (``v``) and/or illumination (``i``) sequence per photo into ``out``, in the
    HPatches layout, plus ``out/manifest.json``. Finished sequences are kept (resume)."""
    tqdm = require("tqdm", "eval").tqdm

    cfg = cfg or HPatchesGenConfig()
    if not photos:
        raise InputError("no photos to make HPatches sequences from")
    _check_kinds(kinds)
    if cfg.targets < 1:
        raise InputError(f"targets must be at least 1, got {cfg.targets}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    taken: set = set()
    jobs = [(_sequence_name(kind, p, taken), kind, p) for p in sorted(photos, key=str) for kind in kinds]
    config = json.loads(json.dumps(cfg.__dict__))
    m = out / "manifest.json"
    old = json.loads(m.read_text()) if m.is_file() else {}
    if old.get("config") is not None:  # a manifest written before a setting existed had its default
        old["config"] = {**json.loads(json.dumps(HPatchesGenConfig().__dict__)), **old["config"]}
    sequences = {name: str(Path(p).resolve()) for name, _, p in jobs}
    check_resume_plan(
        out,
        "sequences",
        old.get("config") if old else None,
        config,
        {
            k: str(Path(v).resolve()) for k, v in old.get("sequences", {}).items()
        },  # a manifest may hold the paths as they were given: compared resolved
        sequences,
        lambda name: (out / name).is_dir(),
    )
    # the plan is written first, so that a run stopped half-way is resumed only with the same photos
    made = set(kinds) | set(old.get("kinds", ""))
    manifest = {
        "format": "hpatches-sequences-release",
        "config": config,
        "kinds": "".join(k for k in "vi" if k in made),
        "sequences": {**old.get("sequences", {}), **sequences},
    }
    write_text_atomic(out / "manifest.json", json.dumps(manifest, indent=1))
    for name, kind, p in tqdm(jobs, desc="sequences", disable=not progress):
        if (out / name).is_dir():
            continue
        img = load_photo(p, cfg.max_side)
        _write_sequence(out, name, img, kind, cfg)
    # an earlier plan's sequences that this run does not make and that were never made leave the plan: the folder
    # is finished (a stopped run's photo left out of the rerun would otherwise keep it "unfinished" for good)
    done = {k: v for k, v in manifest["sequences"].items() if (out / k).is_dir()}
    if done != manifest["sequences"]:
        write_text_atomic(out / "manifest.json", json.dumps({**manifest, "sequences": done}, indent=1))
    return [name for name, _, _ in jobs]


def pool_sequences(folders, out: str | Path, kinds: str = "vi") -> list[str]:
    """Link the sequences of several folders that :func:`generate_hpatches` wrote into ``out``, each as
    ``<sequence>_s<seed>`` with the seed of its folder's ``manifest.json``, so that one evaluation reads
    them all and ``eval hpatches --cluster-pattern '^(.*)_s[0-9]+$'`` draws the sequences of one photo
    together. ``kinds``: link viewpoint (``v``) and/or illumination (``i``) sequences. A link already there
    to the same sequence is kept (a rerun adds what is new); one to another sequence is an error."""
    _check_kinds(kinds)
    folders = [Path(f) for f in folders]
    plan: dict[str, Path] = {}
    for folder in folders:
        m = folder / "manifest.json"
        _check_finished(folder, kinds)  # a stopped run's sequences are not pooled as a finished set
        try:
            seed = int(json.loads(m.read_text())["config"]["seed"])
        except (OSError, ValueError, KeyError, TypeError):
            raise InputError(
                f"{folder}: no manifest.json with a seed (not written by 'generate hpatches')"
            ) from None
        for seq in sorted(
            p for p in folder.iterdir() if p.is_dir() and p.name[:2] in {f"{k}_" for k in kinds}
        ):
            name = f"{seq.name}_s{seed}"
            if name in plan:
                raise InputError(
                    f"{name} comes from both {plan[name].parent} and {folder}: one folder per seed"
                )
            plan[name] = seq.resolve()
    if not plan:
        raise InputError(f"no sequences of kinds {kinds!r} in {', '.join(map(str, folders))}")
    out = Path(out)
    there = {n for n in plan if (out / n).is_symlink() or (out / n).exists()}
    for name in sorted(there):  # every conflict before any link is made
        if (out / name).resolve() != plan[name]:
            raise InputError(f"{out / name} exists and is not a link to {plan[name]}")
    out.mkdir(parents=True, exist_ok=True)
    for name, target in plan.items():
        if name not in there:
            (out / name).symlink_to(target, target_is_directory=True)
    return sorted(plan)


__all__ = [
    "HIGH_RES_SEQUENCES",
    "Sequence",
    "load_hpatches",
    "HPatchesGenConfig",
    "generate_hpatches",
    "pool_sequences",
]
