"""Correct matches per pair and MMA@3 of each row, and each row minus a reference row with 95 % intervals over
the 15 photos (4,000 draws). python summarize.py REFERENCE FILE..."""

import json
import sys

import numpy as np

ref = sys.argv[1]
for f in sys.argv[2:]:
    d = json.load(open(f))
    seqs, rows = d["sequences"], d["rows"]
    per = {
        r: np.array([[np.mean([p[0] for p in s["pairs"][r]]), np.mean([p[0] / max(p[1], 1) for p in s["pairs"][r]])]
                     for s in seqs])
        for r in rows
    }  # fmt: skip
    boot = np.random.default_rng(0).integers(0, len(seqs), (4000, len(seqs)))
    print(f"{f} ({len(seqs)} sequences)")
    for r, v in per.items():
        x = v - per[ref]
        lo, hi = np.percentile(x[boot].mean(1), [2.5, 97.5], axis=0)
        print(f"   {r:22s} correct {v[:, 0].mean():7.1f}  MMA@3 {v[:, 1].mean():.3f}   minus {ref}: "
              f"{x[:, 0].mean():+.1f} [{lo[0]:+.1f}, {hi[0]:+.1f}]  {x[:, 1].mean():+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]")
