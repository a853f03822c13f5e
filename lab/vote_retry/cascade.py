"""#63 dev: votes with more corners where 500 find no turn (a cascade). Same pairs/angles as turnreal.py.
For each K in KS: where the shipped 500-corner votes found no turn, vote again with K corners; where that finds a
turn, match_upright (ALIKED-n16, 2000 kp) at it and count correct matches; else the shipped row's value stands.

    OMP_NUM_THREADS=1 python lab/vote_retry/cascade.py sacre_coeur lab/vote_retry/out/shipped_real_sc.log sc.json 1000,2000
    python lab/vote_retry/an.py sc.json 1000,2000 lab/vote_retry/out/shipped_real_sc.log

(shipped_real_sc.log: lab/unturn_capped/out/real_sc.log of git tag lab-unturn-capped-2026-11-30; realcheck.py: that
tag's, reading COLMAP's own model of the set made by `patchpose eval colmap ../shared/data/SET --out
/work/c61/final/SET --poses colmap --seeds 0 --threads 1`.)"""
import json, sys, time
from pathlib import Path
import cv2, numpy as np, pycolmap, torch
sys.path.insert(0, str(Path(__file__).parent))
from realcheck import View, fundamental, epi_dists, DATA, MODEL, THR
from patchpose.integrations.kornia import aliked_extractor
from patchpose.matching.upright import match_upright, turn_image, upright_pair, applied_turn
import patchpose.matching.upright as U
U.VOTE_RETRY_KEYPOINTS = 0  # each K's votes alone, as measured before the retry was in the library
torch.set_num_threads(1); cv2.setNumThreads(1)
name, shipped_log, outp = sys.argv[1], sys.argv[2], sys.argv[3]
KS = [int(k) for k in sys.argv[4].split(",")]
ship = {tuple(json.loads(l)["pair"]): json.loads(l) for l in open(shipped_log) if l.startswith("{")}
ext = aliked_extractor("/work/shared/peers/aliked-n16.pth", "aliked-n16", 2000)
def correct(F, v1, v2, x1, x2):
    if len(x1) == 0: return 0
    return int((epi_dists(F, v1.undistort_px(x1), v2.undistort_px(x2))[0] <= THR).sum())
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
    s = ship[(n1, n2)]
    assert abs(s["angle"] - a) < 1e-9
    row = {"pair": [n1, n2], "angle": a, "ship": s["ours"], "ship_found": s["ours_found"], "applied": s["applied"]}
    if not s["ours_found"]:
        v1, v2 = views[n1], views[n2]; F = fundamental(v1, v2)
        b, M = turn_image(imgs[n2], a)
        back = lambda xy: xy @ M[:, :2].T + M[:, 2]
        for K in KS:
            t0 = time.perf_counter(); t = upright_pair(imgs[n1], b, max_keypoints=K); tv = time.perf_counter() - t0
            row[f"k{K}_found"] = bool(t.found); row[f"k{K}_vote_s"] = tv; row[f"k{K}_conf"] = t.confidence
            if t.found:
                row[f"k{K}_err"] = abs((t.degrees - applied_turn(a) + 180) % 360 - 180)
                r = match_upright(imgs[n1], b, ext, turn=t)
                row[f"k{K}"] = correct(F, v1, v2, r.xy1[r.matches[:, 0]], back(r.xy2[r.matches[:, 1]]))
            else:
                row[f"k{K}"] = s["ours"]
    else:
        for K in KS:
            row[f"k{K}"] = s["ours"]; row[f"k{K}_found"] = True
    rows.append(row); print(json.dumps(row), flush=True)
Path(outp).write_text(json.dumps(rows))
