"""python lab/equal_descriptors/cmp.py OUT: `pose` at 1,210 keypoints minus SIFT with all its orientations at 1,000,
correct matches a pair on the viewpoint sequences, 95 % bootstrap over photos; MMA@3 is each run's results.md."""

import glob
import json
import sys

import numpy as np


def per_photo(out: str, row: str) -> dict[str, float]:
    res = {}
    for f in glob.glob(f"{out}/cache/*/v_*.match.json"):
        pairs = json.load(open(f))
        res[f.split("/")[-1].split(".")[0]] = np.mean([p["mma"][row][2] * p["matches"][row] for p in pairs])
    return res


rng = np.random.default_rng(0)
for r in ("hpatches", "hpatches_zoom", "hpatches_turn"):
    a = per_photo(f"{sys.argv[1]}/pose1210_{r}", "pose")
    b = per_photo(f"{sys.argv[1]}/sift1000_{r}", "sift_all")
    names = sorted(a)
    d = np.array([a[n] - b[n] for n in names])
    bs = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
    print(f"{r}: pose at 1,210 {np.mean([a[n] for n in names]):.1f}, SIFT-all at 1,000 {np.mean([b[n] for n in names]):.1f}:"
          f" {d.mean():+.1f} [{np.percentile(bs, 2.5):+.1f}, {np.percentile(bs, 97.5):+.1f}] over {len(names)} photos")  # fmt: skip
