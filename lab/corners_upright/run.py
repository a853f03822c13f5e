"""LAB (#60): corners (Harris, our scale) with the gradient's angle, upright in the collection, or OriNet's angle, on the generated test sequences (held out: the 15 test
photos, nothing chosen on them). Each sequence (6 images) is a collection: each image's turn by our votes
(upright_collection over its 6 images) or by SIFT's pairwise turns; pairs (1, k), ≤ 2,048 SIFT keypoints, RootSIFT,
mutual nearest neighbours; correct: within 3 px of the homography's image of the keypoint. Rows: SIFT with all its
orientations (OpenCV), `extract`'s default `pose`, `--unturn` (ours), the same with SIFT's turns.

python lab/extract_upright_hp/run.py ROOT OUT.json   (ROOT: data/hpatches, _zoom, _turn, _tilt)
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.conventions import from_opencv_sift_xy
from patchpose.data.keypoints import as_uint8_gray, detect_harris
from patchpose.estimator import as_estimator
from patchpose.evaluation.colmap_eval import sift_collection_turns
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.peers import Peers, orinet_orientations
from patchpose.geometry import apply_homography
from patchpose.integrations.extract import features_of_image
from patchpose.integrations.opencv import keypoints_at_poses
from patchpose.matching.candidates import recipe_poses
from patchpose.matching.collection import upright_collection
from patchpose.matching.features import features_at
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = 2048, 3.0
EST = as_estimator("patchpose-v10")


def rootsift(d):
    d = np.asarray(d, np.float32)
    return np.sqrt(d / np.maximum(d.sum(1, keepdims=True), 1e-12))


def sift_all(image):
    g = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    kps, d = cv2.SIFT_create(MAXKP).detectAndCompute(g, None)
    return from_opencv_sift_xy([k.pt for k in kps]).reshape(-1, 2), rootsift(d)


PEERS = Peers("/work/shared/peers")


def orinet_features(image):
    """Harris corners at our scale (as the recipe), the angle OriNet's (kornia) read in the descriptor's window."""
    xy = detect_harris(image, MAXKP)
    poses = recipe_poses(features_at(image, xy), EST.estimate(image, xy))
    gray = as_uint8_gray(image)
    ori = orinet_orientations(PEERS, gray, xy, poses.descriptor_radius)
    poses = replace(poses, orientation=ori)
    kps = [cv2.KeyPoint(float(x), float(y), 1.0, 0.0, 0.0, 0, i) for i, (x, y) in enumerate(xy)]
    kept, desc = cv2.SIFT_create().compute(gray, keypoints_at_poses(kps, poses))
    keep = np.array([k.class_id for k in kept], np.int64)
    return xy[keep], rootsift(desc)


def main():
    root, outp = sys.argv[1], sys.argv[2]
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    rows = ("harris_pose", "harris_coll", "harris_orinet")
    out = {"root": root, "sequences": []}
    for s in seqs:
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        t0 = time.perf_counter()
        ours = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        sift_t = np.asarray(sift_collection_turns(ims).degrees, float)
        t_sift = time.perf_counter() - t0
        feats = {r: [] for r in rows}
        for i, im in enumerate(ims):
            for r, turn in (("harris_pose", None), ("harris_coll", ours[i])):  # corners: our scale (v10)
                f = features_of_image(im, EST, "harris", max_keypoints=MAXKP, turn=turn)
                feats[r].append((f["xy"], rootsift(f["descriptors"])))
            feats["harris_orinet"].append(orinet_features(im))
        rec = {
            "name": s.name,
            "turns_ours": ours.round(2).tolist(),
            "turns_sift": sift_t.round(2).tolist(),
            "seconds": [t_ours, t_sift],
            "pairs": {},
        }
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            for r in rows:
                (x1, d1), (x2, d2) = feats[r][0], feats[r][j]
                m = mutual_nn(d1, d2)[0]
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                ok = (
                    err <= THR
                )  # distinct: a location matched correctly once, however many orientations it has
                distinct = len(np.unique(np.round(x1[m[ok, 0]], 2), axis=0)) if ok.any() else 0
                rec["pairs"].setdefault(r, []).append(
                    [int(ok.sum()), int(len(m)), len(d1), len(d2), distinct]
                )
        out["sequences"].append(rec)
        print(
            s.name,
            {r: np.array(v)[:, 0].mean().round(1) for r, v in rec["pairs"].items()},
            "turns",
            ours.round(1).tolist(),
            flush=True,
        )
    Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
