"""#63: `eval colmap --sets turned_any` with a second draw of angles (ANY_TURN_SEED 1 instead of 0)."""
import sys
import patchpose.evaluation.colmap_eval as ce
from patchpose.cli.main import main
ce.ANY_TURN_SEED = int(sys.argv[3])
sys.exit(main(["eval", "colmap", sys.argv[1], "--out", sys.argv[2], "--poses", "aliked", "aliked_sift", "aliked_ours",
               "--sets", "turned_any", "--seeds", "0", "--threads", "1", "--peers", "/work/shared/peers", "--no-progress"]))
