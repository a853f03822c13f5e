"""Read-only: rectify vs the same warp (smaller photo) described as SIFT with all its orientations, on val."""
import sys, glob, os, json
import numpy as np
from patchpose.data.patches import load_image
from patchpose.matching.features import detect, sift_detected
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn
import patchpose.matching.rectify as R
from patchpose.geometry import reprojection_errors
root = sys.argv[1]; seqs = sorted(glob.glob(f'{root}/v_*'))
D = Describer("sift"); N = 2000
def score(H, xy1, xy2, m):
    e = reprojection_errors(H, xy1[m[:, 0]], xy2[m[:, 1]]); return int((e <= 3).sum()), float((e <= 3).mean()) if len(e) else 0.0
rows = []
up = R.upright_descriptors
for s in seqs:
    ims = {k: load_image(f'{s}/{k}.ppm') for k in range(1, 7)}
    for k in range(2, 7):
        H = np.loadtxt(f'{s}/H_1_{k}'); r = {"seq": os.path.basename(s), "k": k}
        f1, fk = detect(ims[1], N), detect(ims[k], N)
        m = mutual_nn(sift_all_descriptors(f1, D), sift_all_descriptors(fk, D))[0]; r["sift_all"] = score(H, f1.xy, fk.xy, m)
        p = R.rectified_pair(detect(ims[1], N), detect(ims[k], N), D, N)
        r["rectify"] = score(H, p.xy1, p.xy2, mutual_nn(p.descriptors1, p.descriptors2)[0])
        # same warp and re-detection, described as SIFT with all its orientations (1.2 comp.)
        R.upright_descriptors = lambda f, d: (sift_all_descriptors(f, d), 0)
        try:
            q = R.rectified_pair(detect(ims[1], N), detect(ims[k], N), D, N)
        finally:
            R.upright_descriptors = up
        r["smaller_siftall"] = score(H, q.xy1, q.xy2, mutual_nn(q.descriptors1, q.descriptors2)[0])
        rows.append(r); print(json.dumps(r), flush=True)
json.dump(rows, open(sys.argv[2], "w"))
