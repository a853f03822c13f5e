"""``patchpose bench``: wall time of scale+orientation for N keypoints next to OpenCV SIFT detection on the
same photo, in one run (medians of repeats; the host is noisy, compare only within a run)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
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
    out: str | Path | None = None,
    backends=("torch", "onnx"),
) -> dict:
    from ..data.keypoints import MAX_KEYPOINTS, detect_sift
    from ..data.patches import load_image
    from ..data.photos import demo_photo
    from ..errors import InputError, is_int_in
    from ..estimator import PatchPoseEstimator

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
    est = PatchPoseEstimator.load(weights)
    res["model"] = est.name
    res["plan"] = asdict(est.plan)
    # the model as it runs by default (its read plan), then one read, and the inputs of one read alone
    res["patchpose_default_s"] = _median_time(lambda: est.estimate(img, xy), repeats)
    res["ratio_default_to_sift"] = res["patchpose_default_s"] / res["sift_detect_s"]
    one = est.with_plan(passes=1)
    res["patchpose_one_read_s"] = _median_time(lambda: one.estimate(img, xy), repeats)
    res["ratio_one_read_to_sift"] = res["patchpose_one_read_s"] / res["sift_detect_s"]
    res["patchpose_inputs_s"] = _median_time(lambda: est.extract(img, xy), repeats)
    # per backend: inputs already extracted, network + decoding only (keypoints per second), and end to end
    inputs = est.extract(img, xy)
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
