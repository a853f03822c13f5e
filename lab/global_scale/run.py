# ruff: noqa
"""One scale per image from the network (the median of its per-keypoint scales) at keypoints with no scale of
their own (ALIKED, 16 px corners): against 16 px (the gradient peer) and our per-keypoint scale (`pose`).
<= 1,000 keypoints, RootSIFT, MNN, correct <= 3 px; per pair correct / matches."""

import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, get_row, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.candidates import gradient_angles
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
RUN = Run(Describer(), as_estimator("patchpose-v10"), MatchConfig(max_keypoints=1000), PEERS)
root, outp, det = sys.argv[1], sys.argv[2], sys.argv[3]
ALPHAS = (0.0, 0.5)  # frame = global + alpha * (own - global)


def at(f, frame):
    frame = np.broadcast_to(np.asarray(frame, float), (len(f),)).copy()
    return RUN.describer.describe(f.pyramid, f.xy, frame, gradient_angles(f, frame))


out = []
t0 = time.time()
for s in load_hpatches(root):
    if s.kind != "viewpoint":
        continue
    D = {}
    for k in [1, *s.targets]:
        f = detect(s.image(k), 1000, detector=det, peers=PEERS)
        im = Image(f)
        own = np.asarray(get_row("pose").poses(RUN, im)[0])[:, 0]
        g = float(np.median(own))
        D[k] = {
            "xy": f.xy,
            "g16": row_descriptors("dominant_gradient", RUN, im),
            "pose": row_descriptors("pose", RUN, im),
            "frame": g,
        }
        for a in ALPHAS:
            D[k][f"global{a}"] = at(f, g + a * (own - g))
    rec = {"name": s.name, "pairs": {}, "frames": {k: D[k]["frame"] for k in D}}
    for k in s.targets:
        H = s.homographies[k]
        for r in ("g16", "pose", *[f"global{a}" for a in ALPHAS]):
            d1, d2 = D[1][r].reshape(len(D[1]["xy"]), -1), D[k][r].reshape(len(D[k]["xy"]), -1)
            m = mutual_nn(d1, d2)[0]
            err = np.linalg.norm(apply_homography(H, D[1]["xy"][m[:, 0]]) - D[k]["xy"][m[:, 1]], axis=1)
            rec["pairs"].setdefault(r, []).append([int((err <= 3).sum()), int(len(m))])
    out.append(rec)
    print(
        f"{time.time() - t0:.0f}s",
        s.name,
        {r: np.mean([p[0] for p in v]).round(1) for r, v in rec["pairs"].items()},
        flush=True,
    )
Path(outp).write_text(json.dumps(out))
