"""LAB (#60), lab/corners_peers' run matched both ways: mutual nearest neighbours and Lowe's ratio test with a cross
check (0.8, as COLMAP matches; `ratio_matches`). Corners upright in the collection against the corner peers at their best, on the generated test
sequences (held out: the 15 test photos; nothing is chosen here). Two corner detectors, each keypoint's region at
a scale: Harris corners at our scale (patchpose-v10, what `extract --detector harris` ships) and Shi-Tomasi corners
in a scale space at their own scale (kornia's ScaleSpaceDetector, as its GFTTAffNetHardNet finds them). At each,
one RootSIFT descriptor (kornia) per keypoint in that region at: the dominant gradient's angle, OriNet's, AffNet's
shape + OriNet's angle (kornia, the peers' weights), and the angle that shows each image upright in its sequence
(our votes over its 6 images, `upright_collection`; or SIFT's pairwise turns averaged alike: no network). Pairs
(1, k), mutual nearest neighbours, correct within 3 px of H's image of the keypoint.

python lab/corners_peers/run.py ROOT OUT.json   (ROOT: data/hpatches, _zoom, _turn, _tilt; a rerun resumes)
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
from patchpose.evaluation.colmap_eval import sift_collection_turns
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.candidates import recipe_poses
from patchpose.matching.collection import upright_collection
from patchpose.matching.describe import Describer
from patchpose.matching.features import detect as library_detect
from patchpose.matching.features import features_at
from patchpose.matching.matcher import mutual_nn, ratio_matches

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = 2048, 3.0
EST = as_estimator("patchpose-v10")
PEERS = Peers("/work/shared/peers")
RUN = Run(Describer(), EST, MatchConfig(max_keypoints=MAXKP), PEERS)
PEER_ROWS = ("dominant_gradient", "orinet", "affnet+orinet")
DETECTORS = ("harris_ours", "gftt_scale")


def features(image, detector):
    if detector == "gftt_scale":
        return detect(image, MAXKP, detector="gftt_scale")
    f = library_detect(image, MAXKP, detector="harris")  # our scale, as the recipe `pose` reads it
    r = recipe_poses(f, EST.estimate(image, f.xy)).descriptor_radius
    return features_at(image, f.xy, np.log2(np.maximum(r, 1e-12) / REFERENCE_RADIUS))


def upright(feats, turn_deg):
    n = len(feats)
    d = RUN.describer.describe(feats.pyramid, feats.xy, feats.frame, np.full(n, -math.radians(turn_deg)))
    return d.reshape(n, -1)


def main():
    root, outp = sys.argv[1], sys.argv[2]
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    rows = [f"{d}:{r}" for d in DETECTORS for r in (*PEER_ROWS, "upright_ours", "upright_sift")]
    out = {"root": root, "rows": rows, "sequences": []}
    if Path(outp).is_file():  # resumed: the finished sequences are kept
        out = json.loads(Path(outp).read_text())
    done = {r["name"] for r in out["sequences"]}
    for s in seqs:
        if s.name in done:
            continue
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        t0 = time.perf_counter()
        ours = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        sift_t = np.asarray(sift_collection_turns(ims).degrees, float)
        t_sift = time.perf_counter() - t0
        desc = {r: [] for r in rows}
        xys = {d: [] for d in DETECTORS}
        secs = {r: 0.0 for r in rows}
        for i, im in enumerate(ims):
            for d in DETECTORS:
                f = features(im, d)
                xys[d].append(f.xy)
                for r in PEER_ROWS:
                    t0 = time.perf_counter()
                    desc[f"{d}:{r}"].append(row_descriptors(r, RUN, Image(f)).reshape(len(f), -1))
                    secs[f"{d}:{r}"] += time.perf_counter() - t0
                desc[f"{d}:upright_ours"].append(upright(f, ours[i]))
                desc[f"{d}:upright_sift"].append(upright(f, sift_t[i]))
        rec = {"name": s.name, "turns_ours": ours.round(2).tolist(), "turns_sift": sift_t.round(2).tolist(),
               "seconds_votes": [t_ours, t_sift], "seconds_rows": secs, "pairs": {}}
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            for r in rows:
                d = r.split(":")[0]
                x1, x2 = xys[d][0], xys[d][j]
                for key, match in (("pairs", mutual_nn), ("pairs_ratio", ratio_matches)):
                    m = match(desc[r][0], desc[r][j])[0]
                    err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                    rec.setdefault(key, {}).setdefault(r, []).append(
                        [int((err <= THR).sum()), int(len(m)), len(x1), len(x2)]
                    )
        out["sequences"].append(rec)
        print(s.name, {r: np.array(v)[:, 0].mean().round(1) for r, v in rec["pairs"].items()}, flush=True)
        Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
