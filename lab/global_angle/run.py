"""LAB (#60): one image at a time, one angle per image. Each image's keypoints all described at one angle that the
image alone gives: the mode of its keypoints' angles (the dominant gradient's, or our network's), or of the whole
image's gradient orientations (magnitude-weighted, pixels). If that angle turns with the image, keypoints get
consistent angles with no collection. Key.Net keypoints (<= 1,000), RootSIFT, MNN, pairs (1, k); rows: the
dominant gradient per keypoint, upright in the collection (our votes), and the three per-image angles. Also each
pair's per-image angle difference against H's turn (within 5 / 10 / 20 deg).

python lab/global_angle/run.py ROOT OUT.json   (val first)
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import true_turn
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, get_row, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.blend import blend_descriptors
from patchpose.matching.collection import upright_collection
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = 1000, 3.0
EST = as_estimator("patchpose-v10")
PEERS = Peers("/work/shared/peers")
RUN = Run(Describer(), EST, MatchConfig(max_keypoints=MAXKP), PEERS)
BINS = 72


def mode(angles, weights=None):
    """The mode of angles (radians) on a 72-bin circular histogram smoothed by [1, 2, 1], refined by a parabola."""
    h = np.bincount((np.mod(angles, 2 * np.pi) / (2 * np.pi) * BINS).astype(int) % BINS, weights, BINS)
    h = np.roll(h, 1) + 2 * h + np.roll(h, -1)
    i = int(h.argmax())
    a, b, c = h[i - 1], h[i], h[(i + 1) % BINS]
    off = 0.5 * (a - c) / (a - 2 * b + c) if (a - 2 * b + c) != 0 else 0.0
    return (i + 0.5 + off) * 2 * np.pi / BINS


def mode4(angles, weights=None):
    """The angle modulo 90 degrees that the 4-fold circular mean of ``angles`` gives (radians in [0, pi/2))."""
    w = np.ones(len(angles)) if weights is None else weights
    z = (w * np.exp(4j * np.asarray(angles))).sum()
    return float(np.mod(np.angle(z) / 4, np.pi / 2))


def pixel_grad(image):
    g = (
        cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(np.float32)
        if image.ndim == 3
        else image.astype(np.float32)
    )
    g = cv2.GaussianBlur(g, (0, 0), 1.5)
    gx, gy = cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1)
    return np.arctan2(-gy, gx).ravel(), np.hypot(gx, gy).ravel()


def pixel_mode(image):
    g = (
        cv2.cvtColor(image, cv2.COLOR_RGB2GRAY).astype(np.float32)
        if image.ndim == 3
        else image.astype(np.float32)
    )
    g = cv2.GaussianBlur(g, (0, 0), 1.5)
    gx, gy = cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1)
    # CCW as displayed (y down): the angle of (gx, -gy)
    return mode(np.arctan2(-gy, gx).ravel(), np.hypot(gx, gy).ravel())


def main():
    root, outp = sys.argv[1], sys.argv[2]
    detector = sys.argv[3] if len(sys.argv) > 3 else "keynet"
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    rows = (
        "dominant_gradient",
        "upright_ours",
        "mode_gradient",
        "mode_ours",
        "mode_pixels",
        "q4_pixels",
        "q4_gradient",
        "dominant_gradient_blend",
    )
    out = {"root": root, "detector": detector, "sequences": []}
    for s in seqs:
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        coll = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
        feats, desc, img_angle = [], {r: [] for r in rows}, {r: [] for r in rows[2:]}
        quarters = {"q4_pixels": [], "q4_gradient": []}
        for i, im in enumerate(ims):
            f = detect(im, MAXKP, detector=detector, peers=PEERS)
            feats.append(f)
            g = np.asarray(get_row("dominant_gradient").poses(RUN, Image(f))[1])[:, 0]
            o = np.asarray(get_row("ours_angle").poses(RUN, Image(f))[1])[:, 0]
            ang = {
                "dominant_gradient": g,
                "upright_ours": np.full(len(f), -math.radians(coll[i])),
                "mode_gradient": np.full(len(f), mode(g)),
                "mode_ours": np.full(len(f), mode(o)),
                "mode_pixels": np.full(len(f), pixel_mode(im)),
            }
            ang["q4_pixels"] = np.full(len(f), mode4(*pixel_grad(im)))
            ang["q4_gradient"] = np.full(len(f), mode4(g))
            for r in rows[2:7]:
                img_angle[r].append(float(ang[r][0]))
            for r in rows[:5]:
                desc[r].append(RUN.describer.describe(f.pyramid, f.xy, f.frame, ang[r]).reshape(len(f), -1))
            for r in (
                "q4_pixels",
                "q4_gradient",
            ):  # the 4 quarter turns of the image's angle, blended equally
                q = (ang[r][:, None] + np.arange(4)[None] * np.pi / 2).reshape(-1)
                d = RUN.describer.describe(f.pyramid, np.repeat(f.xy, 4, 0), np.repeat(f.frame, 4), q)
                desc[r].append(blend_descriptors(d.reshape(len(f), 4, -1), np.full((len(f), 4), 0.25)))
            for r in ("q4_pixels", "q4_gradient"):  # each quarter turn of the image's angle, described apart
                quarters[r].append([RUN.describer.describe(f.pyramid, f.xy, f.frame, ang[r] + q * np.pi / 2)
                                    .reshape(len(f), -1) for q in range(4)])  # fmt: skip
            if detector == "sift":  # SIFT with all its orientations (N, k, D), matched per location
                desc.setdefault("sift_all", []).append(row_descriptors("sift_all", RUN, Image(f)))
            desc["dominant_gradient_blend"].append(
                row_descriptors("dominant_gradient_blend", RUN, Image(f)).reshape(len(f), -1)
            )
        rec = {"name": s.name, "pairs": {}, "turn_error": {}}
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            x1, x2 = feats[0].xy, feats[j].xy
            for r in desc:
                m = mutual_nn(desc[r][0], desc[r][j])[0]
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                rec["pairs"].setdefault(r, []).append([int((err <= THR).sum()), int(len(m))])
            for r in ("q4_pixels", "q4_gradient"):  # the quarter with most mutual matches
                best = max(range(4), key=lambda q: len(mutual_nn(quarters[r][0][0], quarters[r][j][q])[0]))
                m = mutual_nn(quarters[r][0][0], quarters[r][j][best])[0]
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                rec["pairs"].setdefault(r + "_best", []).append([int((err <= THR).sum()), int(len(m)), best])
            t = true_turn(H, x1, ims[j].shape)
            for r in rows[2:7]:
                per = 90.0 if r.startswith("q4") else 360.0
                d = math.degrees(img_angle[r][j] - img_angle[r][0]) - (t if t is not None else np.nan)
                rec["turn_error"].setdefault(r, []).append(float(abs((d + per / 2) % per - per / 2)))
        out["sequences"].append(rec)
        print(s.name, {r: np.mean([p[0] for p in v]).round(1) for r, v in rec["pairs"].items()},
              {r: np.round(v, 0).tolist() for r, v in rec["turn_error"].items()}, flush=True)  # fmt: skip
    Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
