# ruff: noqa
"""Diagnostic for the next session (#60, pair-pose's affine map): per pair, the map pair-pose cut photo 2 through
(PairMatches.affine), its scale 0.5*log2|det| against the voted zoom, its condition number, and (generated pairs)
its error against the true homography's Jacobian at the image centre; real pairs: both orders and the matches a
fundamental matrix explains. Nothing is chosen here."""
import itertools, json, sys
import cv2
import numpy as np
import patchpose
from patchpose.data.patches import load_image
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.geometry import homography_jacobian

cv2.setNumThreads(1)
import os
if os.environ.get("OLD"):
    import patchpose.matching.zoom as _z
    _z.MAX_ANISOTROPY = 4.0  # the constant before this session's change: which maps it let through
import torch; torch.set_num_threads(1)


def rec(m):
    A = None if m.affine is None else np.asarray(m.affine, float)
    z = None if m.zoom is None else float(m.zoom)
    r = {"matches": int(len(m.matches)), "zoom": z, "turn": m.turn}
    if A is not None:
        r.update(det_octaves=float(0.5 * np.log2(abs(np.linalg.det(A[:2, :2])))), cond=float(np.linalg.cond(A[:2, :2])),
                 A=A.tolist())
    return r


def fsupport(m):
    if len(m.matches) < 8:
        return 0
    p1 = np.float32(m.xy1[m.matches[:, 0]]); p2 = np.float32(m.xy2[m.matches[:, 1]])
    F, mask = cv2.findFundamentalMat(p1, p2, cv2.USAC_MAGSAC, 1.5, 0.999, 10000)
    return 0 if mask is None else int(mask.sum())


out = open(sys.argv[2], "a")
from patchpose.evaluation.peers import Peers, keynet_frames
from patchpose.data.patches import check_image, to_gray
PEERS = Peers("/work/shared/peers")
det = sys.argv[3] if len(sys.argv) > 3 else "gftt"
if sys.argv[1].startswith("real:"):
    folder = sys.argv[1][5:]
    import pathlib
    paths = sorted(p for p in pathlib.Path(folder).iterdir() if p.suffix.lower() in (".jpg", ".png"))
    imgs = [load_image(p) for p in paths]
    for i, j in itertools.permutations(range(len(paths)), 2):
        m = patchpose.match_pair(imgs[i], imgs[j], recipe="pair-pose", detector=det)
        r = rec(m); r.update(pair=[paths[i].name, paths[j].name], fsupport=fsupport(m))
        out.write(json.dumps(r, default=str) + "\n"); out.flush()
else:
    for s in load_hpatches(sys.argv[1]):
        for k in s.targets:
            H = s.homographies[k]
            if det == "keynet":
                kp = [keynet_frames(PEERS, to_gray(check_image(im)), 2000) for im in (s.image(1), s.image(k))]
                m = patchpose.match_pair(s.image(1), s.image(k), recipe="pair-pose", keypoints=(kp[0][0], kp[1][0]),
                                         sizes=(kp[0][1], kp[1][1]))
            else:
                m = patchpose.match_pair(s.image(1), s.image(k), recipe="pair-pose", detector=det)
            r = rec(m)
            h, w = s.image(1).shape[:2]
            J = np.asarray(homography_jacobian(H, np.array([[w / 2, h / 2]])))[0]
            r.update(seq=s.name, kind=s.kind, target=k, true_det_octaves=float(0.5 * np.log2(abs(np.linalg.det(J)))),
                     true_cond=float(np.linalg.cond(J)))
            if "A" in r:
                r["A_err"] = float(np.linalg.norm(np.asarray(r["A"])[:2, :2] - J) / np.linalg.norm(J))
            out.write(json.dumps(r, default=str) + "\n"); out.flush()
