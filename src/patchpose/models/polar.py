"""``polar-cnn``: a network on log-polar samples whose histograms move with the content by construction.

On a :class:`~patchpose.data.polar.PolarGrid`, rotating the content about the keypoint is a cyclic shift
along the angle axis and rescaling it is a shift along the ring axis (:mod:`patchpose.data.polar`). The
network keeps both symmetries:

* every convolution has **circular** padding along angles (zero padding along rings) and nothing is
  strided, so the feature map shifts with the input;
* the **orientation** logits are one value per angle sample (rings stacked as channels, then circular
  1-D convolutions along angles), so a rotation by ``j`` angle steps rolls them by ``j`` bins, exactly;
* the **scale** logits are one value per ring (pooled over angles, so rotation-invariant, then two 1-D
  convolutions along rings), read at the ``num_scale_bins`` central rings, so a rescaling by whole rings
  shifts them (up to what enters or leaves the grid at its ends).

This exactness holds on the grid's steps (turns by multiples of 10°, zooms by multiples of 1/3 octave, about
the sampled point); between them the samples are interpolated and the histograms move only approximately, as they
do where a detector finds a keypoint again a pixel off. What is learnt is which structure to lock onto so that the
peaks survive interpolation, offsets, noise, blur and the loss of content at the grid's ends.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .heads import select_heads


class StemBlock(nn.Module):
    """3×3 conv (zero padding along rings only; the caller pads the angles circularly), BN, ReLU."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=(1, 0), bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)), inplace=True)


def circular_conv_direct(h: torch.Tensor, conv: nn.Conv1d) -> torch.Tensor:
    """The same as :func:`whole_circle_conv` as a plain circular padding and convolution (for ONNX export,
    which has no real FFT)."""
    a = h.shape[-1]
    p = (a - 1) // 2
    return conv(torch.cat([h[..., a - p :], h, h[..., : a - 1 - p]], -1))


def angular_harmonics(f: torch.Tensor, k: int) -> torch.Tensor:
    """Magnitudes of the angular Fourier coefficients 1…k along the last axis, divided by its length, as
    one product with a cosine/sine table (equal to ``|rfft|[1:k+1]/A`` to float rounding; no FFT, so it
    exports to ONNX, and for a few harmonics, such as the log-polar networks' 4, faster than an FFT on
    CPU)."""
    a = f.shape[-1]
    ang = (
        torch.arange(a, dtype=torch.float64, device=f.device)[:, None]
        * torch.arange(1, k + 1, dtype=torch.float64, device=f.device)[None]
        * (2 * torch.pi / a)
    ).T
    table = torch.cat([torch.cos(ang), torch.sin(ang)], 0).to(f.dtype)  # (2k, A): cosines, then sines
    # (2k, A) @ (A, M) with the M = N·C·K rows of f as columns: one wide product, several times faster on CPU
    # than f @ table's narrow one (2k outputs per row)
    z = table @ f.reshape(-1, a).T
    re, im = z[:k], z[k:]
    return (torch.sqrt(re * re + im * im + 1e-12) / a).T.reshape(*f.shape[:-1], k)


def whole_circle_conv(h: torch.Tensor, conv: nn.Conv1d) -> torch.Tensor:
    """``conv`` (kernel = the whole circle, no dilation) applied with circular padding, through the FFT.

    The same numbers as ``conv(F.pad(h, (p, A − 1 − p), mode="circular"))`` with ``p = (A − 1) // 2``
    (pinned by a test), at a fraction of the cost of a direct convolution with that many taps."""
    a = h.shape[-1]
    w = torch.roll(conv.weight, -((a - 1) // 2), dims=-1)  # (O, C, A): tap m' reads h[j + m']
    spec = torch.einsum("ncf,ocf->nof", torch.fft.rfft(h.float()), torch.fft.rfft(w.float()).conj())
    out = torch.fft.irfft(spec, n=a)
    return out + conv.bias[None, :, None] if conv.bias is not None else out


class PolarNet(nn.Module):
    """``(N, C, rings, angles)`` → ``{"scale_logits": (N, Bs), "ori_logits": (N, Bo)}`` (heads as asked).

    An optional stem of 3×3 convolutions (circular along angles; the input is padded once by the stem's
    depth) computes local features on the grid; without a stem the features are the samples themselves.
    The scale head describes each ring by rotation-invariant statistics of its features along the angles
    (mean, max and the magnitudes of the first ``harmonics`` angular Fourier coefficients) and runs 1-D
    convolutions along rings; the orientation head stacks the rings as channels and runs circular 1-D
    convolutions along angles. Nothing else is computed per grid point, which keeps it fast.
    """

    def __init__(
        self,
        in_channels: int,
        rings: int,
        angles: int,
        num_scale_bins: int,
        num_ori_bins: int,
        heads=("scale", "orientation"),
        channels: tuple[int, ...] = (8, 8),
        head_width: int = 32,
        harmonics: int = 0,
        ori_dilations: tuple[int, ...] = (1, 1),
        ori_kernel: int = 3,
        scale_dilations: tuple[int, ...] = (1, 1),
    ) -> None:
        super().__init__()
        if angles % num_ori_bins:
            raise ValueError(f"angles ({angles}) must be a multiple of the orientation bins ({num_ori_bins})")
        if "scale" in heads and rings < num_scale_bins:
            raise ValueError(f"rings ({rings}) must be at least the scale bins ({num_scale_bins})")
        if not 0 <= harmonics <= angles // 2:
            raise ValueError(f"harmonics must be in [0, {angles // 2}], got {harmonics}")
        if not 1 <= ori_kernel <= angles or any(d < 1 or 2 * d >= angles for d in ori_dilations):
            raise ValueError(f"bad orientation head: kernel {ori_kernel}, dilations {ori_dilations}")
        if not scale_dilations or any(d < 1 or 2 * d >= rings for d in scale_dilations):
            raise ValueError(
                f"bad scale head: dilations {scale_dilations} (each from 1 to {(rings - 1) // 2})"
            )
        self.rings, self.angles, self.heads, self.harmonics = rings, angles, tuple(heads), harmonics
        # False: the whole-circle orientation conv as a direct convolution (same numbers; what ONNX export uses)
        self.use_fft = True
        self.num_scale_bins, self.num_ori_bins = num_scale_bins, num_ori_bins
        self.scale_ring0 = (rings - num_scale_bins) // 2  # the ring of scale bin 0
        layers, cin = [], in_channels
        for c in channels:
            layers.append(StemBlock(cin, c))
            cin = c
        self.depth = len(channels)
        self.features = nn.Sequential(*layers)
        c, w = cin, head_width
        if "scale" in self.heads:
            # hidden convs along the rings (zero padding: the grid's ends are real ends), then one to 1 logit
            # per ring; the default dilations (1, 1) build the module of a stored config that names none
            # (files written before the setting, as patchpose-v2's and -v3's: git tag models-v1-v8-2026-11-28)
            layers, cin = [], (2 + harmonics) * c
            for d in scale_dilations:
                layers += [nn.Conv1d(cin, w, 3, padding=d, dilation=d), nn.ReLU(inplace=True)]
                cin = w
            self.scale_head = nn.Sequential(*layers, nn.Conv1d(w, 1, 3, padding=1))
        if "orientation" in self.heads:
            # hidden circular convs (kernel 3, given dilations), then one of ``ori_kernel`` taps: up to
            # the whole circle, so that each logit can weigh every direction (as an intensity centroid does)
            convs, cin = [], c * rings
            for d in ori_dilations:
                convs.append(nn.Conv1d(cin, w, 3, dilation=d))
                cin = w
            convs.append(nn.Conv1d(cin, 1, ori_kernel))
            self.ori_convs = nn.ModuleList(convs)

    def forward(self, x: torch.Tensor, heads=None) -> dict[str, torch.Tensor]:
        """``heads``: None (every head of the network) or the ones to compute, e.g. ``("scale",)``: a read
        whose orientation would be thrown away (the first of two passes) skips the orientation head and
        its share of the network's time. A head computed is the same either way."""
        want = select_heads(self.heads, heads)
        if self.depth:
            x = F.pad(x, (self.depth, self.depth, 0, 0), mode="circular")
        f = self.features(x)  # (N, C, K, A)
        out = {}
        if "scale" in want:
            stats = [f.mean(3), f.amax(3)]
            if self.harmonics:
                spec = angular_harmonics(f, self.harmonics)
                stats.append(spec.permute(0, 1, 3, 2).flatten(1, 2))
            s = self.scale_head(torch.cat(stats, 1))[:, 0]  # (N, K)
            lo = self.scale_ring0
            out["scale_logits"] = s[:, lo : lo + self.num_scale_bins]
        if "orientation" in want:
            h = f.flatten(1, 2)  # (N, C·K, A)
            for i, conv in enumerate(self.ori_convs):
                if conv.kernel_size[0] == self.angles:
                    h = whole_circle_conv(h, conv) if self.use_fft else circular_conv_direct(h, conv)
                else:
                    span = conv.dilation[0] * (conv.kernel_size[0] - 1)
                    h = conv(F.pad(h, (span // 2, span - span // 2), mode="circular"))
                if i < len(self.ori_convs) - 1:
                    h = F.relu(h, inplace=True)
            o = h[:, 0]  # (N, A)
            if self.angles != self.num_ori_bins:
                o = o.reshape(len(o), self.num_ori_bins, -1).mean(2)
            out["ori_logits"] = o
        return out


__all__ = ["PolarNet"]
