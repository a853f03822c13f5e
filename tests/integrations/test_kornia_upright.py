"""Your own keypoints described upright in a collection with kornia (usage.md, "Your own keypoints upright"): the
turns of ``patchpose.upright_collection`` set as each LAF's orientation, ``-turns.degrees[k]`` degrees, make the
patches kornia cuts at a keypoint and at its image in a turned photo the same; the opposite sign does not."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

import patchpose
from patchpose.data.patches import load_photo
from patchpose.data.photos import demo_photo

KF = pytest.importorskip("kornia.feature")


def upright_lafs(xy: np.ndarray, turn_degrees: float, sign: float = -1.0) -> torch.Tensor:
    """LAFs of 12 px half-width at ``xy``, each oriented as the documented use sets them."""
    xy_t = torch.as_tensor(xy, dtype=torch.float32)[None]
    lafs = KF.laf_from_center_scale_ori(xy_t, torch.full((1, len(xy), 1, 1), 12.0))
    return KF.set_laf_orientation(lafs, torch.full((1, len(xy), 1), sign * float(turn_degrees)))


def patches(gray: np.ndarray, lafs: torch.Tensor) -> np.ndarray:
    img = torch.as_tensor(gray, dtype=torch.float32)[None, None] / 255.0
    return KF.extract_patches_from_pyramid(img, lafs, 32)[0, :, 0].numpy()


def test_collection_turns_make_kornia_lafs_upright():
    """The demo photo and the same photo turned 90° counter-clockwise (pixel for pixel): the votes find the
    turn, and the LAFs set to ``-degrees`` cut the same patch at a point and at its image (correlation > 0.95),
    while the opposite sign cuts patches turned 180° apart (correlation below 0.5)."""
    photo = load_photo(demo_photo(), 320)
    gray = cv2.cvtColor(photo, cv2.COLOR_RGB2GRAY) if photo.ndim == 3 else photo
    turned = np.ascontiguousarray(np.rot90(gray))  # counter-clockwise as displayed
    turns = patchpose.upright_collection([gray, turned])
    assert turns.found.all()
    h, w = gray.shape
    rng = np.random.default_rng(0)
    xy = np.stack([rng.uniform(40, w - 40, 30), rng.uniform(40, h - 40, 30)], 1).round()
    xy_turned = np.stack([xy[:, 1], w - 1 - xy[:, 0]], 1)  # where np.rot90 puts pixel (x, y)

    def agreement(sign: float) -> float:
        a = patches(gray, upright_lafs(xy, turns.degrees[0], sign))
        b = patches(turned, upright_lafs(xy_turned, turns.degrees[1], sign))
        a = a.reshape(len(a), -1) - a.reshape(len(a), -1).mean(1, keepdims=True)
        b = b.reshape(len(b), -1) - b.reshape(len(b), -1).mean(1, keepdims=True)
        return float(np.median((a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1) + 1e-12)))

    assert agreement(-1.0) > 0.95
    assert agreement(+1.0) < 0.5
