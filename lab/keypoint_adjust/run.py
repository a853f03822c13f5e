"""LAB (#61): does adjusting matched keypoints' positions along their tracks (pixSfM's keypoint adjustment, here on
raw intensities) lower the reprojection error, and does it close `upright_ours`'s gap to SIFT's own pose?

First the two rows' runs (seed 0):
    patchpose eval colmap ../shared/data/tum_freiburg --poses sift upright_ours --sets upright --seeds 0 \
        --threads 1 --out OUT          # and ../shared/data/sacre_coeur
then: python lab/keypoint_adjust/run.py IMAGES OUT/runs/upright/ROW-seed0 DEST [HALF]

Each verified match (COLMAP's two-view geometries' inliers) is an edge; connected components are tracks. In each
track the keypoint with most edges is the reference; the others, in breadth-first order, move (translation only)
so that their patch (sampled in the keypoint's own frame: COLMAP's scale and orientation, half-width HALF scales,
at least 4 px) matches their parent's (zero-mean, unit-variance intensities, Gauss-Newton, 20 steps); a move past
1.5 px or one that lowers the correlation is not taken. The adjusted keypoints go into a copy of the database, and
COLMAP's mapping runs on it with the same seed as on the original copy: both models' statistics printed.
"""

import json
import shutil
import sys
from collections import deque
from pathlib import Path

import cv2
import numpy as np
import pycolmap

S = 15  # samples a side
STEPS = 20
MAX_SHIFT = 1.5


def load(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE).astype(np.float32) / 255.0
    g = cv2.GaussianBlur(g, (0, 0), 0.8)
    gx = cv2.Sobel(g, cv2.CV_32F, 1, 0, ksize=3) / 8.0
    gy = cv2.Sobel(g, cv2.CV_32F, 0, 1, ksize=3) / 8.0
    return g, gx, gy


def grid(xy, scale, ori, half):
    """(n, S*S) sample coordinates (pixel centres at integers) of each keypoint's patch."""
    t = np.linspace(-1.0, 1.0, S, dtype=np.float32)
    u, v = np.meshgrid(t, t)
    u, v = u.ravel()[None], v.ravel()[None]
    c, s = np.cos(ori)[:, None], np.sin(ori)[:, None]
    h = half[:, None]
    x = xy[:, :1] + h * (c * u - s * v)
    y = xy[:, 1:2] + h * (s * u + c * v)
    return x.astype(np.float32), y.astype(np.float32)


def sample(img, x, y):
    return cv2.remap(img, x, y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def normed(p):
    p = p - p.mean(1, keepdims=True)
    sd = p.std(1, keepdims=True) + 1e-6
    return p / sd, sd


def align(target, ims, xy, scale, ori, half):
    """Moves of keypoints (xy (n, 2) in one image, pixel centres at integers) whose patch should match
    ``target`` (n, S*S); returns the shifts and whether each was taken."""
    g, gx, gy = ims
    d = np.zeros_like(xy)
    tn, _ = normed(target)

    def score(dd):
        x, y = grid(xy + dd, scale, ori, half)
        p, _ = normed(sample(g, x, y))
        return (p * tn).mean(1)

    s0 = score(d)
    for _ in range(STEPS):
        x, y = grid(xy + d, scale, ori, half)
        p, sd = normed(sample(g, x, y))
        jx, jy = sample(gx, x, y) / sd, sample(gy, x, y) / sd
        r = p - tn
        a, b, c = (jx * jx).sum(1), (jx * jy).sum(1), (jy * jy).sum(1)
        ex, ey = (jx * r).sum(1), (jy * r).sum(1)
        det = a * c - b * b + 1e-9
        step = -np.stack([(c * ex - b * ey) / det, (a * ey - b * ex) / det], 1)
        n = np.linalg.norm(step, axis=1, keepdims=True)
        step = step * np.minimum(1.0, 0.5 / (n + 1e-9))
        d = d + step
    s1 = score(d)
    ok = (np.linalg.norm(d, axis=1) <= MAX_SHIFT) & (s1 > s0)
    return np.where(ok[:, None], d, 0.0), ok


def main():
    images, run, dest = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    half_scales = float(sys.argv[4]) if len(sys.argv) > 4 else 4.0
    floor = float(sys.argv[5]) if len(sys.argv) > 5 else 4.0
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in ("orig", "adj"):
        shutil.copy(run / "database.db", dest / f"{name}.db")
    db = pycolmap.Database.open(str(dest / "adj.db"))
    ims = db.read_all_images()
    kp = {im.image_id: db.read_keypoints(im.image_id).astype(np.float64) for im in ims}
    # nodes: (image_id, index); edges: verified inlier matches
    parent: dict = {}

    def find(a):
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    adj: dict = {}
    for i, a in enumerate(ims):
        for b in ims[i + 1 :]:
            if not db.exists_two_view_geometry(a.image_id, b.image_id):
                continue
            inl = db.read_two_view_geometry(a.image_id, b.image_id).inlier_matches
            for p, q in inl:
                u, v = (a.image_id, int(p)), (b.image_id, int(q))
                adj.setdefault(u, []).append(v)
                adj.setdefault(v, []).append(u)
                parent[find(u)] = find(v)
    tracks: dict = {}
    for n in adj:
        tracks.setdefault(find(n), []).append(n)
    # breadth-first from each track's best-connected keypoint: (node, its parent) by level
    levels: list[list[tuple]] = []
    for nodes in tracks.values():
        ref = max(nodes, key=lambda n: (len(adj[n]), -n[0], -n[1]))
        seen, q = {ref: 0}, deque([ref])
        while q:
            u = q.popleft()
            for v in adj[u]:
                if v not in seen:
                    seen[v] = seen[u] + 1
                    while len(levels) < seen[v]:
                        levels.append([])
                    levels[seen[v] - 1].append((v, u))
                    q.append(v)
    names = {im.image_id: im.name for im in ims}
    pix = {iid: load(images / names[iid]) for iid in names}
    # COLMAP's rows: x, y (top-left pixel centre at 0.5), scale, orientation (radians clockwise as displayed)
    xy = {iid: k[:, :2] - 0.5 for iid, k in kp.items()}
    taken, moved, total = 0, [], 0
    for level in levels:
        # each parent's patch, at its (already adjusted) position
        by_image: dict = {}
        for v, u in level:
            by_image.setdefault(v[0], []).append((v, u))
        targets = {}
        for _v, u in level:
            targets.setdefault(u[0], []).append(u)
        tpatch, thalf = {}, {}
        for iid, us in targets.items():
            idx = np.array([u[1] for u in us])
            k = kp[iid][idx]
            half = np.maximum(half_scales * k[:, 2], floor)
            x, y = grid(xy[iid][idx], k[:, 2], k[:, 3], half)
            for u, p, h, s in zip(us, sample(pix[iid][0], x, y), half, k[:, 2]):
                tpatch[u], thalf[u] = p, (h, s)
        for iid, vus in by_image.items():
            idx = np.array([v[1] for v, _ in vus])
            k = kp[iid][idx]
            half = np.array([thalf[u][0] * k_s / thalf[u][1] for (_, u), k_s in zip(vus, k[:, 2])])
            target = np.stack([tpatch[u] for _, u in vus])
            d, ok = align(target, pix[iid], xy[iid][idx], k[:, 2], k[:, 3], half)
            xy[iid][idx] = xy[iid][idx] + d
            taken += int(ok.sum())
            total += len(ok)
            moved.extend(np.linalg.norm(d[ok], axis=1).tolist())
    for iid in kp:
        rows = kp[iid].copy()
        rows[:, :2] = xy[iid] + 0.5
        db.update_keypoints(iid, rows.astype(np.float32))
    db.close()
    out = {
        "tracks": len(tracks),
        "adjusted": total,
        "taken": taken,
        "moved_median_px": float(np.median(moved)),
    }
    print(json.dumps(out))
    for name in ("orig", "adj"):
        po = pycolmap.IncrementalPipelineOptions()
        po.num_threads = 1
        po.random_seed = 0
        pycolmap.set_random_seed(0)
        sp = dest / f"sparse_{name}"
        sp.mkdir()
        models = pycolmap.incremental_mapping(str(dest / f"{name}.db"), str(images), str(sp), options=po)
        rec = max(models.values(), key=lambda r: r.num_reg_images())
        st = {
            "registered": rec.num_reg_images(),
            "points": rec.num_points3D(),
            "observations": int(sum(p.track.length() for p in rec.points3D.values())),
            "track": rec.compute_mean_track_length(),
            "error": rec.compute_mean_reprojection_error(),
            "models": len(models),
        }
        out[name] = st
        print(name, json.dumps(st))
    (dest / "result.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
