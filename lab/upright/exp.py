"""LAB #63: un-turn photo 1 by a voted turn before ALIKED (kornia, ../shared/peers), correct matches per pair."""
import json, math, sys, time
from pathlib import Path
import cv2, numpy as np, torch
import kornia.feature as KF
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.peers import Peers, ALIKED_THRESHOLD
from patchpose.evaluation.peers import load_state_into
from patchpose.geometry import reprojection_errors
from patchpose.data.patches import load_photo
from patchpose.matching.features import detect
from patchpose.matching.describe import Describer
from patchpose.matching.pairpose import OurVotes, SiftVotes, pair_votes
from patchpose.matching.rectify import first_pass_affine
from patchpose.matching.matcher import mutual_nn
from patchpose import PatchPoseEstimator

root, out = Path(sys.argv[1]), Path(sys.argv[2])
N = 2000
peers = Peers(Path("/work/shared/peers"))
def build(name):
    net = KF.ALIKED("aliked-n16", max_num_keypoints=-1, detection_threshold=ALIKED_THRESHOLD)
    return load_state_into(net, peers.folder / f"{name}.pth", "aliked", keep=("dkd.hw_grid",)).eval()
nets = {"n16": build("aliked-n16"), "n16rot": build("aliked-n16rot")}
est = PatchPoseEstimator.load("patchpose-v10")
D = Describer()

def aliked(img, net="n16"):
    rgb = np.repeat(img[:, :, None], 3, 2) if img.ndim == 2 else img
    x = torch.from_numpy(np.ascontiguousarray(rgb, np.float32) / 255.0).permute(2, 0, 1)[None]
    with torch.inference_mode():
        f = nets[net](x)[0]
    xy = f.keypoints.double().numpy().reshape(-1, 2); s = f.keypoint_scores.double().numpy().reshape(-1)
    o = np.argsort(-s, kind="stable")[:N]
    return xy[o], f.descriptors.float().numpy().reshape(len(s), -1)[o]

def turned(img, deg):
    """img turned by deg CCW as displayed on an expanded canvas; M (2x3) maps turned px -> original px."""
    h, w = img.shape[:2]
    c = ((w - 1) / 2, (h - 1) / 2)
    R = cv2.getRotationMatrix2D(c, deg, 1.0)  # positive: CCW as displayed
    a = math.radians(deg); W = int(math.ceil(abs(w * math.cos(a)) + abs(h * math.sin(a)))); Hh = int(math.ceil(abs(w * math.sin(a)) + abs(h * math.cos(a))))
    R[0, 2] += (W - 1) / 2 - c[0]; R[1, 2] += (Hh - 1) / 2 - c[1]
    t = cv2.warpAffine(img, R, (W, Hh), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    M = cv2.invertAffineTransform(R)
    return t, M

def correct(H, xy1, d1, xy2, d2):
    m = mutual_nn(d1[:, None], d2[:, None])[0]
    if len(m) == 0: return 0, 0, 0
    e = reprojection_errors(H, xy1[m[:, 0]], xy2[m[:, 1]])
    inl = 0
    if len(m) >= 4:
        Hh, mask = cv2.findHomography(xy1[m[:, 0]].astype(np.float32), xy2[m[:, 1]].astype(np.float32), cv2.RANSAC, 3.0)
        inl = 0 if mask is None else int(mask.sum())
    return int((e <= 3).sum()), int(len(m)), inl

def unturned_match(img1, imgk, deg, fk, net="n16"):
    t, M = turned(img1, deg)
    xy, d = aliked(t, net)
    xy1 = xy @ M[:, :2].T + M[:, 2]
    return xy1, d

def true_turn(H, shape):
    h, w = shape[:2]; c = np.array([[(w - 1) / 2, (h - 1) / 2]]); p = np.vstack([c, c + [10, 0]])
    q = reprojection_errors  # unused
    from patchpose.geometry import apply_homography
    a = apply_homography(H, p); v = a[1] - a[0]
    return math.degrees(math.atan2(-v[1], v[0])) % 360

rows = []
seqs = load_hpatches(root)
for seq in seqs:
    img1 = np.asarray(load_photo(seq.images[1]))
    t0 = time.perf_counter(); base1 = aliked(img1); t_al = time.perf_counter() - t0
    rot1 = {"n16rot": aliked(img1, "n16rot")}
    four = {0: base1}
    for q in (90, 180, 270):
        four[q] = unturned_match(img1, None, q, None)
    f1g = detect(img1, 500, detector="gftt"); f1s = detect(img1, N)
    for k, H in seq.homographies.items():
        imgk = np.asarray(load_photo(seq.images[k]))
        xyk, dk = aliked(imgk); xykr, dkr = aliked(imgk, "n16rot")
        r = {"seq": seq.name, "k": k, "true": true_turn(H, img1.shape), "t_aliked": t_al}
        r["as_is"] = correct(H, *base1, xyk, dk)
        r["n16rot"] = correct(H, *rot1["n16rot"], xykr, dkr)
        best = max(four, key=lambda q: correct(H, *four[q], xyk, dk)[2])
        r["best4"] = correct(H, *four[best], xyk, dk); r["best4_q"] = best
        # votes
        t0 = time.perf_counter(); fkg = detect(imgk, 500, detector="gftt")
        z, tu = pair_votes(f1g, fkg, OurVotes(D, est)); r["t_ours"] = time.perf_counter() - t0
        r["ours_turn"] = math.degrees(tu.radians) if tu.found else None; r["ours_conf"] = [tu.votes, tu.matches, tu.opposite]
        t0 = time.perf_counter(); fks = detect(imgk, N)
        z2, tu2 = pair_votes(f1s, fks, SiftVotes(D)); r["t_siftvotes"] = time.perf_counter() - t0
        r["sift_turn"] = math.degrees(tu2.radians) if tu2.found else None
        t0 = time.perf_counter(); A, _ = first_pass_affine(f1s, fks, D); r["t_affine"] = time.perf_counter() - t0
        r["affine_turn"] = None if A is None else math.degrees(math.atan2(-(A[1, 0] - A[0, 1]) / 2, (A[0, 0] + A[1, 1]) / 2)) % 360
        for name in ("ours_turn", "sift_turn", "affine_turn"):
            deg = r[name]
            r[name.replace("_turn", "_unturned")] = correct(H, *unturned_match(img1, imgk, deg, None), xyk, dk) if deg is not None else r["as_is"]
        r["oracle"] = correct(H, *unturned_match(img1, imgk, r["true"], None), xyk, dk)
        rows.append(r); print(json.dumps(r), flush=True)
out.write_text(json.dumps(rows))
