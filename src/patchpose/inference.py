"""Batched, chunked forward passes on patches and decoding of histograms into poses."""

from __future__ import annotations

import contextlib

import numpy as np
import torch

from .conventions import SCALE_RANGE, bin_to_ori, bin_to_scale
from .errors import InputError, is_int_in
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


ROTATIONS = {1: (0,), 2: (0, 2), 4: (0, 1, 2, 3)}
#: the network's outputs (:attr:`ModelConfig.output_sizes`) and what :func:`predict_histograms` calls them
OUTPUT_NAMES = {
    "scale_logits": "scale_hist",
    "ori_logits": "orientation_hist",
    "ori_vector": "orientation_vector",
}


def predict_histograms(
    model: PoseNet,
    patches,
    batch_size: int = 128,
    amp: str | None = None,
    rotations: int = 1,
    heads=None,
) -> dict[str, np.ndarray]:
    """Probabilities ``{"scale_hist": (N, Bs), "orientation_hist": (N, Bo)}`` for patches ``(N, C, PS, PS)``.

    Runs in chunks of ``batch_size`` (64–128 is fastest on CPUs) so that any N fits in memory.

    ``rotations`` (1, 2 or 4) is rotation test-time augmentation: the patches are also turned by
    multiples of 90° (an exact pixel permutation, since the sampling grid is symmetric about the
    keypoint), each orientation histogram is shifted back by the turn, and the histograms are averaged.
    ``np.rot90`` over the (row, col) axes turns the content counter-clockwise as displayed, which adds
    ``B/4`` bins per quarter turn. A ``polar-cnn`` is equivariant to quarter turns by construction, so
    ``rotations`` changes nothing for it and is skipped.

    ``heads``: None for every histogram of the model, or the heads to run (``("scale",)`` gives only
    ``scale_hist``, at a fraction of the cost of a log-polar model's orientation head).
    """
    if rotations not in ROTATIONS:
        raise ValueError(f"rotations must be 1, 2 or 4, got {rotations!r}")
    if rotations == 1 or model.cfg.is_polar:  # a polar-cnn is exactly equivariant to quarter turns already
        return _predict(model, patches, batch_size, amp, heads)
    acc: dict[str, np.ndarray] = {}
    for k in ROTATIONS[rotations]:
        turned = np.ascontiguousarray(np.rot90(np.asarray(patches), k, axes=(2, 3)))
        h = _predict(model, turned, batch_size, amp, heads)
        if "orientation_hist" in h:
            h["orientation_hist"] = np.roll(h["orientation_hist"], -k * model.cfg.num_ori_bins // 4, axis=1)
        for name, v in h.items():
            acc[name] = acc.get(name, 0.0) + v / rotations
    return acc


def turn_bins(turns: int, num_ori_bins: int) -> np.ndarray:
    """Orientation bins ``(turns,)`` by which the image is turned for each read of *turn averaging*: whole bins
    spread evenly over a quarter turn, starting at 0 (for 36 bins and 3 turns: 0, 3, 6, i.e. 0°, 30°, 60°).

    Why a quarter turn: turning a pixel grid by 90° moves no sample between pixels, so reads a quarter turn
    apart see the same resampling; what the turns average out is how a turn by an angle between those
    interpolates the pixels (``docs/model_card.md``, "Turn averaging")."""
    if num_ori_bins % 4:
        raise ValueError(f"turn averaging needs a multiple of 4 orientation bins, got {num_ori_bins}")
    quarter = num_ori_bins // 4
    if not is_int_in(turns, 1, quarter):
        raise InputError(
            f"turns must be an integer from 1 to {quarter} (bins in a quarter turn), got {turns!r}"
        )
    return np.round(np.arange(turns) * quarter / turns).astype(np.int64)


def unturn(hists: dict[str, np.ndarray], bins: int) -> dict[str, np.ndarray]:
    """Outputs of a read whose content was turned ``bins`` orientation bins counter-clockwise (so its
    orientation histogram sits ``bins`` higher) brought back to the unturned frame: the orientation histogram
    rolled down, an orientation vector turned back; scale is unchanged by a turn."""
    out = dict(hists)
    if "orientation_hist" in out:
        nb = out["orientation_hist"].shape[1]
        out["orientation_hist"] = np.roll(out["orientation_hist"], -int(bins), axis=1)
        if "orientation_vector" in out:
            a = -2 * np.pi * bins / nb
            v = out["orientation_vector"]
            c, s = np.cos(a), np.sin(a)
            out["orientation_vector"] = np.stack(
                [c * v[:, 0] - s * v[:, 1], s * v[:, 0] + c * v[:, 1]], 1
            ).astype(v.dtype)
    return out


def turn_average(
    model: PoseNet, hists: dict[str, np.ndarray], turned_inputs, bins, batch_size: int, rotations: int = 1
) -> dict[str, np.ndarray]:
    """*Turn averaging*: ``hists`` (an upright read's outputs) with its orientation outputs averaged with those
    of reads whose content is turned by each of ``bins[1:]`` orientation bins (:func:`turn_bins`), each turned
    back (:func:`unturn`). ``turned_inputs(b)`` gives the model's inputs with the content turned ``b`` bins
    counter-clockwise (the estimator turns the image; ``eval patchpose`` re-renders each view). Only the
    orientation head runs on them; the scale histogram stays the upright read's."""
    reads = [{k: v for k, v in hists.items() if k != "scale_hist"}]
    for b in bins[1:]:
        h = predict_histograms(
            model, turned_inputs(int(b)), batch_size, rotations=rotations, heads=("orientation",)
        )
        reads.append(unturn(h, int(b)))
    return {**hists, **{k: sum(r[k] for r in reads) / len(reads) for k in reads[0]}}


def output_arrays(o: dict[str, torch.Tensor], dtype: torch.dtype = torch.float32) -> dict[str, np.ndarray]:
    """A network's outputs as numpy arrays of ``dtype`` under the names of :data:`OUTPUT_NAMES` (what
    :func:`predict_histograms` returns): logits as probabilities (softmax over the bins), the orientation
    vector as it is."""
    return {
        OUTPUT_NAMES[key]: (v.to(dtype) if key == "ori_vector" else v.to(dtype).softmax(1)).cpu().numpy()
        for key, v in o.items()
    }


@torch.inference_mode()
def _predict(model: PoseNet, patches, batch_size: int, amp: str | None, heads=None) -> dict[str, np.ndarray]:
    was_training = model.training
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
        model.train(was_training)
    names = {OUTPUT_NAMES[key]: size for key, size in model.cfg.outputs_of(heads).items()}
    return {
        n: np.concatenate(out[n]) if n in out else np.zeros((0, size), np.float32)
        for n, size in names.items()
    }


def decode_poses(
    hists: dict[str, np.ndarray], k: int = 1, refine: bool = True, scale_range=SCALE_RANGE
) -> dict[str, np.ndarray]:
    """Histograms → ``{"scale": log2 (N, k), "orientation": radians (N, k)}``, strongest first.

    ``scale_range``: log2 scales of the first and last scale bin (the model's ``cfg.scale_range``).

    With an ``orientation_vector`` ``(N, 2)`` (a model with an orientation vector), the first orientation
    is the vector's angle (``refine`` does not apply to it) and the other ``k − 1`` are the strongest
    peaks of the histogram more than one bin away from it (:func:`vector_candidates`)."""
    out = {}
    if "scale_hist" in hists:
        h = torch.from_numpy(hists["scale_hist"]).double()
        out["scale"] = bin_to_scale(
            decode(h, circular=False, k=k, refine=refine).numpy(), h.shape[1], tuple(scale_range)
        )
    if "orientation_hist" in hists:
        h = torch.from_numpy(hists["orientation_hist"]).double()
        vec = hists.get("orientation_vector")
        # two spares: at most two modes (local maxima) lie within one bin of the vector's angle
        kk = k if vec is None else min(k + 2, h.shape[1])
        ori = bin_to_ori(decode(h, circular=True, k=kk, refine=refine).numpy(), h.shape[1])
        out["orientation"] = ori if vec is None else vector_candidates(vec, ori, k)
    return out


def vector_angle(z: np.ndarray) -> np.ndarray:
    """The angle in ``[0, 2π)`` of orientation vectors ``(N, 2)`` (re, im) (counter-clockwise, as the
    orientation bins: bin ``i`` is the direction ``2πi/B``)."""
    z = np.asarray(z, dtype=np.float64)
    return np.mod(np.arctan2(z[:, 1], z[:, 0]), 2 * np.pi)


def vector_candidates(
    z: np.ndarray, peaks: np.ndarray, k: int, min_sep: float = 2 * np.pi / 36
) -> np.ndarray:
    """``(N, k)`` orientations: the vector's angle, then the histogram's ``peaks`` ``(N, ≥ k)`` (strongest
    first) that lie more than ``min_sep`` (one 10° bin) from it, in their order; a peak that close says the
    same as the vector. Where too few remain, the weakest peaks fill in."""
    first = vector_angle(z)
    d = np.abs(np.angle(np.exp(1j * (peaks - first[:, None]))))
    order = np.argsort(d <= min_sep, axis=1, kind="stable")  # far peaks first, each group in its order
    rest = np.take_along_axis(peaks, order, axis=1)
    return np.concatenate([first[:, None], rest], 1)[:, :k]
