"""LAB (#60): one angle per image, on the real sets (lab-extract-upright-v2-2026-11-29's run.py, rows added): each
photo's keypoints described once at the angle modulo 90° of its pixels' gradient orientations (`q4`, run.py's
`mode4(*pixel_grad(image))`, chosen on val), each pair matched at the quarter turn with most matches; against
SIFT's own orientations (every one a descriptor), `extract`'s default `pose` and upright in the collection (our votes). RootSIFT everywhere,
≤ 2,048 OpenCV SIFT keypoints a photo (the same detections; `patchpose extract`'s features_of_image for all rows
but SIFT's own), mutual nearest neighbours and Lowe's ratio test (0.8). Correct: symmetric
epipolar distance ≤ 2 px in COLMAP's own reconstruction of the set (seed 0). Sets: as they are, every other frame
turned 90° clockwise (eval colmap's `turned`). Pairs: TUM frames 1–3 apart (45), Sacré-Cœur all (45).

python lab/extract_upright/run.py SET REFERENCE_MODEL OUT.json
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pycolmap
import torch
from run import mode4, pixel_grad  # noqa: E402  (the lab's run.py beside this file)

from patchpose.conventions import from_opencv_sift_xy
from patchpose.data.patches import load_image
from patchpose.evaluation.colmap_eval import sift_collection_turns
from patchpose.integrations.extract import features_of_image
from patchpose.matching.collection import upright_collection
from patchpose.matching.matcher import mutual_nn, ratio_matches

torch.set_num_threads(1)
cv2.setNumThreads(1)
THR, MAXKP = 2.0, 2048


def skew(t):
    return np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]], float)


class View:
    def __init__(self, im):
        self.cam = im.camera
        T = im.cam_from_world()
        self.R, self.t = np.asarray(T.rotation.matrix(), float), np.asarray(T.translation, float).reshape(3)
        self.K = np.asarray(self.cam.calibration_matrix(), float)

    def undistort(self, xy):
        xy = np.asarray(xy, float).reshape(-1, 2) + 0.5
        if not len(xy):
            return xy
        return np.asarray(self.cam.cam_from_img(xy), float) @ self.K[:2, :2].T + self.K[:2, 2]


def fundamental(v1, v2):
    R = v2.R @ v1.R.T
    t = v2.t - R @ v1.t
    return np.linalg.inv(v2.K).T @ skew(t) @ R @ np.linalg.inv(v1.K)


def epi(F, u1, u2):
    h1, h2 = np.c_[u1, np.ones(len(u1))], np.c_[u2, np.ones(len(u2))]
    l2, l1 = h1 @ F.T, h2 @ F
    e = np.abs(np.sum(h2 * l2, 1))
    return np.maximum(e / np.hypot(l1[:, 0], l1[:, 1]), e / np.hypot(l2[:, 0], l2[:, 1]))


def rootsift(d):
    d = np.asarray(d, np.float32)
    return np.sqrt(d / np.maximum(d.sum(1, keepdims=True), 1e-12))


def sift_all(image):
    """What users run: OpenCV SIFT's own keypoints, every orientation a descriptor (≤ MAXKP)."""
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    kps, d = cv2.SIFT_create(MAXKP).detectAndCompute(gray, None)
    return from_opencv_sift_xy([k.pt for k in kps]).reshape(-1, 2), rootsift(d)


def main():
    name, model, outp = sys.argv[1], sys.argv[2], sys.argv[3]
    folder = Path("/work/shared/data") / name
    rec = pycolmap.Reconstruction(model)
    views = {im.name: View(im) for im in rec.images.values() if im.has_pose}
    files = sorted(p.name for p in folder.iterdir() if p.suffix.lower() in (".png", ".jpg"))
    reg = [f for f in files if f in views]
    if name == "tum_freiburg":
        pairs = [(i, j) for i in range(len(reg)) for j in range(i + 1, len(reg)) if j - i <= 3]
    else:
        pairs = [(i, j) for i in range(len(reg)) for j in range(i + 1, len(reg))]
    gray = [load_image(folder / f) for f in reg]  # as patchpose extract reads them (RGB), a review's mend
    out = {"set": name, "photos": reg, "pairs": [list(p) for p in pairs], "rows": {}}
    for cond in ("upright", "turned"):
        turned = [k % 2 == 1 and cond == "turned" for k in range(len(reg))]
        ims = [cv2.rotate(g, cv2.ROTATE_90_CLOCKWISE) if t else g for g, t in zip(gray, turned)]
        t0 = time.perf_counter()
        ours = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        sift_t = np.asarray(sift_collection_turns(ims).degrees, float)
        t_sift = time.perf_counter() - t0
        desc = {k: [] for k in ("sift_all", "pose", "coll_ours", "q4")}
        xys = {k: [] for k in desc}
        for k, im in enumerate(ims):
            h = gray[k].shape[0]
            back = (lambda p, h=h: np.c_[p[:, 1], h - 1 - p[:, 0]]) if turned[k] else (lambda p: p)
            q4 = -math.degrees(mode4(*pixel_grad(im)))  # the turn that shows the image at its angle 0 mod 90
            for row, turn in (("sift_all", None), ("pose", None), ("coll_ours", ours[k]), ("q4", q4)):
                if row == "sift_all":
                    x, d = sift_all(im)
                elif (
                    row == "q4"
                ):  # the 4 quarter turns of the image's angle (a RootSIFT permutation: timed as one)
                    fs = [features_of_image(im, max_keypoints=MAXKP, turn=turn + 90.0 * q) for q in range(4)]
                    x, d = fs[0]["xy"], np.stack([rootsift(f["descriptors"]) for f in fs])
                else:  # the product: patchpose extract's features of one image (at --unturn, its turn)
                    f = features_of_image(im, max_keypoints=MAXKP, turn=turn)
                    x, d = f["xy"], rootsift(f["descriptors"])
                desc[row].append(d)
                xys[row].append(back(x))
        res = {}
        for row in desc:
            for match in ("mnn", "ratio"):
                cells = []
                for i, j in pairs:
                    fn = mutual_nn if match == "mnn" else ratio_matches
                    if row == "q4":  # photo i at its angle, photo j at the quarter with most matches
                        m = max((fn(desc[row][i][0], desc[row][j][q])[0] for q in range(4)), key=len)
                    else:
                        m = fn(desc[row][i], desc[row][j])[0]
                    v1, v2 = views[reg[i]], views[reg[j]]
                    d = epi(
                        fundamental(v1, v2),
                        v1.undistort(xys[row][i][m[:, 0]]),
                        v2.undistort(xys[row][j][m[:, 1]]),
                    )
                    ok = d <= THR  # distinct: a location matched correctly once, however many orientations
                    xy1 = xys[row][i][m[ok, 0]]
                    distinct = len(np.unique(np.round(xy1, 2), axis=0)) if ok.any() else 0
                    cells.append([int(ok.sum()), int(len(m)), distinct])
                res[f"{row}-{match}"] = cells
                c = np.array(cells)
                print(
                    cond,
                    f"{row}-{match}",
                    "correct/pair %.1f matches %.1f prec %.3f"
                    % (c[:, 0].mean(), c[:, 1].mean(), c[:, 0].sum() / max(c[:, 1].sum(), 1)),
                    flush=True,
                )
        res["turns"] = {
            "ours": ours.round(2).tolist(),
            "sift": sift_t.round(2).tolist(),
            "seconds": [t_ours, t_sift],
        }
        res["descriptors_per_photo"] = {r: float(np.mean([d.shape[-2] for d in desc[r]])) for r in desc}
        out["rows"][cond] = res
        print(cond, "turns s", round(t_ours, 2), round(t_sift, 2), res["descriptors_per_photo"], flush=True)
    Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
