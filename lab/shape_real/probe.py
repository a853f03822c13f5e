"""Would our affine shapes help SIFT-described collections? Per pair of the shared real sets: OpenCV SIFT's own
descriptors (A), the same keypoints described by OpenCV's SIFT on tiles cut upright in a disc (B: the mosaic's own
loss) and cut through our shape network's affine frame (C), SIFT's angle carried into the frame. Correct = within
2 px of COLMAP's epipolar geometry."""
import json, sys, time
from pathlib import Path
import cv2, numpy as np, pycolmap, torch
sys.path.insert(0, str(Path(__file__).parent))
from realcheck import View, fundamental, epi_dists, DATA, MODEL, THR
from patchpose.conventions import opencv_sift_octave, from_cv2_size_angle
from patchpose.matching.matcher import mutual_nn, ratio_matches
from patchpose.shape import AffineShapeEstimator
torch.set_num_threads(1); cv2.setNumThreads(1)
T, S0 = 96, 8.0  # tile side, OpenCV size in the tile
EST = AffineShapeEstimator.from_pretrained()
from patchpose.evaluation.peers import Peers, affnet_frames
PEERS = Peers("/work/shared/peers")

def root(d):
    d = np.asarray(d, np.float32)
    return np.sqrt(d / np.maximum(d.sum(1, keepdims=True), 1e-12))

def detect(gray):
    sift = cv2.SIFT_create(2000)
    kps, d = sift.detectAndCompute(gray, None)
    return kps, root(d)

def pyramid(gray, levels=8):
    out = [np.float32(gray)]
    for _ in range(levels):
        if min(out[-1].shape) < 16: break
        out.append(cv2.pyrDown(out[-1]))
    return out

def mosaic_descriptors(gray, kps, shapes, covector=False):
    """shapes (N, 2, 2) det 1: tile px -> image px directions (identity: a disc)."""
    n = len(kps)
    xy = np.array([k.pt for k in kps]) - 0.25
    sig = np.array([k.size for k in kps]) / 2.0
    _, theta = from_cv2_size_angle(np.array([k.size for k in kps]), np.array([k.angle for k in kps]))
    pyr = pyramid(gray)
    cols = int(np.ceil(np.sqrt(n)))
    rows = int(np.ceil(n / cols))
    mos = np.zeros((rows * T, cols * T), np.float32)
    u0 = (T - 1) / 2.0
    angles = np.zeros(n)
    for i in range(n):
        L = (sig[i] / (S0 / 2.0)) * shapes[i]  # tile px -> image px
        shrink = np.linalg.svd(L, compute_uv=False).max()
        lev = int(np.clip(np.round(np.log2(max(shrink, 1.0))), 0, len(pyr) - 1))
        Ll = L / 2**lev
        c = (xy[i] + 0.5) / 2**lev - 0.5
        M = np.hstack([Ll, (c - Ll @ [u0, u0])[:, None]])
        tile = cv2.warpAffine(pyr[lev], M, (T, T), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                              borderMode=cv2.BORDER_REFLECT_101)
        r, q = divmod(i, cols)
        mos[r * T:(r + 1) * T, q * T:(q + 1) * T] = tile
        g = np.array([np.cos(theta[i]), -np.sin(theta[i])])  # SIFT's angle: a gradient's direction, image px
        # carried into the tile as a gradient (a covector: S^T g) or, as first run, as a vector (S^-1 g)
        d = shapes[i].T @ g if covector else np.linalg.solve(shapes[i], g)
        angles[i] = np.mod(-np.degrees(np.arctan2(-d[1], d[0])), 360.0)
    octv = int(opencv_sift_octave(S0))
    tk = []
    for i in range(n):
        r, q = divmod(i, cols)
        tk.append(cv2.KeyPoint(q * T + u0 + 0.25, r * T + u0 + 0.25, S0, float(angles[i]), 0.0, octv, i))
    kept, d = cv2.SIFT_create().compute(np.uint8(np.clip(mos, 0, 255)), tk)
    assert len(kept) == n
    return root(d)

def shapes_of(gray, kps, factor=1.0):
    """Our shapes (det 1) read in a disc of radius factor·σ (σ = size/2; OpenCV's descriptor covers 10.6σ)."""
    xy = np.array([k.pt for k in kps]) - 0.25
    r = factor * np.array([k.size for k in kps]) / 2.0
    return EST.frames(gray, xy, radius=r) / r[:, None, None]

def correct(F, v1, v2, x1, x2):
    if len(x1) == 0: return 0
    return int((epi_dists(F, v1.undistort_px(x1), v2.undistort_px(x2))[0] <= THR).sum())

name, outp = sys.argv[1], sys.argv[2]
rec = pycolmap.Reconstruction(MODEL.format(name))
views = {im.name: View(im) for im in rec.images.values() if im.has_pose}
reg = sorted(p.name for p in (DATA / name).iterdir() if p.name in views)
pairs = ([(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg)) if j - i <= 3]
         if name == "tum_freiburg" else [(reg[i], reg[j]) for i in range(len(reg)) for j in range(i + 1, len(reg))])
desc = {}
t0 = time.perf_counter()
for f in reg:
    g = cv2.imread(str(DATA / name / f), cv2.IMREAD_GRAYSCALE)
    kps, dA = detect(g)
    eye = np.repeat(np.eye(2)[None], len(kps), 0)
    dB = mosaic_descriptors(g, kps, eye)
    sh = shapes_of(g, kps)
    dC = mosaic_descriptors(g, kps, sh)
    sig = np.array([k.size for k in kps]) / 2.0
    af = affnet_frames(PEERS, g, np.array([k.pt for k in kps]) - 0.25, sig) / sig[:, None, None]
    dD = mosaic_descriptors(g, kps, af)
    w = 10.6 * sig  # the descriptor's window
    dE = mosaic_descriptors(g, kps, shapes_of(g, kps, 10.6), covector=True)
    af = affnet_frames(PEERS, g, np.array([k.pt for k in kps]) - 0.25, w) / w[:, None, None]
    dF = mosaic_descriptors(g, kps, af, covector=True)
    xy = np.array([k.pt for k in kps]) - 0.25
    desc[f] = (xy, {"A": dA, "B": dB, "C": dC, "D": dD, "E": dE, "F": dF})
    print(f, len(kps), "%.1f s" % (time.perf_counter() - t0), flush=True)
rows = []
for n1, n2 in pairs:
    v1, v2 = views[n1], views[n2]; F = fundamental(v1, v2)
    (x1, D1), (x2, D2) = desc[n1], desc[n2]
    row = {"pair": [n1, n2]}
    for k in D1:
        for how, fn in (("mnn", mutual_nn), ("ratio", ratio_matches)):
            m = fn(D1[k], D2[k])[0]
            row[f"{k}_{how}"] = correct(F, v1, v2, x1[m[:, 0]], x2[m[:, 1]])
            row[f"{k}_{how}_n"] = len(m)
    rows.append(row); print(json.dumps(row), flush=True)
Path(outp).write_text(json.dumps(rows))
