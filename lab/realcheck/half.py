"""LAB: rectify's upright description with one half of its sizes (3 computations): HALF=fixed|detector."""
import os, sys
import numpy as np
import patchpose.matching.rectify as R
from patchpose.matching.blend import blend_descriptors, pool_sizes

HALF = os.environ["HALF"]


def upright(feats, describer):
    n = len(feats)
    scale = np.zeros(n) if HALF == "fixed" else feats.frame
    s, o, w = pool_sizes(scale[:, None], np.zeros((n, 1)), np.ones((n, 1)))
    k = s.shape[1]
    d = describer.describe(feats.pyramid, np.repeat(feats.xy, k, 0), s.reshape(-1), o.reshape(-1))
    return blend_descriptors(d.reshape(n, k, -1), w)[:, None], n * k


R.upright_descriptors = upright
from patchpose.cli.main import main
sys.exit(main(sys.argv[1:]))
