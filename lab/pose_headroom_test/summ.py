# ruff: noqa
"""Correct matches a pair and MMA@3 per row, and each row minus a reference with a 95 % bootstrap interval over
photos (the sequence: 5 pairs each; 2,000 replicates, seed 0)."""
import json, sys, numpy as np
ref = sys.argv[1]
for f in sys.argv[2:]:
    r = json.load(open(f))
    names = list(r)
    seq = np.array([n.split("/")[0] for n in names]); useq = np.unique(seq)
    keys = [k for k in r[names[0]] if isinstance(r[names[0]][k], list) and not k.startswith("desc")]
    C = {k: np.array([r[n][k][0] for n in names], float) for k in keys}
    M = {k: np.array([r[n][k][0] / max(r[n][k][1], 1) for n in names]) for k in keys}
    rng = np.random.default_rng(0)
    idx = [np.flatnonzero(seq == u) for u in useq]
    reps = [np.concatenate([idx[i] for i in rng.integers(0, len(idx), len(idx))]) for _ in range(2000)]
    def iv(a):
        v = [a[b].mean() for b in reps]
        return np.percentile(v, [2.5, 97.5])
    print(f"{f}: {len(names)} pairs, {len(useq)} photos; refound {np.mean([r[n]['refound'] for n in names]):.1f}; minus {ref}")
    for k in keys:
        dc, dm = C[k] - C[ref], M[k] - M[ref]
        lc, hc = iv(dc); lm, hm = iv(dm)
        print(f"  {k:16s} {C[k].mean():6.1f} ({M[k].mean():.3f})  {dc.mean():+6.1f} [{lc:+.1f}, {hc:+.1f}]  MMA@3 {dm.mean():+.3f} [{lm:+.3f}, {hm:+.3f}]")
