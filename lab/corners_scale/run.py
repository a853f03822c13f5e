"""LAB (#60): the network's share at corners: at the same keypoints (Shi-Tomasi corners in a scale space, kornia's
ScaleSpaceDetector, ≤ 2,048), the detector's own scale against our scale (patchpose-v10, as the recipe `pose` reads
it where a detector gives none; and our scale shifted per image so that its median window is the detector's:
which of the keypoints are larger, not how large), each with the dominant gradient's angle and upright in the collection (our votes
over the sequence's 6 images). Test split's generated sequences (held out; nothing chosen here), pairs (1, k),
RootSIFT (kornia), mutual nearest neighbours, correct within 3 px of H.

python lab/corners_scale/run.py ROOT OUT.json   (ROOT: /work/data/hpatches, _zoom, _turn, _tilt; a rerun resumes)
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.conventions import REFERENCE_RADIUS
from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.candidates import recipe_poses
from patchpose.matching.collection import upright_collection
from patchpose.matching.describe import Describer
from patchpose.matching.features import features_at
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = 2048, 3.0
EST = as_estimator("patchpose-v10")
RUN = Run(Describer(), EST, MatchConfig(max_keypoints=MAXKP), None)
ROWS = ("own:gradient", "own:upright", "ours:gradient", "ours:upright", "ours_sized:gradient", "ours_sized:upright")


def upright(feats, turn_deg):
    n = len(feats)
    d = RUN.describer.describe(feats.pyramid, feats.xy, feats.frame, np.full(n, -math.radians(turn_deg)))
    return d.reshape(n, -1)


def main():
    root, outp = sys.argv[1], sys.argv[2]
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    out = {"root": root, "rows": list(ROWS), "sequences": []}
    if Path(outp).is_file():
        out = json.loads(Path(outp).read_text())
    done = {r["name"] for r in out["sequences"]}
    for s in seqs:
        if s.name in done:
            continue
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        turns = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
        desc, xys, secs, scales = {r: [] for r in ROWS}, [], {"ours_scale": 0.0}, []
        for i, im in enumerate(ims):
            own = detect(im, MAXKP, detector="gftt_scale")
            t0 = time.perf_counter()
            r = recipe_poses(features_at(im, own.xy), EST.estimate(im, own.xy)).descriptor_radius
            ours = features_at(im, own.xy, np.log2(np.maximum(r, 1e-12) / REFERENCE_RADIUS))
            secs["ours_scale"] += time.perf_counter() - t0
            shift = float(np.median(ours.frame - own.frame))
            scales.append(shift)
            # our scale's per-keypoint choice in windows as large as the detector's at the median (no accuracy read)
            sized = features_at(im, own.xy, ours.frame - shift)
            xys.append(own.xy)
            for name, f in (("own", own), ("ours", ours), ("ours_sized", sized)):
                desc[f"{name}:gradient"].append(row_descriptors("dominant_gradient", RUN, Image(f)).reshape(len(f), -1))
                desc[f"{name}:upright"].append(upright(f, turns[i]))
        rec = {"name": s.name, "turns": turns.round(2).tolist(), "seconds": secs,
               "median_log2_ours_over_own": scales, "pairs": {}}
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            for r in ROWS:
                x1, x2 = xys[0], xys[j]
                m = mutual_nn(desc[r][0], desc[r][j])[0]
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                rec["pairs"].setdefault(r, []).append([int((err <= THR).sum()), int(len(m)), len(x1), len(x2)])
        out["sequences"].append(rec)
        print(s.name, {r: np.array(v)[:, 0].mean().round(1) for r, v in rec["pairs"].items()}, flush=True)
        Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
