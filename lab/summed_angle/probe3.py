# ruff: noqa
"""Probe 2 (#60 goal 3): the gradient's histogram summed over windows of several scales about the detector's;
and with the network's (v10) histogram added. Within +-5 deg at re-found keypoints, val."""
import json, sys
import cv2, numpy as np, torch
from patchpose import PatchPoseEstimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import REPEAT_PX
from patchpose.evaluation.metrics import redetections
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import detect, framed_poses
from patchpose.geometry import apply_homography, pose_change
from patchpose.matching.candidates import gradient_angles, _window_patches
from patchpose.matching.gradient import dominant_gradient_histograms, as_orientation_hist, histogram_candidates

torch.set_num_threads(1); cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
B = 36
FLIP = (B // 2 - np.arange(B)) % B

def err(a, b, dt):
    return np.degrees(np.abs(np.angle(np.exp(1j * (b - a - dt)))))

def hist(f, o, norm=True):
    key = ("h", o, norm)
    if key not in f.memo:
        h = dominant_gradient_histograms(_window_patches(f, f.frame + o))
        f.memo[key] = h / np.maximum(h.sum(1, keepdims=True), 1e-12) if norm else h
    return f.memo[key]

def peak(hk):
    return histogram_candidates(hk, 1)[0][:, 0]

V = {
    "sum1": [(0, 1)], "sum3": [(o, 1) for o in (-0.5, 0, 0.5)],
    "sum5": [(o, 1) for o in (-1, -0.5, 0, 0.5, 1)],
    "sum7": [(o, 1) for o in (-1.5, -1, -0.5, 0, 0.5, 1, 1.5)],
    "sum9": [(o, 1) for o in np.arange(-2, 2.01, 0.5)],
    "sum9q": [(o, 1) for o in np.arange(-1, 1.01, 0.25)],
    "sum5g": [(o, float(np.exp(-o * o / 2))) for o in (-1, -0.5, 0, 0.5, 1)],
    "sum5up": [(o, 1) for o in (-0.5, 0, 0.5, 1, 1.5)],
    "sum7up": [(o, 1) for o in (-1, -0.5, 0, 0.5, 1, 1.5, 2)],
}

def main(root, out, kinds, det):
    est = PatchPoseEstimator.from_pretrained("patchpose-v10")
    res = {}
    for s in load_hpatches(root):
        if s.kind not in kinds: continue
        F = {k: detect(s.image(k), 1000, detector=det, peers=PEERS) for k in [1, *s.targets]}
        A = {}
        for k, f in F.items():
            a = {"det": gradient_angles(f, f.frame)}
            for name, ws in V.items():
                a[name] = peak(sum(w * hist(f, o) for o, w in ws))
            a["sum5raw"] = peak(sum(hist(f, o, False) for o in (-1, -0.5, 0, 0.5, 1)))
            nh = np.asarray(framed_poses(est, f).orientation_hist).reshape(len(f), -1, B)[:, 0]
            a["net"] = np.asarray(framed_poses(est, f).orientation).reshape(len(f), -1)[:, 0]
            g5 = sum(hist(f, o) for o in (-1, -0.5, 0, 0.5, 1)) / 5
            A[k] = a
        for k in s.targets:
            H = s.homographies[k]
            i, j, _ = redetections(apply_homography(H, F[1].xy), F[k].xy, REPEAT_PX)
            ds, dt, ok = pose_change(H, F[1].xy[i])
            i, j, dt = i[ok], j[ok], dt[ok]
            row = {"n": int(len(i))}
            for name in ("det", "sum5", "sum3", "net"):
                e = err(A[1][name][i], A[k][name][j], dt)
                for th in (5, 10, 20, 45):
                    row[f"{name}@{th}"] = int((e <= th).sum())
            res[f"{s.name}/{k}"] = row
            print(s.name, k, json.dumps(row), flush=True)
        json.dump(res, open(out, "w"))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4] if len(sys.argv) > 4 else "keynet")
