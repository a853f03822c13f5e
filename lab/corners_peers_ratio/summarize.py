"""python summarize.py pairs|pairs_ratio FILE...: MNN or the ratio test. Corners against the corner peers at their best: correct matches per pair and MMA@3 of each row, and the
differences of the shipped row (Harris, our scale, upright in the collection) and of upright at the scale-space
corners against the best peer row of each detector, with 95 % intervals over the 15 photos (4,000 draws)."""

import json
import sys

import numpy as np

PEERS = ("dominant_gradient", "orinet", "affnet+orinet")
KEY = sys.argv[1]
for f in sys.argv[2:]:
    d = json.load(open(f))
    seqs = d["sequences"]
    rows = d["rows"]
    per = {
        r: np.array([[np.mean([p[0] for p in s[KEY][r]]), np.mean([p[0] / max(p[1], 1) for p in s[KEY][r]]),
                      np.mean([(p[2] + p[3]) / 2 for p in s[KEY][r]])] for s in seqs])
        for r in rows
    }  # fmt: skip
    boot = np.random.default_rng(0).integers(0, len(seqs), (4000, len(seqs)))
    print(f"{f} ({len(seqs)} sequences)")
    for r, v in per.items():
        print(f"   {r:32s} correct {v[:, 0].mean():7.1f}  MMA@3 {v[:, 1].mean():.3f}  keypoints {v[:, 2].mean():6.0f}")
    for det in ("harris_ours", "gftt_scale"):
        for ours in ("upright_ours", "upright_sift"):
            for b in PEERS:
                x = per[f"{det}:{ours}"] - per[f"{det}:{b}"]
                lo, hi = np.percentile(x[boot].mean(1), [2.5, 97.5], axis=0)
                print(f"   {det}:{ours} - {b}: correct {x[:, 0].mean():+.1f} [{lo[0]:+.1f}, {hi[0]:+.1f}]"
                      f"  MMA@3 {x[:, 1].mean():+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]")  # fmt: skip
    x = per["gftt_scale:upright_ours"] - per["gftt_scale:upright_sift"]
    lo, hi = np.percentile(x[boot].mean(1), [2.5, 97.5], axis=0)
    print(f"   gftt_scale: ours - sift turns: correct {x[:, 0].mean():+.1f} [{lo[0]:+.1f}, {hi[0]:+.1f}]"
          f"  MMA@3 {x[:, 1].mean():+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]")  # fmt: skip
