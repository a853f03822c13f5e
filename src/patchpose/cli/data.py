"""``patchpose photos ...`` and ``patchpose generate ...``: the photo pool, and the benchmark datasets made
from it (PatchPose patches, HPatches-layout sequences, posed image pairs, rendered scenes)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SPLITS = ("train", "val", "test")


def photos_fetch_command(a: argparse.Namespace) -> int:
    from ..data.photos import fetch_photos

    splits = fetch_photos(a.out, debian=not a.no_debian, extra=a.extra, extra_only=a.extra_only)
    print(json.dumps({k: len(v) for k, v in splits.items()}))
    return 0


def photos_graffiti_command(a: argparse.Namespace) -> int:
    from ..data.photos import fetch_graffiti, write_graffiti

    seq = write_graffiti(a.source, a.out) if a.source else fetch_graffiti(a.out)
    print(f"wrote {seq} (HPatches layout: 1.ppm, 2.ppm, H_1_2)")
    return 0


def _shard(text: str | None) -> tuple[int, int] | None:
    """``--shard i/n`` as ``(i, n)`` (checked as ``extract --shard`` is:
    :func:`~patchpose.integrations.extract.parse_shard`); None without one."""
    from ..integrations.extract import parse_shard

    return parse_shard(text) if text else None


def generate_patchpose_command(a: argparse.Namespace) -> int:
    from ..checks import workers
    from ..evaluation.datasets.patchpose_dataset import GenerateConfig, generate

    workers(a.workers, "--workers")
    cfg = GenerateConfig(
        keypoints_per_image=a.keypoints_per_image,
        long_side=a.long_side,
        seed=a.seed,
    )
    splits = tuple(a.split) if a.split else SPLITS
    m = generate(
        a.images,
        a.out,
        cfg,
        splits=splits,
        workers=a.workers,
        progress=not a.no_progress,
        shard=_shard(a.shard),
    )
    if "part" in m:
        print(f"wrote part {a.shard} to {a.out}; then run 'patchpose generate merge --out DIR PART...'")
        return 0
    for split, info in m["splits"].items():
        print(
            f"{split}: {info['photos']} photos, {info['keypoints']} keypoints ({info['kept_keypoints']} kept after "
            f"pruning), {info['samples']} patches"
        )
    print(f"wrote {a.out}/manifest.json")
    return 0


def generate_merge_command(a: argparse.Namespace) -> int:
    from ..evaluation.datasets.patchpose_dataset import merge

    m = merge(a.out, a.parts, tuple(a.split) if a.split else SPLITS)
    for split, info in m["splits"].items():
        print(f"{split}: {info['photos']} photos, {info['samples']} patches")
    print(f"wrote {a.out}/manifest.json")
    return 0


def generate_hpatches_command(a: argparse.Namespace) -> int:
    from ..data.photos import photos_of
    from ..errors import InputError
    from ..evaluation.datasets.hpatches import (
        TILT_SETTINGS,
        TURN_SETTINGS,
        ZOOM_SETTINGS,
        HPatchesGenConfig,
        generate_hpatches,
    )

    photos = photos_of(a.images, a.split if a.split != "all" else None)
    preset = "--zoom" if a.zoom else "--turn" if a.turn else "--tilt" if a.tilt else None
    kinds = a.kinds or ("v" if preset else "vi")
    if preset and kinds != "v":
        raise InputError(f"{preset} makes viewpoint sequences only (--kinds v), got --kinds {kinds}")
    settings = ZOOM_SETTINGS if a.zoom else TURN_SETTINGS if a.turn else TILT_SETTINGS if a.tilt else {}
    if a.turn_step is not None:
        if not a.turn:
            raise InputError("--turn-step is the step of --turn's turns: give --turn too")
        step = a.turn_step
        if not 0.0 < step <= 180.0:  # NaN fails too
            raise InputError(f"--turn-step must be in (0, 180] degrees, got {a.turn_step}")
        if step * a.targets > 180.0:  # past 180° a turn is a smaller one the other way (360°: none)
            raise InputError(
                f"--turn-step {step:g} with --targets {a.targets} turns the last image by {step * a.targets:g}°: "
                "keep --turn-step × --targets within 180"
            )
        settings = {**settings, "max_rotation_deg": step}
    cfg = HPatchesGenConfig(max_side=a.max_side, targets=a.targets, seed=a.seed, **settings)
    names = generate_hpatches(photos, a.out, cfg, kinds=kinds, progress=not a.no_progress)
    print(f"wrote {len(names)} sequences and manifest.json to {a.out}")
    return 0


def generate_pool_command(a: argparse.Namespace) -> int:
    from ..evaluation.datasets.hpatches import pool_sequences

    names = pool_sequences(a.folders, a.out, kinds=a.kinds)
    print(f"linked {len(names)} sequences into {a.out} as <sequence>_s<seed>")
    return 0


def generate_posed_command(a: argparse.Namespace) -> int:
    from ..data.photos import photos_of
    from ..evaluation.datasets.posed_pairs import ZOOM_SETTINGS, generate_posed_pairs

    photos = photos_of(a.images, a.split or None)
    path = generate_posed_pairs(
        photos,
        a.out,
        per_photo=a.per_photo,
        stereo_pairs=a.stereo_pairs,
        max_side=a.max_side,
        seed=a.seed,
        progress=not a.no_progress,
        **(ZOOM_SETTINGS if a.zoom else {}),
    )
    print(f"wrote {path} and {Path(a.out) / 'images'}")
    return 0


def generate_scenes_command(a: argparse.Namespace) -> int:
    from ..data.photos import photos_of
    from ..evaluation.datasets.scenes import generate_scenes

    photos = photos_of(a.images, a.split or None)
    folders = generate_scenes(photos, a.out, progress=not a.no_progress)  # 4 walks and 4 orbits of 12 frames
    print(
        f"wrote {len(folders)} scenes to {a.out} (each: frames and cameras.json; 'patchpose eval colmap SCENE')"
    )
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``photos {fetch, graffiti}`` and ``generate {patchpose, merge, hpatches, hpatches-pool,
    posed-pairs, scenes}`` on the top-level subparsers."""
    ph = sub.add_parser("photos", help="photo pool for training and evaluation")
    phs = ph.add_subparsers(dest="photos_cmd", required=True)
    f = phs.add_parser("fetch", help="copy the photo pool (wheels + Debian packages) into a folder")
    f.add_argument("--out", default="data/photos")
    f.add_argument("--no-debian", action="store_true", help="only the photos inside installed wheels")
    f.add_argument(
        "--extra",
        action="store_true",
        help="also 28 photos from plasma-workspace-wallpapers and lomiri-wallpapers-16.04/-20.04, outside the "
        "default pool: more photos to train on (docs/training.md, 'Photos')",
    )
    f.add_argument(
        "--extra-only",
        action="store_true",
        help="only those 28 photos (same split rule), which the bundled models never saw: 'generate hpatches "
        "--split all' makes held-out test sequences of them (docs/results.md, 'Held-out photos')",
    )
    f.set_defaults(func=photos_fetch_command)
    gr = phs.add_parser(
        "graffiti", help="opencv-doc's Oxford graffiti pair and its homography, as an HPatches sequence"
    )
    gr.add_argument("--out", default="data/graffiti", help="folder that receives v_graffiti/")
    gr.add_argument(
        "--source", default=None, help="folder holding graf1.png, graf3.png, H1to3p.xml (default: download)"
    )
    gr.set_defaults(func=photos_graffiti_command)

    g = sub.add_parser("generate", help="generate benchmark datasets")
    gs = g.add_subparsers(dest="generate_cmd", required=True)
    gp = gs.add_parser("patchpose", help="PatchPose-A/B patches from a photo folder (HDF5 shards + manifest)")
    gp.add_argument(
        "--images", default="data/photos", help="photo folder (splits.json inside, else split by image)"
    )
    gp.add_argument("--out", required=True)
    gp.add_argument("--split", action="append", choices=SPLITS, help="only these splits (repeatable)")
    gp.add_argument("--keypoints-per-image", type=int, default=12)
    gp.add_argument(
        "--long-side",
        type=int,
        default=1024,
        help="photos larger than this are shrunk to it (0: native size)",
    )
    gp.add_argument("--seed", type=int, default=0)
    gp.add_argument("--workers", type=int, default=2, help="processes")
    gp.add_argument("--shard", default=None, help="i/n: this process makes every n-th photo from the i-th")
    gp.add_argument("--no-progress", action="store_true")
    gp.set_defaults(func=generate_patchpose_command)
    gm = gs.add_parser(
        "merge", help="gather the parts of a sharded 'generate patchpose' and write the manifest"
    )
    gm.add_argument("--out", required=True)
    gm.add_argument("parts", nargs="+", help="folders written with --shard (OUT itself may be one)")
    gm.add_argument("--split", action="append", choices=SPLITS, help="only these splits (repeatable)")
    gm.set_defaults(func=generate_merge_command)
    gh = gs.add_parser(
        "hpatches", help="HPatches-layout viewpoint/illumination sequences from a photo folder"
    )
    gh.add_argument("--images", default="data/photos", help="photo folder")
    gh.add_argument(
        "--split",
        choices=(*SPLITS, "all"),
        default="test",
        help="photos of this split, or all the folder's photos",
    )
    gh.add_argument("--out", required=True)
    gh.add_argument(
        "--kinds", help="'v' viewpoint, 'i' illumination, or both (default; with --zoom, --turn or --tilt: v)"
    )
    gh.add_argument("--targets", type=int, default=5, help="images per sequence besides image 1")
    gh.add_argument("--max-side", type=int, default=640)
    gh.add_argument("--seed", type=int, default=0)
    geometry = gh.add_mutually_exclusive_group()
    geometry.add_argument(
        "--turn",
        action="store_true",
        help="viewpoint sequences of turned photos: image k turned by exactly ±30°·(k−1) (image 6 by 150°; "
        "--turn-step), no zoom, no perspective (with --kinds v)",
    )
    geometry.add_argument(
        "--zoom",
        action="store_true",
        help="viewpoint sequences where scale matters: image k zoomed by exactly 2^±0.4·(k−1) (image 6 by 4× "
        "or 1/4), turned by up to ±3°·(k−1), little perspective (with --kinds v)",
    )
    geometry.add_argument(
        "--tilt",
        action="store_true",
        help="viewpoint sequences seen at a slant, where a keypoint's shape matters: image k squeezed by "
        "exactly 2^0.25·(k−1) across a drawn direction (image 6 by 2.4×), turned by up to ±3°·(k−1), no zoom "
        "(with --kinds v)",
    )
    gh.add_argument(
        "--turn-step",
        type=float,
        metavar="DEG",
        help="with --turn: image k turned by exactly ±DEG·(k−1) instead of ±30° (e.g. 15 with --targets 12: "
        "every 15° up to 180°, as docs/results.md's turned pairs)",
    )
    gh.add_argument("--no-progress", action="store_true")
    gh.set_defaults(func=generate_hpatches_command)
    gl = gs.add_parser(
        "hpatches-pool",
        help="link the sequences of several 'generate hpatches' folders (one per seed) into one, as "
        "<sequence>_s<seed>, for one evaluation with --cluster-pattern '^(.*)_s[0-9]+$'",
    )
    gl.add_argument("--out", required=True)
    gl.add_argument("folders", nargs="+", help="folders written by 'generate hpatches'")
    gl.add_argument("--kinds", default="vi", help="'v' viewpoint, 'i' illumination, or both (default)")
    gl.set_defaults(func=generate_pool_command)
    gq = gs.add_parser(
        "posed-pairs",
        help="image pairs with known relative pose (camera rotations, rotated motorcycle stereo)",
    )
    gq.add_argument("--images", default="data/photos", help="photo folder")
    gq.add_argument("--split", choices=SPLITS, default="test", help="photos of this split")
    gq.add_argument("--out", required=True, help="receives images/, pairs.txt, manifest.json")
    gq.add_argument("--per-photo", type=int, default=1, help="camera-rotation pairs per photo")
    gq.add_argument("--stereo-pairs", type=int, default=24, help="rotated motorcycle stereo pairs")
    gq.add_argument("--max-side", type=int, default=640)
    gq.add_argument(
        "--zoom",
        action="store_true",
        help="camera 1 also zooms, in or out by 1.7x to 2.8x (pan and tilt within 5 degrees)",
    )
    gq.add_argument("--seed", type=int, default=0)
    gq.add_argument("--no-progress", action="store_true")
    gq.set_defaults(func=generate_posed_command)
    gc = gs.add_parser(
        "scenes",
        help="multi-view scenes rendered from photos (a textured room, a walk or photos around it) with known "
        "cameras, for 'patchpose eval colmap'",
    )
    gc.add_argument("--images", default="data/photos", help="photo folder")
    gc.add_argument("--split", choices=SPLITS, default="test", help="photos of this split")
    gc.add_argument("--out", required=True, help="receives one folder per scene and manifest.json")
    gc.add_argument("--no-progress", action="store_true")
    gc.set_defaults(func=generate_scenes_command)
