"""In-plane rotation matching with OpenCV (Roto-360 style, peers' §2e): does ``cv2.SIFT.compute`` match
better on our keypoint poses (:func:`patchpose.assign`) than on SIFT's own?

Each photo is turned about its centre by 0°, 10°, …, 350° (same canvas; the corners that leave it are lost).
SIFT keypoints are detected in both images (one per location) and described by OpenCV's SIFT descriptor
at three poses: SIFT's own, ours (``assign`` with ``SIFT_DESCRIPTOR_SIZE_FACTOR``, so that the descriptor
window covers our characteristic region, as in the matching pipeline), ours at SIFT's size (``keep_size``:
SIFT's size kept, our angle read in its frame), and upright (SIFT's size, angle 0, the
lower bound). Matches are mutual nearest neighbours (``cv2.BFMatcher(crossCheck=True)``); MMA@t is the
share within t px of the true rotation, averaged over pairs. Outputs ``results.json``, ``results.md``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import cv2
import numpy as np

from ..conventions import similarity_about
from ..fileio import write_text_atomic
from ..geometry import apply_homography

ROWS = ("sift", "ours", "ours_at_sift_size", "upright")


def _dedupe(kps):
    seen, out = set(), []
    for k in sorted(kps, key=lambda k: -k.response):
        key = (round(k.pt[0], 2), round(k.pt[1], 2))
        if key not in seen:
            seen.add(key)
            out.append(k)
    return out


def _views(img, kps, est) -> dict:
    """The keypoints of every row: SIFT's own, ours, SIFT's size with our angle, and upright."""
    from ..integrations.opencv import SIFT_DESCRIPTOR_SIZE_FACTOR, assign

    f = SIFT_DESCRIPTOR_SIZE_FACTOR
    return {
        "sift": kps,
        "ours": assign(img, kps, est, size_factor=f),
        "ours_at_sift_size": assign(img, kps, est, size_factor=f, keep_size=True),
        "upright": [cv2.KeyPoint(*k.pt, k.size, 0) for k in kps],
    }


def evaluate_rotation(
    photos: list[Path],
    out_dir: str | Path,
    weights: str | None = None,
    angles=tuple(range(0, 360, 10)),
    max_keypoints: int = 1000,
    max_side: int = 640,
    thresholds=(1, 3, 5, 10),
    progress: bool = True,
) -> dict:
    from tqdm import tqdm

    from ..data.patches import load_image, resize_long_side
    from ..estimator import PatchPoseEstimator

    t0 = time.time()
    est = PatchPoseEstimator.load(weights)
    sift = cv2.SIFT_create(nfeatures=max_keypoints)
    bf = cv2.BFMatcher(cv2.NORM_L2, crossCheck=True)
    per_angle = {r: {a: [] for a in angles} for r in ROWS}
    for p in tqdm(photos, desc="photos", disable=not progress):
        img, _ = resize_long_side(load_image(p), max_side)
        h, w = img.shape[:2]
        g0 = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
        k0 = _dedupe(sift.detect(g0, None))
        if len(k0) < 10:
            continue
        views0 = _views(img, k0, est)
        d0 = {r: sift.compute(g0, v)[1] for r, v in views0.items()}
        for a in angles:
            H = similarity_about(((w - 1) / 2, (h - 1) / 2), 0.0, np.radians(a))
            img1 = cv2.warpAffine(img, H[:2], (w, h), flags=cv2.INTER_LINEAR)
            g1 = cv2.cvtColor(img1, cv2.COLOR_RGB2GRAY)
            k1 = _dedupe(sift.detect(g1, None))
            if len(k1) < 10:
                for r in ROWS:
                    per_angle[r][a].append([0.0] * len(thresholds))
                continue
            views1 = _views(img1, k1, est)
            for r in ROWS:
                _, d1 = sift.compute(g1, views1[r])
                m = bf.match(d0[r], d1)
                if not m:
                    per_angle[r][a].append([0.0] * len(thresholds))
                    continue
                x0 = np.array([views0[r][q.queryIdx].pt for q in m])
                x1 = np.array([views1[r][q.trainIdx].pt for q in m])
                e = np.linalg.norm(apply_homography(H, x0) - x1, axis=1)
                per_angle[r][a].append([float(np.mean(e <= t)) for t in thresholds])
    curves = {r: {str(a): np.mean(v, axis=0).tolist() for a, v in per_angle[r].items() if v} for r in ROWS}
    overall = {r: np.mean([c for c in curves[r].values()], axis=0).tolist() for r in ROWS}
    doc = {
        "angles_deg": list(angles),
        "thresholds_px": list(thresholds),
        "mma_overall": overall,
        "mma_per_angle": curves,
        "photos": len(photos),
        "model": est.meta.get("name", str(weights)),
        "seconds": time.time() - t0,
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "# In-plane rotation matching with OpenCV SIFT descriptors",
        "",
        f"{len(photos)} photos × {len(angles)} rotations; SIFT keypoints (≤ {max_keypoints}); descriptors by "
        f"`cv2.SIFT.compute` at each pose; mutual nearest neighbours. Model `{doc['model']}`. {doc['seconds']:.0f} s.",
        "",
        "| pose | " + " | ".join(f"MMA@{t}px" for t in thresholds) + " |",
        "|---|" + "---|" * len(thresholds),
    ]
    for r in ROWS:
        lines.append(f"| {r} | " + " | ".join(f"{v:.3f}" for v in overall[r]) + " |")
    write_text_atomic(out / "results.json", json.dumps(doc, indent=1))
    write_text_atomic(out / "results.md", "\n".join(lines) + "\n")
    return doc


__all__ = ["evaluate_rotation"]
