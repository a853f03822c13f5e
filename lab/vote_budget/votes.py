"""Diagnostic (#63, dev set): why our votes find no turn in 23 of 45 Sacre-Coeur real pairs. Same pairs and angles as
turnreal.py; variants: as shipped, 1,000 corners, photos shrunk to <= 1024 px before voting."""
import sys, json, cv2, numpy as np, torch
from pathlib import Path
from patchpose.matching.upright import upright_pair, turn_image, applied_turn
from patchpose.estimator import as_estimator
torch.set_num_threads(1); cv2.setNumThreads(1)
DATA = Path("/work/shared/data/sacre_coeur")
reg = sorted(p.name for p in DATA.iterdir() if p.suffix.lower() in (".jpg", ".png"))
pairs = [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg))]
imgs = {f: cv2.cvtColor(cv2.imread(str(DATA / f)), cv2.COLOR_BGR2RGB) for f in reg}
est = as_estimator(None, "upright")
variant = sys.argv[1]
def shrink(im):
    s = 1024 / max(im.shape[:2])
    return im if s >= 1 else cv2.resize(im, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
rng = np.random.default_rng(0)
found = 0; errs = []
for n1, n2 in pairs:
    a = float(rng.uniform(0.0, 360.0))
    b, _ = turn_image(imgs[n2], a)
    i1 = imgs[n1]
    if variant == "shrink":
        i1, b = shrink(i1), shrink(b)
    t = upright_pair(i1, b, estimator=est, max_keypoints=1000 if variant == "k1000" else 500)
    if t.found:
        found += 1; errs.append(abs((t.degrees - applied_turn(a) + 180) % 360 - 180))
    print(json.dumps({"pair": [n1, n2], "angle": a, "found": t.found, "deg": t.degrees, "conf": t.confidence}), flush=True)
print(f"{variant}: found {found} of {len(pairs)}; error median {np.median(errs):.1f}, max {max(errs):.1f}")
