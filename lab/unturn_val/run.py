"""LAB (#63): the canvas cap and the un-turn's interpolation, chosen on val (hpatches_val_turn, 8 photos x 5 pairs).

Photo 1 un-turned by our vote (`upright_pair`, computed once a pair) as `match_upright` does it, ALIKED-n16 <= 2,000
keypoints, MNN, correct within 3 px of the homography (as `patchpose eval upright`), under each canvas cap (None: a
canvas that holds the whole photo; else cropped about its centre to at most CAP x the photo's pixels) and each
OpenCV interpolation of the un-turn.

    OMP_NUM_THREADS=1 python lab/unturn_val/run.py /work/data/hpatches_val_turn val.jsonl
"""
import json
import math
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

import patchpose.matching.upright as U
from patchpose.data.patches import load_photo
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.upright_eval import _score
from patchpose.integrations.kornia import aliked_extractor

torch.set_num_threads(1)
cv2.setNumThreads(1)
CAPS = (None, 1.5, 1.3, 1.2)
INTERP = {"linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC, "lanczos": cv2.INTER_LANCZOS4}
full_turn = U.turn_image
state = {"cap": None, "pixels": 1.0, "secs": 0.0}


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


root, outp = sys.argv[1], Path(sys.argv[2])
done = {(r["sequence"], r["k"]) for r in map(json.loads, outp.read_text().splitlines())} if outp.exists() else set()
with outp.open("a") as f:
    for seq in load_hpatches(root):
        img1 = np.asarray(load_photo(seq.images[1]))
        ext(img1)
        one = state["secs"]
        for k, H in seq.homographies.items():
            if (seq.name, int(k)) in done:
                continue
            imgk = np.asarray(load_photo(seq.images[k]))
            xyk, dk = aliked(imgk)
            turn = U.upright_pair(img1, imgk)
            row = {"sequence": seq.name, "k": int(k), "found": bool(turn.found), "deg": float(turn.degrees),
                   "extract_s": one}
            for iname, flag in INTERP.items():
                U.INTERPOLATION = flag
                for cap in CAPS:
                    state["cap"], state["pixels"] = cap, 1.0
                    r = U.match_upright(img1, imgk, lambda im: (xyk, dk) if im is imgk else ext(im), turn=turn)
                    key = f"{iname}_{'full' if cap is None else f'cap{cap:g}'}"
                    row[key] = _score(H, r.xy1, r.xy2, r.matches)["correct"]
                    row[key + "_pixels"] = state["pixels"]
                    row[key + "_s"] = state["secs"]
            print(json.dumps(row), file=f, flush=True)
            print(seq.name, k, {kk: v for kk, v in row.items() if not kk.endswith(("_s", "_pixels"))}, flush=True)
