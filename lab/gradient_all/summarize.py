"""python lab/gradient_all/summarize.py OUT.json REFERENCE_ROW: mean correct a pair, MMA@3 and descriptors a
keypoint per row; each row minus the reference in correct matches, 95 % bootstrap over sequences (photos)."""

import json
import sys

import numpy as np

d = json.load(open(sys.argv[1]))
ref = sys.argv[2]
seqs = d["sequences"]
rows = list(seqs[0]["pairs"])
rng = np.random.default_rng(0)
per = {r: np.array([np.mean([p[0] for p in s["pairs"][r]]) for s in seqs]) for r in rows}
for r in rows:
    c = [p[0] for s in seqs for p in s["pairs"][r]]
    m = [p[1] for s in seqs for p in s["pairs"][r]]
    diff = per[r] - per[ref]
    b = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(2000)]
    dk = np.mean([s.get("descriptors_per_keypoint", {}).get(r, 1.0) for s in seqs])
    print(f"{r:18s} {np.mean(c):6.1f} MMA {np.sum(c) / np.sum(m):.3f} desc/kp {dk:.2f}  -{ref} {diff.mean():+.1f} "
          f"[{np.percentile(b, 2.5):+.1f}, {np.percentile(b, 97.5):+.1f}]")  # fmt: skip
