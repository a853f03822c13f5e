"""How often our votes find the turn, and how close, on the val sequences (viewpoint with perspective, slanted,
zoomed), at 500 / 1,000 / 2,000 voting corners a photo."""
import sys, time
import numpy as np, torch
from patchpose.data.patches import load_photo
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.hpatches_eval import true_turn
from patchpose.matching.upright import turn_between, voters
from patchpose.estimator import as_estimator
torch.set_num_threads(1)
est = as_estimator(None, "upright")
for root in sys.argv[1:]:
    seqs = [s for s in load_hpatches(root) if s.name.startswith("v_")]
    for k in (500, 1000, 2000):
        found = 0; errs = []; n = 0; t = 0.0
        for seq in seqs:
            img1 = np.asarray(load_photo(seq.images[1])); t0 = time.perf_counter(); v1 = voters(img1, k, est); t += time.perf_counter() - t0
            for kk, H in seq.homographies.items():
                imgk = np.asarray(load_photo(seq.images[kk]))
                t0 = time.perf_counter(); r = turn_between(v1, voters(imgk, k, est)); t += time.perf_counter() - t0
                truth = true_turn(H, np.array([[img1.shape[1] / 2.0, img1.shape[0] / 2.0]]), imgk.shape)
                n += 1
                if r.found:
                    found += 1
                    if truth is not None:
                        errs.append(abs((r.degrees - truth + 180) % 360 - 180))
        e = np.array(errs)
        print(f"{root} k={k}: found {found}/{n}; error median {np.median(e):.2f}°, >10° {int((e > 10).sum())}, max {e.max():.1f}°; {t / n:.2f} s a pair", flush=True)
