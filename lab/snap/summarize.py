"""python lab/snap/summarize.py OUT.json [REFERENCE_ROW]: mean correct a pair and MMA@3 per row; each row minus the
reference in correct matches, 95 % bootstrap over sequences (photos)."""

import json
import sys

import numpy as np

d = json.load(open(sys.argv[1]))
ref = sys.argv[2] if len(sys.argv) > 2 else "gradient"
seqs = d["sequences"]
rows = list(seqs[0]["pairs"])
rng = np.random.default_rng(0)
per = {r: np.array([np.mean([p[0] for p in s["pairs"][r]]) for s in seqs]) for r in rows}
for r in rows:
    c = [p[0] for s in seqs for p in s["pairs"][r]]
    m = [p[1] for s in seqs for p in s["pairs"][r]]
    diff = per[r] - per[ref]
    boots = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(2000)]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    print(
        f"{r:16s} correct {np.mean(c):6.1f}  MMA@3 {np.sum(c) / max(np.sum(m), 1):.3f}  minus {ref}: "
        f"{diff.mean():+6.1f} [{lo:+.1f}, {hi:+.1f}]"
    )
