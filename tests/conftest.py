"""Shared fixtures: small synthetic images (no files, no downloads)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest


def make_smooth_image(h: int, w: int, seed: int = 0, blur: float = 2.0) -> np.ndarray:
    """Smoothed uniform noise stretched to [0, 1], float32 ``H×W``."""
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.random((h, w)).astype(np.float32), (0, 0), blur)
    return ((img - img.min()) / (img.max() - img.min())).astype(np.float32)


def make_textured_image(size: int = 400, seed: int = 0) -> np.ndarray:
    """Smoothed random noise plus a few oriented bars, float32 ``size×size`` in [0, 1]."""
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.random((size, size)).astype(np.float32), (0, 0), 3.0)
    img = (img - img.min()) / (img.max() - img.min())
    bars = np.zeros((size, size), np.float32)
    for _ in range(12):
        c = rng.uniform(0.15 * size, 0.85 * size, 2)
        ang = rng.uniform(0, np.pi)
        half = rng.uniform(0.04, 0.12) * size
        d = half * np.array([np.cos(ang), np.sin(ang)])
        p0, p1 = tuple(int(v) for v in c - d), tuple(int(v) for v in c + d)
        cv2.line(bars, p0, p1, float(rng.uniform(0.5, 1.0)), thickness=int(rng.integers(3, 9)))
    bars = cv2.GaussianBlur(bars, (0, 0), 1.5)
    out = 0.6 * img + 0.4 * bars
    return ((out - out.min()) / (out.max() - out.min())).astype(np.float32)


@pytest.fixture(scope="session")
def smooth_image() -> np.ndarray:
    """A 160×200 smooth random float32 image in [0, 1]."""
    return make_smooth_image(160, 200)


@pytest.fixture(scope="session")
def textured_image() -> np.ndarray:
    """A 400×400 textured float32 image (noise + oriented bars) in [0, 1]."""
    return make_textured_image()
