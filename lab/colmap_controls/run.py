"""LAB (#61, #63): controls of the COLMAP rows, after a review: COLMAP's own at other settings of its SIFT
(`upright`, `domain_size_pooling`), and Sacré-Cœur described at one constant angle for every photo (no turns).

python lab/colmap_controls/run.py OUT_DIR    (1 thread; TUM, Sacré-Cœur, each as is and every other frame turned)
"""

import json
import sys
import time
from pathlib import Path

import torch

from patchpose.evaluation.colmap_eval import turn_every_other
from patchpose.integrations import colmap as cm

import pycolmap  # noqa: E402,I001  after OpenCV: imported first, its zlib and OpenCV's PNG writer crash (double free)

torch.set_num_threads(1)
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
DATA = Path("/work/shared/data")
KEYS = ("registered", "points3D", "distinct_points3D", "observations", "track_length", "reprojection_px")
ORIG = pycolmap.FeatureExtractionOptions
rows = []


def options(opt):
    def patched():
        o = ORIG()
        if opt == "upright":
            o.sift.upright = True
        if opt == "dsp":
            o.sift.domain_size_pooling = True
        return o

    return patched


def record(row, stats, seconds):
    row.update(
        {k: stats.get(k) for k in KEYS}, stage_seconds=stats["stage_seconds"], seconds=round(seconds, 1)
    )
    rows.append(row)
    print(json.dumps(row), flush=True)
    (out / "rows.json").write_text(json.dumps(rows, indent=1))


for name in ("tum_freiburg", "sacre_coeur"):
    sets = {"upright": DATA / name, "turned": turn_every_other(DATA / name, out / f"{name}_turned")}
    for s, folder in sets.items():
        for opt in ("upright", "dsp"):
            pycolmap.FeatureExtractionOptions = options(opt)
            t = time.perf_counter()
            st = cm.run_reconstruction(folder, out / f"{name}_{s}_{opt}", {"opt": opt}, seed=0, threads=1)
            record({"set": name, "frames": s, "colmap_sift": opt, "seed": 0}, st, time.perf_counter() - t)
        pycolmap.FeatureExtractionOptions = ORIG
for seed in (0, 1, 2):
    for angle in (0.0, -3.0):
        t = time.perf_counter()
        st = cm.run_reconstruction(DATA / "sacre_coeur", out / f"sc_const{angle}_s{seed}", {"a": angle},
                                   turns=[angle] * 10, seed=seed, threads=1)  # fmt: skip
        record({"set": "sacre_coeur", "frames": "upright", "constant_angle": angle, "seed": seed}, st,
               time.perf_counter() - t)  # fmt: skip
