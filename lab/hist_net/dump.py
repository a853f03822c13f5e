"""Multi-window gradient histograms at re-detected Key.Net keypoints: per pair (1, k) of each viewpoint sequence,
HA, HB (n, W, 36) and the true angle change dt (radians CCW)."""

import sys
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.data.patches import extract_patches
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import REPEAT_PX
from patchpose.evaluation.metrics import redetections
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import detect
from patchpose.geometry import apply_homography, pose_change
from patchpose.matching.gradient import ORI_PATCH, dominant_gradient_histograms

torch.set_num_threads(1)
cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
MULTS = np.array([0.5, 0.71, 1.0, 1.41, 2.0])
root, out = sys.argv[1], Path(sys.argv[2])
det = sys.argv[3] if len(sys.argv) > 3 else "keynet"
out.mkdir(parents=True, exist_ok=True)
for s in load_hpatches(root):
    if s.kind != "viewpoint" or (out / f"{s.name}.npz").exists():
        continue
    F, Hs = {}, {}
    for k in [1, *s.targets]:
        f = detect(s.image(k), 1000, detector=det, peers=PEERS)
        hs = []
        for m in MULTS:
            p = extract_patches(f.pyramid, f.xy, f.frame + np.log2(m), np.zeros(len(f)), ORI_PATCH, [1.0])
            hs.append(dominant_gradient_histograms(p))
        F[k], Hs[k] = f, np.stack(hs, 1).astype(np.float32)
    rec = {}
    for k in s.targets:
        H = s.homographies[k]
        i, j, _ = redetections(apply_homography(H, F[1].xy), F[k].xy, REPEAT_PX)
        ds, dt, ok = pose_change(H, F[1].xy[i])
        i, j, dt = i[ok], j[ok], dt[ok]
        rec[f"A{k}"], rec[f"B{k}"], rec[f"dt{k}"] = Hs[1][i], Hs[k][j], dt.astype(np.float32)
    np.savez_compressed(out / f"{s.name}.npz", **rec)
    print(s.name, {k: len(rec[f"dt{k}"]) for k in s.targets}, flush=True)
