# ruff: noqa
"""Re-centring the read (#60 probe): each keypoint moved by mean shift to the mode of the gradient magnitude under a
Gaussian window of its own scale (covariant: a fixed point of the image content), then the angle (gradient's and
the network's) read there. Within +-5 deg at re-detected keypoints, val sequences. Diagnostic first."""
import json
import math
import sys

import cv2
import numpy as np
import torch

from patchpose.data.patches import extract_patches
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import REPEAT_PX
from patchpose.evaluation.metrics import redetections
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import detect, framed_poses
from patchpose.geometry import apply_homography, pose_change
from patchpose.matching.candidates import gradient_angles
from patchpose.matching.features import features_at
from patchpose import PatchPoseEstimator
from patchpose.conventions import REFERENCE_RADIUS

torch.set_num_threads(1)
cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
P = 32
yy, xx = np.mgrid[:P, :P] - (P - 1) / 2


def recenter(f, span=2.0, sigma=0.5, iters=8):
    """span: patch half-width in detector radii; sigma: Gaussian window in detector radii."""
    xy = f.xy.copy()
    frame = f.frame
    px = 2 * REFERENCE_RADIUS * span * np.exp2(frame) / P  # image px per patch px
    g = np.exp(-(xx**2 + yy**2) / (2 * (sigma / span * P / 2) ** 2))
    for _ in range(iters):
        p = extract_patches(f.pyramid, xy, frame, np.zeros(len(xy)), P, [span])[:, 0]
        gy, gx = np.gradient(p, axis=(1, 2))
        w = np.hypot(gx, gy) * g
        s = w.sum((1, 2)) + 1e-9
        d = np.stack([(w * xx).sum((1, 2)) / s, (w * yy).sum((1, 2)) / s], 1)
        xy = xy + d * px[:, None]
    h, w = f.pyramid.levels[0].shape[:2]
    return np.clip(xy, 0, [w - 1, h - 1])


def ang_err(a, b, dt):
    return np.degrees(np.abs(np.angle(np.exp(1j * (b - a - dt)))))


def main(root, det, out, variants):
    est = PatchPoseEstimator.from_pretrained("patchpose-v10")
    res = {}
    for s in load_hpatches(root):
        if s.kind != "viewpoint":
            continue
        F = {k: detect(s.image(k), 1000, detector=det, peers=PEERS) for k in [1, *s.targets]}
        R = {}
        for k, f in F.items():
            R[k] = {"kp": f}
            for v in variants:
                R[k][v] = features_at(f.image, recenter(f, *VARS[v]), f.frame)
        for k in s.targets:
            H = s.homographies[k]
            i, j, _ = redetections(apply_homography(H, F[1].xy), F[k].xy, REPEAT_PX)
            ds, dt, ok = pose_change(H, F[1].xy[i])
            i, j, dt = i[ok], j[ok], dt[ok]
            # oracle: B read at the true position of A's keypoint, with B's detector frame
            orc = features_at(F[k].image, apply_homography(H, F[1].xy[i]), F[k].frame[j])
            row = {"n": int(len(i))}
            for v in ["kp", *variants]:
                A, B = R[1][v], R[k][v]
                off = np.linalg.norm(apply_homography(H, A.xy[i]) - B.xy[j], axis=1)
                ga, gb = gradient_angles(A, A.frame)[i], gradient_angles(B, B.frame)[j]
                na = np.asarray(framed_poses(est, A).orientation).reshape(len(A), -1)[i, 0]
                nb = np.asarray(framed_poses(est, B).orientation).reshape(len(B), -1)[j, 0]
                row[v] = {"off_med": float(np.median(off)), "off_le05": int((off <= 0.5).sum()),
                          "grad5": int((ang_err(ga, gb, dt) <= 5).sum()), "net5": int((ang_err(na, nb, dt) <= 5).sum())}
            ga = gradient_angles(F[1], F[1].frame)[i]
            na = np.asarray(framed_poses(est, F[1]).orientation).reshape(len(F[1]), -1)[i, 0]
            go = gradient_angles(orc, orc.frame)
            no = np.asarray(framed_poses(est, orc).orientation).reshape(len(orc), -1)[:, 0]
            orc2 = features_at(F[k].image, apply_homography(H, F[1].xy[i]), F[1].frame[i] + ds[ok])
            go2 = gradient_angles(orc2, orc2.frame)
            no2 = np.asarray(framed_poses(est, orc2).orientation).reshape(len(orc2), -1)[:, 0]
            row["oracle_scale"] = {"grad5": int((ang_err(ga, go2, dt) <= 5).sum()), "net5": int((ang_err(na, no2, dt) <= 5).sum())}
            kb = features_at(F[k].image, F[k].xy[j], F[1].frame[i] + ds[ok])
            gk = gradient_angles(kb, kb.frame)
            nk = np.asarray(framed_poses(est, kb).orientation).reshape(len(kb), -1)[:, 0]
            row["true_scale_only"] = {"grad5": int((ang_err(ga, gk, dt) <= 5).sum()), "net5": int((ang_err(na, nk, dt) <= 5).sum())}
            row["oracle"] = {"grad5": int((ang_err(ga, go, dt) <= 5).sum()), "net5": int((ang_err(na, no, dt) <= 5).sum())}
            res[f"{s.name}/{k}"] = row
            print(s.name, k, json.dumps(row), flush=True)
        json.dump(res, open(out, "w"))


VARS = {"s2w05": (2.0, 0.5), "s2w1": (2.0, 1.0), "s3w15": (3.0, 1.5)}
if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], [v for v in sys.argv[4].split(",") if v] if len(sys.argv) > 4 else list(VARS))
