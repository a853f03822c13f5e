import json, sys, numpy as np
for f in sys.argv[1:]:
    rows = json.load(open(f))
    for cond in ("upright", "turned"):
        R = [r for r in rows if r["cond"] == cond]
        rect = np.array([r["rect"] for r in R]); first = np.array([r["first"] for r in R])
        pick = np.array([r["rect"] if r["s_rect"] >= r["s_first"] else r["first"] for r in R])
        oracle = np.maximum(rect, first)
        sw = sum(1 for r in R if r["s_rect"] < r["s_first"])
        rng = np.random.default_rng(0); d = pick - rect
        bs = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]
        print(f, cond, len(R), "rect %.1f first %.1f pick %.1f oracle %.1f switched %d  pick-rect %+.1f [%+.1f, %+.1f]" % (
            rect.mean(), first.mean(), pick.mean(), oracle.mean(), sw, d.mean(), *np.percentile(bs, [2.5, 97.5])),
            "wrong switches", sum(1 for r in R if r["s_rect"] < r["s_first"] and r["rect"] > r["first"]),
            "missed", sum(1 for r in R if r["s_rect"] >= r["s_first"] and r["rect"] < r["first"]))
