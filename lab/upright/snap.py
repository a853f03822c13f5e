"""Val: at which small turns does un-turning (resampling) beat leaving a photo as it is, for ALIKED-n16?"""
import glob, cv2, numpy as np, torch, json
torch.set_num_threads(2)
from patchpose.integrations.kornia import aliked_extractor
import patchpose.matching.upright as up
from patchpose.matching.upright import turn_image, extract_turned

up.SNAP_DEG = 0.0  # measured with 1.0 (the value then): every r >= 2 resampled in both arms, as here
from patchpose.matching.matcher import mutual_nn
ext = aliked_extractor("/work/shared/peers/aliked-n16.pth", "aliked-n16", 2000)
photos = sorted(glob.glob("/work/data/hpatches_val/v_*/1.ppm"))
res = {}
for p in photos:
    A = cv2.cvtColor(cv2.imread(p), cv2.COLOR_BGR2RGB)
    xa, da = ext(A)
    for r in [0, 2, 4, 5, 6, 7, 8, 10, 12, 15]:
        for sign in (1, -1):
            d = sign * r
            B, M = turn_image(A, d)  # M: B pixels -> A pixels
            def correct(xb, db):
                m = mutual_nn(da, db)[0]
                back = xb[m[:, 1]] @ M[:, :2].T + M[:, 2]
                return int((np.linalg.norm(back - xa[m[:, 0]], axis=1) <= 3).sum())
            xb, db = ext(B)
            asis = correct(xb, db)
            xu, du = extract_turned(B, ext, -d)  # un-turned: keypoints in B's pixels
            un = correct(xu, du)
            res.setdefault(r, []).append((asis, un))
    print(p.split("/")[-2], {r: np.mean(v[-2:], 0).round(0).tolist() for r, v in res.items()}, flush=True)
for r, v in res.items():
    v = np.array(v); diff = v[:, 1] - v[:, 0]
    print(r, "as-is", v[:, 0].mean().round(1), "un-turned", v[:, 1].mean().round(1), "diff", diff.mean().round(1), "wins", (diff > 0).sum(), "/", len(diff))
