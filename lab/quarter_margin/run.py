"""LAB (#60): does the quarter search tell when one angle per image failed? Per pair (1, k) of generated viewpoint
sequences, SIFT keypoints (<= 1,000), RootSIFT, MNN: each image described once at its pixels' 4-fold angle
(lab-global-angle-2026-11-30's q4_pixels), image k at the 4 quarter turns (a permutation of SIFT: no new
description); recorded: the mutual matches and correct matches of every quarter, the dominant gradient's and SIFT
with all its orientations' correct matches. Train photos choose (`data/hpatches_train`), test reports.

python lab/quarter_margin/run.py ROOT OUT.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, get_row, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = 1000, 3.0
RUN = Run(Describer(), None, MatchConfig(max_keypoints=MAXKP), None)


def pixel_angle(image):
    g = (
        cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(np.float32)
        if image.ndim == 3
        else image.astype(np.float32)
    )
    g = cv2.GaussianBlur(g, (0, 0), 1.5)
    gx, gy = cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1)
    z = (np.hypot(gx, gy) * np.exp(4j * np.arctan2(-gy, gx))).sum()
    return float(np.mod(np.angle(z) / 4, np.pi / 2))


def main():
    root, outp = sys.argv[1], sys.argv[2]
    out = {"root": root, "sequences": []}
    for s in [s for s in load_hpatches(root) if s.kind == "viewpoint"]:
        ks = [1, *s.targets]
        feats, q4, grad, sall = [], [], [], []
        for k in ks:
            im = s.image(k)
            f = detect(im, MAXKP, detector="sift")
            a = pixel_angle(im)
            if len(f) == 0:
                feats.append(f)
                continue
            feats.append(f)
            q4.append([RUN.describer.describe(f.pyramid, f.xy, f.frame, np.full(len(f), a + q * np.pi / 2))
                       .reshape(len(f), -1) for q in range(4)])  # fmt: skip
            grad.append(row_descriptors("dominant_gradient", RUN, Image(f)).reshape(len(f), -1))
            sall.append(row_descriptors("sift_all", RUN, Image(f)))
        if min(len(f) for f in feats) < 10:  # a featureless image: no pair to judge
            continue
        rec = {"name": s.name, "pairs": []}
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            x1, x2 = feats[0].xy, feats[j].xy

            def correct(m):
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                return int((err <= THR).sum())

            quarters = [mutual_nn(q4[0][0], q4[j][q])[0] for q in range(4)]
            rec["pairs"].append({
                "k": k,
                "quarter_matches": [len(m) for m in quarters],
                "quarter_correct": [correct(m) for m in quarters],
                "gradient": correct(mutual_nn(grad[0], grad[j])[0]),
                "sift_all": correct(mutual_nn(sall[0], sall[j])[0]),
            })  # fmt: skip
        out["sequences"].append(rec)
        print(s.name, [(p["quarter_matches"], p["gradient"]) for p in rec["pairs"]][:2], flush=True)
    Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
