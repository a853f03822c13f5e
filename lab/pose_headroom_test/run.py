# ruff: noqa
"""Headroom (#60): where correct matches are lost at Key.Net keypoints one image at a time. The `pose` recipe
(Key.Net's scale, the gradient's angle on that window, RootSIFT, MNN, correct within 3 px) against oracles in image k
at the keypoints found again (within 1.5 px of image 1's mapped): the true angle (image 1's + H's turn), the true
scale (image 1's + H's scale change), both, and both at the true position. Val sequences; here also test, and SIFT with all its orientations at SIFT keypoints."""
import json, sys
import cv2, numpy as np, torch
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import REPEAT_PX
from patchpose.evaluation.metrics import redetections
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import detect
from patchpose.geometry import apply_homography, pose_change
from patchpose.matching.candidates import gradient_angles, sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.features import features_at
from patchpose.matching.matcher import mutual_nn
torch.set_num_threads(1); cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
D = Describer()

def desc(f, s, o):
    return D.describe(f.pyramid, f.xy, s, o)

def score(d1, d2, xy1, xy2, H):
    m = mutual_nn(d1, d2)[0]
    if len(m) == 0:
        return 0, 0
    e = np.linalg.norm(apply_homography(H, xy1[m[:, 0]]) - xy2[m[:, 1]], axis=1)
    return int((e <= 3).sum()), int(len(m))

def sift_all_descriptors_count(f):
    from patchpose.matching.candidates import sift_all_counts
    return sift_all_counts(f).sum()

def main(root, out, det):
    res = {}
    for s in load_hpatches(root):
        if s.kind != "viewpoint": continue
        F = {k: detect(s.image(k), 1000, detector=det, peers=PEERS) for k in [1, *s.targets]}
        A = F[1]; sa, oa = A.frame, gradient_angles(A, A.frame)
        da = desc(A, sa, oa)
        for k in s.targets:
            H = s.homographies[k]; B = F[k]
            sb, ob = B.frame.copy(), gradient_angles(B, B.frame).copy()
            i, j, _ = redetections(apply_homography(H, A.xy), B.xy, REPEAT_PX)
            ds, dt, ok = pose_change(H, A.xy[i]); i, j, ds, dt = i[ok], j[ok], ds[ok], dt[ok]
            row = {"n1": len(A), "n2": len(B), "refound": int(len(i))}
            row["pose"] = score(da, desc(B, sb, ob), A.xy, B.xy, H)
            o2 = ob.copy(); o2[j] = oa[i] + dt
            row["true_angle"] = score(da, desc(B, sb, o2), A.xy, B.xy, H)
            s2 = sb.copy(); s2[j] = sa[i] + ds
            row["true_scale"] = score(da, desc(B, s2, ob), A.xy, B.xy, H)
            # true scale, and the gradient read on that window (the angle follows the scale)
            g2 = gradient_angles(B, s2)
            row["true_scale_grad"] = score(da, desc(B, s2, g2), A.xy, B.xy, H)
            row["true_both"] = score(da, desc(B, s2, o2), A.xy, B.xy, H)
            xy2 = B.xy.copy(); xy2[j] = apply_homography(H, A.xy[i])
            Bt = features_at(B.image, xy2, B.frame)
            row["true_all"] = score(da, desc(Bt, s2, o2), A.xy, Bt.xy, H)
            if det == "sift":
                row["sift_all"] = score(sift_all_descriptors(A, D), sift_all_descriptors(B, D), A.xy, B.xy, H)
                row["desc_sift_all"] = [int(sift_all_descriptors_count(A)), int(sift_all_descriptors_count(B))]
            res[f"{s.name}/{k}"] = row
            print(s.name, k, json.dumps(row), flush=True)
        json.dump(res, open(out, "w"))
    keys = [k for k in next(iter(res.values())) if isinstance(next(iter(res.values()))[k], list)]
    for kk in keys:
        c = np.mean([r[kk][0] for r in res.values()]); m = np.mean([r[kk][1] for r in res.values()])
        mma = np.mean([r[kk][0] / max(r[kk][1], 1) for r in res.values()])
        print(f"{kk}: correct {c:.1f} matches {m:.1f} MMA@3 {mma:.3f}")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "keynet")
