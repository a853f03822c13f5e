"""Read-only control: SIFT-all with detections restricted to the overlap (same budget) vs rectify."""
import sys, glob, os, json, time
import numpy as np, cv2
from patchpose.data.patches import load_image, check_image
from patchpose.matching.features import detect, sift_detected
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn
from patchpose.matching.rectify import rectified_pair, first_pass_affine, BORDER_PX
from patchpose.geometry import reprojection_errors

root = sys.argv[1]; seqs = sorted(glob.glob(f'{root}/v_*'))
D = Describer("sift"); N = 2000
def score(H, xy1, xy2, m):
    e = reprojection_errors(H, xy1[m[:, 0]], xy2[m[:, 1]])
    return int((e <= 3).sum()), (float((e <= 3).mean()) if len(e) else 0.0)
def overlap_mask(shape_from, shape_to, M):  # pixels of 'from' that M maps inside 'to'
    h, w = shape_from; H2, W2 = shape_to
    ys, xs = np.mgrid[0:h, 0:w]
    p = np.stack([xs.ravel(), ys.ravel(), np.ones(h*w)], 1) @ M.T
    p = p[:, :2] / p[:, 2:3]
    ok = (p[:, 0] >= -0.5) & (p[:, 0] <= W2 - 0.5) & (p[:, 1] >= -0.5) & (p[:, 1] <= H2 - 0.5)
    m = (ok.reshape(h, w) * 255).astype(np.uint8)
    return cv2.erode(m, np.ones((2*BORDER_PX+1,)*2, np.uint8))
def inside(H, xy, shape):
    p = np.c_[xy, np.ones(len(xy))] @ H.T; p = p[:, :2] / p[:, 2:3]
    h, w = shape; return int(((p >= -0.5).all(1) & (p[:, 0] <= w - .5) & (p[:, 1] <= h - .5)).sum())
rows = []
for s in seqs:
    ims = {k: load_image(f'{s}/{k}.ppm') for k in range(1, 7)}
    f1 = detect(ims[1], N)
    for k in range(2, 7):
        H = np.loadtxt(f'{s}/H_1_{k}'); fk = detect(ims[k], N)
        r = {"seq": os.path.basename(s), "k": k, "zoom": float(np.sqrt(abs(np.linalg.det(H[:2, :2]))))}
        m = mutual_nn(sift_all_descriptors(f1, D), sift_all_descriptors(fk, D))[0]
        r["sift_all"] = score(H, f1.xy, fk.xy, m)
        r["kp_in_overlap_sift"] = (inside(H, f1.xy, ims[k].shape[:2]), inside(np.linalg.inv(H), fk.xy, ims[1].shape[:2]))
        # control: both photos re-detected (same budget) only where the first pass's affine map says they overlap
        A, _ = first_pass_affine(f1, fk, D)
        for name, M in (("masked_affine", None if A is None else np.vstack([A, [0, 0, 1]])), ("masked_gt", H)):
            if M is None:
                r[name] = r["sift_all"]; continue
            g1 = sift_detected(check_image(ims[1]), N, overlap_mask(ims[1].shape[:2], ims[k].shape[:2], M))
            gk = sift_detected(check_image(ims[k]), N, overlap_mask(ims[k].shape[:2], ims[1].shape[:2], np.linalg.inv(M)))
            mm = mutual_nn(sift_all_descriptors(g1, D), sift_all_descriptors(gk, D))[0]
            r[name] = score(H, g1.xy, gk.xy, mm); r[name + "_kp"] = (len(g1), len(gk))
        p = rectified_pair(detect(ims[1], N), fk, D, N)
        mm = mutual_nn(p.descriptors1, p.descriptors2)[0]
        r["rectify"] = score(H, p.xy1, p.xy2, mm); r["rectify_kp"] = (len(p.xy1), len(p.xy2), p.warped)
        rows.append(r); print(json.dumps(r), flush=True)
json.dump(rows, open(sys.argv[2], "w"))
