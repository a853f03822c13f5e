"""The benchmarks: ``patchpose eval ...`` (each writes ``OUT/results.json`` and ``OUT/results.md``, and prints the
latter) and ``patchpose bench`` (speed against OpenCV's SIFT)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..checks import MAX_THREADS
from ..errors import InputError, is_int_in
from ..evaluation.colmap_eval import DEFAULT_POSES, DEFAULT_SETS, POSES, SETS
from ..recipes import MODELS
from .options import add_descriptor, add_peers, add_weights, plain_sigterm, print_results, read_plan


def _set_threads(threads) -> None:
    """This process's torch and OpenCV threads for every timing of a ``bench`` run (None: theirs)."""
    if threads is None:
        return
    if not is_int_in(threads, 1, MAX_THREADS):
        raise InputError(f"--threads must be a whole number from 1 to {MAX_THREADS}, got {threads!r}")
    import cv2
    import torch

    torch.set_num_threads(threads)
    cv2.setNumThreads(threads)


def _check_max_keypoints(n) -> None:
    """``--max-keypoints N`` of a benchmark: a whole number from 1 (0 is no budget: a one-line error, before any
    work, never a silent default); None (left out) is the benchmark's own."""
    from ..data.keypoints import MAX_KEYPOINTS

    if n is not None and not is_int_in(n, 1, MAX_KEYPOINTS):
        # worded as the library's checks of it (max_keypoints), the option named
        raise InputError(
            f"max_keypoints (--max-keypoints) must be a whole number from 1 to {MAX_KEYPOINTS:,}, got {n!r}"
        )


def bench_command(a: argparse.Namespace) -> int:
    """``bench``: seconds for our poses of N keypoints and for OpenCV SIFT's detection, and their ratios."""
    from ..evaluation.bench import bench, scaling

    if a.recipes and a.upright:
        raise InputError("--recipes and --upright are two benchmarks: give one")
    if a.peers is not None and not a.upright:
        raise InputError("--peers is read only by --upright (the other benchmarks time our own models)")
    if a.weights is not None and (a.recipes or a.upright):
        # what these time is a recipe or the votes as a user runs them: each with its bundled model
        what = "match_pair's recipes, as 'patchpose match' runs them" if a.recipes else "upright_pair's votes"
        raise InputError(
            f"--weights is not read by {'--recipes' if a.recipes else '--upright'}: it times {what}, with the "
            "bundled models they read (patchpose.recipes.MODELS); 'patchpose bench --weights W' times a model of yours"
        )
    if a.recipes:
        from ..evaluation.bench import bench_recipes

        _set_threads(a.threads)
        res = bench_recipes(a.keypoints, repeats=3 if a.repeats is None else a.repeats, out=a.out)
        print(
            f"{res['pair']}; at most {res['max_keypoints']} keypoints per photo, {res['torch_threads']} threads"
        )
        print(f"{'':<14}  {'seconds':>8}  {'× SIFT':>7}  {'matches':>7}  {'correct@3px':>11}")
        for name, r in res["rows"].items():
            print(
                f"{name:<14}  {r['seconds']:>8.2f}  {r['ratio_to_sift']:>7.2f}  {r['matches']:>7}  "
                f"{r['correct@3px']:>11}"
            )
        print(f"wrote {a.out}/recipes.json")
        return 0
    if a.upright:
        from ..evaluation.bench import bench_upright

        if a.peers is None:
            raise InputError(
                "--upright needs --peers DIR (the folder with ALIKED-n16's weights, never bundled)"
            )
        _set_threads(a.threads)
        res = bench_upright(a.peers, repeats=5 if a.repeats is None else a.repeats, out=a.out)
        print(
            f"{res['extractor']}; a canvas of at most {res['canvas_pixels']:g}x the photo's pixels; "
            f"{res['torch_threads']} threads; per photo = (its half of a pair's votes + its un-turned extraction) "
            "/ one extraction"
        )
        for size, r in res["sizes"].items():
            secs = "  ".join(f"{k} {v:.2f} s" for k, v in r["seconds"].items())
            per, again = (
                "  ".join(f"{k}: {v:.2f}x" for k, v in r[key].items())
                for key in ("per_photo", "per_photo_retried")
            )
            print(f"{size}: {secs}\n  per photo  {per}\n  per photo, the votes retried  {again}")
        print(f"wrote {a.out}/upright.json")
        return 0
    if a.scaling or a.scaling_max is not None:
        rows = scaling(a.weights, a.scaling_max, threads=a.threads, out=a.out)["rows"]
        print(f"{'keypoints':>10}  {'keypoints/s':>11}  {'peak RSS MB':>11}  {'bytes/keypoint':>14}  threads")
        for r in rows:
            print(
                f"{r['num_keypoints']:>10,}  {r['keypoints_per_s']:>11,.0f}  {r['peak_rss_bytes'] / 2**20:>11,.0f}  "
                f"{r['rss_per_keypoint_bytes']:>14,.0f}  {r['torch_threads']}"
            )
        print(f"wrote {a.out}/scaling.json")
        return 0
    _set_threads(a.threads)
    res = bench(a.weights, a.keypoints, repeats=7 if a.repeats is None else a.repeats, out=a.out)
    w = max(len(k) for k in res)
    for k, v in res.items():
        print(f"{k:<{w}}  {v:.4f}" if isinstance(v, float) else f"{k:<{w}}  {v}")
    print(f"wrote {a.out}/bench.json")
    return 0


def eval_synthetic_command(a: argparse.Namespace) -> int:
    from ..evaluation.synthetic import eval_synthetic

    doc = eval_synthetic(a.images, a.weights, a.pairs, a.seed, a.out, split=a.split)
    print_results(a.out, f"wrote {a.out}/results.json and results.md in {doc['seconds']:.0f} s")
    return 0


def eval_patchpose_command(a: argparse.Namespace) -> int:
    from ..evaluation.patchpose_eval import evaluate

    doc = evaluate(
        a.data,
        a.out,
        a.weights,
        a.split,
        progress=not a.no_progress,
        read_plan=read_plan(a),
        bootstrap=a.bootstrap,
    )
    print_results(a.out, f"wrote {a.out}/results.json, results.md and figures in {doc['seconds']:.0f} s")
    return 0


def eval_official_command(a: argparse.Namespace) -> int:
    from ..evaluation.official_layout import evaluate_official_layout
    from ..evaluation.report import write_results

    res = evaluate_official_layout(a.root, a.weights, list_name=a.list, k=a.top_k)
    write_results(a.out, res)
    print(json.dumps(res, indent=1))
    return 0


def eval_bins_command(a: argparse.Namespace) -> int:
    from ..evaluation.bins_ablation import run

    run(a.data, a.out, a.minutes, a.config, overrides=a.overrides, split=a.split, progress=not a.no_progress)
    print(Path(a.out, "results.md").read_text())
    return 0


def eval_hpatches_command(a: argparse.Namespace) -> int:
    from ..evaluation.hpatches_eval import evaluate_hpatches

    doc = evaluate_hpatches(
        a.root,
        a.out,
        a.weights,
        descriptor=a.descriptor,
        top_k=a.top_k,
        max_keypoints=a.max_keypoints,
        names=a.sequences.split(",") if a.sequences else None,
        pose=not a.no_pose,
        progress=not a.no_progress,
        read_plan=read_plan(a),
        detector=a.detector,
        rows=a.rows.split(",") if a.rows else None,
        reference=a.reference,
        keypoints_dir=a.keypoints,
        bootstrap=a.bootstrap,
        cluster_pattern=a.cluster_pattern,
        peers=a.peers,
        shape_weights=a.shape_weights,
        matcher=a.matcher,
    )
    print_results(a.out, f"wrote {a.out}/results.json, results.md, mma.png in {doc['seconds']:.0f} s")
    return 0


def eval_rotation_command(a: argparse.Namespace) -> int:
    from ..data.photos import photos_of, wheel_photo_paths
    from ..errors import InputError
    from ..evaluation.rotation_eval import evaluate_rotation, rotation_angles

    if a.split and not a.images:
        raise InputError("--split picks a split of --images: give --images DIR (e.g. data/photos) too")
    if a.images:
        photos = photos_of(a.images, a.split or None)
    else:
        photos = wheel_photo_paths()
    doc = evaluate_rotation(
        photos,
        a.out,
        a.weights,
        angles=rotation_angles(a.step, a.start),
        progress=not a.no_progress,
        read_plan=read_plan(a),
        bootstrap=a.bootstrap,
        peers=a.peers,
    )
    print_results(a.out, f"wrote {a.out}/results.json and results.md in {doc['seconds']:.0f} s")
    return 0


def eval_upright_command(a: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..evaluation.upright_eval import evaluate_upright

    _check_max_keypoints(a.max_keypoints)
    if not a.peers:
        raise InputError(
            "eval upright needs --peers DIR (ALIKED's weights: aliked-n16.pth, aliked-n16rot.pth)"
        )
    doc = evaluate_upright(
        a.root,
        a.out,
        a.peers,
        max_keypoints=a.max_keypoints,
        sequences=a.sequences.split(",") if a.sequences else None,
        cluster_pattern=a.cluster_pattern,
        bootstrap=a.bootstrap,
        progress=not a.no_progress,
    )
    print_results(a.out, f"wrote {a.out}/results.json and results.md in {doc['seconds']:.0f} s")
    return 0


def eval_pose_command(a: argparse.Namespace) -> int:
    from ..evaluation.pose_eval import evaluate_pose

    doc = evaluate_pose(
        a.pairs,
        a.images,
        a.out,
        a.weights,
        budgets=tuple(a.keypoints),
        ablation=not a.no_ablation,
        progress=not a.no_progress,
        read_plan=read_plan(a),
        peers=a.peers,
        detector=a.detector,
    )
    print_results(a.out, f"wrote {a.out}/results.json and results.md in {doc['seconds']:.0f} s")
    return 0


def eval_colmap_command(a: argparse.Namespace) -> int:
    from ..evaluation.colmap_eval import evaluate_colmap, pose_estimator
    from .extract import set_threads

    plain_sigterm()  # a kill ends it without pycolmap's native stack trace
    _check_max_keypoints(a.max_keypoints)
    set_threads(a.threads)
    weights = a.weights
    if a.read:
        weights = pose_estimator(a.weights).with_plan(**read_plan(a))
    doc = evaluate_colmap(
        a.images,
        a.out,
        weights,
        poses=a.poses,
        seeds=a.seeds,
        sets=a.sets,
        threads=a.threads,
        max_keypoints=a.max_keypoints,
        progress=not a.no_progress,
        peers=a.peers,
    )
    print_results(a.out, f"wrote {a.out}/results.json and results.md in {doc['seconds']:.0f} s")
    return 0


def _add_bootstrap(p: argparse.ArgumentParser, over: str) -> None:
    p.add_argument(
        "--bootstrap",
        type=int,
        default=2000,
        metavar="N",
        help=f"bootstrap replicates over {over} (0: none)",
    )


def _add_detector(p: argparse.ArgumentParser) -> None:
    """``--detector`` of the evaluations that match detected keypoints (``eval hpatches``, ``eval pose``): the
    names of :data:`patchpose.evaluation.rows.DETECTORS` (not imported here: the parser stays light)."""
    p.add_argument(
        "--detector",
        choices=("sift", "harris", "gftt", "keynet", "gftt_scale", "aliked"),
        default="sift",
        help="keypoints to match: SIFT (default), Harris or Shi-Tomasi (gftt) corners, Shi-Tomasi corners in a scale "
        "space with their scale (gftt_scale, as kornia's corner pipeline), Key.Net or ALIKED-n16 (both need --peers; "
        "ALIKED's come without a scale, as corners); all but SIFT come without an orientation of their own (no rows "
        "that read SIFT's)",
    )


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``bench`` and ``eval {synthetic, patchpose, patchpose-official, bins, hpatches, rotation, pose,
    colmap}`` on the top-level subparsers."""
    b = sub.add_parser("bench", help="speed: our poses for N keypoints vs OpenCV SIFT detection, one run")
    # it times the model's own read plan and a single read; --recipes and --upright time the bundled models
    add_weights(b, read=False, model=f"{MODELS['estimate']}; not with --recipes or --upright")
    b.add_argument("--keypoints", type=int, default=2048, help="keypoints timed (N)")
    b.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed runs, the median reported (default 7; 3 with --recipes, 5 with --upright)",
    )
    b.add_argument(
        "--out",
        default="outputs/bench",
        help="folder that receives bench.json (recipes.json, upright.json, scaling.json)",
    )
    b.add_argument(
        "--recipes",
        action="store_true",
        help="instead: seconds of each match_pair recipe (with its bundled model) on one pair (at most --keypoints "
        "SIFT keypoints per photo) against OpenCV SIFT's detection, description and matching of it, with their correct "
        "matches",
    )
    b.add_argument(
        "--upright",
        action="store_true",
        help="instead: what un-turning costs a photo (#63): the votes and a learned feature's extraction of the "
        "bundled photo un-turned at 30°, 45° and 90°, against one extraction as it comes (needs --peers)",
    )
    add_peers(b, "with --upright, ALIKED-n16 (required there)")
    b.add_argument(
        "--scaling",
        action="store_true",
        help="instead: keypoints/s and peak resident memory at 2k, 8k, 32k and 128k keypoints, each in a "
        "fresh process",
    )
    b.add_argument(
        "--scaling-max",
        type=int,
        default=None,
        metavar="N",
        help="sizes 2,048 × 4**k up to N, and N itself (implies --scaling; default: 2k, 8k, 32k and 128k)",
    )
    b.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch and OpenCV threads (default: their own, usually every core)",
    )
    b.set_defaults(func=bench_command)

    ev = sub.add_parser("eval", help="the benchmarks: each writes OUT/results.json and OUT/results.md")
    evs = ev.add_subparsers(dest="eval_cmd", required=True)
    sy = evs.add_parser(
        "synthetic", help="scale-only / rotation-only / joint pairs of photos, vs hand-crafted"
    )
    sy.add_argument(
        "--images",
        default=None,
        help="photo folder (every image in it, or with --split those of one split); default: the 15 test photos "
        "shipped with the dependencies, which no model trained on",
    )
    sy.add_argument(
        "--split",
        choices=("train", "val", "test", "all"),
        default="all",
        help="only the photos of this split of --images (its splits.json, else split by image, as generate "
        "hpatches --split reads it), or all the folder's photos (a folder of held-out photos)",
    )
    add_weights(sy, read=False)  # its pairs are fixed crops: one read
    sy.add_argument("--pairs", type=int, default=1000, help="pairs per protocol")
    sy.add_argument("--seed", type=int, default=0)
    sy.add_argument("--out", default="outputs/eval_synthetic")
    sy.set_defaults(func=eval_synthetic_command)

    pp = evs.add_parser(
        "patchpose", help="the paper's Table 1/2 and Figures C.1/C.2 on a generated PatchPose split"
    )
    pp.add_argument("--data", required=True, help="folder written by 'patchpose generate patchpose'")
    pp.add_argument("--out", default="outputs/eval_patchpose")
    pp.add_argument("--split", default="test")
    add_weights(pp)
    _add_bootstrap(pp, "keypoints for 95%% intervals of the official A+B and joint columns")
    pp.add_argument("--no-progress", action="store_true")
    pp.set_defaults(func=eval_patchpose_command)

    po = evs.add_parser(
        "patchpose-official", help="official metric on a released PatchPose copy (single-window models)"
    )
    po.add_argument("--root", required=True, help="folder holding patchPoseA/, patchPoseB/ (and *ImageList/)")
    po.add_argument(  # stored 32-px patches: one read; every bundled model reads a log-polar grid, which they lack
        "--weights",
        required=True,
        help="a single-window model: a safetensors file trained with --config paper or model.windows=[1.0] (the "
        "bundled models read a log-polar grid, which these 32-px crops cannot give)",
    )
    po.add_argument("--list", default=None, help="image list name, e.g. test_acquired")
    po.add_argument(
        "--top-k", type=int, default=1, help="a keypoint counts as correct if any of k candidates is"
    )
    po.add_argument("--out", default="outputs/eval_patchpose_official")
    po.set_defaults(func=eval_official_command)

    bn = evs.add_parser(
        "bins", help="Table 3: train (B_s, B_o) = (7,9), (9,18), (13,36), (17,72) and score each"
    )
    bn.add_argument("--data", required=True, help="folder written by 'patchpose generate patchpose'")
    bn.add_argument("--out", default="outputs/eval_bins")
    bn.add_argument("--minutes", type=float, default=10.0, help="training wall time per configuration")
    bn.add_argument(
        "--config", default="v1", help="the training config preset (or YAML file) every run starts from"
    )
    bn.add_argument("--split", default="test")
    bn.add_argument("--no-progress", action="store_true")
    bn.add_argument("overrides", nargs="*", help="key=value training overrides for every run")
    bn.set_defaults(func=eval_bins_command)

    hp = evs.add_parser(
        "hpatches",
        help="HPatches: patch-pose transfer and matching MMA (lower/SIFT/ours/top-k/hand-crafted/peers/upper)",
    )
    hp.add_argument("--root", required=True, help="hpatches-sequences-release (or a generated copy)")
    hp.add_argument("--out", default="outputs/eval_hpatches")
    add_weights(hp)
    add_descriptor(hp, peers=True)
    add_peers(hp, "the orinet and affnet+orinet rows, --detector keynet/aliked, --descriptor tfeat/hardtfeat")
    hp.add_argument(
        "--shape-weights",
        default=None,
        metavar="W",
        help="the affine shape network of the shape_pooled_blend and shape_zoom_blend rows: a bundled name or a "
        "file 'patchpose train-shape' wrote (default: the bundled patchpose-shape-v1)",
    )
    hp.add_argument(
        "--top-k",
        type=int,
        default=4,
        help="candidates per keypoint of the ours-top-k row (ours_blend needs 4)",
    )
    hp.add_argument("--max-keypoints", type=int, default=None, help="keypoints per image (default: 2000)")
    hp.add_argument("--sequences", default=None, help="comma-separated sequence names (e.g. Key.Net's list)")
    hp.add_argument(
        "--rows",
        default=None,
        help="comma-separated matching rows to compute, or 'all' (every row the detector and --peers allow); "
        "default, of those allowed: lower, sift, sift_all, keynet, ours, ours_top4, dominant_gradient, pair_pose, "
        "pair_pose_gradient, second_pass, rectify, orinet, affnet+orinet, upper; by name only: ours_adaptive, "
        "ours_blend, ours_scale_gradient_blend, ours_scale_gradient, pose, ours_angle, sift_resolved_by_ours, "
        "dominant_gradient_blend, dominant_gradient_pooled_blend, shape_pooled_blend, shape_zoom_blend, "
        "pair_pose_ours, affnet_pooled_blend",
    )
    hp.add_argument(
        "--reference",
        default=None,
        metavar="ROW",
        help="the row that the intervals' differences are taken against (default: ours, or the first row when "
        "--rows leaves ours out)",
    )
    _add_detector(hp)
    hp.add_argument(
        "--matcher",
        choices=("mnn", "ratio"),
        default="mnn",
        help="how every row's descriptors are matched: mutual nearest neighbours (default), or Lowe's ratio test "
        "(0.8) with a cross check, as COLMAP matches and most users run SIFT",
    )
    hp.add_argument(
        "--keypoints",
        default=None,
        metavar="DIR",
        help="keypoints from files instead: DIR/<sequence>/<k>.npy or <k>.txt (x y per row, strongest first)",
    )
    hp.add_argument("--no-pose", action="store_true", help="matching only (skip the pose-transfer table)")
    _add_bootstrap(hp, "sequences for 95%% intervals of MMA@3px")
    hp.add_argument(
        "--cluster-pattern",
        default=None,
        metavar="REGEX",
        help="draw sequences in clusters in the bootstrap: those whose names give the same capture of REGEX "
        "(its first group, else the match), e.g. '^(.*)_s[0-9]+$' for the sequences of one photo made with "
        "several seeds and linked in as <name>_s<seed>; a name it does not match is an error",
    )
    hp.add_argument("--no-progress", action="store_true")
    hp.set_defaults(func=eval_hpatches_command)

    ro = evs.add_parser(
        "rotation", help="OpenCV SIFT descriptors on SIFT's own poses vs ours under in-plane rotations"
    )
    ro.add_argument("--images", default=None, help="photo folder (default: the 15 test photos in the wheels)")
    ro.add_argument(
        "--split", choices=("train", "val", "test"), default=None, help="only this split of --images"
    )
    ro.add_argument("--step", type=int, default=10, help="degrees between rotations (default 10: 36 angles)")
    ro.add_argument(
        "--start",
        type=int,
        default=0,
        help="the first rotation in degrees (default 0; --start 5 turns by 5, 15, ..., 355 with the default step)",
    )
    ro.add_argument("--out", default="outputs/eval_rotation")
    add_peers(ro, "the orinet row (OriNet's angle in SIFT's window)")
    add_weights(ro)
    _add_bootstrap(ro, "photos for 95%% intervals of the MMA columns")
    ro.add_argument("--no-progress", action="store_true")
    ro.set_defaults(func=eval_rotation_command)

    up = evs.add_parser(
        "upright",
        help="a learned feature trained upright (ALIKED) on turned pairs, un-turned by our voted turn, vs its peers",
    )
    up.add_argument("--root", required=True, help="HPatches-style sequences (e.g. data/hpatches_turn)")
    up.add_argument("--out", default="outputs/eval_upright")
    up.add_argument(
        "--max-keypoints", type=int, default=2000, help="ALIKED keypoints per photo, strongest first"
    )
    up.add_argument("--sequences", default=None, help="comma-separated sequence names")
    up.add_argument(
        "--cluster-pattern",
        default=None,
        metavar="REGEX",
        help="draw sequences in clusters in the bootstrap (as eval hpatches --cluster-pattern)",
    )
    add_peers(up, "ALIKED-n16 and ALIKED-n16rot (required)")
    _add_bootstrap(up, "sequences for 95%% intervals of correct matches per pair")
    up.add_argument("--no-progress", action="store_true")
    up.set_defaults(func=eval_upright_command)

    pe = evs.add_parser("pose", help="two-view relative pose with AdaLAM: SIFT's poses vs ours (mAA, AUC)")
    pe.add_argument("--pairs", required=True, help="pairs file: name0 name1 rot0 rot1 K0[9] K1[9] T_0to1[16]")
    pe.add_argument("--images", required=True, help="folder the names in the pairs file are relative to")
    pe.add_argument("--out", default="outputs/eval_pose")
    add_weights(pe)
    pe.add_argument("--keypoints", type=int, nargs="+", default=[1024, 2048], help="keypoint budgets")
    _add_detector(pe)
    add_peers(pe, "the orinet and affnet+orinet rows (in SIFT's window, for the descriptors and in AdaLAM)")
    pe.add_argument(
        "--no-ablation", action="store_true", help="only the main rows (sift, sift+ours, the peers)"
    )
    pe.add_argument("--no-progress", action="store_true")
    pe.set_defaults(func=eval_pose_command)

    co = evs.add_parser(
        "colmap",
        help="COLMAP reconstructions (pycolmap), frames upright and every other one turned 90 degrees: "
        "COLMAP's own pipeline (and with its SIFT's domain-size pooling), its keypoints described at SIFT's poses, the "
        "recipe pose, ours, upright, upright in the collection (each photo's turn by our votes or SIFT's)",
    )
    co.add_argument("images", help="folder of frames (every image below it, at least 2)")
    co.add_argument("--out", default="outputs/eval_colmap")
    co.add_argument(
        "--poses",
        nargs="+",
        choices=POSES,
        default=list(DEFAULT_POSES),
    )
    co.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="COLMAP's random seeds")
    co.add_argument(
        "--sets",
        nargs="+",
        choices=SETS,
        default=list(DEFAULT_SETS),
        help="upright; turned: frames 1, 3, 5, ... turned 90 degrees clockwise; turned_first: frames 0, 2, 4, ...; "
        "turned_any: frames 1, 3, 5, ... each turned by its own angle (seeded), on a canvas that holds it",
    )
    co.add_argument(
        "--max-keypoints",
        type=int,
        default=8192,
        help="COLMAP's SIFT detections per image (its max_num_features; each with up to 2 orientations as keypoints)",
    )
    co.add_argument(
        "--threads",
        type=int,
        default=1,
        help="COLMAP's and torch's threads (default: 1, so that a run repeats)",
    )
    add_weights(co, model=f"the recipe pose's, {MODELS['pose']}")
    add_peers(co, "ALIKED's weights (aliked-n16.pth, aliked-n16rot.pth), for the rows aliked*")
    co.add_argument("--no-progress", action="store_true")
    co.set_defaults(func=eval_colmap_command)
