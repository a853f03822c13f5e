"""Does OpenCV SIFT pick its nfeatures best BEFORE applying the mask? And what does that do to rectify's re-detection?
python mask_budget.py"""
import cv2, numpy as np
from patchpose.matching import rectify as R
from patchpose.matching.features import detect
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.matcher import ratio_matches
from patchpose.data.keypoints import as_uint8_gray

cv2.setNumThreads(1)
D = "/work/shared/data/"
# 1. plain OpenCV: mask covering the left half of a real photo
g = cv2.imread(D + "sacre_coeur/51091044_3486849416.jpg", cv2.IMREAD_GRAYSCALE)
mask = np.zeros_like(g); mask[:, : g.shape[1] // 2] = 255
n_mask = len(cv2.SIFT_create(2000).detect(g, mask))
all_kp = cv2.SIFT_create(0).detect(g, mask)
print(f"OpenCV {cv2.__version__}: SIFT_create(2000).detect(img, left-half mask) -> {n_mask} keypoints; "
      f"SIFT_create(0) with the same mask finds {len(all_kp)} (so 2000 were available inside the mask)")
# 2. rectify's own warp on real pairs
for name, n1, n2 in [("sacre_coeur", "51091044_3486849416.jpg", "93341989_396310999.jpg"),
                     ("sacre_coeur", "44120379_8371960244.jpg", "51091044_3486849416.jpg"),
                     ("tum_freiburg", "1341847991.814748.png", "1341847993.826735.png"),
                     ("sacre_coeur", "02928139_3448003521.jpg", "03903474_1471484089.jpg")]:
    a = cv2.imread(D + f"{name}/{n1}", cv2.IMREAD_GRAYSCALE); b = cv2.imread(D + f"{name}/{n2}", cv2.IMREAD_GRAYSCALE)
    f1, f2 = detect(a, 2000), detect(b, 2000)
    desc = Describer()
    A, _ = R.first_pass_affine(f1, f2, desc)
    first = np.linalg.det(A[:, :2]) > 1.0
    M = np.linalg.inv(np.vstack([A, [0, 0, 1]]))[:2] if first else A
    moved, kept = (f1, f2) if first else (f2, f1)
    warped, m = R.warp_into(moved.image, M, kept.image.shape[:2])
    u8 = as_uint8_gray(warped)
    k_masked = cv2.SIFT_create(2000).detect(u8, m)
    k_nomask = cv2.SIFT_create(2000).detect(u8, None)
    inside = [k for k in k_nomask if m[min(int(round(k.pt[1])), m.shape[0]-1), min(int(round(k.pt[0])), m.shape[1]-1)]]
    k_all_in = cv2.SIFT_create(0).detect(u8, m)
    zero = u8.copy(); zero[m == 0] = 0
    print(f"{n1[:14]}-{n2[:14]}: valid share of frame {(m>0).mean():.2f}; SIFT(2000) with mask: {len(k_masked)}; "
          f"without mask: {len(k_nomask)} of which {len(inside)} inside the mask; SIFT(0) with mask: {len(k_all_in)} available")
