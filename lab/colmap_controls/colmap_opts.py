import sys, time, pycolmap
from patchpose.integrations import colmap as cm

setname, opt = sys.argv[1], sys.argv[2]
orig = pycolmap.FeatureExtractionOptions


def patched():
    o = orig()
    if opt == "upright":
        o.sift.upright = True
    if opt == "dsp":
        o.sift.domain_size_pooling = True
    if opt == "affine":
        o.sift.estimate_affine_shape = True
    return o


pycolmap.FeatureExtractionOptions = patched
t = time.time()
s = cm.run_reconstruction(
    f"/work/shared/data/{setname}", f"/tmp/r67/exp/c_{setname}_{opt}", {"o": opt}, seed=0, threads=1
)
print(
    setname,
    opt,
    {
        k: s.get(k)
        for k in (
            "registered",
            "points3D",
            "distinct_points3D",
            "observations",
            "track_length",
            "reprojection_px",
            "keypoints",
        )
    },
    s["stage_seconds"],
    round(time.time() - t, 1),
)
