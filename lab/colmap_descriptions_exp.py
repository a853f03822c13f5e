"""#61 experiment: descriptions of COLMAP's keypoints in COLMAP's pipeline (not shipped)."""
import sys, json, numpy as np
from pathlib import Path
from patchpose.integrations.colmap import run_reconstruction, SIFT_WINDOW, describe_pose
from patchpose.evaluation.colmap_eval import describe_at, turn_every_other
from patchpose.matching.describe import Describer
from patchpose.matching.candidates import gradient_peaks_of
from patchpose import PatchPoseEstimator

D = Describer()
est = None

def grad_multi(feats, ratio=0.8):
    o, w = gradient_peaks_of(feats, feats.frame)
    from patchpose.matching.gradient import dominant_gradient_candidates
    keep = np.ones(o.shape, bool); keep[:, 2:] = False
    # second peak where its mass is >= ratio of the first's (SIFT's 80 % rule, on masses)
    keep[:, 1] = w[:, 1] >= ratio * w[:, 0]
    n = keep.sum(1)
    xy = np.repeat(feats.xy, n, 0); win = np.repeat(feats.frame, n); ori = o[keep]
    d = D.describe(feats.pyramid, xy, win, ori)
    return {"xy": xy, "scale": win - SIFT_WINDOW, "ori": ori, "descriptors": d}

def network(feats):
    return describe_at(feats, "network", est, D)

def sift(feats):
    return describe_at(feats, "sift", None, D)

def pose(feats):
    return describe_pose(feats, D)

import cv2, math
from patchpose.conventions import to_opencv_sift_xy, to_cv2_size_angle
from patchpose.data.keypoints import as_uint8_gray


def packed_octave(size):
    sigma = np.asarray(size, np.float64) / 2.0
    t = 3.0 * np.log2(np.maximum(sigma, 1e-6) / 1.6)
    o = np.clip(np.floor((t - 0.5) / 3.0), -1, 20).astype(int)
    layer = np.clip(np.round(t - 3.0 * o), 1, 3).astype(int)
    return (o & 255) | (layer << 8)


def cv2_desc(feats, scale, ori, root=True):
    from patchpose.integrations.opencv import sift_descriptors
    return sift_descriptors(feats.image, XY[0], scale, ori)

XY = [None]

def sift_cv(feats, root=True):
    counts = np.array([len(c) for c in feats.sift_ori_candidates], np.int64)
    xy = np.repeat(feats.xy, counts, 0); scale = np.repeat(feats.sift_scale - SIFT_WINDOW, counts)
    ori = np.concatenate(feats.sift_ori_candidates)
    XY[0] = xy
    return {"xy": xy, "scale": scale, "ori": ori, "descriptors": cv2_desc(feats, scale, ori, root)}

def grad_multi_cv(feats):
    f = grad_multi(feats)
    XY[0] = f["xy"]
    f["descriptors"] = cv2_desc(feats, f["scale"], f["ori"])
    return f

def pose_cv(feats):
    f = describe_pose(feats, D)
    XY[0] = f["xy"]
    f["descriptors"] = cv2_desc(feats, f["scale"], f["ori"])
    return f

def network_cv(feats):
    o = est.estimate(feats.image, feats.xy)
    scale, ori, radius = (np.asarray(a).reshape(len(feats.xy), -1)[:, 0] for a in (o.scale, o.orientation, o.descriptor_radius))
    XY[0] = feats.xy
    d = cv2_desc(feats, np.log2(radius / 16.0) - SIFT_WINDOW, ori)
    return {"xy": feats.xy, "scale": scale, "ori": ori, "descriptors": d}

FUN = {"network_cv": network_cv, "sift_cv": sift_cv, "sift_cv_l2": lambda f: sift_cv(f, False), "grad_multi_cv": grad_multi_cv, "pose_cv": pose_cv, "colmap": None, "grad_multi": grad_multi, "network": network, "sift": sift, "pose": pose}
import os
import pycolmap
_FEO = pycolmap.FeatureExtractionOptions
PEAK = [None]
def _feo():
    o = _FEO()
    if PEAK[0] is not None:
        o.sift.peak_threshold = PEAK[0]
    return o
pycolmap.FeatureExtractionOptions = _feo
SEEDS = [int(x) for x in os.environ.get("SEEDS", "0").split()]
images, out, which = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
if "network" in which or "network_cv" in which:
    est = PatchPoseEstimator.load("patchpose-v10")
for w in which:
    for seed in SEEDS:
        d = out / f"{w}-seed{seed}"
        mk = int(w.split("@")[1]) if "@" in w else 8192
        PEAK[0] = float(w.split("~")[1]) if "~" in w else None
        s = run_reconstruction(images, d, {"exp": w}, describe=FUN[w.split("@")[0]] if not w.startswith("colmap") else None, max_keypoints=mk, seed=seed, threads=1)
        print(w, seed, s["registered"], s["points3D"], s["observations"], s["track_length"], s["reprojection_px"], s["keypoints"], s["inlier_matches"], s["stage_seconds"], flush=True)
