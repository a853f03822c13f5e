import json
import sys

import numpy as np

rng = np.random.default_rng(0)
d = json.load(open(sys.argv[1]))
ref = sys.argv[2] if len(sys.argv) > 2 else "pose"
rows = list(d[0]["pairs"])


def per_seq(r, what):
    v = []
    for s in d:
        p = np.array(s["pairs"][r], float)
        v.append(p[:, 0].mean() if what == "c" else np.mean(p[:, 0] / np.maximum(p[:, 1], 1)))
    return np.array(v)


def ci(x):
    b = [x[rng.integers(0, len(x), len(x))].mean() for _ in range(2000)]
    return f"{x.mean():+.3f} [{np.percentile(b, 2.5):+.3f}, {np.percentile(b, 97.5):+.3f}]"


for r in rows:
    print(
        f"{r:12s} MMA@3 {per_seq(r, 'm').mean():.3f} correct {per_seq(r, 'c').mean():.1f}"
        + (
            ""
            if r == ref
            else f"   minus {ref}: correct {ci(per_seq(r, 'c') - per_seq(ref, 'c'))}, MMA {ci(per_seq(r, 'm') - per_seq(ref, 'm'))}"
        )
    )
