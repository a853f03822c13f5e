"""Draw rectify's first-pass RANSAC inliers (green: epipolar-correct, red: not) for a pair: python draw_inliers.py SET IM1 IM2 OUT.png"""
import sys, cv2, numpy as np, pycolmap
import realcheck as rc
from patchpose.matching import rectify as R
from patchpose.matching.features import detect
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import ratio_matches
name, n1, n2, out = sys.argv[1:5]
rec = pycolmap.Reconstruction(rc.MODEL.format(name)); ims = {im.name: im for im in rec.images.values()}
v1, v2 = rc.View(ims[n1]), rc.View(ims[n2]); F = rc.fundamental(v1, v2)
a = cv2.imread(str(rc.DATA / name / n1)); b = cv2.imread(str(rc.DATA / name / n2))
f1, f2 = detect(cv2.cvtColor(a, cv2.COLOR_BGR2GRAY), 2000), detect(cv2.cvtColor(b, cv2.COLOR_BGR2GRAY), 2000)
d = Describer(); rm = ratio_matches(sift_all_descriptors(f1, d), sift_all_descriptors(f2, d))[0]
x1, x2 = f1.xy[rm[:, 0]], f2.xy[rm[:, 1]]
_, inl = cv2.estimateAffine2D(np.float32(x1), np.float32(x2), method=cv2.RANSAC, ransacReprojThreshold=R.AFFINE_PX)
inl = inl.ravel().astype(bool)
ok = rc.epi_dists(F, v1.undistort_px(x1), v2.undistort_px(x2))[0] <= 2
h = max(a.shape[0], b.shape[0]); canvas = np.zeros((h, a.shape[1] + b.shape[1], 3), np.uint8)
canvas[: a.shape[0], : a.shape[1]] = a; canvas[: b.shape[0], a.shape[1]:] = b
for p, q, i, c in zip(x1, x2, inl, ok):
    if not i: continue
    col = (0, 255, 0) if c else (0, 0, 255)
    cv2.line(canvas, tuple(np.int32(p)), tuple(np.int32(q + [a.shape[1], 0])), col, 2)
    cv2.circle(canvas, tuple(np.int32(p)), 6, col, 2); cv2.circle(canvas, tuple(np.int32(q + [a.shape[1], 0])), 6, col, 2)
print(f"inliers {inl.sum()}, epipolar-correct among them {(inl & ok).sum()}")
cv2.imwrite(out, cv2.resize(canvas, None, fx=0.6, fy=0.6))
