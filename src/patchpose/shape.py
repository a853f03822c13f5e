"""Affine shapes of keypoints: the bundled self-supervised shape network, image + keypoints → affine frames.

>>> import numpy as np
>>> from patchpose.shape import AffineShapeEstimator
>>> est = AffineShapeEstimator.from_pretrained()
>>> img = (np.random.default_rng(0).random((96, 96)) * 255).astype(np.uint8)
>>> est.frames(img, np.array([[48.0, 48.0]]), radius=12.0).shape
(1, 2, 2)

A frame ``A`` (``(2, 2)``, pixels per unit of the patch's ``[-1, 1]²``, as the first two columns of a kornia LAF)
is ``radius · S``: the detector's scale kept (``det A = radius²``), the shape ``S`` the network gives (upright:
``A[0, 1] = 0``, as kornia's ``make_upright`` leaves a LAF; no orientation is read). Set the orientation with any
estimator reading the affine-normalised patch: :func:`patchpose.integrations.kornia.describe_blended` does (the
gradient's peaks, blended); kornia's ``LAFOrienter`` too. In kornia's own pipelines use
:class:`patchpose.integrations.kornia.LAFAffineShape` as the ``aff_module``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from numpy.typing import ArrayLike

from . import checks
from .conventions import REFERENCE_RADIUS
from .data.patches import Pyramid, extract_patches
from .errors import InputError
from .estimator import check_keypoints
from .models.shapenet import ShapeNet
from .weights import DEFAULT_SHAPE_MODEL, load_shape_model

#: keypoints per forward pass
SHAPE_BATCH = 512


class AffineShapeEstimator:
    """The affine shape of keypoints from a :class:`~patchpose.models.shapenet.ShapeNet` (module docstring)."""

    def __init__(self, model: ShapeNet, meta: dict | None = None) -> None:
        self.model = model.eval()
        self.meta = dict(meta or {})

    @classmethod
    def from_pretrained(cls, name: str = DEFAULT_SHAPE_MODEL) -> AffineShapeEstimator:
        """A bundled shape network (:data:`~patchpose.weights.DEFAULT_SHAPE_MODEL` by default)."""
        return cls(*load_shape_model(name))

    @classmethod
    def load(cls, name_or_path: str | Path | None = None) -> AffineShapeEstimator:
        """A bundled shape network by name, a file ``patchpose train-shape`` wrote, or (None) the default."""
        return cls(*load_shape_model(name_or_path))

    @property
    def name(self) -> str:
        return self.meta.get("name", "custom-shape")

    def __repr__(self) -> str:
        return f"AffineShapeEstimator({self.name!r})"

    def shapes(self, image: np.ndarray | Pyramid, keypoints: ArrayLike, radius: ArrayLike) -> np.ndarray:
        """``(N, 2, 2)`` float64 upright shapes of determinant 1 at ``keypoints`` (``(N, 2)`` xy, pixel centres
        at integers, inside the image), read in upright discs of half-width ``radius`` px (a number or one per keypoint: the
        detector's scale). ``image``: an RGB or gray image (uint8, or float in [0, 1]), or its
        :class:`~patchpose.data.patches.Pyramid` (gray)."""
        pyramid = image if isinstance(image, Pyramid) else Pyramid.compact(image)
        xy = check_keypoints(keypoints, pyramid.shape, allow_empty=True)
        n = len(xy)
        what = f"a number or one per keypoint ({n})"
        radii = checks.real_array(radius, "radius", what)  # not a string, a boolean or a complex number
        try:
            r = np.broadcast_to(radii, (n,))
        except ValueError:
            raise InputError(f"radius must be {what}, got shape {radii.shape}") from None
        if not (np.isfinite(r).all() and (r > 0).all()):
            raise InputError("radius must be finite and > 0 (the detector's half-width in px)")
        if n == 0:
            return np.zeros((0, 2, 2))
        if pyramid.levels[0].ndim != 2:
            raise InputError("the pyramid must be of a gray image")
        size = self.model.cfg.patch_size
        x = extract_patches(pyramid, xy, np.log2(r / REFERENCE_RADIUS), np.zeros(n), size)
        with torch.inference_mode():
            out = [self.model(torch.from_numpy(x[i : i + SHAPE_BATCH])) for i in range(0, n, SHAPE_BATCH)]
        return torch.cat(out).double().numpy()

    def frames(self, image: np.ndarray | Pyramid, keypoints: ArrayLike, radius: ArrayLike) -> np.ndarray:
        """``(N, 2, 2)`` affine frames ``radius · S`` (module docstring) at ``keypoints``; arguments as
        :meth:`shapes`."""
        S = self.shapes(image, keypoints, radius)
        return np.broadcast_to(np.asarray(radius, np.float64), (len(S),))[:, None, None] * S


def shape_estimator(name_or_path: str | None = None) -> AffineShapeEstimator:
    """:meth:`AffineShapeEstimator.load`, once per name, or per file and its modification time, in a process
    (the evaluations' rows): a file written again is read again."""
    path = Path(name_or_path) if name_or_path else None
    stamp = path.stat().st_mtime_ns if path is not None and path.is_file() else None
    return _cached_estimator(name_or_path, stamp)


@lru_cache(maxsize=4)
def _cached_estimator(name_or_path: str | None, stamp: int | None) -> AffineShapeEstimator:
    return AffineShapeEstimator.load(name_or_path)


__all__ = ["SHAPE_BATCH", "AffineShapeEstimator", "shape_estimator"]
