"""#63 on real pairs that also change viewpoint: photo 2 of each shared-set pair turned by a seeded random angle (on
a canvas that holds it); ALIKED-n16 as it comes, and photo 1 un-turned by SIFT's turn (ratio test -> RANSAC affine,
no network), by our vote (upright_pair), and by the angle applied (ignores the photos' own roll). Correct = within
2 px of the epipolar line of COLMAP's own reconstruction (realcheck.py)."""
import json, sys, time
from pathlib import Path
import cv2, numpy as np, pycolmap, torch
sys.path.insert(0, str(Path(__file__).parent))
from realcheck import View, fundamental, epi_dists, DATA, MODEL, THR
from patchpose.evaluation.upright_eval import _Timed, sift_turn
from patchpose.integrations.kornia import aliked_extractor
from patchpose.matching.matcher import mutual_nn
from patchpose.matching.upright import UprightTurn, match_upright, turn_image, upright_pair
torch.set_num_threads(1); cv2.setNumThreads(1)

ext = _Timed(aliked_extractor("/work/shared/peers/aliked-n16.pth", "aliked-n16", 2000))

def correct(F, v1, v2, x1, x2):
    if len(x1) == 0: return 0
    return int((epi_dists(F, v1.undistort_px(x1), v2.undistort_px(x2))[0] <= THR).sum())

name, outp = sys.argv[1], sys.argv[2]
rec = pycolmap.Reconstruction(MODEL.format(name))
views = {im.name: View(im) for im in rec.images.values() if im.has_pose}
reg = sorted(p.name for p in (DATA / name).iterdir() if p.name in views)
pairs = ([(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg)) if j - i <= 3]
         if name == "tum_freiburg" else [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg))])
imgs = {f: cv2.cvtColor(cv2.imread(str(DATA / name / f)), cv2.COLOR_BGR2RGB) for f in reg}
rng = np.random.default_rng(0)
rows = []
for n1, n2 in pairs:
    a = float(rng.uniform(0.0, 360.0))
    v1, v2 = views[n1], views[n2]; F = fundamental(v1, v2)
    img1 = imgs[n1]; b, M = turn_image(imgs[n2], a)
    back = lambda xy: xy @ M[:, :2].T + M[:, 2]
    row = {"pair": [n1, n2], "angle": a}
    xy1, d1 = ext(img1); xy2, d2 = ext(b)
    m = mutual_nn(d1.astype(np.float32), d2.astype(np.float32))[0]
    row["as_is"] = correct(F, v1, v2, xy1[m[:, 0]], back(xy2[m[:, 1]]))
    for key in ("sift", "ours", "applied"):
        t0 = time.perf_counter()
        turn = (sift_turn(img1, b, 2000) if key == "sift" else upright_pair(img1, b) if key == "ours"
                else UprightTurn.known(a))
        tv = time.perf_counter() - t0
        r = match_upright(img1, b, ext, turn=turn)
        row[key] = correct(F, v1, v2, r.xy1[r.matches[:, 0]], back(r.xy2[r.matches[:, 1]]))
        row[key + "_deg"] = float(r.degrees); row[key + "_found"] = bool(turn.found); row[key + "_vote_s"] = tv
    rows.append(row); print(json.dumps(row), flush=True)
    ext.clear() if len(rows) % 10 == 0 else None
Path(outp).write_text(json.dumps(rows))
