# ruff: noqa: UP031
import sys

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
from patchpose.matching.gradient import ORI_PATCH, dominant_gradient_candidates

torch.set_num_threads(1)
cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
root = sys.argv[1]
det = sys.argv[2] if len(sys.argv) > 2 else "keynet"


def d(a):
    return np.degrees(np.abs(np.angle(np.exp(1j * a))))


E = []  # per pair of redetected keypoints: errors of candidate combos
for s in load_hpatches(root):
    if s.kind != "viewpoint":
        continue
    ims = {k: s.image(k) for k in [1, *s.targets]}
    F = {k: detect(im, 1000, detector=det, peers=PEERS) for k, im in ims.items()}
    C = {}
    for k, f in F.items():
        p = extract_patches(f.pyramid, f.xy, f.frame, np.zeros(len(f)), ORI_PATCH, [1.0])
        C[k] = dominant_gradient_candidates(p, 3)
    for k in s.targets:
        H = s.homographies[k]
        i, j, _ = redetections(apply_homography(H, F[1].xy), F[k].xy, REPEAT_PX)
        ds, dt, ok = pose_change(H, F[1].xy[i])
        i, j, dt = i[ok], j[ok], dt[ok]
        o1, m1 = C[1][0][i], C[1][1][i]
        ok_, mk = C[k][0][j], C[k][1][j]
        err = d(ok_[:, None, :] - o1[:, :, None] - dt[:, None, None])  # (n, 3 cand A, 3 cand B)
        r1 = m1[:, 1] / np.maximum(m1[:, 0], 1e-12)
        rk = mk[:, 1] / np.maximum(mk[:, 0], 1e-12)
        E.append(np.c_[err.reshape(len(i), 9), r1, rk])
    print(s.name, len(E[-1]), flush=True)
E = np.concatenate(E)
e = E[:, :9].reshape(-1, 3, 3)
r1, rk = E[:, 9], E[:, 10]
top1 = e[:, 0, 0]
print("n", len(e))
print("top1 within 5: %.3f, 10: %.3f" % ((top1 <= 5).mean(), (top1 <= 10).mean()))
print("top1 fails: 5-20 deg %.3f, >20 %.3f" % (((top1 > 5) & (top1 <= 20)).mean(), (top1 > 20).mean()))
print("oracle top2 both (any consistent choice) within 5: %.3f" % ((e[:, :2, :2].min((1, 2)) <= 5).mean()))
print("oracle top3: %.3f" % ((e.min((1, 2)) <= 5).mean()))
print(
    "top1 ok where both second peaks < 0.5: %.3f (share %.3f)"
    % ((top1[(r1 < 0.5) & (rk < 0.5)] <= 5).mean(), ((r1 < 0.5) & (rk < 0.5)).mean())
)
print("flip (A1~B2 or A2~B1) share: %.3f" % (((e[:, 0, 1] <= 5) | (e[:, 1, 0] <= 5)).mean()))
