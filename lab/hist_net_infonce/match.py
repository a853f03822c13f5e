"""Key.Net keypoints (<= 1,000), RootSIFT at the detector's scale, MNN, correct <= 3 px: the gradient's angle
(`pose`), the learned histogram network's, OriNet's. Per pair correct / matches; within +-5 at re-detections."""

import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch
from train import Net, angle

from patchpose.data.patches import extract_patches
from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, get_row, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.describe import Describer
from patchpose.matching.gradient import ORI_PATCH, dominant_gradient_histograms
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
RUN = Run(Describer(), as_estimator("patchpose-v10"), MatchConfig(max_keypoints=1000), PEERS)
MULTS = np.array([0.5, 0.71, 1.0, 1.41, 2.0])
root, outp, netp = sys.argv[1], sys.argv[2], sys.argv[3]
det = sys.argv[4] if len(sys.argv) > 4 else "keynet"
ck = torch.load(netp, weights_only=True)
net = Net(len(ck["wins"]), ck["ch"], ck["layers"])
net.load_state_dict(ck["state"])
net.eval()
ref = ck["wins"].index(2)


def learned(f):
    hs = [
        dominant_gradient_histograms(
            extract_patches(f.pyramid, f.xy, f.frame + np.log2(m), np.zeros(len(f)), ORI_PATCH, [1.0])
        )
        for m in MULTS
    ]
    h = torch.tensor(np.stack(hs, 1)[:, ck["wins"]], dtype=torch.float32)
    with torch.no_grad():
        return np.mod(angle(net(h, ref)).double().numpy(), 2 * np.pi)


out = []
t0 = time.time()
for s in load_hpatches(root):
    if s.kind != "viewpoint":
        continue
    D = {}
    for k in [1, *s.targets]:
        f = detect(s.image(k), 1000, detector=det, peers=PEERS)
        g = np.asarray(get_row("pose").poses(RUN, Image(f))[1])[:, 0]
        lrn = learned(f)
        D[k] = {
            "xy": f.xy,
            "pose": row_descriptors("pose", RUN, Image(f)),
            "pose_again": RUN.describer.describe(f.pyramid, f.xy, f.frame, g),
            "learned": RUN.describer.describe(f.pyramid, f.xy, f.frame, lrn),
            "orinet": row_descriptors("orinet", RUN, Image(f)),
        }
    rec = {"name": s.name, "pairs": {}}
    for k in s.targets:
        H = s.homographies[k]
        for r in ("pose", "pose_again", "learned", "orinet"):
            m = mutual_nn(D[1][r], D[k][r])[0]
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
