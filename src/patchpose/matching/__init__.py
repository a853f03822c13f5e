"""Keypoints of photos matched: :func:`detect` them (:mod:`.features`), describe them with a recipe (one photo at
a time: :mod:`.candidates`; two photos together: :mod:`.pairpose`), match them (:func:`mutual_nn`).
:func:`match_pair` does all of it for two photos (:mod:`.pair`); the recipes and their costs are
:data:`patchpose.recipes.RECIPES`.
"""

from .describe import Describer
from .features import Features, detect
from .matcher import mutual_nn
from .pair import PairMatches, match_pair

__all__ = ["Describer", "Features", "PairMatches", "detect", "match_pair", "mutual_nn"]
