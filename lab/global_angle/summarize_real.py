"""Correct (and distinct correct: a location once, however many orientations) matches per pair of
lab/global_angle/real.py's rows, MMA (correct / matches over all pairs), and differences with 95 % intervals
over photos (photos drawn with replacement, 4,000 replicates; a pair weighs the product of its photos' draws)."""

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
        cells = {k: np.array(v) for k, v in rows.items() if isinstance(v, list)}
        print(doc["set"], cond)
        for k, c in cells.items():
            print(f"   {k:16s} correct {c[:, 0].mean():6.1f} distinct {c[:, 2].mean():6.1f} "
                  f"matches {c[:, 1].mean():6.1f} MMA {c[:, 0].sum() / c[:, 1].sum():.3f}")  # fmt: skip
        for a, b in [("q4", "sift_all"), ("q4", "pose"), ("q4", "coll_ours")]:
            for m in ("mnn", "ratio"):
                for col, what in ((0, "correct"), (2, "distinct")):
                    d = cells[f"{a}-{m}"][:, col] - cells[f"{b}-{m}"][:, col]
                    boot = (w * d).sum(1) / np.maximum(w.sum(1), 1)
                    lo, hi = np.percentile(boot, [2.5, 97.5])
                    print(f"   {a}-{m} minus {b}-{m} ({what}): {d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]")
