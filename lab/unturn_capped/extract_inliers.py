"""F-inliers per pair of hloc features files (#63, ``extract --aliked --unturn``): mutual nearest neighbours of every
pair, MAGSAC fundamental matrix at 1 px; prints the mean per pair and the pairs with at least 50.

Usage: ``python lab/upright/extract_inliers.py FILE.h5 ...``, the files made by ``patchpose extract FOLDER --out
FILE.h5 --aliked ../shared/peers/aliked-n16.pth --max-keypoints 2000 [--unturn]`` (turned sets from
``patchpose.evaluation.colmap_eval.turn_every_other``)."""

import itertools
import sys

import cv2
import h5py
import numpy as np

from patchpose.matching.matcher import mutual_nn


def load(path: str) -> dict:
    with h5py.File(path, "r") as f:
        return {k: (f[k]["keypoints"][()], f[k]["descriptors"][()].T) for k in f}


for path in sys.argv[1:]:
    feats = load(path)
    inliers = []
    for a, b in itertools.combinations(sorted(feats), 2):
        m = mutual_nn(feats[a][1], feats[b][1])[0]
        if len(m) < 8:
            inliers.append(0)
            continue
        _, mask = cv2.findFundamentalMat(
            feats[a][0][m[:, 0]], feats[b][0][m[:, 1]], cv2.USAC_MAGSAC, 1.0, 0.999, 10000
        )
        inliers.append(0 if mask is None else int(mask.sum()))
    n = np.array(inliers)
    print(f"{path}: {len(n)} pairs, mean F-inliers {n.mean():.1f}, pairs with >= 50: {(n >= 50).sum()}")
