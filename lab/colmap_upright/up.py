"""COLMAP's own SIFT with and without its orientations (SiftExtractionOptions.upright) on the shared sets."""
import json, shutil, sys, time
from pathlib import Path
import pycolmap
from patchpose.integrations.colmap import model_stats

def run(folder, upright, seed, work, threads=1, max_kp=8192):
    if work.exists(): shutil.rmtree(work)
    work.mkdir(parents=True)
    names = sorted(p.name for p in Path(folder).iterdir() if p.suffix.lower() in (".png", ".jpg"))
    db = work / "database.db"
    pycolmap.set_random_seed(seed)
    t = time.perf_counter()
    ext = pycolmap.FeatureExtractionOptions(); ext.num_threads = threads; ext.sift.max_num_features = max_kp
    ext.sift.upright = upright
    pycolmap.extract_features(db, folder, image_names=names, camera_mode=pycolmap.CameraMode.AUTO,
                              extraction_options=ext, device=pycolmap.Device.cpu)
    tv = pycolmap.TwoViewGeometryOptions(); tv.ransac.random_seed = seed
    mo = pycolmap.FeatureMatchingOptions(); mo.num_threads = threads
    pycolmap.match_exhaustive(db, matching_options=mo, verification_options=tv, device=pycolmap.Device.cpu)
    po = pycolmap.IncrementalPipelineOptions(); po.num_threads = threads; po.random_seed = seed
    (work / "sparse").mkdir()
    models = pycolmap.incremental_mapping(db, folder, work / "sparse", options=po)
    d = pycolmap.Database.open(db); kp = d.num_keypoints(); inl = d.num_inlier_matches(); d.close()
    return {**model_stats(models.values()), "keypoints": int(kp), "inlier_matches": int(inl),
            "seconds": time.perf_counter() - t}

folder = sys.argv[1]; out = []
for seed in (0, 1, 2):
    for upright in (False, True):
        r = run(folder, upright, seed, Path(f"/tmp/lab_up/{Path(folder).name}"))
        r.update(upright=upright, seed=seed); out.append(r); print(json.dumps(r), flush=True)
Path(sys.argv[2]).write_text(json.dumps(out))
