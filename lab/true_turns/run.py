"""#63 diagnostic: COLMAP with ALIKED on `--sets turned_any` (frames 1, 3, ... turned by seeded random angles), each
photo un-turned by the angle it was turned by (the truth, as `eval colmap` wrote it in turns.json) instead of our
votes: the ceiling of un-turning in the pipeline (resampling, canvas cap, snap as shipped).

    OMP_NUM_THREADS=1 python lab/true_turns/run.py ../shared/data/SET OUT DRAW [DRAW ...]
"""
import json, sys
from pathlib import Path

import numpy as np

import patchpose.evaluation.colmap_eval as ce
import patchpose.integrations.colmap as K
from patchpose.cli.main import main
from patchpose.integrations.extract import image_names
from patchpose.matching.collection import CollectionTurns

TRUTH = []


def true_turns(images, pairs=None, **_):
    assert len(images) == len(TRUTH)
    z = np.zeros((0, 2), int)
    return CollectionTurns(degrees=np.array(TRUTH, float), found=np.ones(len(TRUTH), bool), pairs=z,
                           pair_degrees=np.zeros(0), residual=np.zeros(0), group=np.zeros(len(TRUTH), int))


K.upright_collection = true_turns
root, prefix, draws = sys.argv[1], sys.argv[2], [int(d) for d in sys.argv[3:]]
for draw in draws:
    ce.ANY_TURN_SEED = draw
    out = Path(f"{prefix}_draw{draw}")
    folder = ce.turn_every_other(root, out / "turned_any_images", any_angle=True)
    angles = json.loads((folder / "turns.json").read_text())
    TRUTH[:] = [(-angles.get(name, 0.0)) % 360.0 for name, _ in image_names(folder)]
    rc = main(["eval", "colmap", root, "--out", str(out), "--poses", "aliked_ours", "--sets", "turned_any",
               "--seeds", "0", "1", "2", "--threads", "1", "--peers", "/work/shared/peers", "--no-progress"])
    if rc:
        sys.exit(rc)
