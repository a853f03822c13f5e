"""LAB (#60): the dominant gradient with all its peaks, as SIFT keeps its orientations.

`pose` describes a keypoint once at the dominant gradient's angle read on its descriptor window (at SIFT keypoints
it finds more correct matches than SIFT's own first orientation, fewer than SIFT with all its orientations). Here
each keypoint also keeps the gradient's second and third peaks where they hold ``rho`` of the strongest's mass
(SIFT's rule: 0.8), matched per location as SIFT with all its orientations is (a pair's distance: the smallest over
its descriptors), with the descriptors per keypoint counted. One image at a time, one matching pass, no network.
RootSIFT, <= 1,000 keypoints, MNN, correct <= 3 px.

python lab/gradient_all/run.py ROOT OUT.json [sift|keynet|gftt_scale|aliked]
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.data.patches import extract_patches
from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import (
    Image,
    MatchConfig,
    Run,
    candidate_counts,
    detect,
    get_row,
    row_descriptors,
)
from patchpose.geometry import apply_homography
from patchpose.matching.describe import Describer
from patchpose.matching.gradient import ORI_PATCH, dominant_gradient_candidates
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = int(os.environ.get("MAXKP", 1000)), 3.0  # MAXKP=1200: one descriptor a keypoint at 1.2x
EST = as_estimator("patchpose-v10")
PEERS = Peers("/work/shared/peers")
RUN = Run(Describer(), EST, MatchConfig(max_keypoints=MAXKP), PEERS)
RHOS = (0.8, 0.9, 0.95)
BUDGET = 0.2  # the budget row: a second peak at the 20 % of keypoints whose second peak is strongest (>= 0.8)
K = 3


def gradient_all(f, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """(N, K) orientations (a keypoint with fewer strong peaks repeats its first) and (N,) counts."""
    n = len(f)
    patches = extract_patches(f.pyramid, f.xy, f.frame, np.zeros(n), ORI_PATCH, [1.0])
    ori, mass = dominant_gradient_candidates(patches, K)
    keep = mass >= rho * mass[:, :1]
    keep[:, 0] = True
    return np.where(keep, ori, ori[:, :1]), keep.sum(1)


def main():
    root, outp = sys.argv[1], sys.argv[2]
    detector = sys.argv[3] if len(sys.argv) > 3 else "sift"
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    out = {"root": root, "detector": detector, "sequences": []}
    t0 = time.time()
    for s in seqs:
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        feats, desc, counts = [], {}, {}
        for im in ims:
            f = detect(im, MAXKP, detector=detector, peers=PEERS)
            feats.append(f)
            rows = ["dominant_gradient", "orinet"] + (["sift_all", "sift"] if detector == "sift" else [])
            for r in rows:
                d = row_descriptors(r, RUN, Image(f))
                desc.setdefault(r, []).append(d)
                counts.setdefault(r, []).append(float(np.mean(candidate_counts(r, RUN, Image(f)))))
            g1 = get_row("dominant_gradient").poses(RUN, Image(f))[1][:, 0]
            if detector == "sift":  # SIFT's orientations, the one nearest the gradient's angle replaced by it
                ss, so = get_row("sift_all").poses(RUN, Image(f))
                c = candidate_counts("sift_all", RUN, Image(f))
                near = np.abs(np.mod(so - g1[:, None] + np.pi, 2 * np.pi) - np.pi)
                near = np.where(np.arange(so.shape[1])[None] < c[:, None], near, np.inf).argmin(1)
                for name, col in (("sift_extra_first", np.zeros(len(f), int)), ("sift_extra_nearest", near)):
                    o = so.copy()
                    o[np.arange(len(f)), col] = g1
                    o = np.where(
                        np.arange(so.shape[1])[None] < c[:, None], o, o[np.arange(len(f)), col][:, None]
                    )
                    d = RUN.describer.describe(
                        f.pyramid, np.repeat(f.xy, o.shape[1], 0), ss.reshape(-1), o.reshape(-1)
                    )
                    desc.setdefault(name, []).append(d.reshape(len(f), o.shape[1], -1))
                    counts.setdefault(name, []).append(float(c.mean()))
            for rho in RHOS:
                o, c = gradient_all(f, rho)
                assert np.allclose(np.mod(o[:, 0] - g1 + np.pi, 2 * np.pi) - np.pi, 0, atol=1e-4), (
                    "first peak"
                )
                d = RUN.describer.describe(
                    f.pyramid, np.repeat(f.xy, K, 0), np.repeat(f.frame, K), o.reshape(-1)
                )
                desc.setdefault(f"gradient_all{rho}", []).append(d.reshape(len(f), K, -1))
                counts.setdefault(f"gradient_all{rho}", []).append(float(c.mean()))
            patches = extract_patches(f.pyramid, f.xy, f.frame, np.zeros(len(f)), ORI_PATCH, [1.0])
            ori, mass = dominant_gradient_candidates(patches, 2)
            ratio = mass[:, 1] / np.maximum(mass[:, 0], 1e-12)
            cut = np.sort(ratio)[::-1][int(BUDGET * len(f))] if len(f) > int(BUDGET * len(f)) else -1.0
            two = (ratio > cut) & (ratio >= 0.8)
            o = np.where(two[:, None], ori, ori[:, :1])
            d = RUN.describer.describe(f.pyramid, np.repeat(f.xy, 2, 0), np.repeat(f.frame, 2), o.reshape(-1))
            desc.setdefault("gradient_budget", []).append(d.reshape(len(f), 2, -1))
            counts.setdefault("gradient_budget", []).append(1.0 + float(two.mean()))
        rec = {
            "name": s.name,
            "pairs": {},
            "descriptors_per_keypoint": {r: float(np.mean(v)) for r, v in counts.items()},
        }
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            x1, x2 = feats[0].xy, feats[j].xy
            for r in desc:
                m = mutual_nn(desc[r][0], desc[r][j])[0]
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                rec["pairs"].setdefault(r, []).append([int((err <= THR).sum()), int(len(m))])
        out["sequences"].append(rec)
        print(f"{time.time() - t0:.0f}s", s.name, {r: np.mean([p[0] for p in v]).round(1) for r, v in rec["pairs"].items()},
              {r: round(v, 2) for r, v in rec["descriptors_per_keypoint"].items()}, flush=True)  # fmt: skip
    Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
