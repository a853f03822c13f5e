"""Means (min–max) over seeds of lab/upright_sift/run.py's rows.json files, and each pose's ratio to `sift`."""

import json
import sys
from collections import defaultdict

import numpy as np

rows = [r for f in sys.argv[1:] for r in json.load(open(f))]
g = defaultdict(list)
for r in rows:
    g[(r["set"], r["pose"])].append(r)
keys = ("registered", "points3D", "distinct_points3D", "observations", "track_length", "reprojection_px")
means = {}
for (s, p), rs in g.items():
    means[(s, p)] = {k: np.mean([r[k] or 0 for r in rs]) for k in keys}
for (s, p), rs in g.items():
    m = means[(s, p)]
    cells = []
    for k in keys:
        v = [r[k] or 0 for r in rs]
        cells.append(
            f"{m[k]:.3g}"
            if k in ("track_length", "reprojection_px")
            else f"{m[k]:,.0f} ({min(v):,}–{max(v):,})"
        )
    ref = means.get((s, "sift"))
    rel = ""
    if ref and p != "sift":
        rel = " | vs sift: pts {:+.1%} obs {:+.1%} track {:+.1%} reproj {:+.1%}".format(
            m["points3D"] / ref["points3D"] - 1,
            m["observations"] / ref["observations"] - 1,
            m["track_length"] / ref["track_length"] - 1,
            m["reprojection_px"] / ref["reprojection_px"] - 1,
        )
    print(f"{s:12s} {p:13s} n={len(rs)} " + " | ".join(cells) + rel)
