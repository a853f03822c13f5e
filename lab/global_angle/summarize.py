"""Per kind: correct matches per pair and MMA@3 of each row, the rows minus the dominant gradient and minus upright in
the collection, 95 % intervals over photos (4,000 draws); each per-image angle's error against H's turn (modulo 90°
for the q4 angles); how often the chosen quarter was right (q4_*_best against H's turn).

python lab/global_angle/summarize.py OUT.json...
"""

import json
import sys

import numpy as np

for f in sys.argv[1:]:
    d = json.load(open(f))
    seqs = d["sequences"]
    n = len(seqs)
    boot = np.random.default_rng(0).integers(0, n, (4000, n))
    print(f"== {f} ({n} sequences, {d.get('detector', 'keynet')})")
    rows = list(seqs[0]["pairs"])
    per = {r: np.array([[np.mean([p[0] for p in s["pairs"][r]]), np.mean([p[0] / max(p[1], 1) for p in s["pairs"][r]])]
                        for s in seqs]) for r in rows}  # fmt: skip
    for r in rows:
        v = per[r]
        line = f"   {r:24s} correct {v[:, 0].mean():7.1f}  MMA@3 {v[:, 1].mean():.3f}"
        for ref in ("dominant_gradient", "upright_ours", "sift_all"):
            if ref in per and ref != r:
                x = v - per[ref]
                lo, hi = np.percentile(x[boot].mean(1), [2.5, 97.5], axis=0)
                line += f" | -{ref}: {x[:, 0].mean():+.1f} [{lo[0]:+.1f}, {hi[0]:+.1f}], {x[:, 1].mean():+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]"
        print(line)
    for r in seqs[0]["turn_error"]:
        e = np.array([x for s in seqs for x in s["turn_error"][r]], float)
        e = e[np.isfinite(e)]
        print(
            f"   turn error {r:14s} within 5/10/20 deg: {np.mean(e <= 5):.2f} / {np.mean(e <= 10):.2f} / {np.mean(e <= 20):.2f}"
        )
