"""PatchPose-A/B benchmark generation (paper, supplementary Section A) and its loader.

``patchpose generate patchpose --images DIR --out DIR`` writes one HDF5 shard per photo,
``DIR/shards/<split>/<photo's path below DIR, / as __>.h5`` (:func:`shard_name`), then
``DIR/manifest.json``. Every keypoint group holds:

========== ===================================================================================
series     samples (content transform of the photo about the keypoint: scale ``s``, CCW angle)
========== ===================================================================================
``ref``    the reference patch (s = 1, angle 0)
``A_scale`` 13 scales ``2^((i−6)/3)`` at angle 0 (PatchPose-A; identity included, as the official set)
``A_rot``  36 angles ``0, 10, …, 350°`` at s = 1
``B_scale`` s = 1 and 12 random scales log-uniform in [1/4, 4] at angle 0 (PatchPose-B)
``B_rot``  angle 0 and 35 random angles in [0°, 360°) at s = 1
``B_joint`` 12 random (scale, angle) changed together (the joint protocol)
========== ===================================================================================

Patches are cut *after* transforming: a sample with content transform ``(s, a)`` is the patch at frame
``(σ, θ) = (−log2 s, −a)`` (see :mod:`patchpose.conventions`), sampled through an anti-aliased pyramid, so
it equals cropping the rescaled and rotated photo. Each shard stores the photo itself (after resizing), the
keypoints, the per-sample ground truth and frames, and the patches as uint8 ``(N, W, PS, PS)`` gray windows
(``windows`` attribute); a method that needs other windows or colour re-renders them from the stored photo
and frames, exactly.

**Splits** are by photo (``splits.json`` in the photo folder, else a stable hash of the scene group), never
by patch. **Pruning** (the paper drops the 20 % least discriminative keypoints using ImageNet features,
which cannot be downloaded here) uses a fixed hand-crafted descriptor instead: the score of a keypoint is
the mean, over its A-series patches, of the standard deviation of kornia's ``SIFTDescriptor`` (a flat,
textureless patch has a flat descriptor). Keypoints below the ``prune_ratio`` quantile of their split are
listed as pruned in the manifest and skipped by the loader.

Generation is resumable: shards are written under a temporary name and renamed, finished shards are
skipped, and every photo draws from its own seed, so a run killed half-way and restarted produces the
same content as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from dataclasses import asdict, dataclass, field, fields
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from ... import checks
from ...data.keypoints import detect_harris, detect_sift
from ...data.patches import Pyramid, extract_patches, load_photo, to_gray
from ...data.photos import load_splits, photos_of
from ...errors import CLEANUP_TAG, InputError, is_int_in, require

log = logging.getLogger(__name__)

SERIES = ("ref", "A_scale", "A_rot", "B_scale", "B_rot", "B_joint")
FORMAT_VERSION = 2  # 2: shards named by the photo's path (shard_name), not its stem


@dataclass
class GenerateConfig:
    keypoints_per_image: int = 12  # half SIFT, half Harris (fewer if the photo has fewer)
    long_side: int = 1024  # photos larger than this are shrunk to it (0 = native)
    margin: float = 48.0  # keypoints at least this far from the border
    min_distance: float = 16.0  # between chosen keypoints of a photo
    patch_size: int = 32
    windows: list[float] = field(default_factory=lambda: [1.0, 2.0, 4.0])
    b_scales: int = 12
    b_angles: int = 35
    b_joint: int = 12
    prune_ratio: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        """:class:`InputError` naming a setting that cannot be used (it would otherwise surface as "no photo
        could be used")."""
        for name, lo in (
            ("keypoints_per_image", 1),
            ("patch_size", 8),
            ("b_scales", 0),
            ("b_angles", 0),
            ("b_joint", 0),
            ("seed", 0),
        ):
            if not is_int_in(getattr(self, name), lo):
                raise InputError(f"{name} must be an integer of at least {lo}, got {getattr(self, name)!r}")
        if not (is_int_in(self.long_side, 0) and (self.long_side == 0 or self.long_side >= 64)):
            raise InputError(f"long_side must be 0 (native size) or at least 64 px, got {self.long_side!r}")
        for name in ("margin", "min_distance"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0):
                raise InputError(f"{name} must be a number of pixels >= 0, got {v!r}")
        w = self.windows
        if not (len(w) and all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in w)):
            raise InputError(f"windows must be positive numbers, got {w!r}")
        if not (isinstance(self.prune_ratio, (int, float)) and 0.0 <= self.prune_ratio < 1.0):
            raise InputError(f"prune_ratio must be in [0, 1), got {self.prune_ratio!r}")

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


#: settings since removed (their code is at git tag :data:`~patchpose.errors.CLEANUP_TAG`), at the one value left: a
#: folder generated with that value is the same dataset, one generated with another is refused
REMOVED_SETTINGS = {"b_scale_dist": "log"}


def read_config(path: Path) -> dict:
    """A folder's ``generate_config.json`` as :class:`GenerateConfig`'s fields (a removed setting at the value left,
    :data:`REMOVED_SETTINGS`, dropped); anything else a one-line :class:`InputError` naming the file."""
    try:
        d = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path} is not a generation config (unreadable or invalid JSON: {e})") from None
    if not isinstance(d, dict):
        raise InputError(f"{path} is not a generation config (not a JSON object)")
    for name, left in REMOVED_SETTINGS.items():
        if name in d and d.pop(name) != left:
            raise InputError(
                f"{path.parent} was generated with a {name} this patchpose no longer has (git tag {CLEANUP_TAG} "
                "has it); choose another --out"
            )
    unknown = sorted(set(d) - {f.name for f in fields(GenerateConfig)})
    if unknown:
        raise InputError(f"{path} holds settings this patchpose does not know ({', '.join(unknown)})")
    return d


def _transforms(rng: np.random.Generator, cfg: GenerateConfig):
    """Per keypoint: (series id, content scale factor, content angle in degrees) for every sample."""
    rows = [(0, 1.0, 0.0)]
    rows += [(1, 2.0 ** ((i - 6) / 3.0), 0.0) for i in range(13)]
    rows += [(2, 1.0, 10.0 * j) for j in range(36)]
    bs = 2.0 ** rng.uniform(-2.0, 2.0, cfg.b_scales)
    rows += [(3, 1.0, 0.0)] + [(3, float(s), 0.0) for s in bs]
    rows += [(4, 1.0, 0.0)] + [(4, 1.0, float(a)) for a in rng.uniform(0.0, 360.0, cfg.b_angles)]
    js = 2.0 ** rng.uniform(-2.0, 2.0, cfg.b_joint)
    ja = rng.uniform(0.0, 360.0, cfg.b_joint)
    rows += [(5, float(s), float(a)) for s, a in zip(js, ja)]
    return rows


def _pick_keypoints(img: np.ndarray, rng: np.random.Generator, cfg: GenerateConfig) -> np.ndarray:
    sift, _ = detect_sift(img, 1024, cfg.margin)
    harris = detect_harris(img, 512, cfg.margin)
    half = cfg.keypoints_per_image // 2
    chosen: list[np.ndarray] = []
    for pool, want in ((sift, half), (harris, cfg.keypoints_per_image - half)):
        order = rng.permutation(len(pool))
        got = 0
        for i in order:
            if got >= want:
                break
            p = pool[i]
            if all(np.hypot(*(p - q)) >= cfg.min_distance for q in chosen):
                chosen.append(p)
                got += 1
    return np.array(chosen, dtype=np.float64).reshape(-1, 2)


def _prune_scores(patches_w1: np.ndarray) -> np.ndarray:
    """Std of kornia's SIFT descriptor per patch (window 1), a hand-crafted discriminativeness score."""
    kornia = require("kornia", "kornia")
    import torch

    desc = kornia.feature.SIFTDescriptor(patches_w1.shape[-1], rootsift=False)
    with torch.inference_mode():
        d = desc(torch.from_numpy(patches_w1.astype(np.float32) / 255.0))
    return d.std(dim=1).numpy()


def generate_shard(photo: Path, split: str, out_path: Path, cfg: GenerateConfig) -> dict:
    """Write the shard of one photo (atomically); returns its summary."""
    h5py = require("h5py", "eval")

    seed = int.from_bytes(hashlib.sha256(f"{cfg.seed}:{photo.name}".encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    img = load_photo(photo, cfg.long_side, name=photo.name)
    kps = _pick_keypoints(img, rng, cfg)
    if len(kps) == 0:
        raise InputError(f"{photo.name}: no keypoints found (a flat or tiny photo?)")
    gray = to_gray(img.astype(np.float32) / 255.0)
    pyr = Pyramid(gray)
    rows, kp_index = [], []
    for k in range(len(kps)):
        t = _transforms(rng, cfg)
        rows += t
        kp_index += [k] * len(t)
    rows_a = np.array(rows, dtype=np.float64).reshape(-1, 3)
    kp_index = np.array(kp_index, dtype=np.int32)
    series = rows_a[:, 0].astype(np.int8)
    scale_factor, angle_deg = rows_a[:, 1], rows_a[:, 2]
    frame_sigma = -np.log2(scale_factor)
    frame_theta = -np.radians(angle_deg)
    xy = kps[kp_index] if len(kps) else np.zeros((0, 2))
    patches = extract_patches(pyr, xy, frame_sigma, frame_theta, cfg.patch_size, cfg.windows)
    patches_u8 = np.clip(np.round(patches * 255.0), 0, 255).astype(np.uint8)
    if len(kps):
        s = _prune_scores(patches_u8[:, :1])
        a_mask = series <= 2
        prune_score = np.array([s[(kp_index == k) & a_mask].mean() for k in range(len(kps))])
    else:
        prune_score = np.zeros(0)
    tmp = out_path.with_name(out_path.name + ".tmp")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(tmp, "w") as f:
        f.attrs.update(
            {
                "photo": photo.name,
                "split": split,
                "config_digest": cfg.digest(),
                "format_version": FORMAT_VERSION,
                "windows": list(cfg.windows),
                "patch_size": cfg.patch_size,
                "series_names": list(SERIES),
            }
        )
        f.create_dataset("image", data=img, compression="gzip", compression_opts=4)
        f.create_dataset("keypoints", data=kps)
        f.create_dataset("prune_score", data=prune_score)
        for name, arr in (
            ("kp_index", kp_index),
            ("series", series),
            ("scale_factor", scale_factor),
            ("angle_deg", angle_deg),
            ("frame_sigma", frame_sigma),
            ("frame_theta", frame_theta),
        ):
            f.create_dataset(name, data=arr)
        f.create_dataset(
            "patches",
            data=patches_u8,
            compression="gzip",
            compression_opts=4,
            chunks=(min(len(patches_u8), 256) or 1, *patches_u8.shape[1:]),
        )
    os.replace(tmp, out_path)
    return {"photo": photo.name, "split": split, "keypoints": len(kps), "samples": len(series)}


def _worker(args):
    photo, split, out_path, cfg = args
    try:
        return generate_shard(photo, split, out_path, cfg)
    except InputError as e:
        return {"photo": photo.name, "split": split, "error": str(e)}


def shard_name(photo: Path, images: Path) -> str:
    """A photo's shard file: its path below the photo folder with ``/`` as ``__`` (``lxqt-themes/butterfly.png``
    → ``lxqt-themes__butterfly.png.h5``), so that photos of one stem (``butterfly.png``, ``butterfly.jpg``)
    or one name in two folders never share a shard."""
    try:
        rel = photo.relative_to(images)
    except ValueError:  # a photo listed outside the folder: its own path
        rel = Path(*[p for p in photo.parts if p not in (photo.anchor, "..")])
    return "__".join(rel.parts) + ".h5"


def _check_shard_layout(out: Path) -> None:
    """Refuse to resume into shards of an older layout (format 1 named them by the photo's stem alone, so
    a resumed run would write every photo again beside them)."""
    h5py = require("h5py", "eval")

    for shard in sorted((out / "shards").glob("*/*.h5"))[:1]:  # one folder holds one format
        with h5py.File(shard, "r") as f:
            version = int(f.attrs.get("format_version", 0))
        if version < FORMAT_VERSION:
            raise InputError(
                f"{out} was generated by an older patchpose (shard format {version}, now {FORMAT_VERSION}); "
                "choose another --out or delete it"
            )


def generate(
    images: str | Path,
    out: str | Path,
    cfg: GenerateConfig | None = None,
    splits=("train", "val", "test"),
    workers: int = 1,
    progress: bool = True,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
) -> dict:
    """Generate PatchPose-A/B shards for the photos of ``images`` into ``out`` and write the manifest.

    ``limit`` stops after that many new shards (used to test resuming). ``shard = (i, n)``: only the
    photos whose position in the sorted list of the requested splits is ``i`` modulo ``n`` (so ``n``
    machines or processes share the work); the manifest is then left to :func:`merge`, which needs every
    shard for the pruning threshold. Every photo draws from its own seed, so the shards of ``n`` parts
    equal those of one run.
    """
    tqdm = require("tqdm", "eval").tqdm

    checks.workers(workers, "workers")
    # no photos (a missing or empty folder, or none of these splits) is an error, before anything is written
    photos_of(images, allow_none=True)  # the folder exists
    all_splits = load_splits(images)
    if not any(all_splits.get(split) for split in splits):
        raise InputError(
            f"{images} holds no photos of the split(s) {', '.join(splits)} ('patchpose photos fetch --out "
            f"{images}' makes a photo pool)"
        )
    cfg = cfg or GenerateConfig()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg_path = out / "generate_config.json"
    if cfg_path.is_file():
        old = read_config(cfg_path)
        if old != json.loads(json.dumps(asdict(cfg))):  # as JSON: a tuple reads back as a list
            raise InputError(f"{out} holds a dataset generated with another config; choose another --out")
        _check_shard_layout(out)
    else:
        cfg_path.write_text(json.dumps(asdict(cfg), indent=1))
    if shard is not None and not (0 <= shard[0] < shard[1]):
        raise InputError(f"shard must be i/n with 0 <= i < n, got {shard[0]}/{shard[1]}")
    jobs = []
    todo = sorted(((split, Path(photo)) for split in splits for photo in all_splits.get(split, [])), key=str)
    for pos, (split, photo) in enumerate(todo):
        if shard is not None and pos % shard[1] != shard[0]:
            continue
        dst = out / "shards" / split / shard_name(photo, Path(images))
        if not dst.is_file():
            jobs.append((photo, split, dst, cfg))
    if limit is not None:
        jobs = jobs[:limit]
    t0 = time.time()
    results = []
    if jobs:
        if workers > 1:
            with get_context("spawn").Pool(workers) as pool:
                for r in tqdm(
                    pool.imap_unordered(_worker, jobs), total=len(jobs), disable=not progress, desc="generate"
                ):
                    results.append(r)
        else:
            for j in tqdm(jobs, disable=not progress, desc="generate"):
                results.append(_worker(j))
    for r in results:
        if "error" in r:
            log.warning("skipped %s: %s", r["photo"], r["error"])
    if results and all("error" in r for r in results) and not any((out / "shards").rglob("*.h5")):
        raise InputError(
            f"no photo could be used ({len(results)} tried), e.g. {results[0]['error']}; no shard written"
        )
    if shard is not None and shard[1] > 1:
        done = {"shard": list(shard), "splits": list(splits), "photos": len(results)}
        (out / f"part_{shard[0]}_of_{shard[1]}.json").write_text(json.dumps(done))
        return {"part": done, "seconds_this_run": time.time() - t0}
    manifest = write_manifest(out, cfg, splits)
    manifest["seconds_this_run"] = time.time() - t0
    return manifest


def merge(out: str | Path, parts, splits=("train", "val", "test")) -> dict:
    """Gather the shards of ``parts`` (folders written with ``shard=(i, n)``; ``out`` itself may be one of
    them) into ``out`` and write the manifest. Parts must share one generating config."""
    import shutil

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfgs = []
    for part in [Path(p) for p in parts]:
        cp = part / "generate_config.json"
        if not cp.is_file():
            raise InputError(f"{part} is not a PatchPose generation folder (no generate_config.json)")
        cfgs.append(read_config(cp))
        if cfgs[-1] != cfgs[0]:
            raise InputError(f"{part} was generated with another config than {parts[0]}")
        if part.resolve() == out.resolve():
            continue
        for src in sorted((part / "shards").glob("*/*.h5")):
            dst = out / "shards" / src.parent.name / src.name
            if dst.is_file():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_name(dst.name + ".tmp")
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
    if not cfgs:
        raise InputError("merge needs at least one part")
    (out / "generate_config.json").write_text(json.dumps(cfgs[0], indent=1))
    return write_manifest(out, GenerateConfig(**cfgs[0]), splits)


def write_manifest(out: Path, cfg: GenerateConfig, splits) -> dict:
    """Index the shards: counts per split, the pruning threshold and the kept/pruned keypoints."""
    h5py = require("h5py", "eval")

    doc = {"format_version": FORMAT_VERSION, "config": asdict(cfg), "splits": {}}
    # every split on disk, not only this run's: a run of one split must not drop the others from the index
    present = set(splits) | {p.name for p in (out / "shards").glob("*") if p.is_dir()}
    order = [s for s in ("train", "val", "test") if s in present] + sorted(present - {"train", "val", "test"})
    for split in order:
        shards = sorted((out / "shards" / split).glob("*.h5"))
        scores, names = [], []
        n_samples = 0
        for s in shards:
            with h5py.File(s, "r") as f:
                scores.append(f["prune_score"][()])
                names.append(s.name)
                n_samples += len(f["series"])
        allsc = np.concatenate(scores) if scores else np.zeros(0)
        thr = float(np.quantile(allsc, cfg.prune_ratio)) if len(allsc) and cfg.prune_ratio > 0 else -math.inf
        kept = {n: np.nonzero(sc >= thr)[0].tolist() for n, sc in zip(names, scores)}
        doc["splits"][split] = {
            "shards": names,
            "photos": len(shards),
            "keypoints": int(len(allsc)),
            "kept_keypoints": int(sum(len(v) for v in kept.values())),
            "samples": n_samples,
            "prune_threshold": thr if math.isfinite(thr) else None,
            "kept": kept,
        }
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, out / "manifest.json")
    return doc


#: the per-sample datasets of a shard (one row per sample), read by :meth:`PatchPoseData.load`
SAMPLE_KEYS = ("kp_index", "series", "scale_factor", "angle_deg", "frame_sigma", "frame_theta", "patches")


def _regenerate_hint(root: Path) -> str:
    return f"run 'patchpose generate patchpose --images PHOTOS --out {root}' again"


def read_manifest(root: str | Path) -> dict:
    """The manifest of a generated PatchPose folder, checked: a JSON object whose ``splits`` maps each
    split to an object with a ``shards`` list. Anything else raises :class:`InputError` naming the file and
    saying how to write it again."""
    root = Path(root)
    mf = root / "manifest.json"
    if not mf.is_file():
        raise InputError(f"no manifest.json in {root}: run 'patchpose generate patchpose' first")
    bad = f"{mf} is not a PatchPose manifest"
    try:
        doc = json.loads(mf.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{bad} (unreadable or invalid JSON: {e}); {_regenerate_hint(root)}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("splits"), dict):
        raise InputError(f"{bad} (no 'splits' object); {_regenerate_hint(root)}")
    for name, info in doc["splits"].items():
        shards = info.get("shards") if isinstance(info, dict) else None
        if not isinstance(shards, list) or not all(isinstance(n, str) for n in shards):
            raise InputError(f"{bad} (split {name!r} has no list of 'shards'); {_regenerate_hint(root)}")
    return doc


def read_shard(path: Path, root: Path) -> tuple[dict, np.ndarray, str, list[float]]:
    """One shard's ``keypoints`` and per-sample arrays (:data:`SAMPLE_KEYS`), its photo, the photo's name and
    the windows of its patches. A missing, truncated or incomplete shard raises :class:`InputError` naming
    the file and saying how to write it again (``root``: the dataset folder, for the message)."""
    h5py = require("h5py", "eval")

    fix = f"delete it and {_regenerate_hint(root)} (finished shards are kept)"
    if not path.is_file():
        raise InputError(
            f"shard {path} listed in {root / 'manifest.json'} is missing; {_regenerate_hint(root)}"
        )
    missing: list[str] = []
    try:
        with h5py.File(path, "r") as f:
            missing = [f"dataset {k!r}" for k in ("keypoints", *SAMPLE_KEYS, "image") if k not in f]
            missing += [f"attribute {a!r}" for a in ("photo", "windows") if a not in f.attrs]
            if not missing:
                d = {k: f[k][()] for k in ("keypoints", *SAMPLE_KEYS)}
                image = f["image"][()]
                photo = str(f.attrs["photo"])
                windows = [float(w) for w in np.atleast_1d(f.attrs["windows"])]
    except (OSError, KeyError, ValueError, TypeError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"cannot read shard {path} (truncated or not HDF5: {reason}); {fix}") from None
    if missing:
        raise InputError(f"shard {path} is incomplete (no {', '.join(missing)}); {fix}")
    n = len(d["series"]) if np.ndim(d["series"]) else -1
    if n < 0 or any(np.ndim(d[k]) == 0 or len(d[k]) != n for k in SAMPLE_KEYS):
        raise InputError(f"shard {path} is inconsistent (per-sample arrays of different lengths); {fix}")
    if d["keypoints"].ndim != 2 or d["keypoints"].shape[1] != 2:
        raise InputError(f"shard {path} is inconsistent (keypoints are not an (N, 2) array); {fix}")
    if n and (d["kp_index"].min() < 0 or d["kp_index"].max() >= len(d["keypoints"])):
        raise InputError(f"shard {path} is inconsistent (keypoint indices out of range); {fix}")
    return d, image, photo, windows


class PatchPoseData:
    """Reads a generated PatchPose split: stored patches, ground truth and the frames to re-render.

    A manifest or shard that cannot be used (invalid JSON, missing entries, a truncated or empty HDF5
    file, a missing dataset) raises :class:`InputError` naming the file and how to write it again."""

    def __init__(self, root: str | Path, split: str = "test") -> None:
        root = Path(root)
        self.root, self.split = root, split
        self.manifest = read_manifest(root)
        if split not in self.manifest["splits"]:
            raise InputError(
                f"split {split!r} was not generated in {root}; have {sorted(self.manifest['splits'])}"
            )
        self.info = self.manifest["splits"][split]
        kept = self.info.get("kept")
        missing = [n for n in self.info["shards"] if not isinstance(kept, dict) or n not in kept]
        if missing:
            raise InputError(
                f"{root / 'manifest.json'} does not list the kept keypoints of split {split!r} "
                f"(shard {missing[0]}); {_regenerate_hint(root)}"
            )

    def load(self) -> dict:
        """All samples of the split, concatenated (pruned keypoints removed):
        ``patches`` uint8 ``(N, W, PS, PS)``, ``photo`` and ``keypoint`` indices, ``series``,
        ``scale_factor``, ``angle_deg``, ``frame_sigma``, ``frame_theta``, ``xy``; plus ``images`` (one per
        photo) and ``windows``."""
        if getattr(self, "_cache", None) is not None:
            return self._cache
        cols: dict[str, list] = {}
        images, names, windows = [], [], None
        kp_offset = 0
        for pi, name in enumerate(self.info["shards"]):
            d, image, photo, windows = read_shard(self.root / "shards" / self.split / name, self.root)
            images.append(image)
            names.append(photo)
            keep = np.isin(d["kp_index"], self.info["kept"][name])
            d["xy"] = d["keypoints"][d["kp_index"]] if len(d["keypoints"]) else np.zeros((0, 2))
            d["photo"] = np.full(len(d["series"]), pi)
            d["keypoint"] = d["kp_index"] + kp_offset
            kp_offset += len(d["keypoints"])
            for k in (
                "patches",
                "xy",
                "photo",
                "keypoint",
                "series",
                "scale_factor",
                "angle_deg",
                "frame_sigma",
                "frame_theta",
            ):
                cols.setdefault(k, []).append(d[k][keep])
        if not cols:
            raise InputError(f"split {self.split!r} of {self.root} has no samples")
        self._cache = {k: np.concatenate(v) for k, v in cols.items()}
        self._cache.update(images=images, photo_names=names, windows=windows)
        return self._cache

    def pairs(self, series: str) -> dict:
        """Every (reference, sample) pair of one series: sample indices ``ref`` and ``trg`` into
        :meth:`load`'s arrays, the content transform (``scale_factor``, ``angle_deg``) and the continuous
        ground truth ``d_scale = log2 s`` and ``d_ori = radians(angle)``."""
        if series not in SERIES[1:]:
            raise InputError(f"unknown series {series!r}; one of {SERIES[1:]}")
        d = self.load()
        ref_of = {int(k): int(i) for i in np.nonzero(d["series"] == 0)[0] for k in [d["keypoint"][i]]}
        trg = np.nonzero(d["series"] == SERIES.index(series))[0]
        ref = np.array([ref_of[int(k)] for k in d["keypoint"][trg]], dtype=np.int64)
        return {
            "ref": ref,
            "trg": trg,
            "scale_factor": d["scale_factor"][trg],
            "angle_deg": d["angle_deg"][trg],
            "d_scale": np.log2(d["scale_factor"][trg]),
            "d_ori": np.radians(d["angle_deg"][trg]) % (2 * np.pi),
        }
