"""A picture of matches between two images (supplementary Figure D.3): side by side, one line per match,
green if correct under the ground-truth homography, red if not, blue when there is no ground truth."""

from __future__ import annotations

import cv2
import numpy as np

GREEN, RED, BLUE = (40, 200, 40), (230, 40, 40), (40, 120, 255)  # RGB


def _rgb_uint8(img: np.ndarray) -> np.ndarray:
    if img.dtype != np.uint8:
        img = np.clip(img * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return np.repeat(img[..., None], 3, 2) if img.ndim == 2 else img


def draw_matches(
    img1, img2, xy1, xy2, matches, correct=None, max_lines: int = 1000, seed: int = 0
) -> np.ndarray:
    """``H×W×3`` uint8 RGB canvas with ``img1`` left of ``img2`` and the matches drawn.

    ``correct``: None (no ground truth) or a boolean per match. At most ``max_lines`` matches are drawn
    (a fixed random subset, so that dense results stay readable)."""
    a, b = _rgb_uint8(img1), _rgb_uint8(img2)
    h = max(a.shape[0], b.shape[0])
    canvas = np.zeros((h, a.shape[1] + b.shape[1], 3), np.uint8)
    canvas[: a.shape[0], : a.shape[1]] = a
    canvas[: b.shape[0], a.shape[1] :] = b
    canvas = (canvas * 0.75).astype(np.uint8)  # dim the photos so the lines stand out
    m = np.asarray(matches, np.int64).reshape(-1, 2)
    order = np.arange(len(m))
    if len(m) > max_lines:
        order = np.sort(np.random.default_rng(seed).choice(len(m), max_lines, replace=False))
    shift = np.array([a.shape[1], 0.0])
    for i in order:
        p = tuple(int(round(v)) for v in xy1[m[i, 0]])
        q = tuple(int(round(v)) for v in (xy2[m[i, 1]] + shift))
        color = BLUE if correct is None else (GREEN if correct[i] else RED)
        cv2.line(canvas, p, q, color, 1, cv2.LINE_AA)
        cv2.circle(canvas, p, 2, color, -1, cv2.LINE_AA)
        cv2.circle(canvas, q, 2, color, -1, cv2.LINE_AA)
    return canvas


__all__ = ["draw_matches"]
