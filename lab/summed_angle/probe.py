# ruff: noqa
"""Probe (#60 goal 3): the gradient's angle at re-found Key.Net keypoints with a per-keypoint characteristic scale
(scale-normalised LoG maximum about Key.Net's scale, Harris-Laplace style) and with histograms summed over scales.
Val viewpoint sequences; within +-5 deg of the true change."""
import json, sys
import cv2, numpy as np, torch
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import REPEAT_PX
from patchpose.evaluation.metrics import redetections
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import detect
from patchpose.geometry import apply_homography, pose_change
from patchpose.matching.candidates import gradient_angles, _window_patches
from patchpose.matching.gradient import dominant_gradient_histograms, as_orientation_hist, histogram_candidates
from patchpose.conventions import REFERENCE_RADIUS

torch.set_num_threads(1); cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
G = np.arange(0.0, 6.51, 1 / 8)  # log2 sigma grid
T = np.arange(-1.0, 1.001, 1 / 8)

def err(a, b, dt):
    return np.degrees(np.abs(np.angle(np.exp(1j * (b - a - dt)))))

def bilinear(img, xy):
    h, w = img.shape
    x = np.clip(xy[:, 0], 0, w - 1.001); y = np.clip(xy[:, 1], 0, h - 1.001)
    x0 = np.floor(x).astype(int); y0 = np.floor(y).astype(int); fx = x - x0; fy = y - y0
    return (img[y0, x0] * (1 - fx) * (1 - fy) + img[y0, x0 + 1] * fx * (1 - fy) + img[y0 + 1, x0] * (1 - fx) * fy + img[y0 + 1, x0 + 1] * fx * fy)

def log_stack(f):
    gray = f.pyramid.levels[0].astype(np.float32)
    if gray.max() > 1.5: gray = gray / 255.0
    out = np.empty((len(G), len(f)))
    for gi, g in enumerate(G):
        s = 2.0 ** g
        L = cv2.GaussianBlur(gray, (0, 0), s)
        lap = cv2.Laplacian(L, cv2.CV_32F, ksize=1)
        out[gi] = s * s * bilinear(lap, f.xy)
    return out  # (len(G), N)

def select(stack, frame, c, mode):
    """t (octaves) about each keypoint's frame: sigma = c * radius * 2^t."""
    base = np.log2(c * REFERENCE_RADIUS) + frame  # log2 sigma at t=0
    idx = np.clip(np.rint((base[None] + T[:, None] - G[0]) * 8).astype(int), 0, len(G) - 1)  # (len(T), N)
    v = np.abs(np.take_along_axis(stack, idx, 0))
    if mode == "max":
        k = v.argmax(0)
    else:  # local max nearest t=0, else global
        n = v.shape[0]
        loc = np.zeros_like(v, bool)
        loc[1:-1] = (v[1:-1] >= v[:-2]) & (v[1:-1] >= v[2:])
        d = np.where(loc, np.abs(T)[:, None], np.inf)
        k = np.where(np.isfinite(d.min(0)), d.argmin(0), v.argmax(0))
    return T[k]

def hist_angle(H):
    _, idx = None, None
    pos = histogram_candidates(H, 1)[0][:, 0]
    return pos

def summed(f, frames):
    H = sum(dominant_gradient_histograms(_window_patches(f, fr)) / np.maximum(dominant_gradient_histograms(_window_patches(f, fr)).sum(1, keepdims=True), 1e-12) for fr in frames)
    return H

def main(root, out):
    res = {}
    for s in load_hpatches(root):
        if s.kind != "viewpoint": continue
        F = {k: detect(s.image(k), 1000, detector="keynet", peers=PEERS) for k in [1, *s.targets]}
        ST = {k: log_stack(f) for k, f in F.items()}
        SEL = {}
        for k, f in F.items():
            for c in (0.25, 0.5):
                for mode in ("max", "near"):
                    SEL[(k, c, mode)] = select(ST[k], f.frame, c, mode)
        for k in s.targets:
            H = s.homographies[k]
            i, j, _ = redetections(apply_homography(H, F[1].xy), F[k].xy, REPEAT_PX)
            ds, dt, ok = pose_change(H, F[1].xy[i])
            i, j, dt, ds = i[ok], j[ok], dt[ok], ds[ok]
            A, B = F[1], F[k]
            row = {"n": int(len(i))}
            row["det"] = int((err(gradient_angles(A, A.frame)[i], gradient_angles(B, B.frame)[j], dt) <= 5).sum())
            row["det_serr"] = float(np.median(np.abs(B.frame[j] - A.frame[i] - ds)))
            for c in (0.25, 0.5):
                for mode in ("max", "near"):
                    ta, tb = SEL[(1, c, mode)], SEL[(k, c, mode)]
                    fa, fb = A.frame + ta, B.frame + tb
                    row[f"log{c}{mode}_serr"] = float(np.median(np.abs(fb[j] - fa[i] - ds)))
                    for o in (-0.5, 0.0, 0.5):
                        row[f"log{c}{mode}{o:+g}"] = int((err(gradient_angles(A, fa + o)[i], gradient_angles(B, fb + o)[j], dt) <= 5).sum())
            for name, offs in (("sum1", (0,)), ("sum3", (-0.5, 0, 0.5)), ("sum5", (-1, -0.5, 0, 0.5, 1)), ("sumup", (0, 0.5, 1))):
                ha = summed(A, [A.frame + o for o in offs]); hb = summed(B, [B.frame + o for o in offs])
                # angle via the same peak reading as the gradient: histogram_candidates returns kornia-bin positions;
                # compare through as_orientation_hist peak (consistent in both images)
                aa = histogram_candidates(ha, 1)[0][:, 0]; ab = histogram_candidates(hb, 1)[0][:, 0]
                row[name] = int((err(aa[i], ab[j], dt) <= 5).sum())
            res[f"{s.name}/{k}"] = row
            print(s.name, k, json.dumps(row), flush=True)
        json.dump(res, open(out, "w"))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
