import sys, time, torch

torch.set_num_threads(1)
from patchpose.integrations.colmap import run_reconstruction

folder = "/work/shared/data/sacre_coeur"
ours = [357.03, 357.39, 2.62, 357.25, 7.82, 359.91, 357.30, 3.68, 357.31, 359.70]
which = sys.argv[1]
turns = {
    "ours": ours,
    "ours_noisy": [t + d for t, d in zip(ours, [1, -1, 1, -1, 1, -1, 1, -1, 1, -1])],
    "m3": [-3.0] * 10,
}[which]
t = time.time()
s = run_reconstruction(folder, f"/tmp/r67/exp/run_{which}", {"t": which}, turns=turns, seed=0, threads=1)
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
