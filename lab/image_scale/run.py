"""LAB (#60): one size per image from the network's scales, at keypoints with no scale (corners, ALIKED).

The network's per-keypoint scale follows a zoom but is noisy from keypoint to keypoint; a fixed 16 px frame is
steady but does not follow a zoom. Here each image's keypoints share one size: the median of the network's
per-keypoint frames (log2, as the `pose` recipe reads them) over the image, shifted by BETA, or shrunk toward it
(frame = median + ALPHA * (own - median)). One image at a time, 1 descriptor per keypoint (RootSIFT), the gradient's
angle on that window, 1 matching pass (mutual nearest neighbours). Rows, per detector (gftt corners and ALIKED-n16,
both at 16 px as found; <= MAXKP strongest):
  g16, orinet, affnet+orinet   the peers at the detector's 16 px frame
  pose                         the `pose` recipe: our per-keypoint scale, the gradient's angle there
  img_a{A}_b{B}                one size per image from the network (median + B), shrunk by A
  log_img_b0                   the network replaced: the LoG's per-keypoint scale (Table 1's `log`), its median
and the scale-space corners (`gftt_scale`, their own scale; the gradient's angle): a peer detector with a scale.
Pairs (1, k) of each viewpoint sequence; correct within 3 px of H's image.

python lab/image_scale/run.py ROOT OUT.json   (a rerun resumes; one thread)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.conventions import REFERENCE_RADIUS
from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.descriptors import describer
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, handcrafted_poses, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.candidates import gradient_angles, recipe_poses
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = 1000, 3.0
EST = as_estimator("patchpose-v10")
PEERS = Peers("/work/shared/peers")
RUN = Run(describer("sift", peers=PEERS), EST, MatchConfig(max_keypoints=MAXKP), PEERS)
VARIANTS = [(0.0, -1.0), (0.0, -0.5), (0.0, 0.0), (0.0, 0.5), (0.5, 0.0), (0.25, 0.0)]
DETECTORS = ("gftt", "aliked")


def frames_for(f, image):
    """{row: (N,) log2 frames} of the scale rows; the network read once."""
    t0 = time.perf_counter()
    own = np.log2(np.maximum(recipe_poses(f, EST.estimate(image, f.xy)).descriptor_radius, 1e-12) / REFERENCE_RADIUS)
    t_read = time.perf_counter() - t0
    m = float(np.median(own))
    out = {"pose": own}
    for a, b in VARIANTS:
        out[f"img_a{a:g}_b{b:g}"] = m + b + a * (own - m)
    log = handcrafted_poses(f, scale=True)[0]
    out["log_img_b0"] = np.full(len(f), float(np.median(log)))
    return out, t_read, m


def main():
    root, outp = sys.argv[1], sys.argv[2]
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    out = {"root": root, "maxkp": MAXKP, "sequences": []}
    if Path(outp).is_file():
        out = json.loads(Path(outp).read_text())
    done = {r["name"] for r in out["sequences"]}
    for s in seqs:
        if s.name in done:
            continue
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        desc, feats, secs, medians = {}, {}, {}, {}
        for d in (*DETECTORS, "gftt_scale"):
            feats[d] = []
            for im in ims:
                t0 = time.perf_counter()
                f = detect(im, MAXKP, detector=d, peers=PEERS)
                secs[f"detect|{d}"] = secs.get(f"detect|{d}", 0.0) + time.perf_counter() - t0
                feats[d].append(f)
                if d == "gftt_scale":
                    rows = {"own": row_descriptors("dominant_gradient", RUN, Image(f)).reshape(len(f), -1)}
                else:
                    rows = {}
                    for r in ("dominant_gradient", "orinet", "affnet+orinet"):
                        t0 = time.perf_counter()
                        rows[r] = row_descriptors(r, RUN, Image(f)).reshape(len(f), -1)
                        secs[f"{d}:{r}"] = secs.get(f"{d}:{r}", 0.0) + time.perf_counter() - t0
                    fr, t_read, m = frames_for(f, im)
                    secs[f"{d}:read"] = secs.get(f"{d}:read", 0.0) + t_read
                    medians.setdefault(d, []).append(m)
                    for r, frame in fr.items():
                        t0 = time.perf_counter()
                        ang = gradient_angles(f, frame)
                        rows[r] = RUN.describer.describe(f.pyramid, f.xy, frame, ang).reshape(len(f), -1)
                        secs[f"{d}:{r}"] = secs.get(f"{d}:{r}", 0.0) + time.perf_counter() - t0
                for r, v in rows.items():
                    desc.setdefault(f"{d}:{r}", []).append(v)
        rec = {"name": s.name, "seconds": secs, "medians": medians, "pairs": {}}
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            for r, v in desc.items():
                d = r.split(":")[0]
                x1, x2 = feats[d][0].xy, feats[d][j].xy
                m = mutual_nn(v[0], v[j])[0]
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                rec["pairs"].setdefault(r, []).append([int((err <= THR).sum()), int(len(m)), len(x1), len(x2)])
        out["sequences"].append(rec)
        print(s.name, {r: float(np.array(v)[:, 0].mean().round(1)) for r, v in rec["pairs"].items()}, flush=True)
        tmp = Path(outp + ".tmp")
        tmp.write_text(json.dumps(out))
        tmp.replace(outp)


if __name__ == "__main__":
    main()
