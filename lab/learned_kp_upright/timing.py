"""Seconds per image of each row's description on a fresh copy of the keypoints (nothing memoised: the peers'
angles and shapes computed inside), Key.Net and ALIKED keypoints (<= 1,000), RootSIFT, one thread; the first image
of each of the first N test viewpoint sequences; median over images. Upright: the angle given (the votes timed apart).

python lab/learned_kp_upright/timing.py ROOT [N]
"""

import math
import sys
import time
from dataclasses import replace

import numpy as np

sys.argv += [] if len(sys.argv) > 2 else ["5"]
import run as R  # noqa: E402  (the lab's run.py beside this file)

from patchpose.evaluation.datasets.hpatches import load_hpatches  # noqa: E402
from patchpose.evaluation.rows import Image, row_descriptors  # noqa: E402

seqs = [s for s in load_hpatches(sys.argv[1]) if s.kind == "viewpoint"][: int(sys.argv[2])]
out = {}
for s in seqs:
    im = s.image(1)
    for d in ("keynet", "aliked16"):
        f = R.features(im, d)
        for r in R.PEER_ROWS:
            g = replace(f, memo={})
            t = time.perf_counter()
            row_descriptors(r, R.RUNS["sift"], Image(g))
            out.setdefault(f"{d}:{r}", []).append(time.perf_counter() - t)
        g = replace(f, memo={})
        t = time.perf_counter()
        R.RUNS["sift"].describer.describe(g.pyramid, g.xy, g.frame, np.full(len(g), -math.radians(30.0)))
        out.setdefault(f"{d}:upright", []).append(time.perf_counter() - t)
for k, v in out.items():
    print(f"{k:32s} {np.median(v):.3f} s (min {min(v):.3f}, max {max(v):.3f})")
