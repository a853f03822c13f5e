import numpy as np, cv2, math
from patchpose.data.patches import load_photo, to_gray
from patchpose.data.photos import demo_photo
from patchpose.matching.pair import match_pair
from patchpose.matching.features import detect
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn
g = to_gray(load_photo(demo_photo(), 480)); h, w = g.shape
def sim(deg, sc, tx, ty):
    c, s = sc*math.cos(math.radians(deg)), sc*math.sin(math.radians(deg))
    return np.array([[c, -s, tx], [s, c, ty]])
for deg, sc, frac in ((25, 0.8, 0.5), (40, 1.0, 0.5), (25, 0.8, 0.3), (60, 1.0, 0.4)):
    A2 = sim(deg, sc, 0, 0); cen = np.array([w/2, h/2]); A2[:, 2] = cen - A2[:, :2] @ cen
    two = g.copy(); cut = int(w*(1-frac))
    two[:, cut:] = cv2.warpAffine(g, A2, (w, h))[:, cut:]
    def correct(xy1, xy2, m):
        p1, p2 = xy1[m[:, 0]], xy2[m[:, 1]]
        right = p2[:, 0] >= cut
        pred = np.where(right[:, None], p1 @ A2[:, :2].T + A2[:, 2], p1)
        ok = np.linalg.norm(pred - p2, axis=1) <= 3
        return int(ok[~right].sum()), int(ok[right].sum()), len(m)
    f1, f2 = detect(g, 2000), detect(two, 2000); D = Describer()
    m = mutual_nn(sift_all_descriptors(f1, D), sift_all_descriptors(f2, D))[0]
    out = {"sift_all": correct(f1.xy, f2.xy, m)}
    for r in ("rectify", "pair-pose"):
        res = match_pair(g, two, recipe=r, max_keypoints=2000)
        out[r] = correct(res.xy1, res.xy2, res.matches)
        if r == "rectify": out["map"] = res.affine.round(2).tolist() if res.affine is not None else None
    print(f"turn {deg} zoom {sc} moved part {frac}: (correct on fixed part, correct on moved part, matches)", out)
