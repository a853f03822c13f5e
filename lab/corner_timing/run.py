"""LAB (#60): seconds of the corner detectors against OpenCV SIFT's detection and description, one thread, median
of 5 runs after one warm-up: kornia's scale-space corners (`ScaleSpaceDetector`, CornerGFTT, as the corner peer
rows detect them, ≤ 2,048), Harris corners with our scale (what `extract --detector harris` reads, ≤ 2,048 asked),
OpenCV SIFT (`detectAndCompute`, 2,048). Photos: the first Sacré-Cœur photo and one test sequence's first image.

python lab/corner_timing/run.py OUT.json
"""

import glob
import json
import sys
import time

import cv2
import numpy as np
import torch

from patchpose.data.keypoints import as_uint8_gray, detect_harris
from patchpose.data.patches import load_image
from patchpose.estimator import as_estimator
from patchpose.evaluation.rows import detect
from patchpose.matching.candidates import recipe_poses
from patchpose.matching.features import features_at

torch.set_num_threads(1)
cv2.setNumThreads(1)
EST = as_estimator("patchpose-v10")


def harris_ours(im):
    xy = detect_harris(im, 2048)
    return recipe_poses(features_at(im, xy), EST.estimate(im, xy))


out = {}
for p in [sorted(glob.glob("/work/shared/data/sacre_coeur/*"))[0], "/work/data/hpatches/v_astronaut/1.ppm"]:
    im = load_image(p)
    g = as_uint8_gray(im)
    rows = {
        "scale_space_corners": lambda: detect(im, 2048, detector="gftt_scale"),
        "harris_our_scale": lambda: harris_ours(im),
        "opencv_sift": lambda: cv2.SIFT_create(2048).detectAndCompute(g, None),
    }
    rec = {"shape": list(im.shape[:2])}
    for name, fn in rows.items():
        fn()
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        rec[name] = {"median_s": float(np.median(ts)), "runs_s": ts}
    out[p] = rec
    print(p, {k: (round(v["median_s"], 3) if isinstance(v, dict) else v) for k, v in rec.items()}, flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
