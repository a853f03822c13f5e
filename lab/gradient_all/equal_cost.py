"""python lab/gradient_all/equal_cost.py AT1000.json AT1200.json: the budget row (1.2 descriptors a keypoint, 1,000
keypoints) against the gradient's one descriptor at 1,200 keypoints (MAXKP=1200): the same descriptors an image."""

import json
import sys

import numpy as np

a, b = (json.load(open(p)) for p in sys.argv[1:3])
rng = np.random.default_rng(0)


def per(d, r):
    return np.array([np.mean([p[0] for p in s["pairs"][r]]) for s in d["sequences"]])


def mma(d, r):
    c = [p[0] for s in d["sequences"] for p in s["pairs"][r]]
    m = [p[1] for s in d["sequences"] for p in s["pairs"][r]]
    return np.sum(c) / np.sum(m)


x, y = per(b, "dominant_gradient"), per(a, "gradient_budget")
d = y - x
bs = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
print(f"gradient at 1,200 keypoints {x.mean():.1f} (MMA@3 {mma(b, 'dominant_gradient'):.3f}); budget at 1,000 "
      f"{y.mean():.1f} ({mma(a, 'gradient_budget'):.3f}); budget minus gradient {d.mean():+.1f} "
      f"[{np.percentile(bs, 2.5):+.1f}, {np.percentile(bs, 97.5):+.1f}]")  # fmt: skip
