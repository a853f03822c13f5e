"""Summaries of turnreal.py's logs: means per row; ours minus the others with 95 % bootstrap intervals over photos
(photos drawn with replacement, each pair weighted by how often both its photos were drawn); the split by which
votes found a turn; the found turns' spread around the turn applied (`applied_turn`: within 8° of a quarter turn,
that quarter turn)."""
import json, sys
import numpy as np
from patchpose.matching.upright import applied_turn

ROWS = ("as_is", "sift", "ours", "applied")


def photo_bootstrap(d, pairs, n=2000, seed=0):
    photos = sorted({p for pr in pairs for p in pr})
    idx = {p: i for i, p in enumerate(photos)}
    a = np.array([[idx[x], idx[y]] for x, y in pairs])
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        c = np.bincount(rng.integers(0, len(photos), len(photos)), minlength=len(photos))
        w = c[a[:, 0]] * c[a[:, 1]]
        if w.sum():
            out.append((w * d).sum() / w.sum())
    return np.percentile(out, [2.5, 97.5])


for f in sys.argv[1:]:
    R = [json.loads(line) for line in open(f) if line.startswith("{")]
    pairs = [tuple(r["pair"]) for r in R]
    v = {k: np.array([r[k] for r in R], float) for k in ROWS}
    print(f"{f} ({len(R)} pairs): " + " ".join(f"{k} {v[k].mean():.1f}" for k in ROWS))
    for b in ("sift", "applied", "as_is"):
        d = v["ours"] - v[b]
        lo, hi = photo_bootstrap(d, pairs)
        print(f"  ours-{b} {d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}] over photos; W/T/L {(d>0).sum()}/{(d==0).sum()}/{(d<0).sum()}")
    fs, fo = (np.array([r[k + "_found"] for r in R]) for k in ("sift", "ours"))
    d = v["ours"] - v["sift"]
    for name, m in (("both found", fs & fo), ("only SIFT's", fs & ~fo), ("only ours", ~fs & fo), ("neither", ~fs & ~fo)):
        print(f"  {name}: {m.sum()} pairs, ours-sift sum {d[m].sum():+.0f}, mean {d[m].mean() if m.any() else 0:+.1f}")
    for k, found in (("sift", fs), ("ours", fo)):
        e = np.array([abs((r[k + "_deg"] - applied_turn(r["angle"]) + 180) % 360 - 180) for r in R])[found]
        print(f"  {k}'s found turns minus the turn applied: median {np.median(e):.1f}°, max {e.max():.1f}° ({found.sum()} pairs)")
    print(f"  not found: sift {(~fs).sum()}, ours {(~fo).sum()}; votes' seconds: sift "
          f"{np.mean([r['sift_vote_s'] for r in R]):.2f}, ours {np.mean([r['ours_vote_s'] for r in R]):.2f}")
