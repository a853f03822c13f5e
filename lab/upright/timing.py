"""Idle timing of #63's pieces on one val pair, 2 threads: median of 5."""
import time, numpy as np, torch, patchpose
from pathlib import Path
from patchpose.data.patches import load_photo
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.upright_eval import sift_turn
from patchpose.integrations.kornia import aliked_extractor
from patchpose.matching.upright import extract_turned
torch.set_num_threads(2)
seq = [s for s in load_hpatches("/work/data/hpatches_val_turn") if s.name == "v_aftertherain"][0]
a, b = (np.asarray(load_photo(seq.images[k])) for k in (1, 4))
ext = aliked_extractor(Path("/work/shared/peers/aliked-n16.pth"), max_keypoints=2000)
def med(f, n=5):
    f(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return float(np.median(ts))
print("photo", a.shape)
print("aliked extraction", round(med(lambda: ext(a)), 3))
print("aliked at 45 deg (canvas)", round(med(lambda: extract_turned(a, ext, 45.0)), 3))
print("upright_pair (ours)", round(med(lambda: patchpose.upright_pair(a, b)), 3))
print("sift_turn", round(med(lambda: sift_turn(a, b, 2000)), 3))
print("match_upright", round(med(lambda: patchpose.match_upright(a, b, ext), 3), 3))
