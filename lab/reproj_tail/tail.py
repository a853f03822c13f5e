"""#61 diagnostic, after git tag lab-reproj-split-2026-11-30: the observations whose error rose by over 1 px in
upright_ours against SIFT's own pose (seed 0, upright): which of our 3-D points hold them, how long their tracks are,
whether they join two or more of SIFT's points (tracks merged).

    python lab/reproj_tail/tail.py TUM_OUT SC_OUT      (OUT: as lab/reproj_split/split.py's, from `eval colmap`)
"""
import sys
from pathlib import Path
import numpy as np, pycolmap
def load(d):
    rec = pycolmap.Reconstruction(str(d)); obs = {}; pts = {}
    for pid, p in rec.points3D.items():
        keys = []
        for el in p.track.elements:
            im = rec.images[el.image_id]; xy = im.points2D[el.point2D_idx].xy
            cam = rec.cameras[im.camera_id]; proj = cam.img_from_cam(im.cam_from_world() * p.xyz)
            k = (im.name, round(float(xy[0]), 2), round(float(xy[1]), 2))
            obs[k] = (float(np.linalg.norm(np.asarray(proj) - np.asarray(xy))), pid); keys.append(k)
        pts[pid] = keys
    return obs, pts
for s, root in zip(("tum", "sc"), sys.argv[1:3]):
    out = Path(root) / "runs" / "upright"
    a, pa = load(next(out.glob("sift-seed*")) / "sparse/0"); b, pb = load(next(out.glob("upright_ours*")) / "sparse/0")
    tail = [k for k in a.keys() & b.keys() if b[k][0] - a[k][0] > 1.0]
    ours_pts = {b[k][1] for k in tail}
    merged = 0; lens = []; maxerr = []; ratio = []
    for pid in ours_pts:
        keys = pb[pid]; lens.append(len(keys)); maxerr.append(max(b[k][0] for k in keys))
        sift_pts = {a[k][1] for k in keys if k in a}
        merged += len(sift_pts) >= 2
        ratio.append(sum(k in a for k in keys) / len(keys))
    allpts = list(pb)
    print(s, f"tail obs {len(tail)} in {len(ours_pts)} of our points; of those points {merged} join >=2 SIFT points; "
          f"track length median {np.median(lens):.0f} (all ours {np.median([len(v) for v in pb.values()]):.0f}); "
          f"max obs error median {np.median(maxerr):.2f} px; share of their obs in SIFT's model {np.mean(ratio):.2f}")
    m_all = sum(len({a[k][1] for k in v if k in a}) >= 2 for v in pb.values())
    print("   all our points joining >=2 SIFT points:", m_all, "of", len(pb))
    m_rev = sum(len({b[k][1] for k in v if k in b}) >= 2 for v in pa.values())
    print("   and SIFT's points joining >=2 of ours:", m_rev, "of", len(pa))
