"""LAB (#60): one angle per image on the rendered test scenes (`patchpose generate scenes`; no choice made on them for
this), the real sets' protocol (lab-global-angle-2026-11-30's real.py) with the true cameras: correct within 2 px
of the true epipolar geometry (symmetric), every pair of a scene's 12 frames, ≤ 2,048 OpenCV SIFT keypoints, RootSIFT,
MNN and the ratio test. Rows: SIFT with all its orientations, `extract`'s `pose`, upright in the collection (our
votes, `--unturn`), one angle per image (`q4`: the pixels' 4-fold mean, each pair at the quarter with most matches).

python lab/global_angle_scenes/run.py SCENE_DIR OUT.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.conventions import from_opencv_sift_xy
from patchpose.data.patches import load_image
from patchpose.evaluation.datasets.scenes import read_cameras
from patchpose.integrations.extract import features_of_image
from patchpose.matching.collection import upright_collection
from patchpose.matching.matcher import mutual_nn, ratio_matches

torch.set_num_threads(1)
cv2.setNumThreads(1)
THR, MAXKP, BLUR = 2.0, 2048, 1.5


def mode4(angles, weights):
    z = (weights * np.exp(4j * np.asarray(angles))).sum()
    return float(np.mod(np.angle(z) / 4, np.pi / 2))


def pixel_angle(image):
    g = (
        cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(np.float32)
        if image.ndim == 3
        else image.astype(np.float32)
    )
    g = cv2.GaussianBlur(g, (0, 0), BLUR)
    gx, gy = cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1)
    return mode4(np.arctan2(-gy, gx).ravel(), np.hypot(gx, gy).ravel())


def skew(t):
    return np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]], float)


def fundamental(c1, c2):
    R = c2["R"] @ c1["R"].T
    t = c2["t"] - R @ c1["t"]
    return np.linalg.inv(c2["K"]).T @ skew(t) @ R @ np.linalg.inv(c1["K"])


def epi(F, u1, u2):
    h1, h2 = np.c_[u1, np.ones(len(u1))], np.c_[u2, np.ones(len(u2))]
    l2, l1 = h1 @ F.T, h2 @ F
    e = np.abs(np.sum(h2 * l2, 1))
    return np.maximum(e / np.hypot(l1[:, 0], l1[:, 1]), e / np.hypot(l2[:, 0], l2[:, 1]))


def rootsift(d):
    d = np.asarray(d, np.float32)
    return np.sqrt(d / np.maximum(d.sum(1, keepdims=True), 1e-12))


def sift_all(image):
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    kps, d = cv2.SIFT_create(MAXKP).detectAndCompute(gray, None)
    return from_opencv_sift_xy([k.pt for k in kps]).reshape(-1, 2), rootsift(d)


def main():
    folder, outp = Path(sys.argv[1]), sys.argv[2]
    cams = read_cameras(folder)
    names = sorted(cams)
    ims = [load_image(folder / n) for n in names]
    pairs = [(i, j) for i in range(len(ims)) for j in range(i + 1, len(ims))]
    ours = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
    desc, xys = {k: [] for k in ("sift_all", "pose", "coll_ours", "q4")}, {}
    for k, im in enumerate(ims):
        q4 = -math.degrees(pixel_angle(im))
        for row, turn in (("sift_all", None), ("pose", None), ("coll_ours", ours[k]), ("q4", q4)):
            if row == "sift_all":
                x, d = sift_all(im)
            elif row == "q4":
                fs = [features_of_image(im, max_keypoints=MAXKP, turn=turn + 90.0 * q) for q in range(4)]
                x, d = fs[0]["xy"], np.stack([rootsift(f["descriptors"]) for f in fs])
            else:
                f = features_of_image(im, max_keypoints=MAXKP, turn=turn)
                x, d = f["xy"], rootsift(f["descriptors"])
            desc[row].append(d)
            xys.setdefault(row, []).append(x)
    res = {}
    for row in desc:
        for match in ("mnn", "ratio"):
            fn = mutual_nn if match == "mnn" else ratio_matches
            cells = []
            for i, j in pairs:
                if row == "q4":
                    m = max((fn(desc[row][i][0], desc[row][j][q])[0] for q in range(4)), key=len)
                else:
                    m = fn(desc[row][i], desc[row][j])[0]
                d = epi(
                    fundamental(cams[names[i]], cams[names[j]]), xys[row][i][m[:, 0]], xys[row][j][m[:, 1]]
                )
                ok = d <= THR
                xy1 = xys[row][i][m[ok, 0]]
                distinct = len(np.unique(np.round(xy1, 2), axis=0)) if ok.any() else 0
                cells.append([int(ok.sum()), int(len(m)), distinct])
            res[f"{row}-{match}"] = cells
            c = np.array(cells)
            print(
                folder.name,
                f"{row}-{match}",
                f"correct {c[:, 0].mean():.1f} distinct {c[:, 2].mean():.1f}",
                flush=True,
            )
    Path(outp).write_text(json.dumps({"scene": folder.name, "frames": names, "pairs": pairs, "rows": res}))


if __name__ == "__main__":
    main()
