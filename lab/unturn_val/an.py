"""Summary of run.py's rows: mean correct a pair per config, minus linear_full with a 95 % bootstrap interval over
sequences (2,000 replicates), the canvas's pixels and photo 1's extraction time against one as it comes.

    python lab/unturn_val/an.py val.jsonl
"""
import json
import sys
from collections import defaultdict

import numpy as np

rows = [json.loads(x) for x in open(sys.argv[1])]
keys = [k for k in rows[0] if k.endswith(("full", "cap1.5", "cap1.3", "cap1.2"))]
seqs = sorted({r["sequence"] for r in rows})
by = defaultdict(list)
for r in rows:
    by[r["sequence"]].append(r)
rng = np.random.default_rng(0)
ref = "linear_full"
print(f"{len(rows)} pairs, {len(seqs)} sequences; turns found {sum(r['found'] for r in rows)}")
for k in keys:
    mean = np.mean([r[k] for r in rows])
    d = {s: np.sum([r[k] - r[ref] for r in by[s]]) for s in seqs}
    n = {s: len(by[s]) for s in seqs}
    boots = []
    for _ in range(2000):
        pick = rng.choice(seqs, len(seqs))
        boots.append(sum(d[s] for s in pick) / sum(n[s] for s in pick))
    lo, hi = np.percentile(boots, [2.5, 97.5])
    off = [r for r in rows if r[k + "_pixels"] != 1.0 or "full" not in k]
    cut = [r for r in rows if r["linear_full_pixels"] > 1.0001]
    px = np.mean([r[k + "_pixels"] for r in cut]) if cut else 1.0
    tm = np.median([r[k + "_s"] / r["extract_s"] for r in cut]) if cut else 1.0
    print(f"{k:16s} {mean:7.1f}  minus {ref} {mean - np.mean([r[ref] for r in rows]):+6.1f} [{lo:+.1f}, {hi:+.1f}]"
          f"  pairs off a quarter turn: canvas {px:.2f}x pixels, extraction {tm:.2f}x one (median)")
