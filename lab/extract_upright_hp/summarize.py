import json
import sys

import numpy as np

for f in sys.argv[1:]:
    d = json.load(open(f))
    seqs = d["sequences"]
    rows = list(seqs[0]["pairs"])
    per = {
        r: np.array(
            [
                [
                    np.mean([p[0] for p in s["pairs"][r]]),
                    np.mean([p[4] for p in s["pairs"][r]]),
                    np.mean([p[0] / max(p[1], 1) for p in s["pairs"][r]]),
                ]
                for s in seqs
            ]
        )
        for r in rows
    }
    rng = np.random.default_rng(0)
    B = rng.integers(0, len(seqs), (4000, len(seqs)))
    out = []
    for a, b in [
        ("coll_ours", "sift_all"),
        ("coll_ours", "pose"),
        ("coll_ours", "coll_sift"),
        ("harris_coll", "harris_pose"),
    ]:
        for col, nm in ((1, "distinct"), (0, "correct"), (2, "MMA")):
            dd = per[a][:, col] - per[b][:, col]
            lo, hi = np.percentile(dd[B].mean(1), [2.5, 97.5])
            fmt = "{:+.3f} [{:+.3f}, {:+.3f}]" if col == 2 else "{:+.1f} [{:+.1f}, {:+.1f}]"
            out.append(f"{a}-{b} {nm} " + fmt.format(dd.mean(), lo, hi))
    print(f.split("_", 2)[-1])
    print("\n".join("   " + o for o in out))
