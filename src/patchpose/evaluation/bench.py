"""``patchpose bench``: wall time of scale+orientation for N keypoints next to OpenCV SIFT detection on the
same photo, in one run (medians of repeats; the host is noisy, compare only within a run)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from ..errors import require


def _median_time(fn, repeats: int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def bench(
    weights: str | None = None,
    num_keypoints: int = 2048,
    size=(1024, 768),
    repeats: int = 7,
    rotations=(1, 4),
    out: str | Path | None = None,
    backends=("torch", "onnx"),
) -> dict:
    from ..data.keypoints import MAX_KEYPOINTS, detect_sift
    from ..data.patches import load_image
    from ..data.photos import demo_photo
    from ..errors import InputError, is_int_in
    from ..estimator import PatchPoseEstimator, default_passes

    for name, v, hi in (("keypoints", num_keypoints, MAX_KEYPOINTS // 4), ("repeats", repeats, None)):
        if not is_int_in(v, 1, hi):  # SIFT is asked for 4× the keypoints timed
            raise InputError(f"{name} must be an integer from 1{f' to {hi:,}' if hi else ''}, got {v!r}")
    if out is not None and not str(out).strip():
        raise InputError("--out must name a folder (or be left out)")
    img = cv2.resize(load_image(demo_photo()), size, interpolation=cv2.INTER_CUBIC)
    gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    sift = cv2.SIFT_create()
    xy, _ = detect_sift(img, 4 * num_keypoints)
    rng = np.random.default_rng(0)
    if len(xy) < num_keypoints:  # pad with random points so that exactly N are timed
        extra = rng.uniform([0, 0], [size[0] - 1, size[1] - 1], (num_keypoints - len(xy), 2))
        xy = np.concatenate([xy, extra])
    xy = xy[:num_keypoints]
    res = {
        "image": f"{Path(demo_photo()).name} resized to {size[0]}x{size[1]}",
        "num_keypoints": int(len(xy)),
        "torch_threads": torch.get_num_threads(),
        "opencv_threads": cv2.getNumThreads(),
        "sift_detect_s": _median_time(lambda: sift.detect(gray, None), repeats),
    }
    n = len(xy)
    for r in rotations:
        est = PatchPoseEstimator.load(weights, rotations=r, passes=1)
        if r > 1 and est.cfg.is_polar:
            continue  # a log-polar model is equivariant to quarter turns: rotations changes nothing
        res[f"patchpose_rot{r}_s"] = _median_time(lambda est=est: est.estimate(img, xy), repeats)
        res[f"patchpose_rot{r}_patches_s"] = _median_time(lambda est=est: est.extract(img, xy), repeats)
        res[f"ratio_rot{r}_to_sift"] = res[f"patchpose_rot{r}_s"] / res["sift_detect_s"]
    # reading every keypoint twice (``passes=2``; "rot1" above is one pass, the default)
    est = PatchPoseEstimator.load(weights, passes=2)
    res["patchpose_passes2_s"] = _median_time(lambda: est.estimate(img, xy), repeats)
    res["ratio_passes2_to_sift"] = res["patchpose_passes2_s"] / res["sift_detect_s"]
    # turn averaging (``turns=3``: the orientation also read from the image turned by 30° and 60°), after one
    # read and after two
    for p in (1, 2):
        res[f"patchpose_passes{p}_turns3_s"] = _median_time(
            lambda p=p: est.estimate(img, xy, passes=p, turns=3), repeats
        )
        res[f"ratio_passes{p}_turns3_to_sift"] = res[f"patchpose_passes{p}_turns3_s"] / res["sift_detect_s"]
    res["model"] = est.meta.get("name", str(weights))
    # the model as it runs by default: its weights file's recommended reads (1 when it names none)
    default = default_passes(est.meta)
    res["default_passes"] = default
    t = {1: res.get("patchpose_rot1_s"), 2: res["patchpose_passes2_s"]}.get(default)
    res["patchpose_default_s"] = t or _median_time(lambda: est.estimate(img, xy, passes=default), repeats)
    res["ratio_default_to_sift"] = res["patchpose_default_s"] / res["sift_detect_s"]
    # per backend: inputs already extracted (the same for any number of passes), network + decoding only
    # (keypoints per second), and end to end
    inputs, _ = est.extract(img, xy)
    for backend in backends:
        try:
            b = PatchPoseEstimator.load(weights, backend=backend)
        except InputError as e:  # onnxruntime not installed
            res[f"backend_{backend}"] = f"skipped: {e}"
            continue
        from ..inference import predict_histograms

        t = _median_time(lambda b=b: predict_histograms(b.model, inputs, b.batch_size), repeats)
        res[f"backend_{backend}_network_keypoints_per_s"] = n / t
        res[f"backend_{backend}_total_s"] = _median_time(lambda b=b: b.estimate(img, xy), repeats)
        res[f"backend_{backend}_ratio_to_sift"] = res[f"backend_{backend}_total_s"] / res["sift_detect_s"]
    # kornia's dominant-gradient orientation on 32×32 patches at the same keypoints (patches included)
    KF = require("kornia.feature", "kornia")

    from ..data.patches import Pyramid, extract_patches

    det = KF.PatchDominantGradientOrientation(32)

    def kornia_ori():
        p = extract_patches(Pyramid(gray.astype(np.float32) / 255.0), xy, 0.0, 0.0, 32)
        with torch.inference_mode():
            return det(torch.from_numpy(p))

    res["kornia_dominant_gradient_s"] = _median_time(kornia_ori, repeats)
    res["kornia_dominant_gradient_keypoints_per_s"] = n / res["kornia_dominant_gradient_s"]
    if out:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / "bench.json.tmp"
        tmp.write_text(json.dumps(res, indent=1))
        os.replace(tmp, out / "bench.json")
    return res
