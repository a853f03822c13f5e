# ruff: noqa
import json, sys
import numpy as np

ref = sys.argv[2] if len(sys.argv) > 2 else "g16"
doc = json.load(open(sys.argv[1]))
rows = list(doc[0]["pairs"])
rng = np.random.default_rng(0)
for r in rows:
    c = np.array([np.mean([p[0] for p in d["pairs"][r]]) for d in doc])
    m = np.array([np.mean([p[0] / max(p[1], 1) for p in d["pairs"][r]]) for d in doc])
    cr = np.array([np.mean([p[0] for p in d["pairs"][ref]]) for d in doc])
    mr = np.array([np.mean([p[0] / max(p[1], 1) for p in d["pairs"][ref]]) for d in doc])
    idx = rng.integers(0, len(doc), (2000, len(doc)))
    dc, dm = (c - cr)[idx].mean(1), (m - mr)[idx].mean(1)
    print(
        f"{r:10s} correct {c.mean():6.1f} MMA@3 {m.mean():.3f}  minus {ref}: {np.mean(c - cr):+6.1f} [{np.percentile(dc, 2.5):+.1f}, {np.percentile(dc, 97.5):+.1f}]  MMA {np.mean(m - mr):+.3f} [{np.percentile(dm, 2.5):+.3f}, {np.percentile(dm, 97.5):+.3f}]"
    )
