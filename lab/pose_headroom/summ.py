# ruff: noqa
import json, sys, numpy as np
for f in sys.argv[1:]:
    r = json.load(open(f))
    keys = [k for k in next(iter(r.values())) if isinstance(next(iter(r.values()))[k], list)]
    base = np.array([v["pose"][0] for v in r.values()])
    print(f, len(r), "pairs; refound", round(np.mean([v["refound"] for v in r.values()]), 1))
    for k in keys:
        c = np.array([v[k][0] for v in r.values()]); m = np.array([v[k][1] for v in r.values()])
        print(f"  {k:16s} correct {c.mean():6.1f} ({100*(c.sum()/base.sum()-1):+5.1f} %)  matches {m.mean():6.1f}  MMA@3 {np.mean(c/np.maximum(m,1)):.3f}")
