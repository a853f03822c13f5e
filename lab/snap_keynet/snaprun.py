# ruff: noqa
"""`patchpose eval hpatches` with the `pose` row's angle snapped to its image's 4-fold grid (C + k 90 deg, C the
image's dominant direction modulo 90 deg from its gradient field at sigma SNAP_SIGMA px). Usage: python snaprun.py
SIGMA <patchpose eval hpatches args>."""
import sys
from dataclasses import replace
import cv2, numpy as np
import patchpose.evaluation.rows as rows

SIGMA = float(sys.argv.pop(1))

def c4(img, sigma, fold=4):
    g = img if img.ndim == 2 else cv2.cvtColor(np.ascontiguousarray(img[:, :, :3]), cv2.COLOR_BGR2GRAY)
    g = g.astype(np.float32)
    mask = cv2.erode((g > 0).astype(np.uint8), np.ones((3, 3), np.uint8), iterations=int(3 * sigma) + 3)
    g = cv2.GaussianBlur(g, (0, 0), sigma)
    gx = cv2.Sobel(g, cv2.CV_32F, 1, 0); gy = cv2.Sobel(g, cv2.CV_32F, 0, 1)
    mag = np.hypot(gx, gy) * mask; ang = np.arctan2(-gy, gx)
    z = (mag * np.exp(1j * fold * ang)).sum()
    return float(np.angle(z) / fold)

_orig = rows.recipe_poses

def snapped(f, ours=None, orientation=None):
    p = _orig(f, ours, orientation)
    key = ("c4", SIGMA)
    if key not in f.memo:
        f.memo[key] = c4(f.image, SIGMA)
    c = f.memo[key]
    q = np.pi / 2
    return replace(p, orientation=np.mod(c + q * np.round((p.orientation - c) / q), 2 * np.pi))

rows.recipe_poses = snapped
from patchpose.cli.main import main
sys.exit(main(sys.argv[1:]))
