# ruff: noqa
"""Probe: each keypoint's gradient angle snapped to its image's 4-fold grid C + k*90 deg (C: the image's dominant
direction modulo 90 deg, from its gradient field: arg of sum |g| e^{4 i theta} / 4). Within +-5 deg at re-found
keypoints, val."""
import json, sys, math
import cv2, numpy as np, torch
from patchpose import PatchPoseEstimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import REPEAT_PX
from patchpose.evaluation.metrics import redetections
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import detect, framed_poses
from patchpose.geometry import apply_homography, pose_change
from patchpose.matching.candidates import gradient_angles
torch.set_num_threads(1); cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")

def err(a, b, dt):
    return np.degrees(np.abs(np.angle(np.exp(1j * (b - a - dt)))))

def c4(img, sigma, fold=4):
    g = img if img.ndim == 2 else cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    mask = cv2.erode((g > 0).astype(np.uint8), np.ones((3, 3), np.uint8), iterations=int(3 * sigma) + 3)
    g = cv2.GaussianBlur(g.astype(np.float32), (0, 0), sigma)
    gx = cv2.Sobel(g, cv2.CV_32F, 1, 0); gy = cv2.Sobel(g, cv2.CV_32F, 0, 1)
    mag = np.hypot(gx, gy) * mask; ang = np.arctan2(-gy, gx)
    z = (mag * np.exp(1j * fold * ang)).sum()
    return float(np.angle(z) / fold), float(abs(z) / max(float(mag.sum()), 1e-9))

def snap(a, c, fold=4):
    q = 2 * np.pi / fold
    return c + q * np.round((a - c) / q)

def main(root, out, det):
    est = PatchPoseEstimator.from_pretrained("patchpose-v10")
    res = {}
    for s in load_hpatches(root):
        if s.kind != "viewpoint": continue
        ims = {k: s.image(k) for k in [1, *s.targets]}
        F = {k: detect(im, 1000, detector=det, peers=PEERS) for k, im in ims.items()}
        G = {k: gradient_angles(f, f.frame) for k, f in F.items()}
        N = {k: np.asarray(framed_poses(est, f).orientation).reshape(len(f), -1)[:, 0] for k, f in F.items()}
        C = {k: {sg: c4(ims[k], sg) for sg in (2, 4, 8)} for k in ims}
        C2 = {k: c4(ims[k], 4, 2) for k in ims}
        for k in s.targets:
            H = s.homographies[k]
            i, j, _ = redetections(apply_homography(H, F[1].xy), F[k].xy, REPEAT_PX)
            ds, dt, ok = pose_change(H, F[1].xy[i])
            i, j, dt = i[ok], j[ok], dt[ok]
            h, w = ims[1].shape[:2]
            dtc = pose_change(H, np.array([[w / 2, h / 2]]))[1][0]
            row = {"n": int(len(i))}
            for th in (5, 10, 20, 45):
                row[f"grad@{th}"] = int((err(G[1][i], G[k][j], dt) <= th).sum())
                ca, cb = C[1][2][0], C[k][2][0]
                row[f"snapg2@{th}"] = int((err(snap(G[1][i], ca), snap(G[k][j], cb), dt) <= th).sum())
            for sg in (2, 4, 8):
                ca, cb = C[1][sg][0], C[k][sg][0]
                row[f"c4_{sg}_err"] = float(np.degrees(abs(np.angle(np.exp(4j * (cb - ca - dtc))))) / 4)
                row[f"snapg{sg}"] = int((err(snap(G[1][i], ca), snap(G[k][j], cb), dt) <= 5).sum())
                row[f"snapn{sg}"] = int((err(snap(N[1][i], ca), snap(N[k][j], cb), dt) <= 5).sum())
                row[f"coh{sg}"] = round(float(C[1][sg][1]), 3)
            ca, cb = C2[1][0], C2[k][0]
            row["snap2g"] = int((err(snap(G[1][i], ca, 2), snap(G[k][j], cb, 2), dt) <= 5).sum())
            res[f"{s.name}/{k}"] = row
            print(s.name, k, json.dumps(row), flush=True)
    json.dump(res, open(out, "w"))
    n = sum(r["n"] for r in res.values())
    for m in [k for k in next(iter(res.values())) if k != "n" and not k.endswith("err") and not k.startswith("coh")]:
        print(m, round(100 * sum(r[m] for r in res.values()) / n, 1))
    for sg in (2, 4, 8):
        e = np.array([r[f"c4_{sg}_err"] for r in res.values()])
        print("c4", sg, "pairs within 5:", round((e <= 5).mean(), 3), "within 2:", round((e <= 2).mean(), 3))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "keynet")
