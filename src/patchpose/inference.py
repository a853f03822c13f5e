"""Batched, chunked forward passes on patches and decoding of histograms into poses."""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from .conventions import SCALE_RANGE, bin_to_ori, bin_to_scale
from .histogram import decode
from .models import PoseNet


def autocast_ctx(device: torch.device, amp: str | None):
    """Mixed precision for ``amp``: None, ``"none"`` or ``"fp32"`` (off), ``"bf16"`` or ``"fp16"``."""
    if amp in (None, "none", "fp32"):
        return contextlib.nullcontext()
    if amp not in ("bf16", "fp16"):
        raise ValueError(f"amp must be 'bf16', 'fp16' or 'none', got {amp!r}")
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


#: the network's outputs (:attr:`ModelConfig.output_sizes`) and what :func:`predict_histograms` calls them
OUTPUT_NAMES = {"scale_logits": "scale_hist", "ori_logits": "orientation_hist"}


def output_arrays(o: dict[str, torch.Tensor], dtype: torch.dtype = torch.float32) -> dict[str, np.ndarray]:
    """A network's outputs as numpy arrays of ``dtype`` under the names of :data:`OUTPUT_NAMES` (what
    :func:`predict_histograms` returns): logits as probabilities (softmax over the bins)."""
    return {OUTPUT_NAMES[key]: v.to(dtype).softmax(1).cpu().numpy() for key, v in o.items()}


@torch.inference_mode()
def predict_histograms(
    model: PoseNet, patches, batch_size: int = 128, amp: str | None = None, heads=None
) -> dict[str, np.ndarray]:
    """Probabilities ``{"scale_hist": (N, Bs), "orientation_hist": (N, Bo)}`` for the model's inputs
    ``(N, C, ...)``, in chunks of ``batch_size`` so that any N fits in memory.

    A model in training mode is switched to eval mode for the read and back after; one in eval mode is read as
    it is (a model read from several threads at once, as the estimator's is, must be in eval mode).

    ``heads``: None for every histogram of the model, or the heads to run (``("scale",)`` gives only
    ``scale_hist``, at a fraction of the cost of a log-polar model's orientation head).
    """
    # switched to eval mode only if it is not in it (walking the modules to set it, and back, held the GIL for
    # a tenth of a 2,048-keypoint read on two threads; reading threads then never switch a shared model)
    was_training = model.training
    if was_training:
        model.eval()
    device = next(model.parameters()).device
    out: dict[str, list] = {}
    x_all = torch.as_tensor(patches)
    try:
        for i in range(0, len(x_all), batch_size):
            x = x_all[i : i + batch_size].to(device, torch.float32)
            with autocast_ctx(device, amp):
                o = model(x) if heads is None else model(x, heads=heads)
            for name, v in output_arrays(o).items():
                out.setdefault(name, []).append(v)
    finally:
        if was_training:
            model.train()
    names = {OUTPUT_NAMES[key]: size for key, size in model.cfg.outputs_of(heads).items()}
    return {
        n: np.concatenate(out[n]) if n in out else np.zeros((0, size), np.float32)
        for n, size in names.items()
    }


def decode_poses(
    hists: dict[str, np.ndarray], k: int = 1, refine: bool = True, scale_range=SCALE_RANGE
) -> dict[str, np.ndarray]:
    """Histograms → ``{"scale": log2 (N, k), "orientation": radians (N, k)}``, strongest first.

    ``scale_range``: log2 scales of the first and last scale bin (the model's ``cfg.scale_range``);
    ``refine``: each peak placed below the bin width (:func:`~patchpose.histogram.decode`)."""
    out = {}
    if "scale_hist" in hists:
        h = torch.from_numpy(hists["scale_hist"]).double()
        out["scale"] = bin_to_scale(
            decode(h, circular=False, k=k, refine=refine).numpy(), h.shape[1], tuple(scale_range)
        )
    if "orientation_hist" in hists:
        h = torch.from_numpy(hists["orientation_hist"]).double()
        out["orientation"] = bin_to_ori(decode(h, circular=True, k=k, refine=refine).numpy(), h.shape[1])
    return out
