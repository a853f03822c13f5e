"""Summaries of run.py's logs: correct matches per pair with the canvas uncapped and capped; capped minus uncapped
with 95 % bootstrap intervals over photos (as lab-turn-real-v2-2026-11-29's an.py); only the pairs whose canvas the
cap cut (photo 1 turned off a quarter turn); canvas pixels and seconds of photo 1's extraction against one
extraction of it as it comes.

    python lab/canvas_cap/an.py tum.log sc.log
"""
import json
import sys

import numpy as np


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
    full = np.array([r["full"] for r in R], float)
    cut = np.array([r["full_pixels"] > 1.3 for r in R])
    print(f"{f} ({len(R)} pairs; {cut.sum()} on a canvas over 1.3x): full {full.mean():.1f}")
    for k in ("cap1.5", "cap1.3"):
        v = np.array([r[k] for r in R], float)
        d = v - full
        lo, hi = photo_bootstrap(d, pairs)
        px = np.mean([r[k + "_pixels"] for r in R])
        rel = v[cut].sum() / full[cut].sum() - 1
        t = np.median([r[k + "_s"] / r["extract_s"] for r in R if r[k + "_pixels"] > 1.01])
        print(f"  {k}: {v.mean():.1f}, minus full {d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}] over photos "
              f"({100 * (v.sum() / full.sum() - 1):+.1f} %; on the cut pairs {100 * rel:+.1f} %); canvas {px:.2f}x "
              f"the photo's pixels on average, photo 1's extraction {t:.2f}x one as it comes (median, cut pairs)")
    t = np.median([r["full_s"] / r["extract_s"] for r in R if r["full_pixels"] > 1.01])
    print(f"  full canvas: {np.mean([r['full_pixels'] for r in R]):.2f}x the pixels on average, extraction {t:.2f}x "
          "(median, pairs off a quarter turn)")
