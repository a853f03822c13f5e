"""#63 diagnostic (not a choice): `eval colmap --sets turned_any` with our votes as shipped but SNAP_DEG = 10 (val
chose 8): does leaving a photo voted 8-10 deg off as it is recover the draws where one photo (32809961, looking up)
is voted 8.2-8.8 deg off and turned by it?

    OMP_NUM_THREADS=1 python lab/true_turns/snap.py ../shared/data/SET OUT SNAP DRAW [DRAW ...]
"""
import sys

import patchpose.evaluation.colmap_eval as ce
import patchpose.matching.upright as U
from patchpose.cli.main import main

root, prefix, snap, draws = sys.argv[1], sys.argv[2], float(sys.argv[3]), [int(d) for d in sys.argv[4:]]
U.SNAP_DEG = snap
for draw in draws:
    ce.ANY_TURN_SEED = draw
    rc = main(["eval", "colmap", root, "--out", f"{prefix}_draw{draw}", "--poses", "aliked_ours", "--sets",
               "turned_any", "--seeds", "0", "1", "2", "--threads", "1", "--peers", "/work/shared/peers",
               "--no-progress"])
    if rc:
        sys.exit(rc)
