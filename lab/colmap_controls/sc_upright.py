import sys, json, time, numpy as np, torch

torch.set_num_threads(1)
from patchpose.integrations.colmap import run_reconstruction
from patchpose.evaluation.colmap_eval import reconstruct_at

folder = "/work/shared/data/sacre_coeur"
which = sys.argv[1]
out = f"/tmp/r67/exp/run_{which}"
t = time.time()
if which == "upright":
    s = reconstruct_at(folder, out, "upright", seed=0, threads=1)
else:
    deg = float(which)
    s = run_reconstruction(folder, out, {"t": which}, turns=[deg] * 10, seed=0, threads=1)
s = s.get("stats", s)
print(
    which,
    {
        k: s.get(k)
        for k in (
            "registered",
            "points3D",
            "observations",
            "reprojection_px",
            "verified_pairs",
            "inlier_matches",
        )
    },
    round(time.time() - t, 1),
)
