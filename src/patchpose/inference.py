"""Batched, chunked forward passes on patches and decoding of histograms into poses."""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from .conventions import SCALE_RANGE, bin_to_ori, bin_to_scale
from .histogram import decode
from .models import PoseNet


def autocast_ctx(device: torch.device, amp: str | None):
    if amp in (None, "none", "fp32"):
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


ROTATIONS = {1: (0,), 2: (0, 2), 4: (0, 1, 2, 3)}


def predict_histograms(
    model: PoseNet, patches, batch_size: int = 128, amp: str | None = None, rotations: int = 1
) -> dict[str, np.ndarray]:
    """Probabilities ``{"scale_hist": (N, Bs), "orientation_hist": (N, Bo)}`` for patches ``(N, C, PS, PS)``.

    Runs in chunks of ``batch_size`` (64–128 is fastest on CPUs) so that any N fits in memory.

    ``rotations`` (1, 2 or 4) is rotation test-time augmentation: the patches are also turned by
    multiples of 90° (an exact pixel permutation, since the sampling grid is symmetric about the
    keypoint), each orientation histogram is shifted back by the turn, and the histograms are averaged.
    ``np.rot90`` over the (row, col) axes turns the content counter-clockwise as displayed, which adds
    ``B/4`` bins per quarter turn. A ``polar-cnn`` is equivariant to quarter turns by construction, so
    ``rotations`` changes nothing for it and is skipped.
    """
    if rotations not in ROTATIONS:
        raise ValueError(f"rotations must be 1, 2 or 4, got {rotations!r}")
    if rotations == 1 or model.cfg.is_polar:  # a polar-cnn is exactly equivariant to quarter turns already
        return _predict(model, patches, batch_size, amp)
    acc: dict[str, np.ndarray] = {}
    for k in ROTATIONS[rotations]:
        h = _predict(
            model, np.ascontiguousarray(np.rot90(np.asarray(patches), k, axes=(2, 3))), batch_size, amp
        )
        if "orientation_hist" in h:
            h["orientation_hist"] = np.roll(h["orientation_hist"], -k * model.cfg.num_ori_bins // 4, axis=1)
        for name, v in h.items():
            acc[name] = acc.get(name, 0.0) + v / rotations
    return acc


@torch.inference_mode()
def _predict(model: PoseNet, patches, batch_size: int, amp: str | None) -> dict[str, np.ndarray]:
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out: dict[str, list] = {}
    x_all = torch.as_tensor(patches)
    try:
        for i in range(0, len(x_all), batch_size):
            x = x_all[i : i + batch_size].to(device, torch.float32)
            with autocast_ctx(device, amp):
                o = model(x)
            for key, name in (("scale_logits", "scale_hist"), ("ori_logits", "orientation_hist")):
                if key in o:
                    out.setdefault(name, []).append(o[key].float().softmax(1).cpu().numpy())
    finally:
        model.train(was_training)
    nb = {"scale_hist": model.cfg.num_scale_bins, "orientation_hist": model.cfg.num_ori_bins}
    return {
        n: np.concatenate(out[n]) if n in out else np.zeros((0, nb[n]), np.float32) for n in _names(model)
    }


def _names(model: PoseNet) -> list[str]:
    return [
        n for h, n in (("scale", "scale_hist"), ("orientation", "orientation_hist")) if h in model.cfg.heads
    ]


def decode_poses(
    hists: dict[str, np.ndarray], k: int = 1, refine: bool = True, scale_range=SCALE_RANGE
) -> dict[str, np.ndarray]:
    """Histograms → ``{"scale": log2 (N, k), "orientation": radians (N, k)}``, strongest first.

    ``scale_range``: log2 scales of the first and last scale bin (the model's ``cfg.scale_range``)."""
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
