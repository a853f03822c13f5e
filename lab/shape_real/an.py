import json, sys, numpy as np
for f in sys.argv[1:]:
    R = json.load(open(f)); rng = np.random.default_rng(0)
    for how in ("mnn", "ratio"):
        v = {k: np.array([r[f"{k}_{how}"] for r in R], float) for k in "ABCDEF"}
        out = [f"{f} {how}: " + " ".join(f"{k} {v[k].mean():.1f}" for k in "ABCDEF")]
        for a, b in (("B", "A"), ("C", "A"), ("C", "B"), ("D", "B"), ("E", "B"), ("F", "B")):
            d = v[a] - v[b]; bs = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
            out.append(f"{a}-{b} {d.mean():+.1f} [{np.percentile(bs, 2.5):+.1f}, {np.percentile(bs, 97.5):+.1f}]")
        print("; ".join(out))
