"""Would rectify gain by checking its map? Per pair: rectify's second-pass MNN matches and the first pass's SIFT-all
MNN matches, each scored against COLMAP's epipolar geometry, and each one's fundamental-matrix support."""
import json, sys, time
from pathlib import Path
import cv2, numpy as np, pycolmap, torch
sys.path.insert(0, str(Path(__file__).parent))
from realcheck import View, fundamental, epi_dists, rot_back, rot_fwd, DATA, MODEL, THR
from patchpose.matching.features import detect
from patchpose.matching.describe import Describer
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.matcher import mutual_nn
from patchpose.matching import rectify as R
from patchpose.matching.upright import fundamental_support
torch.set_num_threads(1); cv2.setNumThreads(1)

def correct(F, v1, v2, x1, x2):
    if len(x1) == 0: return 0
    return int((epi_dists(F, v1.undistort_px(x1), v2.undistort_px(x2))[0] <= THR).sum())

def run(a, b, desc):
    f1, f2 = detect(a, 2000), detect(b, 2000)
    t0 = time.perf_counter()
    r = R.rectified_pair(f1, f2, desc, 2000)
    m, _ = mutual_nn(r.descriptors1, r.descriptors2)
    out = {"map": r.affine is not None, "rect": (r.xy1[m[:, 0]], r.xy2[m[:, 1]])}
    out["s_rect"] = fundamental_support(r.xy1, r.xy2, m)
    t1 = time.perf_counter()
    d1, d2 = sift_all_descriptors(f1, desc), sift_all_descriptors(f2, desc)
    mf, _ = mutual_nn(d1, d2)
    out["first"] = (f1.xy[mf[:, 0]], f2.xy[mf[:, 1]])
    out["s_first"] = fundamental_support(f1.xy, f2.xy, mf)
    out["t_check"] = time.perf_counter() - t1
    return out

name, outp = sys.argv[1], sys.argv[2]
rec = pycolmap.Reconstruction(MODEL.format(name))
views = {im.name: View(im) for im in rec.images.values() if im.has_pose}
reg = sorted(p.name for p in (DATA / name).iterdir() if p.name in views)
pairs = ([(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg)) if j - i <= 3]
         if name == "tum_freiburg" else [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg))])
imgs = {f: cv2.imread(str(DATA / name / f), cv2.IMREAD_GRAYSCALE) for f in reg}
desc = Describer(); rows = []
for n1, n2 in pairs:
    v1, v2 = views[n1], views[n2]; F = fundamental(v1, v2)
    for cond in ("upright", "turned"):
        a = imgs[n1]; b = imgs[n2] if cond == "upright" else cv2.rotate(imgs[n2], cv2.ROTATE_90_CLOCKWISE)
        h2 = imgs[n2].shape[0]; back = (lambda x: x) if cond == "upright" else (lambda x: rot_back(x, h2))
        o = run(a, b, desc)
        row = {"pair": [n1, n2], "cond": cond, "map": o["map"], "s_rect": o["s_rect"], "s_first": o["s_first"],
               "t_check": o["t_check"]}
        for k in ("rect", "first"):
            x1, x2 = o[k]; row[k] = correct(F, v1, v2, x1, back(x2)); row["n_" + k] = len(x1)
        (r1, r2), (q1, q2) = o["rect"], o["first"]
        # first-pass matches whose photo-1 or photo-2 point is not within 3 px of a rectify match's
        from scipy.spatial import cKDTree
        far1 = cKDTree(r1).query(q1)[0] > 3 if len(r1) else np.ones(len(q1), bool)
        far2 = cKDTree(r2).query(q2)[0] > 3 if len(r2) else np.ones(len(q2), bool)
        new = far1 & far2
        row["union_new"] = int(new.sum()); row["union_new_correct"] = correct(F, v1, v2, q1[new], back(q2[new]))
        rows.append(row); print(json.dumps(row), flush=True)
Path(outp).write_text(json.dumps(rows))
