"""`patchpose eval colmap` with the retry in the collection (retry_collection.py) in place of the library's:

    OMP_NUM_THREADS=1 python lab/vote_retry/colmap_retry.py ../shared/data/SET OUT [ANY_TURN_SEED] [--sets ...]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import retry_collection as RC
import patchpose.evaluation.colmap_eval as ce
from patchpose.cli.main import main

RC.install(2000)
root, out = sys.argv[1], sys.argv[2]
rest = sys.argv[3:]
if rest and rest[0].isdigit():
    ce.ANY_TURN_SEED = int(rest.pop(0))
sets = rest or ["upright", "turned", "turned_first", "turned_any"]
sys.exit(main(["eval", "colmap", root, "--out", out, "--poses", "aliked_ours", "--sets", *sets, "--seeds", "0", "1",
               "2", "--threads", "1", "--peers", "/work/shared/peers", "--no-progress"]))
