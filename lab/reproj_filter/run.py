# ruff: noqa
"""eval colmap with COLMAP's mapper filter_max_reproj_error (default 4 px) set to X for every row."""

import sys
import cv2  # noqa: F401  (before pycolmap: pycolmap first breaks cv2.imwrite of PNG)
import pycolmap

X = float(sys.argv[1])
_Orig = pycolmap.IncrementalPipelineOptions


def _opts(*a, **k):
    o = _Orig(*a, **k)
    o.mapper.filter_max_reproj_error = X
    return o


pycolmap.IncrementalPipelineOptions = _opts
from patchpose.cli.main import main

sys.exit(main(sys.argv[2:]))
