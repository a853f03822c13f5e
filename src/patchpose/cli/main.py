"""``patchpose`` command line: thin wrappers around the library's stage functions.

Errors from bad input (:class:`~patchpose.errors.PatchPoseError`, missing files) print one clear line
and exit with status 2; an interrupted command exits with 130.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

log = logging.getLogger("patchpose")


def _cmd_train(a: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..training.config import load_config
    from ..training.trainer import train

    if a.recipe:
        from ..training.recipe import train_recipe

        if a.config is not None:
            raise InputError("give --recipe or --config, not both (a recipe names its stages' configs)")
        res = train_recipe(a.recipe, a.out, a.overrides, resume=a.resume, progress=not a.no_progress)
        print(json.dumps(res))
        if not res["finished"]:
            print(
                f"stopped before the end: continue with 'patchpose train --recipe {a.recipe} --out {a.out} --resume'"
            )
        return 0
    cfg = load_config(a.config or "v1", a.overrides)
    res = train(cfg, a.out, resume=a.resume, progress=not a.no_progress)
    # one line per rank under torchrun, written whole in one call (a pipe keeps writes under 4 KiB apart),
    # so that the ranks' lines never interleave
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()
    return 0


def _cmd_export(a: argparse.Namespace) -> int:
    if a.checkpoint == "onnx":
        from ..estimator import PatchPoseEstimator
        from ..onnx_backend import export_onnx

        est = PatchPoseEstimator.load(a.weights)
        meta = dict(est.meta)  # what the weights carry, unless the command line says otherwise
        if a.name is not None:
            meta["name"] = a.name
        if a.notes is not None:
            meta["notes"] = a.notes
        meta.update(est.plan.replace(**_read_plan(a)).to_meta())
        path = export_onnx(est.model, a.out, meta=meta)
        print(f"wrote {path}")
        return 0
    from ..errors import InputError
    from ..weights import export_checkpoint

    if a.weights is not None:
        raise InputError("--weights is for 'export onnx'; a checkpoint is exported from its own weights")
    changes = _read_plan(a)
    path = export_checkpoint(
        a.checkpoint,
        a.out,
        name="custom" if a.name is None else a.name,
        notes="" if a.notes is None else a.notes,
        passes=changes.get("passes"),
        descriptor_region=changes.get("descriptor_region"),
        orientation_offset=changes.get("orientation_offset"),
    )
    print(f"wrote {path}")
    return 0


def _cmd_photos(a: argparse.Namespace) -> int:
    from ..data.photos import fetch_photos

    splits = fetch_photos(a.out, debian=not a.no_debian, extra=a.extra, extra_only=a.extra_only)
    print(json.dumps({k: len(v) for k, v in splits.items()}))
    return 0


def _cmd_estimate(a: argparse.Namespace) -> int:
    from ..apps import estimate_command

    return estimate_command(a)


def _cmd_eval(a: argparse.Namespace) -> int:
    from ..apps import eval_synthetic_command

    return eval_synthetic_command(a)


def _cmd_bench(a: argparse.Namespace) -> int:
    from ..evaluation.bench import bench

    res = bench(a.weights, a.keypoints, repeats=a.repeats, out=a.out)
    w = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k:<{w}}  {v:.4f}" if isinstance(v, float) else f"{k:<{w}}  {v}")
    print(f"wrote {a.out}/bench.json")
    return 0


def _cmd_generate_patchpose(a: argparse.Namespace) -> int:
    from ..data.patchpose_dataset import GenerateConfig, generate

    cfg = GenerateConfig(
        keypoints_per_image=a.keypoints_per_image,
        long_side=a.long_side,
        seed=a.seed,
        b_scale_dist=a.b_scale_dist,
    )
    splits = tuple(a.split) if a.split else ("train", "val", "test")
    shard = None
    if a.shard:
        try:
            i, n = (int(v) for v in a.shard.split("/"))
        except ValueError:
            raise ValueError(f"--shard must look like i/n (e.g. 0/4), got {a.shard!r}") from None
        shard = (i, n)
    m = generate(
        a.images, a.out, cfg, splits=splits, workers=a.workers, progress=not a.no_progress, shard=shard
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


def _cmd_generate_merge(a: argparse.Namespace) -> int:
    from ..data.patchpose_dataset import merge

    splits = tuple(a.split) if a.split else ("train", "val", "test")
    m = merge(a.out, a.parts, splits)
    for split, info in m["splits"].items():
        print(f"{split}: {info['photos']} photos, {info['samples']} patches")
    print(f"wrote {a.out}/manifest.json")
    return 0


def _cmd_eval_patchpose(a: argparse.Namespace) -> int:
    from ..evaluation.patchpose_eval import evaluate

    doc = evaluate(
        a.data,
        a.out,
        a.weights,
        a.split,
        a.orinet_weights,
        progress=not a.no_progress,
        include_pruned=a.include_pruned,
        read_plan=_read_plan(a),
        bootstrap=a.bootstrap,
    )
    print(Path(a.out, "results.md").read_text())
    print(f"wrote {a.out}/results.json, results.md and figures in {doc['seconds']:.0f} s")
    return 0


def _cmd_eval_bins(a: argparse.Namespace) -> int:
    from ..evaluation.bins_ablation import run

    run(a.data, a.out, a.minutes, a.config, overrides=a.overrides, split=a.split, progress=not a.no_progress)
    print(Path(a.out, "results.md").read_text())
    return 0


def _cmd_eval_official(a: argparse.Namespace) -> int:
    from ..data.official_patchpose import evaluate_official_layout

    res = evaluate_official_layout(a.root, a.weights, list_name=a.list, k=a.top_k)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(res, indent=1))
    tmp.replace(out / "results.json")
    print(json.dumps(res, indent=1))
    return 0


def _cmd_graffiti(a: argparse.Namespace) -> int:
    from ..data.photos import fetch_graffiti, write_graffiti

    seq = write_graffiti(a.source, a.out) if a.source else fetch_graffiti(a.out)
    print(f"wrote {seq} (HPatches layout: 1.ppm, 2.ppm, H_1_2)")
    return 0


def _cmd_generate_hpatches(a: argparse.Namespace) -> int:
    from ..data.hpatches import HPatchesGenConfig, generate_hpatches
    from ..data.photos import list_images, load_splits

    folder = Path(a.images)
    photos = load_splits(folder)[a.split] if a.split != "all" else list_images(folder)
    cfg = HPatchesGenConfig(max_side=a.max_side, targets=a.targets, seed=a.seed)
    names = generate_hpatches(photos, a.out, cfg, kinds=a.kinds, progress=not a.no_progress)
    print(f"wrote {len(names)} sequences and manifest.json to {a.out}")
    return 0


def _cmd_generate_pool(a: argparse.Namespace) -> int:
    from ..data.hpatches import pool_sequences

    names = pool_sequences(a.folders, a.out, kinds=a.kinds)
    print(f"linked {len(names)} sequences into {a.out} as <sequence>_s<seed>")
    return 0


def _cmd_eval_hpatches(a: argparse.Namespace) -> int:
    from ..evaluation.hpatches_eval import evaluate_hpatches

    doc = evaluate_hpatches(
        a.root,
        a.out,
        a.weights,
        protocol=a.protocol,
        descriptor=a.descriptor,
        descriptor_weights=a.descriptor_weights,
        top_k=a.top_k,
        max_keypoints=a.max_keypoints,
        names=a.sequences.split(",") if a.sequences else None,
        pose=not a.no_pose,
        progress=not a.no_progress,
        read_plan=_read_plan(a),
        detector=a.detector,
        keypoints_dir=a.keypoints,
        bootstrap=a.bootstrap,
        cluster_pattern=a.cluster_pattern,
    )
    print(Path(a.out, "results.md").read_text())
    print(f"wrote {a.out}/results.json, results.md, mma.png in {doc['seconds']:.0f} s")
    return 0


def _cmd_generate_posed(a: argparse.Namespace) -> int:
    from ..data.photos import list_images, load_splits
    from ..data.posed_pairs import generate_posed_pairs

    folder = Path(a.images)
    photos = load_splits(folder)[a.split] if a.split else list_images(folder)
    path = generate_posed_pairs(
        photos,
        a.out,
        per_photo=a.per_photo,
        stereo_pairs=a.stereo_pairs,
        max_side=a.max_side,
        seed=a.seed,
        progress=not a.no_progress,
    )
    print(f"wrote {path} and {Path(a.out) / 'images'}")
    return 0


def _cmd_eval_pose(a: argparse.Namespace) -> int:
    from ..evaluation.pose_eval import evaluate_pose

    doc = evaluate_pose(
        a.pairs,
        a.images,
        a.out,
        a.weights,
        budgets=tuple(a.keypoints),
        ablation=not a.no_ablation,
        estimator=a.estimator,
        progress=not a.no_progress,
        read_plan=_read_plan(a),
    )
    print(Path(a.out, "results.md").read_text())
    print(f"wrote {a.out}/results.json and results.md in {doc['seconds']:.0f} s")
    return 0


def _cmd_eval_rotation(a: argparse.Namespace) -> int:
    from ..data.photos import list_images, load_splits, wheel_photo_paths
    from ..errors import InputError
    from ..evaluation.rotation_eval import evaluate_rotation, rotation_angles

    if a.split and not a.images:
        raise InputError("--split picks a split of --images: give --images DIR (e.g. data/photos) too")
    photos = (
        (load_splits(a.images)[a.split] if a.split else list_images(a.images))
        if a.images
        else wheel_photo_paths()
    )
    doc = evaluate_rotation(
        photos,
        a.out,
        a.weights,
        angles=rotation_angles(a.step, a.start),
        progress=not a.no_progress,
        read_plan=_read_plan(a),
        bootstrap=a.bootstrap,
    )
    print(Path(a.out, "results.md").read_text())
    print(f"wrote {a.out}/results.json and results.md in {doc['seconds']:.0f} s")
    return 0


def _cmd_match(a: argparse.Namespace) -> int:
    from ..apps import match_command

    return match_command(a)


def _add_descriptor(p: argparse.ArgumentParser) -> None:
    p.add_argument("--descriptor", choices=("sift", "hardnet", "sosnet"), default="sift")
    p.add_argument("--descriptor-weights", default=None, help="local state dict for hardnet/sosnet")


def _add_weights(p: argparse.ArgumentParser, read: bool = True) -> None:
    p.add_argument(
        "--weights",
        default=None,
        help="safetensors file or bundled model name, e.g. patchpose-v1 (default: the default bundled model)",
    )
    if read:
        _add_read(p)


def _add_read(p: argparse.ArgumentParser, help: str | None = None) -> None:
    p.add_argument(
        "--read",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=help
        or "change how the model is read (its read plan, stored in the weights file; repeatable): passes=N "
        "(reads per keypoint), orientation_offset=OCTAVES, descriptor_region=RADII; docs/usage.md, 'Read plan'",
    )


def _read_plan(a: argparse.Namespace) -> dict:
    """The ``--read KEY=VALUE`` changes as :meth:`ReadPlan.replace` takes them, names checked."""
    from ..reading import ReadPlan

    return ReadPlan.parse(a.read)  # unknown names and bad values fail here, before any work


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="patchpose", description="Keypoint scale and orientation, learned without labels."
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a pose network on self-supervised pairs")
    t.add_argument(
        "--config", default=None, help="YAML file or preset name (patchpose/configs/*.yaml; default v1)"
    )
    t.add_argument(
        "--recipe",
        default=None,
        help="several stages in one command, e.g. patchpose-v9, the default model (patchpose/configs/recipes/*.yaml): "
        "OUT/stage1, OUT/stage2, ..., then OUT/NAME.safetensors",
    )
    t.add_argument("--out", required=True, help="output folder (checkpoints, config.yaml, metrics.jsonl)")
    t.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    t.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    t.add_argument("overrides", nargs="*", help="key=value overrides, e.g. optim.lr=1e-3 model.windows=[1,2]")
    t.set_defaults(func=_cmd_train)

    e = sub.add_parser(
        "export",
        help="a training checkpoint → safetensors weights; or 'export onnx --weights W --out model.onnx'",
    )
    e.add_argument("checkpoint", help="checkpoint.pt to export, or the word 'onnx' (then see --weights)")
    _add_weights(e, read=False)
    e.add_argument("--out", required=True)
    carried = "for 'export onnx', what --weights carries; for a checkpoint, not stored"
    e.add_argument(
        "--name", default=None, help=f"the model's name in the file (default: {carried}, i.e. 'custom')"
    )
    e.add_argument("--notes", default=None, help=f"free text stored in the file (default: {carried})")
    _add_read(
        e,
        help="the read plan stored in the file (KEY=VALUE, repeatable: passes, orientation_offset, "
        f"descriptor_region; default: {carried}, i.e. one read, no offset, a window of one radius)",
    )
    e.set_defaults(func=_cmd_export)

    ph = sub.add_parser("photos", help="photo pool for training and evaluation")
    phs = ph.add_subparsers(dest="photos_cmd", required=True)
    f = phs.add_parser("fetch", help="copy the photo pool (wheels + Debian packages) into a folder")
    f.add_argument("--out", default="data/photos")
    f.add_argument("--no-debian", action="store_true", help="only the photos inside installed wheels")
    f.add_argument(
        "--extra",
        action="store_true",
        help="also 28 photos from plasma-workspace-wallpapers and lomiri-wallpapers-16.04/-20.04 (not in the "
        "default pool; the bundled models never saw them: docs/model_card.md, 'More training photos')",
    )
    f.add_argument(
        "--extra-only",
        action="store_true",
        help="only those 28 photos (same splits; 'generate hpatches --split all' makes held-out sequences of "
        "them: docs/results.md, 'Twenty-eight photos no model has seen')",
    )
    f.set_defaults(func=_cmd_photos)
    gr = phs.add_parser(
        "graffiti", help="opencv-doc's Oxford graffiti pair and its homography, as an HPatches sequence"
    )
    gr.add_argument("--out", default="data/graffiti", help="folder that receives v_graffiti/")
    gr.add_argument(
        "--source", default=None, help="folder holding graf1.png, graf3.png, H1to3p.xml (default: download)"
    )
    gr.set_defaults(func=_cmd_graffiti)

    mt = sub.add_parser("match", help="match two images with pose-normalised patches; picture + matches file")
    mt.add_argument("image1")
    mt.add_argument("image2")
    mt.add_argument("--out", default=None, help="output folder (default: ./patchpose_match)")
    mt.add_argument(
        "--pose",
        choices=(
            "ours",
            "ours-topk",
            "ours-angle",
            "sift",
            "sift-resolved",
            "dominant-gradient",
            "log-dominant-gradient",
            "none",
        ),
        default="ours",
        help="sift-resolved: SIFT's pose, where SIFT found several orientations the one nearest ours; "
        "ours-angle: our orientation on the upright 16 px patch; dominant-gradient, log-dominant-gradient: "
        "hand-crafted poses (docs/results.md)",
    )
    mt.add_argument("--top-k", type=int, default=4, help="candidates per keypoint for --pose ours-topk")
    mt.add_argument("--homography", default=None, help="3×3 text file H (image 1 → 2): colours the matches")
    mt.add_argument("--threshold", type=float, default=3.0, help="px: a match is correct within this")
    mt.add_argument("--max-keypoints", type=int, default=2000)
    mt.add_argument("--detector", choices=("sift", "harris"), default="sift", help="without --keypoints1/2")
    mt.add_argument(
        "--keypoints1", default=None, help="keypoints of image 1 (.npy or x,y text); default SIFT"
    )
    mt.add_argument("--keypoints2", default=None)
    _add_descriptor(mt)
    _add_weights(mt)
    mt.set_defaults(func=_cmd_match)

    for name, helptext in (
        ("estimate", "detect keypoints in an image and estimate their scale and orientation"),
        ("demo", "run the bundled model on a photo that ships with the dependencies"),
    ):
        s = sub.add_parser(name, help=helptext)
        if name == "estimate":
            s.add_argument("image", help="image file")
            s.add_argument(
                "--keypoints", help="keypoints file (.npy (N,2) or .csv/.txt with x,y columns); default: SIFT"
            )
        else:
            s.add_argument("--image", help="another image instead of the bundled photo")
        s.add_argument("--out", default=None, help="output folder (default: ./patchpose_out)")
        _add_weights(s)
        s.add_argument("--max-keypoints", type=int, default=300)
        s.add_argument("--top-k", type=int, default=1)
        s.add_argument("--format", choices=("json", "csv"), default="json")
        s.set_defaults(func=_cmd_estimate)

    b = sub.add_parser("bench", help="speed: our poses for N keypoints vs OpenCV SIFT detection, one run")
    _add_weights(b, read=False)  # it times the default read and one read
    b.add_argument("--keypoints", type=int, default=2048)
    b.add_argument("--repeats", type=int, default=7)
    b.add_argument("--out", default="outputs/bench")
    b.set_defaults(func=_cmd_bench)

    g = sub.add_parser("generate", help="generate benchmark datasets")
    gs = g.add_subparsers(dest="generate_cmd", required=True)
    gp = gs.add_parser("patchpose", help="PatchPose-A/B patches from a photo folder (HDF5 shards + manifest)")
    gp.add_argument(
        "--images", default="data/photos", help="photo folder (splits.json inside, else split by image)"
    )
    gp.add_argument("--out", required=True)
    gp.add_argument(
        "--split", action="append", choices=("train", "val", "test"), help="only these splits (repeatable)"
    )
    gp.add_argument("--keypoints-per-image", type=int, default=12)
    gp.add_argument("--long-side", type=int, default=1024)
    gp.add_argument("--b-scale-dist", choices=("log", "linear"), default="log")
    gp.add_argument("--seed", type=int, default=0)
    gp.add_argument("--workers", type=int, default=2)
    gp.add_argument("--shard", default=None, help="i/n: this process makes every n-th photo from the i-th")
    gp.add_argument("--no-progress", action="store_true")
    gp.set_defaults(func=_cmd_generate_patchpose)
    gm = gs.add_parser(
        "merge", help="gather the parts of a sharded 'generate patchpose' and write the manifest"
    )
    gm.add_argument("--out", required=True)
    gm.add_argument("parts", nargs="+", help="folders written with --shard (OUT itself may be one)")
    gm.add_argument(
        "--split", action="append", choices=("train", "val", "test"), help="only these splits (repeatable)"
    )
    gm.set_defaults(func=_cmd_generate_merge)
    gh = gs.add_parser(
        "hpatches", help="HPatches-layout viewpoint/illumination sequences from a photo folder"
    )
    gh.add_argument("--images", default="data/photos", help="photo folder")
    gh.add_argument(
        "--split",
        choices=("train", "val", "test", "all"),
        default="test",
        help="photos of this split, or all the folder's photos",
    )
    gh.add_argument("--out", required=True)
    gh.add_argument("--kinds", default="vi", help="'v' viewpoint, 'i' illumination, or both (default)")
    gh.add_argument("--targets", type=int, default=5, help="images per sequence besides image 1")
    gh.add_argument("--max-side", type=int, default=640)
    gh.add_argument("--seed", type=int, default=0)
    gh.add_argument("--no-progress", action="store_true")
    gh.set_defaults(func=_cmd_generate_hpatches)
    gl = gs.add_parser(
        "hpatches-pool",
        help="link the sequences of several 'generate hpatches' folders (one per seed) into one, as "
        "<sequence>_s<seed>, for one evaluation with --cluster-pattern '^(.*)_s[0-9]+$'",
    )
    gl.add_argument("--out", required=True)
    gl.add_argument("folders", nargs="+", help="folders written by 'generate hpatches'")
    gl.add_argument("--kinds", default="vi", help="'v' viewpoint, 'i' illumination, or both (default)")
    gl.set_defaults(func=_cmd_generate_pool)
    gq = gs.add_parser(
        "posed-pairs",
        help="image pairs with known relative pose (camera rotations, rotated motorcycle stereo)",
    )
    gq.add_argument("--images", default="data/photos", help="photo folder")
    gq.add_argument("--split", choices=("train", "val", "test"), default="test", help="photos of this split")
    gq.add_argument("--out", required=True, help="receives images/, pairs.txt, manifest.json")
    gq.add_argument("--per-photo", type=int, default=1, help="camera-rotation pairs per photo")
    gq.add_argument("--stereo-pairs", type=int, default=24, help="rotated motorcycle stereo pairs")
    gq.add_argument("--max-side", type=int, default=640)
    gq.add_argument("--seed", type=int, default=0)
    gq.add_argument("--no-progress", action="store_true")
    gq.set_defaults(func=_cmd_generate_posed)

    ev = sub.add_parser("eval", help="evaluations")
    evs = ev.add_subparsers(dest="eval_cmd", required=True)
    sy = evs.add_parser(
        "synthetic", help="scale-only / rotation-only / joint pairs on held-out photos, vs hand-crafted"
    )
    sy.add_argument(
        "--images",
        default=None,
        help="photo folder (default: the 15 test photos shipped with the dependencies)",
    )
    _add_weights(sy, read=False)  # its pairs are fixed crops: one pass
    sy.add_argument("--pairs", type=int, default=1000, help="pairs per protocol")
    sy.add_argument("--seed", type=int, default=0)
    sy.add_argument("--out", default="outputs/eval_synthetic")
    sy.set_defaults(func=_cmd_eval)
    pp = evs.add_parser(
        "patchpose", help="the paper's Table 1/2 and Figures C.1/C.2 on a generated PatchPose split"
    )
    pp.add_argument("--data", required=True, help="folder written by 'patchpose generate patchpose'")
    pp.add_argument("--out", default="outputs/eval_patchpose")
    pp.add_argument("--split", default="test")
    _add_weights(pp)
    pp.add_argument("--orinet-weights", default=None, help="local OriNet state dict for the OriNet baseline")
    pp.add_argument("--include-pruned", action="store_true", help="also the keypoints that pruning dropped")
    pp.add_argument(
        "--bootstrap",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap replicates over keypoints for 95%% intervals of the official A+B and joint columns "
        "(0: none)",
    )
    pp.add_argument("--no-progress", action="store_true")
    pp.set_defaults(func=_cmd_eval_patchpose)
    po = evs.add_parser(
        "patchpose-official", help="official metric on a released PatchPose copy (single-window models)"
    )
    po.add_argument("--root", required=True, help="folder holding patchPoseA/, patchPoseB/ (and *ImageList/)")
    _add_weights(po, read=False)  # stored 32-px patches: one pass
    po.add_argument("--list", default=None, help="image list name, e.g. test_acquired")
    po.add_argument("--top-k", type=int, default=1)
    po.add_argument("--out", default="outputs/eval_patchpose_official")
    po.set_defaults(func=_cmd_eval_official)
    bn = evs.add_parser(
        "bins", help="Table 3: train (B_s, B_o) = (7,9), (9,18), (13,36), (17,72) and score each"
    )
    bn.add_argument("--data", required=True, help="folder written by 'patchpose generate patchpose'")
    bn.add_argument("--out", default="outputs/eval_bins")
    bn.add_argument("--minutes", type=float, default=10.0, help="training wall time per configuration")
    bn.add_argument("--config", default="v1")
    bn.add_argument("--split", default="test")
    bn.add_argument("--no-progress", action="store_true")
    bn.add_argument("overrides", nargs="*", help="key=value training overrides for every run")
    bn.set_defaults(func=_cmd_eval_bins)
    hp = evs.add_parser(
        "hpatches",
        help="HPatches: patch-pose transfer and matching MMA (lower/SIFT/ours/top-k/hand-crafted/upper)",
    )
    hp.add_argument("--root", required=True, help="hpatches-sequences-release (or a generated copy)")
    hp.add_argument("--out", default="outputs/eval_hpatches")
    hp.add_argument("--protocol", choices=("d2net", "keynet"), default="d2net")
    _add_weights(hp)
    _add_descriptor(hp)
    hp.add_argument("--top-k", type=int, default=4)
    hp.add_argument("--max-keypoints", type=int, default=None, help="default: 2000 (d2net) / 1500 (keynet)")
    hp.add_argument("--sequences", default=None, help="comma-separated sequence names (e.g. Key.Net's list)")
    hp.add_argument(
        "--detector",
        choices=("sift", "harris"),
        default="sift",
        help="keypoints to match: SIFT (default) or Harris corners (no pose of their own: no SIFT rows)",
    )
    hp.add_argument(
        "--keypoints",
        default=None,
        metavar="DIR",
        help="keypoints from files instead: DIR/<sequence>/<k>.npy or <k>.txt (x y per row, strongest first)",
    )
    hp.add_argument("--no-pose", action="store_true", help="matching only (skip the pose-transfer table)")
    hp.add_argument(
        "--bootstrap",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap replicates over sequences for 95%% intervals of MMA@3px (0: none)",
    )
    hp.add_argument(
        "--cluster-pattern",
        default=None,
        metavar="REGEX",
        help="draw sequences in clusters in the bootstrap: those whose names give the same capture of REGEX "
        "(its first group, else the match), e.g. '^(.*)_s[0-9]+$' for the sequences of one photo made with "
        "several seeds and linked in as <name>_s<seed>; a name it does not match is an error",
    )
    hp.add_argument("--no-progress", action="store_true")
    hp.set_defaults(func=_cmd_eval_hpatches)
    ro = evs.add_parser(
        "rotation", help="OpenCV SIFT descriptors on SIFT's own poses vs ours under in-plane rotations"
    )
    ro.add_argument("--images", default=None, help="photo folder (default: the 15 test photos in the wheels)")
    ro.add_argument("--split", choices=("train", "val", "test"), default=None)
    ro.add_argument("--step", type=int, default=10, help="degrees between rotations (default 10: 36 angles)")
    ro.add_argument(
        "--start",
        type=int,
        default=0,
        help="the first rotation in degrees (default 0; --start 5 turns by 5, 15, ..., 355 with the default step)",
    )
    ro.add_argument("--out", default="outputs/eval_rotation")
    _add_weights(ro)
    ro.add_argument(
        "--bootstrap",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap replicates over photos for 95%% intervals of the MMA columns (0: none)",
    )
    ro.add_argument("--no-progress", action="store_true")
    ro.set_defaults(func=_cmd_eval_rotation)
    pe = evs.add_parser("pose", help="two-view relative pose with AdaLAM: SIFT's poses vs ours (mAA, AUC)")
    pe.add_argument("--pairs", required=True, help="pairs file: name0 name1 rot0 rot1 K0[9] K1[9] T_0to1[16]")
    pe.add_argument("--images", required=True, help="folder the names in the pairs file are relative to")
    pe.add_argument("--out", default="outputs/eval_pose")
    _add_weights(pe)
    pe.add_argument("--keypoints", type=int, nargs="+", default=[1024, 2048], help="keypoint budgets")
    pe.add_argument(
        "--estimator",
        choices=("magsac", "accurate", "ransac"),
        default="accurate",
        help="robust fit of the essential matrix (OpenCV USAC_ACCURATE, USAC_MAGSAC, RANSAC)",
    )
    pe.add_argument("--no-ablation", action="store_true", help="only the sift and sift+ours rows")
    pe.add_argument("--no-progress", action="store_true")
    pe.set_defaults(func=_cmd_eval_pose)
    return p


def main(argv: list[str] | None = None) -> int:
    from ..errors import PatchPoseError

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    log.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (
        PatchPoseError,
        OSError,
        ValueError,
    ) as e:  # OSError: e.g. --out under a file, a folder in the way
        print(f"patchpose {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["main", "build_parser"]
