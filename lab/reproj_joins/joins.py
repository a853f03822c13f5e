"""#61: are the joins of upright_ours (points joining 2+ of SIFT's points) right? Each observation of a track checked
against the track's other observations under COLMAP's own model's epipolar geometry (realcheck.py): an observation is
'off' when its median symmetric epipolar distance to the others exceeds 2 px.

    python lab/reproj_joins/joins.py TUM_OUT SC_OUT     (OUT: as lab/reproj_split/split.py's; realcheck.py reads
    COLMAP's own model made by `patchpose eval colmap ../shared/data/SET --out /work/c61/final/SET --poses colmap
    --seeds 0 --threads 1`)
"""
import sys
from pathlib import Path
import numpy as np, pycolmap
sys.path.insert(0, str(Path(__file__).parent))
from realcheck import View, fundamental, epi_dists, MODEL
def load(d):
    rec = pycolmap.Reconstruction(str(d)); obs = {}; pts = {}
    for pid, p in rec.points3D.items():
        keys = []
        for el in p.track.elements:
            im = rec.images[el.image_id]; xy = im.points2D[el.point2D_idx].xy
            k = (im.name, round(float(xy[0]), 2), round(float(xy[1]), 2)); obs[k] = pid; keys.append(k)
        pts[pid] = keys
    return obs, pts
for name, root in zip(("tum_freiburg", "sacre_coeur"), sys.argv[1:3]):
    ref = pycolmap.Reconstruction(MODEL.format(name)); views = {im.name: View(im) for im in ref.images.values() if im.has_pose}
    Fs = {}
    def F(a, b):
        if (a, b) not in Fs: Fs[(a, b)] = fundamental(views[a], views[b])
        return Fs[(a, b)]
    out = Path(root) / "runs" / "upright"
    a, pa = load(next(out.glob("sift-seed*")) / "sparse/0"); b, pb = load(next(out.glob("upright_ours*")) / "sparse/0")
    def off_share(tracks):
        off = tot = 0
        for keys in tracks:
            keys = [k for k in keys if k[0] in views]
            for i, k in enumerate(keys):
                d = []
                for j, l in enumerate(keys):
                    if i == j or k[0] == l[0]: continue
                    x1 = views[k[0]].undistort_px(np.array([[k[1] - 0.5, k[2] - 0.5]])); x2 = views[l[0]].undistort_px(np.array([[l[1] - 0.5, l[2] - 0.5]]))
                    d.append(float(epi_dists(F(k[0], l[0]), x1, x2)[0][0]))
                if d:
                    tot += 1; off += np.median(d) > 2.0
        return off, tot
    joined = [v for v in pb.values() if len({a[k] for k in v if k in a}) >= 2]
    single = [v for v in pb.values() if len({a[k] for k in v if k in a}) < 2]
    for label, tr in (("ours joining 2+ of SIFT's", joined), ("ours, the others", single), ("SIFT's", list(pa.values()))):
        o, t = off_share(tr)
        print(f"{name}: {label}: {len(tr)} points, {t} observations, off (>2 px from the others, median) {o} = {100*o/max(t,1):.1f} %")
