"""dump.py's histograms plus each re-detected keypoint's RootSIFT descriptors at the 36 bin angles (kornia's binning:
bin b at pi - 2 pi b / 36), float16: HA, HB (n, 5, 36); DA, DB (n, 36, 128); dt."""

import sys
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.data.patches import extract_patches
from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import REPEAT_PX
from patchpose.evaluation.metrics import redetections
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import MatchConfig, Run, detect
from patchpose.geometry import apply_homography, pose_change
from patchpose.matching.describe import Describer
from patchpose.matching.gradient import ORI_PATCH, dominant_gradient_histograms

torch.set_num_threads(1)
cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
RUN = Run(Describer(), as_estimator("patchpose-v10"), MatchConfig(max_keypoints=1000), PEERS)
MULTS = np.array([0.5, 0.71, 1.0, 1.41, 2.0])
ANG = np.pi - 2 * np.pi * np.arange(36) / 36


def descs(f, idx):
    n = len(idx)
    d = RUN.describer.describe(
        f.pyramid, np.repeat(f.xy[idx], 36, 0), np.repeat(f.frame[idx], 36), np.tile(ANG, n)
    )
    return d.reshape(n, 36, -1).astype(np.float16)


root, out = sys.argv[1], Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for s in load_hpatches(root):
    if s.kind != "viewpoint" or (out / f"{s.name}.npz").exists():
        continue
    F, Hs = {}, {}
    for k in [1, *s.targets]:
        f = detect(s.image(k), 1000, detector="keynet", peers=PEERS)
        hs = [
            dominant_gradient_histograms(
                extract_patches(f.pyramid, f.xy, f.frame + np.log2(m), np.zeros(len(f)), ORI_PATCH, [1.0])
            )
            for m in MULTS
        ]
        F[k], Hs[k] = f, np.stack(hs, 1).astype(np.float32)
    rec = {}
    for k in s.targets:
        H = s.homographies[k]
        i, j, _ = redetections(apply_homography(H, F[1].xy), F[k].xy, REPEAT_PX)
        ds, dt, ok = pose_change(H, F[1].xy[i])
        i, j, dt = i[ok], j[ok], dt[ok]
        rec[f"A{k}"], rec[f"B{k}"], rec[f"dt{k}"] = Hs[1][i], Hs[k][j], dt.astype(np.float32)
        rec[f"DA{k}"], rec[f"DB{k}"] = descs(F[1], i), descs(F[k], j)
    np.savez_compressed(out / f"{s.name}.npz", **rec)
    print(s.name, {k: len(rec[f"dt{k}"]) for k in s.targets}, flush=True)
