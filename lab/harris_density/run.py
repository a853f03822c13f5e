"""LAB (#60): Harris corners denser than `extract --detector harris` finds them (OpenCV's quality level 0.01 leaves
about a quarter of 2,048), at our scale (patchpose-v10, the recipe `pose`'s) or a LoG scale selection (no network),
described upright in the collection (our votes) or at the gradient's angle; against kornia's scale-space corners at
their own scale, upright. Choose the quality level on val (`patchpose generate hpatches --split val`), report on test.
Pairs (1, k), RootSIFT (kornia), MNN, correct within 3 px of H.

python lab/harris_density/run.py ROOT OUT.json   (a rerun resumes)
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.conventions import REFERENCE_RADIUS
from patchpose.data.keypoints import as_uint8_gray
from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, handcrafted_poses, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.candidates import recipe_poses
from patchpose.matching.collection import upright_collection
from patchpose.matching.describe import Describer
from patchpose.matching.features import features_at
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = 2048, 3.0
EST = as_estimator("patchpose-v10")
RUN = Run(Describer(), EST, MatchConfig(max_keypoints=MAXKP), None)
QUALITY = (0.01, 0.003, 0.001)


def harris(image, q):
    pts = cv2.goodFeaturesToTrack(as_uint8_gray(image), MAXKP, q, 5, useHarrisDetector=True, k=0.04)
    return np.zeros((0, 2)) if pts is None else pts.reshape(-1, 2).astype(np.float64)


def upright(feats, turn_deg):
    n = len(feats)
    return RUN.describer.describe(feats.pyramid, feats.xy, feats.frame, np.full(n, -math.radians(turn_deg))).reshape(n, -1)


def main():
    root, outp = sys.argv[1], sys.argv[2]
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    out = {"root": root, "sequences": []}
    if Path(outp).is_file():
        out = json.loads(Path(outp).read_text())
    done = {r["name"] for r in out["sequences"]}
    for s in seqs:
        if s.name in done:
            continue
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        turns = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
        desc, xys, secs = {}, {}, {}

        def add(row, xy, d, t):
            desc.setdefault(row, []).append(d)
            xys.setdefault(row, []).append(xy)
            secs[row] = secs.get(row, 0.0) + t

        for i, im in enumerate(ims):
            t0 = time.perf_counter()
            ss = detect(im, MAXKP, detector="gftt_scale")
            t_ss = time.perf_counter() - t0
            add("scalespace:own:upright", ss.xy, upright(ss, turns[i]), t_ss)
            for q in QUALITY:
                t0 = time.perf_counter()
                xy = harris(im, q)
                t_h = time.perf_counter() - t0
                t0 = time.perf_counter()
                f = features_at(im, xy)
                poses = recipe_poses(f, EST.estimate(im, xy))
                t_ours = time.perf_counter() - t0
                ours = features_at(im, xy, np.log2(np.maximum(poses.descriptor_radius, 1e-12) / REFERENCE_RADIUS))
                add(f"q{q}:ours:upright", xy, upright(ours, turns[i]), t_h + t_ours)
                add(f"q{q}:ours:gradient", xy,
                    row_descriptors("dominant_gradient", RUN, Image(ours)).reshape(len(xy), -1), t_h + t_ours)
                t0 = time.perf_counter()
                size, _ = handcrafted_poses(features_at(im, xy), scale=True)
                t_log = time.perf_counter() - t0
                add(f"q{q}:log:upright", xy, upright(features_at(im, xy, size), turns[i]), t_h + t_log)
        rec = {"name": s.name, "turns": turns.round(2).tolist(), "seconds": secs, "pairs": {}}
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            for r in desc:
                x1, x2 = xys[r][0], xys[r][j]
                m = mutual_nn(desc[r][0], desc[r][j])[0]
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                rec["pairs"].setdefault(r, []).append([int((err <= THR).sum()), int(len(m)), len(x1), len(x2)])
        out["sequences"].append(rec)
        print(s.name, {r: np.array(v)[:, 0].mean().round(1) for r, v in rec["pairs"].items()}, flush=True)
        Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
