"""LAB (#61): is `upright_ours`'s higher reprojection error in its cameras or in its matches?

First make the two rows' models (seed 0; the outputs of last session's lab-reproj-* tags were made alike):
    patchpose eval colmap ../shared/data/tum_freiburg --poses sift upright_ours --sets upright --seeds 0 \
        --threads 1 --out OUT_TUM          # and ../shared/data/sacre_coeur --out OUT_SC
then: python lab/reproj_matches/run.py IMAGES OUT

1. Each row's verified matches (its database) triangulated with the cameras of either model held fixed
   (pycolmap.triangulate_points, intrinsics fixed): if the error follows the matches, not the cameras, the cameras
   are not what our matches spoil.
2. The verified inlier matches of each pair split into those both rows make (same keypoints: the rows share
   COLMAP's keypoint positions), ours only, SIFT's own pose only; each class's Sampson distance under the SIFT
   model's epipolar geometry, and its keypoints' scale.
"""

import shutil
import sys
from pathlib import Path

import numpy as np
import pycolmap


def errors(rec) -> np.ndarray:
    e = []
    for p in rec.points3D.values():
        for el in p.track.elements:
            im = rec.images[el.image_id]
            cam = rec.cameras[im.camera_id]
            proj = cam.img_from_cam(im.cam_from_world() * p.xyz)
            e.append(float(np.linalg.norm(np.asarray(proj) - np.asarray(im.points2D[el.point2D_idx].xy))))
    return np.array(e)


def sampson(F, x1, x2) -> np.ndarray:
    X1, X2 = np.c_[x1, np.ones(len(x1))], np.c_[x2, np.ones(len(x2))]
    Fx1, Ftx2 = X1 @ F.T, X2 @ F
    num = np.sum(X2 * Fx1, 1) ** 2
    return np.sqrt(num / (Fx1[:, 0] ** 2 + Fx1[:, 1] ** 2 + Ftx2[:, 0] ** 2 + Ftx2[:, 1] ** 2))


def main():
    images, out = Path(sys.argv[1]), Path(sys.argv[2])
    runs = out / "runs" / "upright"
    rows = {"sift": next(runs.glob("sift-seed0")), "ours": next(runs.glob("upright_ours*-seed0"))}
    print("1. triangulated with fixed cameras")
    for cams in rows:
        for row, d in rows.items():
            rec = pycolmap.Reconstruction(str(rows[cams] / "sparse/0"))
            tmp = out / f"fixed_{cams}_{row}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            rec = pycolmap.triangulate_points(rec, str(d / "database.db"), str(images), str(tmp),
                                              clear_points=True, refine_intrinsics=False)  # fmt: skip
            e = errors(rec)
            print(
                f"  cameras of {cams:4s}, matches of {row:4s}: {rec.num_points3D()} points, {len(e)} observations, "
                f"error mean {e.mean():.3f} median {np.median(e):.3f} px"
            )
    print("2. verified matches by class, Sampson distance under the SIFT model's geometry (px)")
    rec = pycolmap.Reconstruction(str(rows["sift"] / "sparse/0"))
    dbs = {r: pycolmap.Database.open(str(d / "database.db")) for r, d in rows.items()}
    ims = dbs["sift"].read_all_images()
    kp = {r: {im.image_id: db.read_keypoints(im.image_id) for im in ims} for r, db in dbs.items()}

    def key(r, iid, idx):
        x = kp[r][iid][idx]
        return round(float(x[0]), 2), round(float(x[1]), 2)

    cls = {"both": ([], []), "ours only": ([], []), "sift only": ([], [])}
    for i, a in enumerate(ims):
        for b in ims[i + 1 :]:
            if a.image_id not in rec.images or b.image_id not in rec.images:
                continue
            ia, ib = rec.images[a.image_id], rec.images[b.image_id]
            T = ib.cam_from_world() * ia.cam_from_world().inverse()
            t = T.translation
            tx = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
            Ka = rec.cameras[ia.camera_id].calibration_matrix()
            Kb = rec.cameras[ib.camera_id].calibration_matrix()
            F = np.linalg.inv(Kb).T @ tx @ T.rotation.matrix() @ np.linalg.inv(Ka)
            m = {}
            for r, db in dbs.items():
                inl = db.read_two_view_geometry(a.image_id, b.image_id).inlier_matches
                m[r] = {(key(r, a.image_id, p), key(r, b.image_id, q)): (p, q) for p, q in inl}
            s, o = set(m["sift"]), set(m["ours"])
            for c, keys, r in (
                ("both", s & o, "sift"),
                ("ours only", o - s, "ours"),
                ("sift only", s - o, "sift"),
            ):
                if keys:
                    pq = np.array([m[r][k] for k in keys])
                    x1, x2 = kp[r][a.image_id][pq[:, 0]], kp[r][b.image_id][pq[:, 1]]
                    cls[c][0].extend(sampson(F, x1[:, :2], x2[:, :2]))
                    cls[c][1].extend(x1[:, 2])
    for c, (e, sc) in cls.items():
        e = np.array(e)
        print(f"  {c:9s}: {len(e)} matches, mean {e.mean():.3f}, median {np.median(e):.3f}, over 2 px {np.mean(e > 2):.1%}; "
              f"keypoint scale median {np.median(sc):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
