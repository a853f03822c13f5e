"""#63: which collections' turns the vote retry changes: upright_collection (every pair, as `eval colmap` and
`colmap --unturn` vote) with the retry off (VOTE_RETRY_KEYPOINTS = 500) and on, each photo's applied turn."""
import json, sys, tempfile
from pathlib import Path
import numpy as np, torch, cv2
torch.set_num_threads(1); cv2.setNumThreads(1)
import patchpose.matching.collection as C
sys.path.insert(0, str(Path(__file__).parent))
import retry_collection as RC
import patchpose.evaluation.colmap_eval as ce
from patchpose.integrations.extract import _Photos
from patchpose.integrations.extract import image_names
from patchpose.matching.upright import applied_turn
out = {}
for spec in sys.argv[2:]:
    folder, _, draw = spec.partition("@")
    folder, _, kind = folder.partition("%")
    tmp = Path(tempfile.mkdtemp()) / "t"
    if draw:  # a turned_any draw made here
        ce.ANY_TURN_SEED = int(draw)
        folder = str(ce.turn_every_other(folder, tmp, any_angle=True))
    elif kind:  # every other frame turned 90 deg (turned: 1, 3, ...; first: 0, 2, ...)
        folder = str(ce.turn_every_other(folder, tmp, first=0 if kind == "first" else 1))
    names = image_names(folder)
    photos = _Photos([p for _, p in names])
    res = {}
    for key, retry in (("off", C.VOTE_KEYPOINTS), ("on", 2000)):
        RC.RETRY = retry
        got = RC.upright_collection(photos)
        res[key] = [round(applied_turn(float(d)), 2) if f else None for d, f in zip(got.degrees, got.found)]
        res[key + "_pairs"] = len(got.pairs)
    diff = [i for i, (a, b) in enumerate(zip(res["off"], res["on"])) if a != b]
    out[spec] = {**res, "changed": diff}
    print(spec, "pairs found", res["off_pairs"], "->", res["on_pairs"], "changed photos", diff,
          [(res["off"][i], res["on"][i]) for i in diff], flush=True)
Path(sys.argv[1]).write_text(json.dumps(out, indent=1))
