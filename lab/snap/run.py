"""LAB (#60): each keypoint's own angle snapped to its image's 4-fold lattice.

One image at a time, one descriptor per keypoint, one matching pass. The image gives an angle modulo 90 degrees (the
4-fold circular mean of its pixels' gradient orientations, magnitude-weighted, sigma 1.5 px: stable under viewpoint
change where the scene has straight structure, git tag lab-global-angle-2026-11-30); each keypoint keeps its own
quarter (its own angle, the dominant gradient's or our network's, rounded to the nearest lattice angle). A keypoint's
angle that is off by less than 45 degrees becomes exact (to the image angle's error); the network's angle, coarse but
robust, might be the better source of the quarter. Rows (RootSIFT, <= 1,000 keypoints, MNN; correct: <= 3 px):
gradient (the dominant gradient per keypoint: `pose` at SIFT, Key.Net), ours (v10's angle at the detector's scale),
snap_gradient, snap_ours, at SIFT also sift_all (SIFT with all its orientations, per location) and snap_sift (SIFT's
own first orientation snapped), upright_ours (each image upright in its sequence: the collection, for reference).

python lab/snap/run.py ROOT OUT.json [sift|keynet|gftt_scale|aliked]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
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
Q = np.pi / 2
BANDS = (10, 20, 30, 45)


def image_angle(image: np.ndarray) -> tuple[float, float]:
    """The image's angle modulo 90 degrees (radians in [0, pi/2)) and the 4-fold resultant's length (0..1)."""
    g = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
    g = cv2.GaussianBlur(g.astype(np.float32), (0, 0), 1.5)
    gx, gy = cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1)
    a, w = (
        np.arctan2(-gy, gx).ravel(),
        np.hypot(gx, gy).ravel(),
    )  # CCW as displayed, as the describer's angles
    z = (w * np.exp(4j * a)).sum()
    return float(np.mod(np.angle(z) / 4, Q)), float(abs(z) / max(w.sum(), 1e-9))


def snap(angles: np.ndarray, lattice: float) -> np.ndarray:
    return lattice + Q * np.round((np.asarray(angles) - lattice) / Q)


def soft_weights(angles: np.ndarray, lattice: float, band: float) -> tuple[np.ndarray, np.ndarray]:
    """The two lattice angles about each keypoint's own angle (N, 2) and blend weights (N, 2): all on the nearer one
    where the angle is more than ``band`` (radians) from the boundary between them, a linear ramp to 1/2 : 1/2 at it."""
    t = (np.asarray(angles) - lattice) / Q
    lo = np.floor(t)
    u = t - lo  # 0: on the lower lattice angle, 1: on the upper
    b = band / Q
    w_hi = np.clip(0.5 + (u - 0.5) / (2 * b), 0.0, 1.0) if b > 0 else (u > 0.5).astype(float)
    cand = lattice + Q * np.stack([lo, lo + 1], 1)
    return cand, np.stack([1 - w_hi, w_hi], 1)


def main():
    root, outp = sys.argv[1], sys.argv[2]
    detector = sys.argv[3] if len(sys.argv) > 3 else "sift"
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    out = {"root": root, "detector": detector, "sequences": []}
    t0 = time.time()
    for s in seqs:
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        coll = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
        feats, desc, lat = [], {}, []
        for i, im in enumerate(ims):
            f = detect(im, MAXKP, detector=detector, peers=PEERS)
            feats.append(f)
            g = np.asarray(get_row("dominant_gradient").poses(RUN, Image(f))[1])[:, 0]
            o = np.asarray(get_row("ours_angle").poses(RUN, Image(f))[1])[:, 0]
            L, R = image_angle(im)
            lat.append([L, R])
            ang = {
                "gradient": g,
                "ours": o,
                "snap_gradient": snap(g, L),
                "snap_ours": snap(o, L),
                "upright_ours": np.full(len(f), -np.radians(coll[i])),
            }
            if detector == "sift":
                so = np.asarray(get_row("sift").poses(RUN, Image(f))[1])[:, 0]
                ang["sift"] = so
                ang["snap_sift"] = snap(so, L)
                desc.setdefault("sift_all", []).append(row_descriptors("sift_all", RUN, Image(f)))
            for r, src in (
                ("gradient", g),
                ("ours", o),
                *((("sift", ang["sift"]),) if detector == "sift" else ()),
            ):
                for deg in BANDS:
                    cand, w = soft_weights(src, L, np.radians(deg))
                    d = RUN.describer.describe(
                        f.pyramid, np.repeat(f.xy, 2, 0), np.repeat(f.frame, 2), cand.reshape(-1)
                    )
                    desc.setdefault(f"soft{deg}_{r}", []).append(
                        blend_descriptors(d.reshape(len(f), 2, -1), w)
                    )
            for r, a in ang.items():
                desc.setdefault(r, []).append(
                    RUN.describer.describe(f.pyramid, f.xy, f.frame, a).reshape(len(f), -1)
                )
        rec = {"name": s.name, "pairs": {}, "lattice": lat}
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            x1, x2 = feats[0].xy, feats[j].xy
            for r in desc:
                m = mutual_nn(desc[r][0], desc[r][j])[0]
                err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                rec["pairs"].setdefault(r, []).append([int((err <= THR).sum()), int(len(m))])
        out["sequences"].append(rec)
        print(f"{time.time() - t0:.0f}s", s.name, {r: np.mean([p[0] for p in v]).round(1) for r, v in rec["pairs"].items()},
              flush=True)  # fmt: skip
    Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
