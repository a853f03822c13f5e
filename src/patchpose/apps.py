"""What the ``estimate``, ``demo`` and ``eval synthetic`` commands do (kept out of the CLI parser)."""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import time
from pathlib import Path

import numpy as np

from .conventions import REFERENCE_RADIUS
from .errors import InputError, is_int_in
from .estimator import PatchPoseEstimator
from .fileio import read_keypoints, write_text_atomic
from .reading import ReadPlan

log = logging.getLogger(__name__)


def draw_poses(
    image: np.ndarray, xy: np.ndarray, scale: np.ndarray, ori: np.ndarray, path: str | Path, title: str = ""
) -> Path:
    """Circles (radius = characteristic radius ``REFERENCE_RADIUS·2**scale``) and arrows (orientation,
    CCW as displayed), like the paper's Figure 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Circle

    h, w = image.shape[:2]
    fig, ax = plt.subplots(figsize=(8, 8 * h / w), dpi=120)
    ax.imshow(image, cmap="gray" if image.ndim == 2 else None)
    r = REFERENCE_RADIUS * np.power(2.0, scale)
    ax.add_collection(
        PatchCollection(
            [Circle((x, y), rr) for (x, y), rr in zip(xy, r)],
            facecolor="none",
            edgecolor="yellow",
            linewidth=0.8,
        )
    )
    # y axis points down: the on-screen CCW direction of θ is (cos θ, −sin θ)
    ax.quiver(
        xy[:, 0],
        xy[:, 1],
        r * np.cos(ori),
        -r * np.sin(ori),
        angles="xy",
        scale_units="xy",
        scale=1,
        color="red",
        width=0.002,
        headwidth=4,
    )
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)
    ax.set_axis_off()
    ax.set_title(title or f"{len(xy)} keypoints: circle = scale, arrow = orientation", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def write_poses(path: Path, xy: np.ndarray, out, fmt: str) -> Path:
    """JSON (``{"conventions": …, "keypoints": [{x, y, scale, orientation, …}]}``) or CSV, written to
    ``path`` plus ``.json`` / ``.csv`` (appended: a name with dots, ``scene.1_poses``, keeps them)."""
    path = path.with_name(path.name + "." + fmt)
    tmp = path.with_name(path.name + ".tmp")
    scale, ori = np.atleast_2d(out.scale.T).T, np.atleast_2d(out.orientation.T).T
    if fmt == "json":
        doc = {
            "conventions": "x, y: pixels, pixel centres at integers; orientation: radians in [0, 2pi), counter-clockwise "
            "as displayed; scale: log2, radius_px = 16 * 2**scale; candidates strongest first",
            "keypoints": [
                {
                    "x": float(p[0]),
                    "y": float(p[1]),
                    "scale": s.tolist() if len(s) > 1 else float(s[0]),
                    "orientation": o.tolist() if len(o) > 1 else float(o[0]),
                    "valid": bool(v),
                }
                for p, s, o, v in zip(xy, scale, ori, out.valid)
            ],
        }
        tmp.write_text(json.dumps(doc, indent=1))
    else:
        with tmp.open("w", newline="") as f:
            wr = csv.writer(f)
            k = scale.shape[1]
            wr.writerow(
                ["x", "y"]
                + [f"scale{i}" for i in range(k)]
                + [f"orientation{i}" for i in range(k)]
                + ["valid"]
            )
            for p, s, o, v in zip(xy, scale, ori, out.valid):
                wr.writerow(
                    [f"{p[0]:.3f}", f"{p[1]:.3f}"]
                    + [f"{x:.5f}" for x in s]
                    + [f"{x:.5f}" for x in o]
                    + [int(v)]
                )
    os.replace(tmp, path)
    return path


def run_estimate(
    image_path,
    keypoints_path,
    out_dir,
    weights,
    max_keypoints,
    top_k,
    fmt,
    read_plan: dict | None = None,
) -> dict:
    from .data.keypoints import detect_sift
    from .data.patches import check_image, load_image

    if not is_int_in(max_keypoints, 1, integral_floats=True):
        raise InputError(f"--max-keypoints must be a positive integer, got {max_keypoints}")
    if not is_int_in(top_k, 1, integral_floats=True):
        raise InputError(f"--top-k must be a positive integer, got {top_k}")
    image = load_image(image_path)
    check_image(image)  # size and content checks before detection
    est = PatchPoseEstimator.load(weights).with_plan(**(read_plan or {}))
    if keypoints_path:
        xy = read_keypoints(keypoints_path)
    else:
        xy, _ = detect_sift(image, max_keypoints)
        if len(xy) == 0:
            raise InputError(f"no SIFT keypoints found in {image_path} (a flat or tiny image?)")
    t = time.perf_counter()
    res = est.estimate(image, xy, top_k=top_k if top_k > 1 else None)
    dt = time.perf_counter() - t
    out_dir = Path(out_dir or "patchpose_out")
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = Path(image_path).stem
    poses = write_poses(out_dir / f"{stem}_poses", xy, res, fmt)
    first = lambda a: a[:, 0] if a.ndim == 2 else a  # noqa: E731
    pic = draw_poses(
        image,
        xy,
        first(res.scale),
        first(res.orientation),
        out_dir / f"{stem}_poses.png",
        title=f"{Path(image_path).name}: {len(xy)} keypoints (circle = scale, arrow = orientation)",
    )
    print(f"{len(xy)} keypoints in {dt:.2f} s -> {poses} and {pic}")
    return {"poses": str(poses), "picture": str(pic), "n": len(xy), "seconds": dt}


def estimate_command(a) -> int:
    """``patchpose estimate`` and ``patchpose demo`` (the demo's image defaults to a bundled photo)."""
    from .data.photos import demo_photo

    image = getattr(a, "image", None) or demo_photo()
    keypoints = getattr(a, "keypoints", None)
    read_plan = ReadPlan.parse(a.read)
    run_estimate(
        image,
        keypoints,
        a.out,
        a.weights,
        a.max_keypoints,
        a.top_k,
        a.format,
        read_plan,
    )
    return 0


def _table(results: dict) -> str:
    cols = ["scale_acc@1/6", "scale_acc@1/3", "ori_acc@5", "ori_acc@10"]
    lines = []
    for proto, methods in results.items():
        lines += [
            f"\n### {proto} pairs\n",
            "| method | " + " | ".join(cols) + " | pairs |",
            "|---" * (len(cols) + 2) + "|",
        ]
        for m, r in methods.items():
            cells = [f"{r[c]:.1f}" if c in r else "–" for c in cols]
            lines.append(f"| {m} | " + " | ".join(cells) + f" | {r['n_pairs']} |")
    return "\n".join(lines) + "\n"


def eval_synthetic(
    images: str | None, weights: str | None, n_pairs: int, seed: int, out_dir: str | Path
) -> dict:
    """Scale-only, rotation-only and joint pairs at SIFT keypoints of held-out photos (the keypoint at the
    centre of the window), ours (refined and argmax) against the hand-crafted pair."""
    from .data.pairs import PairConfig, PhotoPool
    from .data.photos import list_images, wheel_photo_paths
    from .evaluation.synthetic import evaluate_handcrafted, evaluate_model, make_protocol_pairs

    t0 = time.time()
    est = PatchPoseEstimator.load(weights)
    paths = list_images(images) if images else wheel_photo_paths()
    pcfg = PairConfig(long_side=0, margin=24)
    pool = PhotoPool(paths, pcfg, est.cfg.color)
    pairs = make_protocol_pairs(
        pool, n_pairs, seed, est.cfg.patch_size, est.cfg.windows, pcfg, polar=est.cfg.polar_grid
    )
    by_method = {
        "patchpose (refined)": evaluate_model(est.model, pairs, refine=True),
        "patchpose (argmax)": evaluate_model(est.model, pairs, refine=False),
        "dominant-gradient + LoG": evaluate_handcrafted(pool, pairs),
    }
    results = {proto: {m: r[proto] for m, r in by_method.items()} for proto in pairs}
    doc = {
        "model": est.meta.get("name", str(weights)),
        "photos": [str(p) for p in paths],
        "n_photos": len(pool),
        "seed": seed,
        "results": results,
        "seconds": time.time() - t0,
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("results.json", json.dumps(doc, indent=1)),
        (
            "results.md",
            f"# Synthetic pose pairs ({doc['model']}, {len(pool)} photos, seed {seed})\n" + _table(results),
        ),
    ):
        tmp = out / (name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, out / name)
    print(_table(results))
    print(f"wrote {out / 'results.json'} and {out / 'results.md'} in {doc['seconds']:.0f} s")
    return doc


def eval_synthetic_command(a) -> int:
    eval_synthetic(a.images, a.weights, a.pairs, a.seed, a.out)
    return 0


def match_command(a) -> int:
    """``patchpose match IMG1 IMG2``: detect, pose, describe, match; write the picture and the matches."""
    import cv2

    from .data.hpatches import read_homography
    from .data.patches import load_image
    from .matching.draw import draw_matches
    from .matching.pipeline import MatchConfig, match_images

    read_plan = ReadPlan.parse(a.read)

    rows = {
        "none": "lower",
        "sift": "sift",
        "ours": "ours",
        "ours-topk": f"ours_top{a.top_k}",
        "sift-resolved": "sift_resolved_by_ours",
        "ours-angle": "ours_angle",
        "dominant-gradient": "dominant_gradient",
        "log-dominant-gradient": "log+dominant_gradient",
    }
    if not (math.isfinite(a.threshold) and a.threshold > 0):
        raise InputError(f"--threshold must be a positive number of pixels, got {a.threshold}")
    if a.top_k < 2 and a.pose == "ours-topk":
        raise InputError("--pose ours-topk needs --top-k of at least 2")
    row = rows[a.pose]
    img1, img2 = load_image(a.image1), load_image(a.image2)
    H = read_homography(a.homography) if a.homography else None
    kp1 = read_keypoints(a.keypoints1) if a.keypoints1 else None
    kp2 = read_keypoints(a.keypoints2) if a.keypoints2 else None
    if (kp1 is None) != (kp2 is None):
        raise InputError("give keypoints for both images (--keypoints1 and --keypoints2) or for none")
    est = (
        PatchPoseEstimator.load(a.weights).with_plan(**read_plan) if row not in ("lower", "sift") else None
    )  # rows that read our model
    cfg = MatchConfig(
        max_keypoints=a.max_keypoints,
        descriptor=a.descriptor,
        descriptor_weights=a.descriptor_weights,
        top_k=max(2, a.top_k),
        detector=a.detector,
    )
    t0 = time.time()
    res = match_images(img1, img2, est, cfg, rows=(row,), H=H, keypoints1=kp1, keypoints2=kp2)
    r = res["rows"][row]
    m, err = r["matches"], r["error_px"]
    correct = None if err is None else err <= a.threshold
    out = Path(a.out or "patchpose_match")
    out.mkdir(parents=True, exist_ok=True)
    pic = draw_matches(img1, img2, res["xy1"], res["xy2"], m, correct)
    ok = cv2.imwrite(str(out / "matches.tmp.png"), cv2.cvtColor(pic, cv2.COLOR_RGB2BGR))
    if not ok:
        raise InputError(f"cannot write {out / 'matches.png'}")
    os.replace(out / "matches.tmp.png", out / "matches.png")
    tmp = out / "matches.csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["x1", "y1", "x2", "y2", "distance"] + ([] if err is None else ["error_px"]))
        for i, (p, q) in enumerate(m):
            x1, y1 = res["xy1"][p]
            x2, y2 = res["xy2"][q]
            extra = [] if err is None else [f"{err[i]:.3f}"]
            w.writerow(
                [f"{x1:.2f}", f"{y1:.2f}", f"{x2:.2f}", f"{y2:.2f}", f"{r['distances'][i]:.4f}"] + extra
            )
    os.replace(tmp, out / "matches.csv")
    summary = {
        "pose": a.pose,
        "keypoints": [len(res["xy1"]), len(res["xy2"])],
        "matches": int(len(m)),
        "seconds": round(time.time() - t0, 3),
    }
    if err is not None:
        summary[f"correct@{a.threshold:g}px"] = int(correct.sum())
        summary[f"mma@{a.threshold:g}px"] = float(correct.mean()) if len(m) else 0.0
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=1))
    print(json.dumps(summary))
    print(f"wrote {out}/matches.png, matches.csv, summary.json")
    return 0
