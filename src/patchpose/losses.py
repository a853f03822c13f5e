"""Histogram alignment losses (paper equations 4, 6 and 7), with the variants that avoid its traps.

For a pair ``(I, I')`` whose true pose difference is ``Δ`` (``I'`` = ``I`` enlarged/rotated, so its
histogram sits ``d = Δ / bin_width`` bins higher), with ``h = softmax(z / T)`` and ``h' = softmax(z' / T)``:

``L(h, h') = −Σ_i h(i) · log T^d h'(i)`` and the symmetric objective ``L(h, h') + L(h', h)`` where the
second term uses ``T^{−d} h``. Gradients flow through both sides, as in the official code.

Switches:

* ``scale_bins``:
    - ``"shared"``: sum over the overlapping bins ``B`` only (equation 4 read literally). **Trap**: the
      network can push probability into bins that ``B`` excludes; the loss falls while accuracy stays at
      chance.
    - ``"all"`` (default): sum over every bin; bins shifted in from outside get probability 0 (so mass
      where the partner cannot be is penalised by ``−log ε``). Learns.
    - ``"official"``: the official code: integer (rounded) shift **of the logits**, wrapped logits set to
      0, softmax over all bins.
* ``ori_shift``: ``"prob"`` (the paper: shift the probabilities) or ``"logits"`` (the official code).
* ``distill``: weight of :func:`distillation_loss`, the KL divergence from a fixed teacher network's
  histograms of the same views to the student's (``run.teacher`` names the teacher): how a narrower,
  faster network is taught what a wider one does. 0 (default): no teacher.
* ``ori_entropy`` / ``ori_batch_entropy``: a per-sample entropy penalty ``+H(h)`` and a batch-level bonus
  ``−H(mean h')`` for the rotated views. **Trap** without them: a uniform orientation histogram is a
  stationary point of the symmetric loss (every circular shift of a uniform histogram is itself), so
  orientation can stay uniform and learn nothing. Both 0 gives the paper's loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .histogram import overlap_mask, shift_histogram
from .models.shapenet import upright_inverse

EPS = 1e-5  # the official code's epsilon inside the log


@dataclass
class LossConfig:
    temperature: float = 1.0  # softmax temperature T (official code: 20 with SGD lr 3)
    scale_bins: str = "all"  # "all" | "shared" | "official"
    ori_shift: str = "prob"  # "prob" | "logits"
    ori_entropy: float = 1.0  # weight of +mean H(h) on orientation histograms (0 = paper)
    ori_batch_entropy: float = 1.0  # weight of −H(mean h) over the batch (0 = paper)
    distill: float = 0.0  # weight of the KL divergence to a teacher's histograms (run.teacher)


def _cross_entropy(
    target: torch.Tensor, pred: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    ce = -target * torch.log(pred + EPS)
    if mask is not None:
        ce = ce * mask
    return ce.sum(dim=1)


def entropy(p: torch.Tensor) -> torch.Tensor:
    """Shannon entropy (nats) along the last axis."""
    return -(p * torch.log(p + EPS)).sum(dim=-1)


def alignment_loss(
    logits_a: torch.Tensor,
    logits_b: torch.Tensor,
    d: torch.Tensor,
    circular: bool,
    temperature: float = 1.0,
    mode: str = "all",
) -> torch.Tensor:
    """Symmetric histogram alignment loss per pair, ``(N,)``.

    Args:
        logits_a, logits_b: ``(N, B)`` raw network outputs for the reference and the transformed patch.
        d: ``(N,)`` true shift in bins from a to b (b's histogram is ``d`` bins higher).
        circular: True for orientation (circular shift), False for scale.
        temperature: softmax temperature.
        mode: for scale, ``"all"``, ``"shared"`` or ``"official"``; for orientation ``"prob"`` or
            ``"logits"``.
    """
    za, zb = logits_a / temperature, logits_b / temperature
    if mode in ("official", "logits"):
        dd = d if circular else torch.round(d)
        zb_al = shift_histogram(zb, dd, circular, fill=0.0)
        za_al = shift_histogram(za, -dd, circular, fill=0.0)
        pa, pb = za.softmax(1), zb.softmax(1)
        return _cross_entropy(pa, zb_al.softmax(1)) + _cross_entropy(pb, za_al.softmax(1))
    if mode not in ("all", "shared", "prob"):
        raise ValueError(f"unknown alignment mode {mode!r}")
    pa, pb = za.softmax(1), zb.softmax(1)
    pb_al = shift_histogram(pb, d, circular, fill=0.0)  # aligned with a
    pa_al = shift_histogram(pa, -d, circular, fill=0.0)  # aligned with b
    if mode == "shared" and not circular:
        num_bins = pa.shape[1]
        m_a = overlap_mask(num_bins, d).to(pa.dtype)
        m_b = overlap_mask(num_bins, -d).to(pa.dtype)
        return _cross_entropy(pa, pb_al, m_a) + _cross_entropy(pb, pa_al, m_b)
    return _cross_entropy(pa, pb_al) + _cross_entropy(pb, pa_al)


def distillation_loss(student: dict, teacher: dict, temperature: float = 1.0) -> torch.Tensor:
    """``Σ_heads mean_i KL(p_teacher,i ‖ p_student,i)`` over the histogram heads both outputs have, with
    ``p = softmax(z / T)``: zero exactly when the student's histograms are the teacher's. The teacher's
    side carries no gradient."""
    total = None
    for key in ("scale_logits", "ori_logits"):
        if key not in student or key not in teacher:
            continue
        zs, zt = student[key].float() / temperature, teacher[key].detach().float() / temperature
        if zs.shape != zt.shape:
            raise ValueError(f"{key}: the student has {tuple(zs.shape)}, the teacher {tuple(zt.shape)}")
        lt = zt.log_softmax(1)
        kl = (lt.exp() * (lt - zs.log_softmax(1))).sum(1).mean()
        total = kl if total is None else total + kl
    if total is None:
        raise ValueError("the student and the teacher share no histogram head")
    return total


def pose_loss(out_a: dict, out_b: dict, d_scale: torch.Tensor, d_ori: torch.Tensor, cfg: LossConfig) -> dict:
    """Total training loss for a batch of pairs.

    Args:
        out_a, out_b: model outputs (``{"scale_logits": (N, Bs), "ori_logits": (N, Bo)}``; either head may
            be missing) for reference and transformed patches.
        d_scale, d_ori: ``(N,)`` true shifts in bins (b relative to a).

    Returns:
        ``{"total": scalar, "scale": scalar, "orientation": scalar, ...}`` (detached extras for logging).
    """
    losses: dict[str, torch.Tensor] = {}
    total = torch.zeros((), device=d_scale.device)
    if "scale_logits" in out_a:
        za, zb = out_a["scale_logits"].float(), out_b["scale_logits"].float()
        ls = alignment_loss(
            za, zb, d_scale, circular=False, temperature=cfg.temperature, mode=cfg.scale_bins
        ).mean()
        losses["scale"] = ls
        total = total + ls
    if "ori_logits" in out_a:
        za, zb = out_a["ori_logits"].float(), out_b["ori_logits"].float()
        lo = alignment_loss(
            za, zb, d_ori, circular=True, temperature=cfg.temperature, mode=cfg.ori_shift
        ).mean()
        losses["orientation"] = lo
        reg = torch.zeros((), device=lo.device)
        pa, pb = (za / cfg.temperature).softmax(1), (zb / cfg.temperature).softmax(1)
        if cfg.ori_entropy:
            reg = reg + cfg.ori_entropy * 0.5 * (entropy(pa) + entropy(pb)).mean()
        if cfg.ori_batch_entropy:
            reg = reg - cfg.ori_batch_entropy * entropy(pb.mean(0))
        losses["ori_reg"] = reg.detach()
        total = total + (lo + reg)  # summed in this order: the losses of runs made before, bit for bit
    losses["total"] = total
    return losses


def shape_misalignment(S1: torch.Tensor, S2: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``(N,)`` how far two affine shapes are from covariant: the log anisotropy ``ln(s_max / s_min)`` of
    ``M = S1⁻¹·B·S2``, for shapes ``S1``, ``S2`` ``(N, 2, 2)`` of determinant 1 predicted in two patches of one
    keypoint, the second cut through the first's frame times ``B`` (``(N, 2, 2)``, determinant 1).

    The two shapes describe one region when the frames ``S1`` and ``B·S2`` agree up to a rotation, i.e. when
    ``M`` is a rotation: then the value is 0, whatever the rotation (a shape says nothing about orientation).
    With ``det M = 1``, ``‖M‖_F² = s² + s⁻²`` for its larger singular value ``s``, so ``ln(s_max / s_min) =
    2 ln s = acosh(‖M‖_F² / 2)``."""
    M = upright_inverse(S1) @ B @ S2
    fro = (M * M).sum((1, 2))
    return torch.acosh(torch.clamp(fro / 2, min=1 + 1e-7))


def shape_alignment_loss(S1: torch.Tensor, S2: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """The affine shape network's self-supervised loss: the mean squared :func:`shape_misalignment` (0 iff
    every pair of predicted shapes is covariant under its known map ``B``)."""
    return (shape_misalignment(S1, S2, B) ** 2).mean()
