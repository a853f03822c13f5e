"""LAB (#63): each photo's turn voted over a window of neighbours against every pair, on the 17 TUM frames
(upright_collection, patchpose-v10, 1 thread): after one common offset (which way is up), how far the turns differ.

python lab/unturn_window/run.py
"""

import time
from pathlib import Path

import numpy as np
import torch

from patchpose.conventions import angle_diff
from patchpose.data.patches import load_image
from patchpose.matching.collection import upright_collection

torch.set_num_threads(1)
folder = Path(__file__).resolve().parents[3] / "shared" / "data" / "tum_freiburg"
ims = [load_image(p) for p in sorted(folder.glob("*.png"))]
t = time.perf_counter()
full = upright_collection(ims, estimator="patchpose-v10")
print(f"every pair: {len(ims) * (len(ims) - 1) // 2} pairs, {time.perf_counter() - t:.2f} s")
for w in (1, 2, 3):
    pairs = [(i, j) for i in range(len(ims)) for j in range(i + 1, len(ims)) if j - i <= w]
    t = time.perf_counter()
    got = upright_collection(ims, pairs=pairs, estimator="patchpose-v10")
    secs = time.perf_counter() - t
    d = angle_diff(np.radians(got.degrees), np.radians(full.degrees))
    off = np.angle(np.mean(np.exp(1j * d)))
    r = np.degrees(np.abs(angle_diff(d, off)))
    print(
        f"window {w}: {len(pairs)} pairs, {secs:.2f} s; common offset {np.degrees(off):+.2f} deg; "
        f"after it max {r.max():.2f}, median {np.median(r):.2f}; found {got.found.sum()}/{len(ims)}"
    )
