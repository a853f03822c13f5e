"""``patchpose extract --aliked FILE --unturn`` with our votes replaced by SIFT's pairwise turns averaged alike (the
benchmark's ``aliked_sift`` turns, no network): the network-replaced row of #63's extract measurement.

Usage: ``python lab/upright/extract_sift_turns.py FOLDER OUT.h5 ALIKED.pth`` (then ``extract_inliers.py``)."""

import sys

from patchpose.cli.main import main
from patchpose.evaluation.colmap_eval import sift_collection_turns
from patchpose.integrations import extract as ex


def sift_turns(photos, pairs=None, estimator=None, progress=False, retrieval=None, **_):
    return sift_collection_turns([photos[k] for k in range(len(photos))])


ex.upright_collection = sift_turns
folder, out, aliked = sys.argv[1:4]
sys.exit(
    main(
        [
            "extract",
            folder,
            "--out",
            out,
            "--aliked",
            aliked,
            "--unturn",
            "--max-keypoints",
            "2000",
            "--no-progress",
        ]
    )
)
