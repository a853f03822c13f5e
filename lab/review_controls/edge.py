import numpy as np, cv2, traceback, patchpose
from patchpose.data.patches import load_photo, to_gray
from patchpose.data.photos import demo_photo
from patchpose.matching.pair import match_pair
def run(name, f):
    try:
        r = f(); print(name, "->", r)
    except patchpose.InputError as e:
        print(name, "-> InputError:", e)
    except Exception as e:
        print(name, "-> TRACEBACK", type(e).__name__, e); traceback.print_exc(limit=3)
rgb = load_photo(demo_photo(), 480); g = to_gray(rgb)
print("shapes", rgb.shape, rgb.dtype, g.shape, g.dtype)
h, w = g.shape
H = np.array([[0.9, 0.1, 10], [-0.1, 0.9, 20], [0, 0, 1.0]])
g2 = cv2.warpAffine(g, H[:2], (w, h)); rgb2 = cv2.warpAffine(rgb, H[:2], (w, h))
s = lambda m: (m.summary()["keypoints"], m.summary()["matches"], m.summary().get("correct@3px"), None if m.affine is None else m.affine.round(2).tolist())
run("gray", lambda: s(match_pair(g, g2, homography=H, max_keypoints=500)))
run("rgb", lambda: s(match_pair(rgb, rgb2, homography=H, max_keypoints=500)))
run("rgba", lambda: s(match_pair(np.dstack([rgb, np.full(g.shape, 255, np.uint8)]), rgb2, homography=H, max_keypoints=500)))
run("flat", lambda: s(match_pair(np.full((100, 100), 128, np.uint8), np.full((100, 100), 128, np.uint8))))
run("flat vs photo", lambda: s(match_pair(np.full((100, 100), 128, np.uint8), g)))
run("tiny 16", lambda: s(match_pair(g[:16, :16], g[:16, :16])))
run("tiny 40", lambda: s(match_pair(g[100:140, 100:140], g[100:140, 100:140])))
run("same photo", lambda: s(match_pair(g, g, homography=np.eye(3), max_keypoints=500)))
# different sizes: crop of photo 2 (zoom-in, det > 1) and a small photo
crop = cv2.resize(g[100:300, 150:350], (400, 400)); Hc = np.array([[2.0, 0, -300], [0, 2.0, -200], [0, 0, 1]])
run("different sizes zoom-in", lambda: s(match_pair(g, crop, homography=Hc, max_keypoints=500)))
Hs = np.linalg.inv(Hc)
run("different sizes zoom-out", lambda: s(match_pair(crop, g, homography=Hs, max_keypoints=500)))
# photo 2 a tiny part of photo 1, enlarged: tiny overlap
run("max_keypoints=1", lambda: s(match_pair(g, g2, max_keypoints=1)))
run("max_keypoints=10", lambda: s(match_pair(g, g2, max_keypoints=10, homography=H)))
run("uint16", lambda: s(match_pair((g.astype(np.uint16) * 257), g2, max_keypoints=300)))
run("float nan", lambda: s(match_pair(np.full((100, 100), np.nan, np.float32), g)))
# a 3D-like case: two halves moving differently (no single affine)
left = g.copy(); Hl = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
two = g.copy(); two[:, w // 2:] = cv2.warpAffine(g, np.array([[0.7, -0.3, 150], [0.3, 0.7, -40.0]]), (w, h))[:, w // 2:]
run("two planes rectify", lambda: s(match_pair(g, two, max_keypoints=1000)))
run("two planes pair-pose", lambda: s(match_pair(g, two, max_keypoints=1000, recipe="pair-pose")))
