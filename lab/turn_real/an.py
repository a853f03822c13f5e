import json, sys, numpy as np
ROWS = ("as_is", "sift", "ours", "applied")
for f in sys.argv[1:]:
    R = [json.loads(l) for l in open(f) if l.startswith("{")]
    v = {k: np.array([r[k] for r in R], float) for k in ROWS}
    rng = np.random.default_rng(0)
    out = [f"{f} ({len(R)} pairs): " + " ".join(f"{k} {v[k].mean():.1f}" for k in ROWS)]
    for b in ("sift", "applied", "as_is"):
        d = v["ours"] - v[b]; bs = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
        out.append(f"ours-{b} {d.mean():+.1f} [{np.percentile(bs, 2.5):+.1f}, {np.percentile(bs, 97.5):+.1f}] W/T/L {(d>0).sum()}/{(d==0).sum()}/{(d<0).sum()}")
    dv = {k: np.array([abs((r[k + "_deg"] - r["applied_deg"] + 180) % 360 - 180) for r in R]) for k in ("sift", "ours")}
    out.append("vote minus applied angle median/max: " + ", ".join(f"{k} {np.median(dv[k]):.1f}/{dv[k].max():.1f}" for k in dv))
    out.append("vote s: " + ", ".join(f"{k} {np.mean([r[k + '_vote_s'] for r in R]):.2f}" for k in ("sift", "ours")))
    out.append("not found: " + ", ".join(f"{k} {sum(not r[k + '_found'] for r in R)}" for k in ("sift", "ours")))
    print("\n  ".join(out))
