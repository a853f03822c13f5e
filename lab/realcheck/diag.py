"""Look inside rectify on chosen pairs (upright): python diag.py SET IM1 IM2 [SET IM1 IM2 ...]

Prints: the first pass (ratio matches, RANSAC inliers and how many of those are epipolar-correct), the map against
COLMAP's co-observed points (and the best affine any RANSAC finds on those points: how affine the pair is at all),
the re-detection, where rectify's final matches are correct (near the map or not), and three ablations that reuse
rectify's own map and re-detections: (a) both photos described at SIFT's own scales instead of the fixed 16 px
window; (b) the warped photo's ORIGINAL keypoints (no re-detection) mapped into the warped frame; (c) rectify's
matches kept only where they agree with the map within 10 px.
"""

from __future__ import annotations

import sys

import cv2
import numpy as np
import pycolmap

import patchpose
import realcheck as rc
from patchpose.matching import rectify as R
from patchpose.matching.blend import blend_descriptors, pool_sizes
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.features import detect, sift_detected
from patchpose.matching.matcher import mutual_nn, ratio_matches

cv2.setNumThreads(1)


def described(feats, describer, frame):
    n = len(feats)
    s, o, w = pool_sizes(frame.reshape(n, 1), np.zeros((n, 1)), np.ones((n, 1)))
    k = s.shape[1]
    d = describer.describe(feats.pyramid, np.repeat(feats.xy, k, 0), s.reshape(-1), o.reshape(-1))
    return blend_descriptors(d.reshape(n, k, describer.dim), w)[:, None]


def main(args):
    cache = {}
    for q in range(0, len(args), 3):
        name, n1, n2 = args[q : q + 3]
        if name not in cache:
            cache[name] = pycolmap.Reconstruction(rc.MODEL.format(name))
        rec = cache[name]
        ims = {im.name: im for im in rec.images.values()}
        v1, v2 = rc.View(ims[n1]), rc.View(ims[n2])
        F = rc.fundamental(v1, v2)
        ok = lambda x1, x2: rc.epi_dists(F, v1.undistort_px(x1), v2.undistort_px(x2))[0] <= rc.THR
        o1 = {p.point3D_id: np.asarray(p.xy) - 0.5 for p in ims[n1].points2D if p.has_point3D()}
        o2 = {p.point3D_id: np.asarray(p.xy) - 0.5 for p in ims[n2].points2D if p.has_point3D()}
        ids = sorted(set(o1) & set(o2))
        co1 = np.array([o1[i] for i in ids]); co2 = np.array([o2[i] for i in ids])
        a = cv2.imread(str(rc.DATA / name / n1), cv2.IMREAD_GRAYSCALE)
        b = cv2.imread(str(rc.DATA / name / n2), cv2.IMREAD_GRAYSCALE)
        print(f"\n=== {name} {n1} {n2}  sizes {a.shape[::-1]} {b.shape[::-1]}  COLMAP co-observed {len(ids)}")
        f1, f2 = detect(a, 2000), detect(b, 2000)
        desc = Describer()
        d1, d2 = sift_all_descriptors(f1, desc), sift_all_descriptors(f2, desc)
        rm = ratio_matches(d1, d2)[0]
        x1, x2 = f1.xy[rm[:, 0]], f2.xy[rm[:, 1]]
        c = ok(x1, x2)
        print(f"first pass: kp {len(f1)}/{len(f2)}, ratio+cross-check matches {len(rm)}, epipolar-correct {c.sum()}")
        A = R.fit_affine(x1, x2)
        if len(rm) >= 3:
            A2, inl = cv2.estimateAffine2D(np.float32(x1), np.float32(x2), method=cv2.RANSAC, ransacReprojThreshold=R.AFFINE_PX)
            inl = inl.ravel().astype(bool) if inl is not None else np.zeros(len(rm), bool)
            print(f"  RANSAC inliers {inl.sum()} (MIN_INLIERS {R.MIN_INLIERS}), of which epipolar-correct {int((inl & c).sum())};"
                  f" correct ratio matches that are inliers {int((inl & c).sum())}/{int(c.sum())}")
            if c.sum() >= 3:
                Ac, ic = cv2.estimateAffine2D(np.float32(x1[c]), np.float32(x2[c]), method=cv2.RANSAC, ransacReprojThreshold=R.AFFINE_PX)
                print(f"  RANSAC on the correct ratio matches only: {int(ic.sum())} inliers of {int(c.sum())}")
        if len(co1) >= 3:
            Ag, ig = cv2.estimateAffine2D(np.float32(co1), np.float32(co2), method=cv2.RANSAC, ransacReprojThreshold=3.0)
            Ag10, ig10 = cv2.estimateAffine2D(np.float32(co1), np.float32(co2), method=cv2.RANSAC, ransacReprojThreshold=10.0)
            print(f"  GT: best affine (RANSAC) explains {ig.mean():.2f} of co-observed points within 3 px, {ig10.mean():.2f} within 10 px;"
                  f" GT affine sv {np.round(np.linalg.svd(Ag10[:, :2], compute_uv=False), 3)}")
        if A is None:
            print("  no map (fallback: SIFT all orientations, MNN)")
            continue
        res = np.linalg.norm(co1 @ A[:, :2].T + A[:, 2] - co2, axis=1) if len(co1) else np.zeros(0)
        print(f"  map sv {np.round(np.linalg.svd(A[:, :2], compute_uv=False), 3)} det {np.linalg.det(A[:, :2]):.3f};"
              f" co-observed points within 3/10/30 px of the map: {(res<=3).mean():.2f}/{(res<=10).mean():.2f}/{(res<=30).mean():.2f}")
        m = patchpose.match_pair(a, b, recipe="rectify", max_keypoints=2000)
        first = np.linalg.det(A[:, :2]) > 1.0
        y1, y2 = m.xy1[m.matches[:, 0]], m.xy2[m.matches[:, 1]]
        cm = ok(y1, y2)
        near = np.linalg.norm(y1 @ A[:, :2].T + A[:, 2] - y2, axis=1) <= 10
        print(f"rectify: warped photo {1 if first else 2}, keypoints {len(m.xy1)}/{len(m.xy2)} (first detection {len(f1)}/{len(f2)}), "
              f"matches {len(cm)}, correct {cm.sum()}; within 10 px of the map: {near.sum()} ({(cm & near).sum()} correct), "
              f"farther: {(~near).sum()} ({(cm & ~near).sum()} correct)")
        # re-run the steps to ablate
        M = np.linalg.inv(np.vstack([A, [0, 0, 1]]))[:2] if first else A
        moved, kept = (f1, f2) if first else (f2, f1)
        warped, mask = R.warp_into(moved.image, M, kept.image.shape[:2])
        again = sift_detected(warped, 2000, mask)
        back = lambda xy: xy @ M[:, :2].T + M[:, 2]
        def score(da, dk, xa, xk, label):
            mm = mutual_nn(da, dk)[0]
            p_moved, p_kept = back(xa[mm[:, 0]]), xk[mm[:, 1]]
            q1, q2 = (p_moved, p_kept) if first else (p_kept, p_moved)
            print(f"  {label}: matches {len(mm)}, correct {ok(q1, q2).sum()}")
        score(R.upright_descriptors(again, desc)[0], R.upright_descriptors(kept, desc)[0], again.xy, kept.xy, "(rectify as is, re-run)")
        score(described(again, desc, again.frame), described(kept, desc, kept.frame), again.xy, kept.xy,
              "(a) same warp+re-detection, SIFT's own scales")
        # (b) no re-detection: the moved photo's own keypoints mapped into the warped frame, inside the mask
        Minv = np.linalg.inv(np.vstack([M, [0, 0, 1]]))[:2]
        xw = moved.xy @ Minv[:, :2].T + Minv[:, 2]
        h, w = mask.shape
        inside = (xw[:, 0] >= 0) & (xw[:, 1] >= 0) & (xw[:, 0] <= w - 1) & (xw[:, 1] <= h - 1)
        inside[inside] = mask[np.round(xw[inside, 1]).astype(int), np.round(xw[inside, 0]).astype(int)] > 0
        fw = detect(np.clip(warped, 0, 1), 2000, keypoints=xw[inside])
        score(R.upright_descriptors(fw, desc)[0], R.upright_descriptors(kept, desc)[0], fw.xy, kept.xy,
              f"(b) no re-detection ({inside.sum()} original keypoints inside)")
        print(f"  (c) rectify's matches within 10 px of the map only: {near.sum()} matches, {(cm & near).sum()} correct")
        for k in ("sift-mnn", "pair-pose"):
            pass


if __name__ == "__main__":
    main(sys.argv[1:])
