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
    from ..training.config import load_config
    from ..training.trainer import train

    cfg = load_config(a.config, a.overrides)
    res = train(cfg, a.out, resume=a.resume, progress=not a.no_progress)
    print(json.dumps(res, indent=1))
    return 0


def _cmd_export(a: argparse.Namespace) -> int:
    from ..weights import export_checkpoint

    path = export_checkpoint(a.checkpoint, a.out, name=a.name, notes=a.notes)
    print(f"wrote {path}")
    return 0


def _cmd_photos(a: argparse.Namespace) -> int:
    from ..data.photos import fetch_photos

    splits = fetch_photos(a.out, debian=not a.no_debian)
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
    m = generate(a.images, a.out, cfg, splits=splits, workers=a.workers, progress=not a.no_progress)
    for split, info in m["splits"].items():
        print(
            f"{split}: {info['photos']} photos, {info['keypoints']} keypoints ({info['kept_keypoints']} kept after "
            f"pruning), {info['samples']} patches"
        )
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
        a.rotations,
        progress=not a.no_progress,
        include_pruned=a.include_pruned,
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


def _add_weights(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--weights",
        default=None,
        help="safetensors file or bundled model name, e.g. patchpose-v1 (default: the default bundled model)",
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="patchpose", description="Keypoint scale and orientation, learned without labels."
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a pose network on self-supervised pairs")
    t.add_argument("--config", default="v1", help="YAML file or preset name (patchpose/configs/*.yaml)")
    t.add_argument("--out", required=True, help="output folder (checkpoints, config.yaml, metrics.jsonl)")
    t.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    t.add_argument("--no-progress", action="store_true", help="no progress bar (logs only)")
    t.add_argument("overrides", nargs="*", help="key=value overrides, e.g. optim.lr=1e-3 model.windows=[1,2]")
    t.set_defaults(func=_cmd_train)

    e = sub.add_parser("export", help="turn a training checkpoint into a safetensors weights file")
    e.add_argument("checkpoint")
    e.add_argument("--out", required=True)
    e.add_argument("--name", default="custom")
    e.add_argument("--notes", default="")
    e.set_defaults(func=_cmd_export)

    ph = sub.add_parser("photos", help="photo pool for training and evaluation")
    phs = ph.add_subparsers(dest="photos_cmd", required=True)
    f = phs.add_parser("fetch", help="copy the photo pool (wheels + Debian packages) into a folder")
    f.add_argument("--out", default="data/photos")
    f.add_argument("--no-debian", action="store_true", help="only the photos inside installed wheels")
    f.set_defaults(func=_cmd_photos)

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
        s.add_argument("--no-refine", action="store_true", help="plain argmax (no sub-bin refinement)")
        s.add_argument(
            "--rotations",
            type=int,
            choices=(1, 2, 4),
            default=1,
            help="rotation test-time augmentation: average over 1, 2 or 4 quarter turns",
        )
        s.set_defaults(func=_cmd_estimate)

    b = sub.add_parser("bench", help="speed: our poses for N keypoints vs OpenCV SIFT detection, one run")
    _add_weights(b)
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
    gp.add_argument("--no-progress", action="store_true")
    gp.set_defaults(func=_cmd_generate_patchpose)

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
    _add_weights(sy)
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
    pp.add_argument("--rotations", type=int, choices=(1, 2, 4), default=1)
    pp.add_argument("--include-pruned", action="store_true", help="also the keypoints that pruning dropped")
    pp.add_argument("--no-progress", action="store_true")
    pp.set_defaults(func=_cmd_eval_patchpose)
    po = evs.add_parser(
        "patchpose-official", help="official metric on a released PatchPose copy (single-window models)"
    )
    po.add_argument("--root", required=True, help="folder holding patchPoseA/, patchPoseB/ (and *ImageList/)")
    _add_weights(po)
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
    except (PatchPoseError, FileNotFoundError, FileExistsError, ValueError) as e:
        print(f"patchpose {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["main", "build_parser"]
