"""LAB (#63): photo 1 un-turned on a canvas capped in pixels, on real pairs that also change viewpoint.

#63 asks for a cost per photo <= 1.5x one extraction; a photo turned off a quarter turn needs a canvas of up to 2.1x
its pixels to hold all of it. Here the canvas is cropped about its centre (both sides by one factor) to at most CAP
times the photo's pixels, and the matches that are lost are counted. The pairs, angles and check are those of git tag
lab-turn-real-v2-2026-11-29 (every pair of the shared sets, TUM 1-3 frames apart; photo 2 turned by a seeded random
angle on a canvas that holds it; ALIKED-n16 <= 2,000 keypoints, MNN; correct within 2 px of the epipolar line of
COLMAP's own reconstruction, realcheck.py of lab-realcheck-2026-11-29). Photo 1 un-turned by our vote
(`upright_pair`), as `match_upright` does it, with the canvas uncapped and capped at each CAP.

    OMP_NUM_THREADS=1 python lab/canvas_cap/run.py tum_freiburg tum.json > tum.log   (realcheck.py beside it)
"""
import json
import math
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pycolmap
import torch

sys.path.insert(0, str(Path(__file__).parent))
from realcheck import DATA, MODEL, THR, View, epi_dists, fundamental  # noqa: E402

import patchpose.matching.upright as U  # noqa: E402
from patchpose.integrations.kornia import aliked_extractor  # noqa: E402
from patchpose.matching.matcher import mutual_nn  # noqa: E402

torch.set_num_threads(1)
cv2.setNumThreads(1)
CAPS = (None, 1.5, 1.3)
full_turn = U.turn_image
state = {"cap": None, "pixels": 0, "secs": 0.0}


def capped_turn(image, degrees):
    turned, back = full_turn(image, degrees)
    h, w = image.shape[:2]
    H, W = turned.shape[:2]
    cap = state["cap"]
    if cap is not None and H * W > cap * h * w:
        f = math.sqrt(cap * h * w / (H * W))
        cw, ch = int(round(W * f)), int(round(H * f))
        x0, y0 = (W - cw) // 2, (H - ch) // 2
        turned = np.ascontiguousarray(turned[y0 : y0 + ch, x0 : x0 + cw])
        back = np.hstack([back[:, :2], (back[:, 2] + back[:, :2] @ np.array([x0, y0], float))[:, None]])
    state["pixels"] = turned.shape[0] * turned.shape[1] / (h * w)
    return turned, back


U.turn_image = capped_turn
aliked = aliked_extractor("/work/shared/peers/aliked-n16.pth", "aliked-n16", 2000)


def ext(img):
    t0 = time.perf_counter()
    out = aliked(img)
    state["secs"] = time.perf_counter() - t0
    return out


def correct(F, v1, v2, x1, x2):
    if len(x1) == 0:
        return 0
    return int((epi_dists(F, v1.undistort_px(x1), v2.undistort_px(x2))[0] <= THR).sum())


name, outp = sys.argv[1], sys.argv[2]
rec = pycolmap.Reconstruction(MODEL.format(name))
views = {im.name: View(im) for im in rec.images.values() if im.has_pose}
reg = sorted(p.name for p in (DATA / name).iterdir() if p.name in views)
if name == "tum_freiburg":
    pairs = [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg)) if j - i <= 3]
else:
    pairs = [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg))]
imgs = {f: cv2.cvtColor(cv2.imread(str(DATA / name / f)), cv2.COLOR_BGR2RGB) for f in reg}
rng = np.random.default_rng(0)
rows = []
for n1, n2 in pairs:
    a = float(rng.uniform(0.0, 360.0))
    v1, v2 = views[n1], views[n2]
    F = fundamental(v1, v2)
    img1 = imgs[n1]
    state["cap"] = None
    b, M = full_turn(imgs[n2], a)
    t0 = time.perf_counter()
    ext(img1)
    one = state["secs"]  # one extraction of photo 1 as it comes

    def back(xy):
        return xy @ M[:, :2].T + M[:, 2]

    row = {"pair": [n1, n2], "angle": a, "extract_s": one}
    turn = U.upright_pair(img1, b)
    row["found"], row["deg"] = bool(turn.found), float(turn.degrees)
    for cap in CAPS:
        state["cap"] = cap
        r = U.match_upright(img1, b, ext, turn=turn)
        key = "full" if cap is None else f"cap{cap:g}"
        row[key] = correct(F, v1, v2, r.xy1[r.matches[:, 0]], back(r.xy2[r.matches[:, 1]]))
        row[key + "_pixels"] = state["pixels"]
        row[key + "_s"] = state["secs"]  # the last extraction timed: photo 1 on its canvas (photo 2 is first)
    rows.append(row)
    print(json.dumps(row), flush=True)
Path(outp).write_text(json.dumps(rows))
