"""Correct matches per pair of lab/extract_upright/run.py's rows, and differences with 95 % intervals over photos
(photos drawn with replacement, 4,000 replicates; a pair weighs the product of its photos' draws)."""

import json
import sys

import numpy as np

for path in sys.argv[1:]:
    doc = json.load(open(path))
    pairs = np.array(doc["pairs"])
    n = len(doc["photos"])
    rng = np.random.default_rng(0)
    draws = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(4000)])
    w = draws[:, pairs[:, 0]] * draws[:, pairs[:, 1]]  # (B, pairs)
    for cond, rows in doc["rows"].items():
        c = {k: np.array(v)[:, 0] for k, v in rows.items() if isinstance(v, list)}
        print(doc["set"], cond, " ".join(f"{k} {v.mean():.1f}" for k, v in c.items()))
        for a, b in [
            ("coll_ours-mnn", "sift_all-mnn"),
            ("coll_ours-ratio", "sift_all-ratio"),
            ("coll_ours-mnn", "sift_all-ratio"),
            ("coll_ours-mnn", "pose-mnn"),
            ("coll_ours-ratio", "pose-ratio"),
            ("coll_ours-mnn", "coll_sift-mnn"),
            ("coll_ours-ratio", "coll_sift-ratio"),
            ("coll_ours-mnn", "upright-mnn"),
        ]:
            d = c[a] - c[b]
            boot = (w * d).sum(1) / np.maximum(w.sum(1), 1)
            lo, hi = np.percentile(boot, [2.5, 97.5])
            print(f"   {a} - {b}: {d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]  ({d.mean() / c[b].mean():+.1%})")
