"""Corners upright in the collection against the gradient's angle and OriNet's: correct matches per pair and MMA@3,
differences with 95 % intervals over the 15 photos (4,000 draws)."""

import json
import sys

import numpy as np

for f in sys.argv[1:]:
    seqs = json.load(open(f))["sequences"]
    rows = list(seqs[0]["pairs"])
    per = {
        r: np.array(
            [
                [
                    np.mean([p[0] for p in s["pairs"][r]]),
                    np.mean([p[0] / max(p[1], 1) for p in s["pairs"][r]]),
                ]
                for s in seqs
            ]
        )  # fmt: skip
        for r in rows
    }
    boot = np.random.default_rng(0).integers(0, len(seqs), (4000, len(seqs)))
    print(f, {r: (round(v[:, 0].mean(), 1), round(v[:, 1].mean(), 3)) for r, v in per.items()})
    for b in ("harris_pose", "harris_orinet"):
        d = per["harris_coll"] - per[b]
        lo, hi = np.percentile(d[boot].mean(1), [2.5, 97.5], axis=0)
        print(f"   harris_coll - {b}: correct {d[:, 0].mean():+.1f} [{lo[0]:+.1f}, {hi[0]:+.1f}]"
              f"  MMA@3 {d[:, 1].mean():+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]")  # fmt: skip
