"""LAB (#61, #63): COLMAP's SIFT keypoints described upright relative to the collection: each photo's keypoints at
one angle, minus the photo's collection turn (ours: upright_collection's votes; sift: SIFT's pairwise turns averaged
alike, no network), one descriptor per location; against COLMAP's own, `sift` (SIFT's own orientations) and
`upright` (angle 0). No resampling: the descriptor is read turned.

python lab/upright_sift/run.py SET_FOLDER OUT --sets upright turned --poses colmap sift upright upright_ours upright_sift --seeds 0
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from patchpose.evaluation.colmap_eval import (
    SIFT_WINDOW,
    reconstruct_at,
    sift_collection_turns,
    turn_every_other,
)
from patchpose.integrations.colmap import _images, run_reconstruction
from patchpose.integrations.opencv import sift_descriptors
from patchpose.matching.collection import upright_collection
from patchpose.data.patches import load_image


def turns_of(folder: Path, source: str) -> tuple[list[str], np.ndarray, float]:
    names = _images(folder)
    images = [load_image(folder / n) for n in names]
    t0 = time.perf_counter()
    got = (
        upright_collection(images, estimator="patchpose-v10")
        if source == "ours"
        else sift_collection_turns(images)
    )
    return names, np.asarray(got.degrees, float), time.perf_counter() - t0


def run_turned(folder: Path, out: Path, source: str, seed: int) -> dict:
    names, deg, secs = turns_of(folder, source)
    shapes = [load_image(folder / n).shape[:2] for n in names]
    calls = {"k": 0}

    def describe(feats):
        k = calls["k"]
        calls["k"] += 1
        assert feats.image.shape[:2] == shapes[k], (k, feats.image.shape, shapes[k])
        xy, scale = feats.xy, feats.sift_scale - SIFT_WINDOW
        ori = np.full(len(xy), -np.radians(deg[k]))
        return {
            "xy": xy,
            "scale": scale,
            "ori": ori,
            "descriptors": sift_descriptors(feats.image, xy, scale, ori),
        }

    settings = {
        "pose": f"upright_{source}",
        "keypoints": "colmap",
        "turns": [round(float(t), 3) for t in deg],
    }
    doc = run_reconstruction(folder, out, settings, describe=describe, seed=seed, threads=1)
    doc["turn_seconds"] = secs
    doc["turns"] = dict(zip(names, [round(float(t), 2) for t in deg]))
    return doc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("images", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--sets", nargs="+", default=["upright", "turned"])
    ap.add_argument(
        "--poses", nargs="+", default=["colmap", "sift", "upright", "upright_ours", "upright_sift"]
    )
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for s in a.sets:
        folder = (
            a.images
            if s == "upright"
            else turn_every_other(
                a.images,
                a.out / f"frames_{s}",
                first=0 if s == "turned_first" else 1,
                any_angle=s == "turned_any",
            )
        )
        for pose in a.poses:
            for seed in a.seeds:
                out = a.out / s / f"{pose}-seed{seed}"
                t0 = time.perf_counter()
                if pose.startswith("upright_"):
                    doc = run_turned(folder, out, pose.split("_", 1)[1], seed)
                else:
                    doc = reconstruct_at(folder, out, pose, seed=seed, threads=1)
                st = doc.get("stats", doc)
                row = {
                    "set": s,
                    "pose": pose,
                    "seed": seed,
                    "seconds": round(time.perf_counter() - t0, 1),
                    **{
                        k: st.get(k)
                        for k in (
                            "registered",
                            "points3D",
                            "distinct_points3D",
                            "observations",
                            "track_length",
                            "reprojection_px",
                            "models",
                        )
                    },
                    "turns": doc.get("turns"),
                    "turn_seconds": doc.get("turn_seconds"),
                }
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "turns"}), flush=True)
                (a.out / "rows.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
