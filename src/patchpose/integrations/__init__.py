"""Drop-in adapters for the pipelines people already run: OpenCV, kornia, LightGlue, hloc and COLMAP.

Every adapter converts through :mod:`patchpose.conventions`; the per-format units are stated in each
function. Snippets for each ecosystem: ``docs/integrations.md`` (executed by ``tests/test_docs.py``).
"""

from .formats import (
    HlocFeaturesWriter,
    read_colmap_keypoints,
    read_hloc_features,
    to_lightglue,
    write_colmap_keypoints,
    write_hloc_features,
)

__all__ = [
    "to_lightglue",
    "write_hloc_features",
    "HlocFeaturesWriter",
    "read_hloc_features",
    "write_colmap_keypoints",
    "read_colmap_keypoints",
]
