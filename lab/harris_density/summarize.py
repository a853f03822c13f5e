"""Each row's mean correct matches per pair, MMA@3, keypoints and seconds a sequence; rows minus the reference row
with 95 % intervals over photos (4,000 draws). python summarize.py REFERENCE FILE..."""

import json
import sys

import numpy as np

ref = sys.argv[1]
for f in sys.argv[2:]:
    seqs = json.load(open(f))["sequences"]
    rows = list(seqs[0]["pairs"])
    per = {r: np.array([[np.mean([p[0] for p in s["pairs"][r]]), np.mean([p[0] / max(p[1], 1) for p in s["pairs"][r]]),
                         np.mean([(p[2] + p[3]) / 2 for p in s["pairs"][r]]), s["seconds"][r]] for s in seqs])
           for r in rows}  # fmt: skip
    boot = np.random.default_rng(0).integers(0, len(seqs), (4000, len(seqs)))
    print(f"{f} ({len(seqs)} sequences)")
    for r, v in per.items():
        x = v - per[ref]
        lo, hi = np.percentile(x[boot].mean(1), [2.5, 97.5], axis=0)
        print(f"   {r:24s} correct {v[:, 0].mean():7.1f}  MMA@3 {v[:, 1].mean():.3f}  kp {v[:, 2].mean():5.0f}  "
              f"s/seq {v[:, 3].mean():5.1f}   minus {ref}: {x[:, 0].mean():+.1f} [{lo[0]:+.1f}, {hi[0]:+.1f}] "
              f"{x[:, 1].mean():+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]")
