import json, sys, numpy as np

R = json.load(open(sys.argv[1])); KS = sys.argv[2].split(",")
pairs = [tuple(r["pair"]) for r in R]
def boot(d, n=2000, seed=0):
    photos = sorted({p for pr in pairs for p in pr}); idx = {p: i for i, p in enumerate(photos)}
    a = np.array([[idx[x], idx[y]] for x, y in pairs]); rng = np.random.default_rng(seed); out = []
    for _ in range(n):
        c = np.bincount(rng.integers(0, len(photos), len(photos)), minlength=len(photos)); w = c[a[:, 0]] * c[a[:, 1]]
        if w.sum(): out.append((w * d).sum() / w.sum())
    return np.percentile(out, [2.5, 97.5])
ship = np.array([r["ship"] for r in R], float); app = np.array([r["applied"] for r in R], float)
print(f"shipped {ship.mean():.1f} ({100*ship.mean()/app.mean():.1f} % of applied {app.mean():.1f}); found {sum(r['ship_found'] for r in R)}")
for K in KS:
    v = np.array([r[f"k{K}"] for r in R], float); d = v - ship; lo, hi = boot(d)
    f = sum(r[f"k{K}_found"] for r in R); e = [r[f"k{K}_err"] for r in R if f"k{K}_err" in r]
    vs = [r[f"k{K}_vote_s"] for r in R if f"k{K}_vote_s" in r]
    print(f"cascade 500->{K}: {v.mean():.1f} ({100*v.mean()/app.mean():.1f} %), minus shipped {d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]; "
          f"found {f}/{len(R)}; new turns' error median {np.median(e) if e else 0:.1f} max {max(e) if e else 0:.1f}; "
          f"wins/losses {(d>0).sum()}/{(d<0).sum()}; retry vote s {np.mean(vs) if vs else 0:.2f}")
# the retry at the last K against SIFT's turn, the turn applied and as it comes (rows of the shipped log)
if len(sys.argv) > 3:
    S = {tuple(json.loads(l)["pair"]): json.loads(l) for l in open(sys.argv[3]) if l.startswith("{")}
    K = KS[-1]; ours = np.array([r[f"k{K}"] for r in R], float)
    for k in ("sift", "applied", "as_is"):
        v = np.array([S[p][k] for p in pairs], float); d = ours - v; lo, hi = boot(d)
        print(f"retry {K}: {ours.mean():.1f} minus {k} {v.mean():.1f}: {d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]")
    print(f"found: ours {sum(r[f'k{K}_found'] for r in R)}, SIFT's {sum(S[p]['sift_found'] for p in pairs)} of {len(R)}")
