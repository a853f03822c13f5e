"""The quarter search's margin (most mutual matches over the second most) as a safeguard: a pair whose margin is below
rho falls back to the dominant gradient's angle per keypoint (a second description of both photos). rho chosen on the
train photos (the one that maximises the mean correct matches per pair, from a grid), then reported on test with 95 %
intervals over photos against the dominant gradient and SIFT with all its orientations, and the share of pairs that
fall back.

python lab/quarter_margin/choose.py TRAIN.json TEST.json...
"""

import json
import sys

import numpy as np

GRID = [1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 4.0]


def table(path):
    d = json.load(open(path))
    out = []
    for s in d["sequences"]:
        for p in s["pairs"]:
            qm = np.array(p["quarter_matches"], float)
            srt = np.sort(qm)[::-1]
            out.append((s["name"], srt[0] / max(srt[1], 1.0), p["quarter_correct"][int(qm.argmax())], p["gradient"],
                        p["sift_all"]))  # fmt: skip
    return out


def with_rule(rows, rho):
    return np.array([g if m < rho else q for _, m, q, g, _ in rows], float)


train = table(sys.argv[1])
scores = {rho: with_rule(train, rho).mean() for rho in GRID}
rho = max(GRID, key=lambda r: scores[r])
print("train:", {r: round(v, 1) for r, v in scores.items()}, "-> rho", rho,
      "gradient", round(np.mean([r[3] for r in train]), 1), "sift_all", round(np.mean([r[4] for r in train]), 1))  # fmt: skip
for path in sys.argv[2:]:
    rows = table(path)
    names = sorted({r[0] for r in rows})
    ours = with_rule(rows, rho)
    per = {n: np.array([[o, r[3], r[4]] for o, r in zip(ours, rows) if r[0] == n]).mean(0) for n in names}
    v = np.array([per[n] for n in names])
    boot = np.random.default_rng(0).integers(0, len(names), (4000, len(names)))
    line = [f"{path}: q4 with fallback {v[:, 0].mean():.1f}, gradient {v[:, 1].mean():.1f}, SIFT-all {v[:, 2].mean():.1f}",
            f"fallback {np.mean([r[1] < rho for r in rows]):.2f} of pairs"]  # fmt: skip
    for j, name in ((1, "gradient"), (2, "SIFT-all")):
        x = v[:, 0] - v[:, j]
        lo, hi = np.percentile(x[boot].mean(1), [2.5, 97.5])
        line.append(f"minus {name} {x.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]")
    print("; ".join(line))
