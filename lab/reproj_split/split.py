"""#61 diagnostic: why `upright_ours` has a higher mean reprojection error than `sift` (SIFT's own pose) in the same
pipeline. Both describe COLMAP's SIFT keypoints; an observation is (image, keypoint location rounded to 0.01 px).
Splits each model's observations into those the other model also has (as observations of some 3-D point) and its
own, with the mean reprojection error of each part, and the error of the common ones point by point.

    patchpose eval colmap ../shared/data/SET --poses sift upright_ours --sets upright --seeds 0 --threads 1 --out OUT
    python lab/reproj_split/split.py OUT
"""
import sys
from pathlib import Path

import numpy as np
import pycolmap

out = Path(sys.argv[1]) / "runs" / "upright"


def observations(model_dir):
    rec = pycolmap.Reconstruction(str(model_dir))
    obs = {}
    for pid, p in rec.points3D.items():
        for el in p.track.elements:
            im = rec.images[el.image_id]
            xy = im.points2D[el.point2D_idx].xy
            proj = im.project_point(p.xyz) if hasattr(im, "project_point") else None
            if proj is None:
                cam = rec.cameras[im.camera_id]
                proj = cam.img_from_cam(im.cam_from_world() * p.xyz)
            err = float(np.linalg.norm(np.asarray(proj) - np.asarray(xy)))
            obs[(im.name, round(float(xy[0]), 2), round(float(xy[1]), 2))] = (err, len(p.track.elements))
    return obs


a = observations(next(out.glob("sift-seed*")) / "sparse" / "0")
b = observations(next(out.glob("upright_ours*")) / "sparse" / "0")
common = a.keys() & b.keys()
for name, o, other in (("sift", a, b), ("upright_ours", b, a)):
    e = np.array([v[0] for v in o.values()])
    c = np.array([o[k][0] for k in o if k in other])
    own = np.array([o[k][0] for k in o if k not in other])
    print(f"{name}: {len(o)} observations, mean error {e.mean():.3f} px; common {len(c)} mean {c.mean():.3f}; "
          f"its own {len(own)} mean {own.mean():.3f}")
d = np.array([b[k][0] - a[k][0] for k in common])
print(f"common observations, upright_ours minus sift, point by point: mean {d.mean():+.3f} px, median {np.median(d):+.3f}")
