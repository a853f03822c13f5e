"""Per row: correct and distinct correct matches per pair (mean over a scene's pairs, then over scenes), and q4 minus
each other row with a 95 % interval over the 8 scenes (4,000 draws).

python lab/global_angle_scenes/summarize.py gs_*.json
"""

import json
import sys

import numpy as np

docs = [json.load(open(f)) for f in sys.argv[1:]]
rows = list(docs[0]["rows"])
per = {r: np.array([[np.mean([c[0] for c in d["rows"][r]]), np.mean([c[2] for c in d["rows"][r]]),
                     np.sum([c[0] for c in d["rows"][r]]) / max(np.sum([c[1] for c in d["rows"][r]]), 1)]
                    for d in docs]) for r in rows}  # fmt: skip
boot = np.random.default_rng(0).integers(0, len(docs), (4000, len(docs)))
print(f"{len(docs)} scenes: {[d['scene'] for d in docs]}")
for r in rows:
    v = per[r]
    print(
        f"  {r:16s} correct {v[:, 0].mean():6.1f}  distinct {v[:, 1].mean():6.1f}  precision {v[:, 2].mean():.3f}"
    )
for m in ("mnn", "ratio"):
    for b in ("sift_all", "pose", "coll_ours"):
        x = per[f"q4-{m}"] - per[f"{b}-{m}"]
        lo, hi = np.percentile(x[boot].mean(1), [2.5, 97.5], axis=0)
        print(
            f"  q4-{m} minus {b}-{m}: correct {x[:, 0].mean():+.1f} [{lo[0]:+.1f}, {hi[0]:+.1f}], distinct "
            f"{x[:, 1].mean():+.1f} [{lo[1]:+.1f}, {hi[1]:+.1f}], precision {x[:, 2].mean():+.3f} [{lo[2]:+.3f}, {hi[2]:+.3f}]"
        )
