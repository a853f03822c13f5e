"""LAB (#61): a stricter geometric verification for every row. COLMAP's two-view RANSAC keeps matches within 4 px
(`TwoViewGeometryOptions.ransac.max_error`); `upright_ours` adds matches that are mostly right but less precisely
placed (lab-per-image-angle-2026-11-30, reproj_matches). Does a stricter threshold, the same for SIFT's own pose,
bring our reprojection error within +10 % of SIFT's own pose while keeping our observations ahead?

python lab/verify_strict/run.py MAX_ERROR IMAGES OUT   (then OUT/results.md)
"""

import sys

import pycolmap

from patchpose.cli.main import main

max_error, images, out = float(sys.argv[1]), sys.argv[2], sys.argv[3]
_Options = pycolmap.TwoViewGeometryOptions


def strict_options(*args, **kwargs):
    o = _Options(*args, **kwargs)
    o.ransac.max_error = max_error
    return o


pycolmap.TwoViewGeometryOptions = strict_options
sys.exit(main(["eval", "colmap", images, "--poses", "sift", "upright_ours", "--sets", "upright", "--seeds", "0",
               "--threads", "1", "--out", out]))  # fmt: skip
