"""#63: `eval colmap --sets turned_any` over several draws of angles (ANY_TURN_SEED), COLMAP seeds 0-2.

    OMP_NUM_THREADS=1 python lab/turned_any_draws/run.py SET OUT_PREFIX DRAW [DRAW ...]
"""
import sys

import patchpose.evaluation.colmap_eval as ce
from patchpose.cli.main import main

root, prefix, draws = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3:]]
for draw in draws:
    ce.ANY_TURN_SEED = draw
    rc = main(["eval", "colmap", root, "--out", f"{prefix}_draw{draw}", "--poses", "aliked", "aliked_sift",
               "aliked_ours", "--sets", "turned_any", "--seeds", "0", "1", "2", "--threads", "1",
               "--peers", "/work/shared/peers", "--no-progress"])
    if rc:
        sys.exit(rc)
