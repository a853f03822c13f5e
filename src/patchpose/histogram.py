"""Histogram geometry: the paper's shift operators (its equations 2 and 5) and decoding.

Shifts follow the paper: ``T^d h(i) = h(i + d)`` translates a histogram **to the left** by ``d`` bins,
with linear interpolation for non-integer ``d``. If ``h'`` belongs to a patch whose pose is ``Δ`` bins
higher than that of ``h``, then ``T^Δ h'`` is aligned with ``h``. Bins that come from outside a linear
(scale) histogram are filled with ``fill`` (0 for probabilities).
"""

from __future__ import annotations

import torch


def shift_histogram(h: torch.Tensor, d: torch.Tensor, circular: bool, fill: float = 0.0) -> torch.Tensor:
    """Return ``T^d h``: ``out[..., i] = h[..., i + d]``, linearly interpolated.

    Args:
        h: ``(N, B)`` histograms (probabilities or logits).
        d: ``(N,)`` shifts in bins, any real value.
        circular: wrap indices modulo ``B`` (orientation) or fill out-of-range bins (scale).
        fill: value of bins shifted in from outside when ``circular`` is False.
    """
    if h.dim() != 2 or d.shape != h.shape[:1]:
        raise ValueError(
            f"shift_histogram expects h (N, B) and d (N,), got {tuple(h.shape)} and {tuple(d.shape)}"
        )
    n, num_bins = h.shape
    d = d.to(h.dtype)
    lo = torch.floor(d)
    w_hi = (d - lo).unsqueeze(1)  # weight of h(i + ceil d); 0 when d is an integer
    idx = torch.arange(num_bins, device=h.device).unsqueeze(0) + lo.long().unsqueeze(1)  # i + floor d
    idx_hi = idx + 1

    def gather(ix: torch.Tensor) -> torch.Tensor:
        if circular:
            return torch.gather(h, 1, ix % num_bins)
        inside = (ix >= 0) & (ix < num_bins)
        vals = torch.gather(h, 1, ix.clamp(0, num_bins - 1))
        return torch.where(inside, vals, torch.full_like(vals, fill))

    return (1.0 - w_hi) * gather(idx) + w_hi * gather(idx_hi)


def overlap_mask(num_bins: int, d: torch.Tensor) -> torch.Tensor:
    """The paper's set ``B`` (equation 3): bins of ``h`` that share scales with ``T^d h'``.

    ``{i : 0 ≤ i ≤ B−1−round(d)}`` for ``d ≥ 0`` and ``{i : −round(d) ≤ i ≤ B−1}`` for ``d < 0``.
    """
    i = torch.arange(num_bins, device=d.device).unsqueeze(0)
    r = torch.round(d).long().unsqueeze(1)
    return torch.where(r >= 0, i <= num_bins - 1 - r, i >= -r)


def refine_peaks(hist: torch.Tensor, peaks: torch.Tensor, circular: bool) -> torch.Tensor:
    """Sub-bin refinement: the vertex of the parabola through a peak bin and its two neighbours.

    Returns continuous bin coordinates (``peak + offset``, offset in ``[−0.5, 0.5]``). For a linear
    histogram, peaks on the first or last bin are not refined.
    """
    num_bins = hist.shape[-1]
    if circular:
        left = torch.gather(hist, 1, (peaks - 1) % num_bins)
        right = torch.gather(hist, 1, (peaks + 1) % num_bins)
    else:
        left = torch.gather(hist, 1, (peaks - 1).clamp(0, num_bins - 1))
        right = torch.gather(hist, 1, (peaks + 1).clamp(0, num_bins - 1))
    mid = torch.gather(hist, 1, peaks)
    denom = left - 2.0 * mid + right
    offset = torch.where(denom < 0, 0.5 * (left - right) / denom.clamp(max=-1e-12), torch.zeros_like(mid))
    offset = offset.clamp(-0.5, 0.5)
    if not circular:
        edge = (peaks == 0) | (peaks == num_bins - 1)
        offset = torch.where(edge, torch.zeros_like(offset), offset)
    out = peaks.to(hist.dtype) + offset
    return out % num_bins if circular else out


def local_maxima(hist: torch.Tensor, circular: bool) -> torch.Tensor:
    """``(N, B)`` True at each local maximum (at least its left neighbour, above its right: one bin per
    plateau); a linear histogram's ends have one neighbour."""
    if circular:
        left, right = hist.roll(1, dims=1), hist.roll(-1, dims=1)
    else:
        pad = torch.full_like(hist[:, :1], -float("inf"))
        left = torch.cat([pad, hist[:, :-1]], dim=1)
        right = torch.cat([hist[:, 1:], pad], dim=1)
    return (hist >= left) & (hist > right)


def top_peaks(hist: torch.Tensor, k: int, circular: bool) -> torch.Tensor:
    """Indices ``(N, k)`` of the ``k`` strongest candidates, strongest first.

    Local maxima come first (in decreasing height), so that ``k`` candidates are ``k`` distinct modes;
    if a histogram has fewer than ``k`` local maxima the remaining highest bins fill the list.
    """
    num_bins = hist.shape[-1]
    if not 1 <= k <= num_bins:
        raise ValueError(f"top_k must be in [1, {num_bins}], got {k}")
    is_peak = local_maxima(hist, circular)
    # rank: peaks above everything else, then by height
    key = hist + is_peak.to(hist.dtype) * (hist.max() - hist.min() + 1.0)
    return torch.topk(key, k, dim=1).indices


def decode(hist: torch.Tensor, circular: bool, k: int = 1, refine: bool = True) -> torch.Tensor:
    """Continuous bin coordinates ``(N, k)`` of the ``k`` strongest modes of the probabilities ``hist``.

    ``refine``: fit a Gaussian to each peak, i.e. take the vertex of the parabola through the
    *log*-probabilities of the peak bin and its two neighbours (exact for a Gaussian-shaped peak; the log
    of a softmax is the network's logits up to a constant). A parabola through the probabilities
    themselves is pulled towards the bin centre when the peak is sharp, so sharp peaks would come out near
    whole bins.
    """
    peaks = top_peaks(hist, k, circular) if k > 1 else hist.argmax(dim=1, keepdim=True)
    if not refine:
        return peaks.to(hist.dtype)
    logh = torch.log(hist.clamp_min(torch.finfo(hist.dtype).tiny))
    out = torch.stack([refine_peaks(logh, peaks[:, j : j + 1], circular)[:, 0] for j in range(k)], dim=1)
    # a bin that fills the list for want of maxima (top_peaks) is no peak: refined, it would slide half a bin
    # towards the real peak beside it and come out as its near-copy; it keeps its bin centre
    if k == 1:  # the argmax: the highest bin is a mode
        return out
    filler = ~torch.gather(local_maxima(hist, circular), 1, peaks)
    return torch.where(filler, peaks.to(hist.dtype), out)
