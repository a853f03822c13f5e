"""Proxy on real photos: matches consistent with one fundamental matrix (MAGSAC, 1 px) per method's own matches."""
import glob, itertools, json, sys
import numpy as np, cv2
from patchpose.data.patches import load_image
from patchpose.matching.features import detect
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import mutual_nn, ratio_matches
from patchpose.matching.rectify import rectified_pair
def finl(p1, p2):
    if len(p1) < 8: return 0
    F, m = cv2.findFundamentalMat(p1, p2, cv2.USAC_MAGSAC, 1.0, 0.9999, 10000)
    return 0 if m is None else int(m.sum())
which = sys.argv[1]
if which == "sc":
    fs = sorted(glob.glob('/work/shared/data/sacre_coeur/*.jpg')); pairs = list(itertools.combinations(range(len(fs)), 2))
else:
    fs = sorted(glob.glob('/work/shared/data/tum_freiburg/*.png')); pairs = [(i, i + 3) for i in range(len(fs) - 3)]
D = Describer(); rows = []
for i, j in pairs:
    a, b = load_image(fs[i]), load_image(fs[j])
    f1, f2 = detect(a, 2000), detect(b, 2000)
    d1, d2 = sift_all_descriptors(f1, D), sift_all_descriptors(f2, D)
    m = mutual_nn(d1, d2)[0]; r = {"pair": (i, j), "sift_all": (finl(f1.xy[m[:, 0]], f2.xy[m[:, 1]]), len(m))}
    mr = ratio_matches(d1, d2)[0]; r["sift_all_ratio"] = (finl(f1.xy[mr[:, 0]], f2.xy[mr[:, 1]]), len(mr))
    p = rectified_pair(detect(a, 2000), detect(b, 2000), D, 2000)
    mm = mutual_nn(p.descriptors1, p.descriptors2)[0]
    r["rectify"] = (finl(p.xy1[mm[:, 0]], p.xy2[mm[:, 1]]), len(mm)); r["warped"] = p.warped
    rows.append(r); print(json.dumps(r), flush=True)
json.dump(rows, open(f"/tmp/rv/real_{which}.json", "w"))
