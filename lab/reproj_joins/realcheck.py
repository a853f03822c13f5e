"""Real-photo check of patchpose.match_pair(recipe="rectify") against pair-pose and OpenCV SIFT.

Usage:  OMP_NUM_THREADS=1 python realcheck.py SET OUT.json     (SET: tum_freiburg | sacre_coeur)

Pseudo ground truth: the COLMAP model /work/c61/final/SET/runs/upright/colmap-seed0/sparse/0 (COLMAP's own SIFT).
A match is "correct" when its symmetric epipolar distance max(d(x2, F x1), d(x1, F^T x2)) <= 2 px, measured in
UNDISTORTED pixel coordinates (COLMAP's SIMPLE_RADIAL distortion removed through camera.cam_from_img, then the
pinhole K of the same camera). The Sampson distance (first-order geometric error, sqrt, px) <= 2 px is recorded too.

Coordinate conventions (checked in selftest()):
  * patchpose xy: pixel centres at integers (its docs; OpenCV SIFT's +0.25 px bias already removed)
  * cv2.SIFT kp.pt: pixel centres at integers + 0.25 px bias (patchpose.conventions.OPENCV_SIFT_XY_BIAS) -> pt-0.25
  * COLMAP: pixel centres at +0.5 -> colmap = pixel_centre + 0.5
  * turned: photo 2 is cv2.rotate(b, ROTATE_90_CLOCKWISE); rotated (x', y') -> original (y', h-1-x')
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pycolmap
import torch

import patchpose
from patchpose.matching.describe import Describer
from patchpose.matching.features import detect
from patchpose.matching.candidates import sift_all_descriptors
from patchpose.matching.matcher import ratio_matches
from patchpose.matching import rectify as R

torch.set_num_threads(1)
cv2.setNumThreads(1)

DATA = Path("/work/shared/data")
MODEL = "/work/c61/final/{}/runs/upright/colmap-seed0/sparse/0"
THR = 2.0
MAXKP = 2000
CV_BIAS = 0.25
MAIN = Path("/work/main")


# ----------------------------------------------------------------------------- geometry
def skew(t):
    return np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]], float)


class View:
    def __init__(self, im):
        self.name = im.name
        self.cam = im.camera
        T = im.cam_from_world()
        self.R = np.asarray(T.rotation.matrix(), float)
        self.t = np.asarray(T.translation, float).reshape(3)
        self.K = np.asarray(self.cam.calibration_matrix(), float)

    def undistort_px(self, xy_centre):
        """pixel-centre-at-integer coords (distorted) -> undistorted pinhole pixel coords (COLMAP frame)."""
        xy = np.asarray(xy_centre, float).reshape(-1, 2) + 0.5
        if len(xy) == 0:
            return xy
        n = np.asarray(self.cam.cam_from_img(xy), float)
        return n @ self.K[:2, :2].T + self.K[:2, 2]


def fundamental(v1: View, v2: View):
    R = v2.R @ v1.R.T
    t = v2.t - R @ v1.t
    E = skew(t) @ R
    return np.linalg.inv(v2.K).T @ E @ np.linalg.inv(v1.K)


def epi_dists(F, u1, u2):
    """u1,u2 undistorted px (N,2): (symmetric max point-line distance, Sampson distance sqrt) px."""
    if len(u1) == 0:
        return np.zeros(0), np.zeros(0)
    h1 = np.c_[u1, np.ones(len(u1))]
    h2 = np.c_[u2, np.ones(len(u2))]
    l2 = h1 @ F.T  # F x1
    l1 = h2 @ F  # F^T x2
    e = np.sum(h2 * l2, 1)
    d2 = np.abs(e) / np.hypot(l2[:, 0], l2[:, 1])
    d1 = np.abs(e) / np.hypot(l1[:, 0], l1[:, 1])
    samp = np.abs(e) / np.sqrt(l2[:, 0] ** 2 + l2[:, 1] ** 2 + l1[:, 0] ** 2 + l1[:, 1] ** 2)
    return np.maximum(d1, d2), samp


def rot_fwd(xy, h):  # original (x, y) -> rotated-clockwise (h-1-y, x)
    xy = np.asarray(xy, float).reshape(-1, 2)
    return np.c_[h - 1 - xy[:, 1], xy[:, 0]]


def rot_back(xy, h):  # rotated (x', y') -> original (y', h-1-x')
    xy = np.asarray(xy, float).reshape(-1, 2)
    return np.c_[xy[:, 1], h - 1 - xy[:, 0]]


def selftest():
    a = np.arange(5 * 7).reshape(5, 7).astype(np.uint8)
    b = cv2.rotate(a, cv2.ROTATE_90_CLOCKWISE)
    for y in range(5):
        for x in range(7):
            xr, yr = rot_fwd([[x, y]], 5)[0].astype(int)
            assert b[yr, xr] == a[y, x]
            assert np.allclose(rot_back([[xr, yr]], 5), [[x, y]])


# ----------------------------------------------------------------------------- methods
def cv_sift(a, b):
    t0 = time.perf_counter()
    s = cv2.SIFT_create(MAXKP)
    k1, d1 = s.detectAndCompute(a, None)
    k2, d2 = s.detectAndCompute(b, None)
    t_det = time.perf_counter() - t0
    p1 = np.array([k.pt for k in k1], float).reshape(-1, 2) - CV_BIAS
    p2 = np.array([k.pt for k in k2], float).reshape(-1, 2) - CV_BIAS
    out = {}
    t0 = time.perf_counter()
    mm = cv2.BFMatcher(cv2.NORM_L2, crossCheck=True).match(d1, d2) if len(k1) and len(k2) else []
    idx = np.array([[m.queryIdx, m.trainIdx] for m in mm], int).reshape(-1, 2)
    out["sift-mnn"] = (p1[idx[:, 0]], p2[idx[:, 1]], t_det + time.perf_counter() - t0, len(k1), len(k2))
    t0 = time.perf_counter()
    kn = cv2.BFMatcher(cv2.NORM_L2).knnMatch(d1, d2, k=2) if len(k1) and len(k2) >= 2 else []
    idx = np.array([[m[0].queryIdx, m[0].trainIdx] for m in kn if len(m) == 2 and m[0].distance < 0.8 * m[1].distance], int).reshape(-1, 2)
    out["sift-ratio"] = (p1[idx[:, 0]], p2[idx[:, 1]], t_det + time.perf_counter() - t0, len(k1), len(k2))
    return out


def pp(a, b, recipe):
    t0 = time.perf_counter()
    m = patchpose.match_pair(a, b, recipe=recipe, max_keypoints=MAXKP)
    dt = time.perf_counter() - t0
    return m, (m.xy1[m.matches[:, 0]], m.xy2[m.matches[:, 1]], dt, len(m.xy1), len(m.xy2))


def rectify_diag(a, b, m, co1, co2):
    """What rectify saw: first-pass ratio matches, RANSAC inliers, which photo warped, re-detections, overlap,
    and how well its map (and the best least-squares affine) explains COLMAP's co-observed points (px)."""
    f1, f2 = detect(a, MAXKP), detect(b, MAXKP)
    desc = Describer()
    d1, d2 = sift_all_descriptors(f1, desc), sift_all_descriptors(f2, desc)
    rm = ratio_matches(d1, d2)[0]
    out = {"kp1": len(f1), "kp2": len(f2), "ratio_matches": int(len(rm))}
    inl = 0
    if len(rm) >= R.MIN_INLIERS:
        A2, ii = cv2.estimateAffine2D(np.float32(f1.xy[rm[:, 0]]), np.float32(f2.xy[rm[:, 1]]), method=cv2.RANSAC,
                                      ransacReprojThreshold=R.AFFINE_PX)
        inl = int(ii.sum()) if ii is not None else 0
    out["affine_inliers"] = inl
    A = m.affine
    out["affine"] = None if A is None else np.round(A, 5).tolist()
    if A is not None:
        sv = np.linalg.svd(A[:, :2], compute_uv=False)
        out["affine_sv"] = sv.tolist()
        out["affine_det"] = float(np.linalg.det(A[:, :2]))
        out["affine_turn_deg"] = float(np.degrees(np.arctan2(A[1, 0] - A[0, 1], A[0, 0] + A[1, 1])))
        first = getattr(R, "WARP", "smaller") == "smaller" and np.linalg.det(A[:, :2]) > 1.0
        out["warped"] = 1 if first else 2
        out["redetected"] = len(m.xy1) if first else len(m.xy2)
        # overlap: share of the kept photo's frame covered by the warped photo
        M = np.linalg.inv(np.vstack([A, [0, 0, 1]]))[:2] if first else A
        moved, kept = (a, b) if first else (b, a)
        valid = np.full(moved.shape[:2], 255, np.uint8)
        mask = cv2.warpAffine(valid, M, (kept.shape[1], kept.shape[0]), flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP)
        out["overlap_of_kept_frame"] = float((mask > 0).mean())
        if len(co1):
            res = np.linalg.norm(co1 @ A[:, :2].T + A[:, 2] - co2, axis=1)
            out["gt_res_of_map_median"] = float(np.median(res))
            out["gt_within3_of_map"] = float((res <= 3).mean())
            out["gt_within10_of_map"] = float((res <= 10).mean())
    if len(co1) >= 3:
        X = np.c_[co1, np.ones(len(co1))]
        B, *_ = np.linalg.lstsq(X, co2, rcond=None)
        res = np.linalg.norm(X @ B - co2, axis=1)
        out["gt_best_affine_res_median"] = float(np.median(res))
        out["gt_best_affine_within3"] = float((res <= 3).mean())
    out["n_coobserved"] = int(len(co1))
    return out


def score(F, v1, v2, x1, x2, rng):
    u1, u2 = v1.undistort_px(x1), v2.undistort_px(x2)
    sym, samp = epi_dists(F, u1, u2)
    chance = float("nan")
    if len(u1) >= 2:
        ch = [np.mean(epi_dists(F, u1, u2[rng.permutation(len(u2))])[0] <= THR) for _ in range(10)]
        chance = float(np.mean(ch))
    return {
        "matches": int(len(u1)),
        "correct": int((sym <= THR).sum()),
        "correct_sampson": int((samp <= THR).sum()),
        "chance_share": chance,
        "median_sym": float(np.median(sym)) if len(sym) else None,
    }


def git_state():
    head = subprocess.run(["git", "-C", str(MAIN), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    st = subprocess.run(["git", "-C", str(MAIN), "status", "--short"], capture_output=True, text=True).stdout
    md5 = {p: hashlib.md5((MAIN / "src/patchpose/matching" / p).read_bytes()).hexdigest()
           for p in ("rectify.py", "pair.py", "pairpose.py", "matcher.py", "blend.py", "features.py")}
    return {"head": head, "status": st, "md5": md5, "loadavg": os.getloadavg(), "time": time.time()}


def main():
    selftest()
    name, outp = sys.argv[1], sys.argv[2]
    rec = pycolmap.Reconstruction(MODEL.format(name))
    views = {im.name: View(im) for im in rec.images.values() if im.has_pose}
    files = sorted(p.name for p in (DATA / name).iterdir() if p.suffix.lower() in (".png", ".jpg"))
    reg = [f for f in files if f in views]
    print(f"{name}: {len(files)} images, {len(reg)} registered", flush=True)
    if name == "tum_freiburg":
        pairs = [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg)) if 1 <= j - i <= 3]
    else:
        pairs = [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg))]
    if os.environ.get("LIMIT"):
        pairs = pairs[: int(os.environ["LIMIT"])]
    # COLMAP co-observations per image: point3D_id -> xy (pixel centre at integers)
    obs = {}
    for im in rec.images.values():
        obs[im.name] = {p.point3D_id: np.asarray(p.xy, float) - 0.5 for p in im.points2D if p.has_point3D()}
    imgs = {f: cv2.imread(str(DATA / name / f), cv2.IMREAD_GRAYSCALE) for f in reg}
    rng = np.random.default_rng(0)
    result = {"set": name, "git_start": git_state(), "n_images": len(files), "registered": len(reg),
              "threshold_px": THR, "pairs": []}
    # warm-up (imports, first allocations), not recorded
    a, b = imgs[pairs[0][0]], imgs[pairs[0][1]]
    pp(a, b, "rectify"), pp(a, b, "pair-pose"), cv_sift(a, b)
    t_all = time.perf_counter()
    for n1, n2 in pairs:
        v1, v2 = views[n1], views[n2]
        F = fundamental(v1, v2)
        ids = sorted(set(obs[n1]) & set(obs[n2]))
        co1 = np.array([obs[n1][i] for i in ids]).reshape(-1, 2)
        co2 = np.array([obs[n2][i] for i in ids]).reshape(-1, 2)
        gt_sym = epi_dists(F, v1.undistort_px(co1), v2.undistort_px(co2))[0]
        row = {"im1": n1, "im2": n2, "n_coobserved": len(ids),
               "gt_sym_median": float(np.median(gt_sym)) if len(ids) else None,
               "gt_sym_p95": float(np.percentile(gt_sym, 95)) if len(ids) else None}
        for cond in ("upright", "turned"):
            a = imgs[n1]
            b = imgs[n2] if cond == "upright" else cv2.rotate(imgs[n2], cv2.ROTATE_90_CLOCKWISE)
            h2 = imgs[n2].shape[0]
            back = (lambda x: x) if cond == "upright" else (lambda x: rot_back(x, h2))
            res = {}
            mr, outr = pp(a, b, "rectify")
            mp, outp_ = pp(a, b, "pair-pose")
            meth = {"rectify": outr, "pair-pose": outp_, **cv_sift(a, b)}
            for k, (x1, x2, dt, n_1, n_2) in meth.items():
                s = score(F, v1, v2, x1, back(x2), rng)
                s.update(seconds=dt, kp1=n_1, kp2=n_2)
                res[k] = s
            co2c = co2 if cond == "upright" else rot_fwd(co2, h2)
            res["rectify"]["diag"] = rectify_diag(a, b, mr, co1, co2c)
            res["pair-pose"]["affine"] = None if mp.affine is None else np.round(mp.affine, 5).tolist()
            row[cond] = res
        result["pairs"].append(row)
        u, t = row["upright"], row["turned"]
        print(f"{n1[:17]:17s} {n2[:17]:17s} gt{row['gt_sym_median'] if row['gt_sym_median'] is None else round(row['gt_sym_median'],2)} | "
              + " ".join(f"{k}:{u[k]['correct']}/{u[k]['matches']}" for k in u)
              + " | T " + " ".join(f"{k}:{t[k]['correct']}/{t[k]['matches']}" for k in t), flush=True)
    result["seconds_total"] = time.perf_counter() - t_all
    result["git_end"] = git_state()
    Path(outp).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
