"""python lab/equal_descriptors/counts.py ROOT...: descriptors an image of SIFT with all its orientations at
--max-keypoints 1000 (its locations, its orientations) against `pose` (one a location) at several caps."""

import sys

import numpy as np

from patchpose.data.keypoints import detect_sift
from patchpose.evaluation.datasets.hpatches import load_hpatches

for root in sys.argv[1:]:
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    loc, desc, pose = [], [], {n: [] for n in (1000, 1210, 1400, 1500, 1600, 2000)}
    for s in seqs:
        for k in (1, *s.targets):
            im = s.image(k)
            xy, _, cand = detect_sift(im, 1000, candidates=True)
            loc.append(len(xy))
            desc.append(sum(len(c) for c in cand))
            for n in pose:
                pose[n].append(len(detect_sift(im, n)[0]))
    print(root, f"SIFT-all at 1,000: {np.mean(loc):.0f} locations, {np.mean(desc):.0f} descriptors an image;",
          "pose:", {n: round(float(np.mean(v))) for n, v in pose.items()})  # fmt: skip
