"""#61 try: COLMAP's ratio test made stricter for upright descriptions (`upright_ours`): `eval colmap` with
pycolmap's SiftMatchingOptions.max_ratio = RATIO (COLMAP's default 0.8) for every row it runs.

    OMP_NUM_THREADS=1 python lab/upright_ratio/run.py RATIO ../shared/data/SET OUT [--sets ...] [--seeds ...]
"""
import sys

import pycolmap

from patchpose.cli.main import main

ratio, root, out, rest = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
_Options = pycolmap.FeatureMatchingOptions


def options():  # what the pipeline builds (it reads pycolmap.FeatureMatchingOptions when it runs), the ratio set
    o = _Options()
    o.sift.max_ratio = ratio
    return o


pycolmap.FeatureMatchingOptions = options
sys.exit(main(["eval", "colmap", root, "--out", out, "--poses", "upright_ours", "--threads", "1", "--no-progress",
               *(rest or ["--sets", "upright", "--seeds", "0", "1", "2"])]))
