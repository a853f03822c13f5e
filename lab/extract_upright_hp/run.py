"""LAB (#60, #63): SIFT described upright in the collection on the generated test sequences (held out: the 15 test
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
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.conventions import from_opencv_sift_xy
from patchpose.estimator import as_estimator
from patchpose.evaluation.colmap_eval import sift_collection_turns
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.geometry import apply_homography
from patchpose.integrations.extract import features_of_image
from patchpose.matching.collection import upright_collection
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


def main():
    root, outp = sys.argv[1], sys.argv[2]
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    rows = (
        "sift_all",
        "pose",
        "coll_ours",
        "coll_sift",
        "pose_eq",
        "coll_ours_eq",
        "harris_pose",
        "harris_coll",
    )
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
            feats["sift_all"].append(sift_all(im))
            for r, turn in (("pose", None), ("coll_ours", ours[i]), ("coll_sift", sift_t[i])):
                f = features_of_image(im, max_keypoints=MAXKP, turn=turn)
                feats[r].append((f["xy"], rootsift(f["descriptors"])))
            n_all = len(feats["sift_all"][-1][1])  # as many descriptors as SIFT with all its orientations
            for r, turn in (("pose_eq", None), ("coll_ours_eq", ours[i])):
                f = features_of_image(im, max_keypoints=2 * MAXKP, turn=turn)
                feats[r].append((f["xy"][:n_all], rootsift(f["descriptors"][:n_all])))
            for r, turn in (("harris_pose", None), ("harris_coll", ours[i])):  # corners: our scale (v10)
                f = features_of_image(im, EST, "harris", max_keypoints=MAXKP, turn=turn)
                feats[r].append((f["xy"], rootsift(f["descriptors"])))
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
