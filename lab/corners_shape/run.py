"""LAB (#60): affine shapes upright in the collection, at the corner peers' keypoints (Shi-Tomasi corners in a scale
space, kornia's ScaleSpaceDetector, ≤ 2,048, the detector's scale): AffNet + OriNet (kornia's corner pipeline's
frames, the peer) against each image's affine shape described upright in its sequence (our votes over its 6 images):
AffNet's shape (a peer network's) or our shape network's (the bundled one), and the isotropic frame upright. The
ellipse of a shape in the photo un-turned by u is R(u)·S·Sᵀ·R(u)ᵀ; its upright frame (lower triangular, as kornia's
make_upright) is its Cholesky factor; in the photo the frame is R(−u) times it. Test split's generated sequences
(held out), pairs (1, k), RootSIFT (kornia), mutual nearest neighbours, correct within 3 px of H.

python lab/corners_shape/run.py ROOT OUT.json   (ROOT: /work/data/hpatches, _zoom, _turn, _tilt; a rerun resumes)
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

from patchpose.conventions import rotation_matrix
from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import Image, MatchConfig, Run, affnet_frames_of, detect, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.blend import affine_parts
from patchpose.matching.candidates import shape_frames
from patchpose.matching.collection import upright_collection
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR = 2048, 3.0
PEERS = Peers("/work/shared/peers")
RUN = Run(Describer(), as_estimator("patchpose-v10"), MatchConfig(max_keypoints=MAXKP), PEERS)
ROWS = ("affnet+orinet", "iso:upright", "affnet:upright", "ours_shape:upright")


def upright_shapes(shape, turn_deg):
    """R(−u)·chol(R(u)·S·Sᵀ·R(u)ᵀ): the frame that shows the shape's ellipse upright in the un-turned photo."""
    u = math.radians(turn_deg)
    r, back = rotation_matrix(u), rotation_matrix(-u)
    e = r @ shape @ np.swapaxes(shape, 1, 2) @ r.T
    return back @ np.linalg.cholesky(e)


def describe(feats, log2_scale, shape):
    n = len(feats)
    return RUN.describer.describe(feats.pyramid, feats.xy, log2_scale, np.zeros(n), shape=shape).reshape(n, -1)


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
        desc, xys, secs = {r: [] for r in ROWS}, [], {"affnet": 0.0, "ours_shape": 0.0}
        for i, im in enumerate(ims):
            f = detect(im, MAXKP, detector="gftt_scale", peers=PEERS)
            xys.append(f.xy)
            n = len(f)
            desc["affnet+orinet"].append(row_descriptors("affnet+orinet", RUN, Image(f)).reshape(n, -1))
            eye = np.repeat(np.eye(2)[None], n, 0)
            desc["iso:upright"].append(describe(f, f.frame, upright_shapes(eye, turns[i])))
            t0 = time.perf_counter()
            sa, pa = affine_parts(affnet_frames_of(f, PEERS))
            secs["affnet"] += time.perf_counter() - t0
            desc["affnet:upright"].append(describe(f, sa, upright_shapes(pa, turns[i])))
            t0 = time.perf_counter()
            so, po = shape_frames(f)
            secs["ours_shape"] += time.perf_counter() - t0
            desc["ours_shape:upright"].append(describe(f, so, upright_shapes(po, turns[i])))
        rec = {"name": s.name, "turns": turns.round(2).tolist(), "seconds": secs, "pairs": {}}
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
