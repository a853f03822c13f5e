"""#63: `eval colmap --sets turned_any` over draws of angles (ANY_TURN_SEED), COLMAP seeds 0-2, the two un-turned rows
(the capped canvas changes only these; `aliked` as it comes is that of git tag lab-turned-any-draws-2026-11-30).

    OMP_NUM_THREADS=1 python lab/unturn_capped/draws.py SET OUT_PREFIX DRAW [DRAW ...]
"""
import sys

import patchpose.evaluation.colmap_eval as ce
from patchpose.cli.main import main

root, prefix, draws = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3:]]
for draw in draws:
    ce.ANY_TURN_SEED = draw
    rc = main(["eval", "colmap", root, "--out", f"{prefix}_draw{draw}", "--poses", "aliked_sift", "aliked_ours",
               "--sets", "turned_any", "--seeds", "0", "1", "2", "--threads", "1",
               "--peers", "/work/shared/peers", "--no-progress"])
    if rc:
        sys.exit(rc)
