"""dump.py's 5 smoothed windows plus unsmoothed gradient histograms over rings and Gaussian disks of one 64 px
patch covering twice the window (same sampling as the 32 px window patch): HA, HB (n, 5 + R, 36)."""

import math
import sys
from pathlib import Path

import cv2
import kornia
import numpy as np
import torch
from kornia.feature.orientation import _gradient_magnitude_orientation as magnitude_orientation

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
P = 64
yy, xx = np.mgrid[:P, :P] - (P - 1) / 2
RAD = np.hypot(xx, yy)
EDGES = [0, 3, 6, 10, 14, 20, 26, 32]
MASKS = [((RAD >= a) & (RAD < b)).astype(np.float32) for a, b in zip(EDGES[:-1], EDGES[1:])]
MASKS += [np.exp(-(RAD**2) / (2 * s**2)).astype(np.float32) for s in (2.5, 5.0, 10.0)]
W = torch.tensor(np.stack(MASKS))  # (R, P, P)
GRAD = kornia.filters.SpatialGradient("sobel", 1)


def ring_hists(patches, b=36):
    out = []
    for i in range(0, len(patches), 512):
        p = torch.from_numpy(np.ascontiguousarray(patches[i : i + 512], np.float32))
        g = GRAD(p)
        mag, ang = magnitude_orientation(g[:, :, 0], g[:, :, 1], 1e-8)  # (n,1,P,P)
        pos = b * (ang + math.pi) / (2 * math.pi)
        lo = torch.floor(pos)
        fr = pos - lo
        idx = lo.long() % b
        oh = torch.zeros(len(p), b, P, P)
        oh.scatter_add_(1, idx, (1 - fr) * mag)
        oh.scatter_add_(1, (idx + 1) % b, fr * mag)
        out.append(torch.einsum("nbxy,rxy->nrb", oh, W))
    return torch.cat(out).numpy() if out else np.zeros((0, len(W), b), np.float32)


def feats_of(f):
    hs = [
        dominant_gradient_histograms(
            extract_patches(f.pyramid, f.xy, f.frame + np.log2(m), np.zeros(len(f)), ORI_PATCH, [1.0])
        )
        for m in MULTS
    ]
    r = ring_hists(extract_patches(f.pyramid, f.xy, f.frame + 1.0, np.zeros(len(f)), P, [1.0]))
    return np.concatenate([np.stack(hs, 1), r], 1).astype(np.float32)


if __name__ == "__main__":
    root, out = sys.argv[1], Path(sys.argv[2])
    det = sys.argv[3] if len(sys.argv) > 3 else "keynet"
    out.mkdir(parents=True, exist_ok=True)
    for s in load_hpatches(root):
        if s.kind != "viewpoint" or (out / f"{s.name}.npz").exists():
            continue
        F, Hs = {}, {}
        for k in [1, *s.targets]:
            f = detect(s.image(k), 1000, detector=det, peers=PEERS)
            F[k], Hs[k] = f, feats_of(f)
        rec = {}
        for k in s.targets:
            H = s.homographies[k]
            i, j, _ = redetections(apply_homography(H, F[1].xy), F[k].xy, REPEAT_PX)
            ds, dt, ok = pose_change(H, F[1].xy[i])
            i, j, dt = i[ok], j[ok], dt[ok]
            rec[f"A{k}"], rec[f"B{k}"], rec[f"dt{k}"] = Hs[1][i], Hs[k][j], dt.astype(np.float32)
        np.savez_compressed(out / f"{s.name}.npz", **rec)
        print(s.name, {k: len(rec[f"dt{k}"]) for k in s.targets}, flush=True)
