"""LAB (#60): `pose` against SIFT with all its orientations at equal descriptors, image by image.

`--max-keypoints` caps OpenCV's detections, not descriptors: SIFT with all its orientations at 1,000 detections keeps
fewer locations (its several orientations at one location are one) and matches 1.2 descriptors a location, and
most images here have fewer than 1,000 detections, so no one cap gives `pose` (one descriptor a location) as many
descriptors. Here each image's `pose` keeps its strongest locations (of up to 8,000 detections) up to the number of
descriptors SIFT with all its orientations matches in that image (all of them where the image has fewer). RootSIFT,
MNN, correct <= 3 px; viewpoint sequences; 95 % bootstrap over photos.

python lab/equal_descriptors/per_image.py ROOT OUT.json
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

from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.rows import Image, MatchConfig, Run, candidate_counts, detect, row_descriptors
from patchpose.geometry import apply_homography
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn

torch.set_num_threads(1)
cv2.setNumThreads(1)
THR = 3.0
RUN = Run(Describer(), as_estimator("patchpose-v10"), MatchConfig(max_keypoints=1000), None)


def strongest(f, k: int):
    """The ``k`` strongest locations of ``f`` (strongest first), with a memo of their own."""
    cand = None if f.sift_ori_candidates is None else f.sift_ori_candidates[:k]
    det = None if f.detector_scale is None else f.detector_scale[:k]
    return replace(f, xy=f.xy[:k], sift_scale=f.sift_scale[:k], sift_ori=f.sift_ori[:k], sift_ori_candidates=cand,
                   detector_scale=det, memo={})  # fmt: skip


def main():
    root, outp = sys.argv[1], sys.argv[2]
    out = {"root": root, "sequences": []}
    t0 = time.time()
    for s in (s for s in load_hpatches(root) if s.kind == "viewpoint"):
        ks = [1, *s.targets]
        feats, desc, counts = (
            {"sift_all": [], "pose": []},
            {"sift_all": [], "pose": []},
            {"sift_all": [], "pose": []},
        )
        for k in ks:
            im = s.image(k)
            fa = detect(im, 1000, detector="sift")
            d = int(candidate_counts("sift_all", RUN, Image(fa)).sum())
            fb = strongest(detect(im, 8000, detector="sift"), d)
            for r, f in (("sift_all", fa), ("pose", fb)):
                feats[r].append(f)
                desc[r].append(row_descriptors(r, RUN, Image(f)))
            counts["sift_all"].append(d)
            counts["pose"].append(len(fb))
        rec = {"name": s.name, "descriptors": {r: float(np.mean(v)) for r, v in counts.items()}, "pairs": {}}
        for j, k in enumerate(ks[1:], start=1):
            for r in desc:
                x1, x2 = feats[r][0].xy, feats[r][j].xy
                m = mutual_nn(desc[r][0], desc[r][j])[0]
                err = np.linalg.norm(apply_homography(s.homographies[k], x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                rec["pairs"].setdefault(r, []).append([int((err <= THR).sum()), int(len(m))])
        out["sequences"].append(rec)
        print(f"{time.time() - t0:.0f}s", s.name, rec["descriptors"],
              {r: np.mean([p[0] for p in v]).round(1) for r, v in rec["pairs"].items()}, flush=True)  # fmt: skip
    seqs = out["sequences"]
    rng = np.random.default_rng(0)
    per = {r: np.array([[np.mean([p[0] for p in s["pairs"][r]]), np.mean([p[0] / max(p[1], 1) for p in s["pairs"][r]])]
                        for s in seqs]) for r in ("pose", "sift_all")}  # fmt: skip
    for j, what in ((0, "correct a pair"), (1, "MMA@3")):
        d = per["pose"][:, j] - per["sift_all"][:, j]
        bs = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
        line = (f"{what}: pose {per['pose'][:, j].mean():.3f}, SIFT-all {per['sift_all'][:, j].mean():.3f}, pose minus "
                f"SIFT-all {d.mean():+.3f} [{np.percentile(bs, 2.5):+.3f}, {np.percentile(bs, 97.5):+.3f}]")  # fmt: skip
        out.setdefault("summary", []).append(line)
        print(line)
    dn = {r: np.mean([s["descriptors"][r] for s in seqs]) for r in ("pose", "sift_all")}
    out["summary"].append(f"descriptors an image: pose {dn['pose']:.0f}, SIFT-all {dn['sift_all']:.0f}")
    print(out["summary"][-1])
    Path(outp).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
