"""The official PatchPose metric of a model on a *released* PatchPose copy (the official code's layout,
read by :class:`~patchpose.evaluation.datasets.official_patchpose.OfficialPatchPose`)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from ..errors import InputError
from ..estimator import PatchPoseEstimator
from ..inference import predict_histograms
from .baselines import dominant_gradient_orientation, intensity_centroid_orientation
from .datasets.official_patchpose import OfficialPatchPose
from .official import official_accuracies, official_errors_from_poses
from .patchpose_eval import MethodPoses, official_pair_errors


def evaluate_official_layout(
    root, weights: str | None = None, variants=None, list_name: str | None = None, k: int = 1
) -> dict:
    """The official metric of a single-window model (and the orientation baselines that run on 32-px crops)
    on a released PatchPose copy. ``variants``: ``("A", "B")`` or one of them; None: those the copy holds.
    ``list_name`` (e.g. ``"test_acquired"``) selects ``patchPose{V}ImageList/{list_name}.txt``. A model
    whose bins are not the metric's (36 orientation bins, 3 scale bins per octave) is scored on its decoded
    poses, binned as the baselines' are (:func:`~patchpose.evaluation.patchpose_eval.official_pair_errors`)."""
    if variants is None:
        variants = tuple(v for v in ("A", "B") if (Path(root) / f"patchPose{v}").is_dir())
    if not variants:
        raise InputError(f"no patchPoseA/ or patchPoseB/ folder in {root} (the official PatchPose layout)")
    est = PatchPoseEstimator.load(weights)
    cfg = est.cfg
    if cfg.is_polar:
        raise InputError(
            "the official PatchPose crops are single 32-px windows; this model reads a log-polar grid of up "
            "to 512 px about the keypoint (a model trained with --config paper or model.windows=[1.0] can be "
            "evaluated here; 'patchpose eval patchpose' evaluates any model)"
        )
    if [float(w) for w in cfg.windows] != [1.0]:
        raise InputError(
            f"the official PatchPose crops are single 32-px windows; this model needs windows {cfg.windows} "
            "(train one with model.windows=[1.0] to evaluate here)"
        )
    res: dict = {}
    for v in variants:
        lf = Path(root) / f"patchPose{v}ImageList" / f"{list_name}.txt" if list_name else None
        ds = OfficialPatchPose(root, v, lf)
        x = ds.patches(cfg.color)
        if x.shape[-1] != cfg.patch_size:
            x = np.stack(
                [
                    cv2.resize(p.transpose(1, 2, 0), (cfg.patch_size,) * 2, interpolation=cv2.INTER_CUBIC)
                    .reshape(cfg.patch_size, cfg.patch_size, -1)
                    .transpose(2, 0, 1)
                    for p in x
                ]
            )
        h = predict_histograms(est.model, x, est.batch_size)
        ps, po = ds.pairs("scale"), ds.pairs("orientation")
        m = MethodPoses(
            "patchpose",
            scale_hist=h.get("scale_hist"),
            ori_hist=h.get("orientation_hist"),
            scale_bins_per_octave=cfg.scale_bins_per_octave,
        )
        se, oe = official_pair_errors(m, ps, po, k)
        res[v] = {"patchpose": official_accuracies(se, oe)}
        gray = ds.patches("gray")
        for name, fn in (
            ("dominant_gradient", dominant_gradient_orientation),
            ("orb_centroid", intensity_centroid_orientation),
        ):
            o = fn(gray)
            e = official_errors_from_poses(o[po["ref"]], o[po["trg"]], po["angle_deg"], "orientation")
            res[v][name] = official_accuracies(None, e)
    return res
