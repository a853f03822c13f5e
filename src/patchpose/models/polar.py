"""``polar-cnn``: a network on log-polar samples whose histograms move with the content by construction.

On a :class:`~patchpose.data.polar.PolarGrid`, rotating the content about the keypoint is a cyclic shift
along the angle axis and rescaling it is a shift along the ring axis (:mod:`patchpose.data.polar`). The
network keeps both symmetries:

* every convolution has **circular** padding along angles (zero padding along rings) and nothing is
  strided, so the feature map shifts with the input;
* the **orientation** logits are one value per angle sample (rings stacked as channels, then circular
  1-D convolutions along angles), so a rotation by ``j`` angle steps rolls them by ``j`` bins, exactly;
* the optional **orientation vector** (``ori_vector``) is a first angular harmonic, a complex number that a
  rotation by any angle ``t`` multiplies by ``e^{it}`` (up to interpolation): the angle of an intensity
  centroid, generalised (see :class:`OrientationVector`);
* the **scale** logits are one value per ring (pooled over angles, so rotation-invariant, then two 1-D
  convolutions along rings), read at the ``num_scale_bins`` central rings, so a rescaling by whole rings
  shifts them (up to what enters or leaves the grid at its ends).

What is learnt is which structure to lock onto so that the peaks survive interpolation, noise, blur and
the loss of content at the grid's ends; equivariance itself needs no training.
"""

from __future__ import annotations

import math

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
    exports to ONNX, and for the 4 harmonics of the log-polar networks about 3× faster than an FFT on CPU)."""
    a = f.shape[-1]
    ang = (
        torch.arange(a, dtype=torch.float64, device=f.device)[:, None]
        * torch.arange(1, k + 1, dtype=torch.float64, device=f.device)[None]
        * (2 * torch.pi / a)
    )
    table = torch.cat([torch.cos(ang), torch.sin(ang)], 1).to(f.dtype)  # (A, 2k): cosines, then sines
    z = f @ table
    re, im = z[..., :k], z[..., k:]
    return torch.sqrt(re * re + im * im + 1e-12) / a


def gradient_orientation_histograms(x: torch.Tensor, rings_per_octave: int) -> torch.Tensor:
    """Per-ring histograms of the *directions of image gradients*, ``(N, K, A)``, from a log-polar grid
    ``(N, K, A)`` (one channel), the way SIFT's orientation histogram is made but one per ring.

    At every grid point the gradient is taken by central differences along the ring axis (radial) and the
    angle axis (tangential), both per unit of ``log`` radius / angle, so a zoom leaves them unchanged
    (scale-covariant). Its direction *as displayed* is ``α_j + atan2(g_t, g_r)`` (``α_j`` the point's
    direction; ``g_r`` outwards, ``g_t`` towards higher angle indices), and it votes with its magnitude into
    the two angle bins about that direction (linear interpolation). Turning the content by one angle step
    rolls every histogram by one bin, exactly, as it rolls the grid. Unlike the samples themselves, a vote
    goes to the bin of the gradient's own direction, not of where it sits about the centre, so it moves
    little when a detector finds the keypoint a fraction of a pixel away. The two end rings have no radial
    difference and are zeros. Fixed (no parameters).
    """
    n, k, a = x.shape
    step = 2 * math.pi / a
    dr = (x[:, 2:] - x[:, :-2]) * (0.5 / math.sinh(math.log(2.0) / rings_per_octave))  # rings 1 … K−2
    mid = x[:, 1:-1]
    wrapped = torch.cat([mid[..., -1:], mid, mid[..., :1]], 2)  # circular neighbours along the angles
    dt = (wrapped[..., 2:] - wrapped[..., :-2]) * (0.5 / step)
    mag = torch.sqrt(dr * dr + dt * dt)
    # atan2 with dr = 0 replaced by a tiny positive number: the same angles, and no 0/0 in the ONNX graph
    # (which computes atan2 through atan(y / x))
    psi = torch.atan2(dt, torch.where(dr == 0, torch.full_like(dr, 1e-20), dr))
    angle_idx = torch.arange(a, device=x.device, dtype=x.dtype)
    pos = torch.remainder(angle_idx + psi * (1.0 / step), float(a))  # in angle steps, [0, a]
    lo = torch.floor(pos).clamp(max=a - 1)  # (rounding can give exactly a)
    v_hi = mag * (pos - lo)
    idx = lo.long()
    # votes into a + 1 bins (the upper neighbour of bin a − 1 is bin a), then bin a folded onto bin 0
    hist = torch.zeros(n, k - 2, a + 1, device=x.device, dtype=x.dtype)
    hist = hist.scatter_add(2, idx, mag - v_hi).scatter_add(2, idx + 1, v_hi)
    hist = torch.cat([hist[..., :1] + hist[..., a:], hist[..., 1:a]], 2)
    zero = torch.zeros_like(x[:, :1])
    return torch.cat([zero, hist, zero], 1)


def whole_circle_conv(h: torch.Tensor, conv: nn.Conv1d) -> torch.Tensor:
    """``conv`` (kernel = the whole circle, no dilation) applied with circular padding, through the FFT.

    The same numbers as ``conv(F.pad(h, (p, A − 1 − p), mode="circular"))`` with ``p = (A − 1) // 2``
    (pinned by a test), at a fraction of the cost of a direct convolution with that many taps."""
    a = h.shape[-1]
    w = torch.roll(conv.weight, -((a - 1) // 2), dims=-1)  # (O, C, A): tap m' reads h[j + m']
    spec = torch.einsum("ncf,ocf->nof", torch.fft.rfft(h.float()), torch.fft.rfft(w.float()).conj())
    out = torch.fft.irfft(spec, n=a)
    return out + conv.bias[None, :, None] if conv.bias is not None else out


def first_harmonic(f: torch.Tensor) -> torch.Tensor:
    """``Σ_j f[..., j]·e^{iα_j}`` over the last axis (``α_j = 2πj/A``, counter-clockwise as the grid's
    angles), as ``(..., 2)`` real and imaginary parts: a product with a cosine/sine table (no complex
    dtype, no FFT, so it exports to ONNX). Rolling ``f`` by one step multiplies it by ``e^{i·2π/A}``."""
    a = f.shape[-1]
    ang = torch.arange(a, dtype=torch.float64, device=f.device) * (2 * math.pi / a)
    table = torch.stack([torch.cos(ang), torch.sin(ang)], 1).to(f.dtype)  # (A, 2)
    return f @ table


class OrientationVector(nn.Module):
    """A continuous orientation: ``z = Σ_r u_r·G_r + Σ_c a_c·H_c`` (complex), its angle the orientation.

    ``G_r`` is the first angular harmonic of ring ``r`` of the (standardised) grid and ``H_c`` that of
    hidden orientation channel ``c``; ``a_c`` are learnt complex weights. ``u_r`` are ring weights that move
    with the scale the scale head finds: a learnt profile ``w(δ)`` over ring offsets ``δ = r − ρ``, averaged
    over the characteristic ring ``ρ`` with the scale head's probabilities (detached), so that a zoom by
    whole rings moves the weights with the content. With ``w(δ) = 2^(2δ/3)`` for ``δ ≤ −3`` and 0 beyond,
    ``Σ_r u_r G_r`` is close to ORB's intensity centroid on a disc of half the characteristic radius; that
    is how it starts, and training moves it.

    Why: a histogram read by its argmax flips between two peaks of nearly equal height, and its sub-bin
    refinement is a fit to 10° bins. A harmonic moves continuously with the content and has no bins, the
    reason an intensity centroid is so precise under pure rotation; the learnt parts make it hold under
    zoom and lock onto structure that survives resampling. Rotating the grid by one angle step multiplies
    every term, so ``z``, by ``e^{i·2π/A}``: equivariant by construction, like the histograms.
    """

    def __init__(self, rings: int, num_scale_bins: int, hidden: int, cut: int = -3) -> None:
        super().__init__()
        delta = torch.arange(-(rings - 1), rings, dtype=torch.float32)  # ring offsets from the scale ring
        self.profile = nn.Parameter(torch.where(delta <= cut, 2.0 ** (2.0 * (delta - cut) / 3.0), 0.0))
        self.hidden_weight = nn.Parameter(torch.zeros(hidden, 2))  # complex a_c as (re, im)
        ring0 = (rings - num_scale_bins) // 2
        # index of w(r − ρ_b) for scale bin b (ring ρ_b = ring0 + b) and ring r
        idx = torch.arange(rings)[None, :] - (ring0 + torch.arange(num_scale_bins))[:, None] + rings - 1
        self.register_buffer("profile_index", idx, persistent=False)

    def forward(self, grid: torch.Tensor, hidden: torch.Tensor, scale_prob: torch.Tensor) -> torch.Tensor:
        """``grid (N, K, A)``, ``hidden (N, C, A)``, ``scale_prob (N, Bs)`` → ``z (N, 2)`` (re, im)."""
        u = scale_prob @ self.profile[self.profile_index]  # (N, K)
        g = first_harmonic(grid)  # (N, K, 2)
        z = (u[..., None] * g).sum(1)
        if self.hidden_weight.shape[0]:
            h = first_harmonic(hidden)  # (N, C, 2)
            a = self.hidden_weight
            re = (h[..., 0] * a[:, 0] - h[..., 1] * a[:, 1]).sum(1)
            im = (h[..., 0] * a[:, 1] + h[..., 1] * a[:, 0]).sum(1)
            z = z + torch.stack([re, im], 1)
        return z


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
        ori_min_ring: int = 0,
        ori_rings_below_scale: int = -1,
        ori_window: int = -1,
        grad_hist: bool = False,
        rings_per_octave: int = 3,
        ori_vector: bool = False,
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
        if not 0 <= ori_min_ring < rings:
            raise ValueError(f"ori_min_ring must be in [0, {rings}), got {ori_min_ring}")
        self.ori_min_ring = ori_min_ring
        if ori_rings_below_scale >= 0 and "scale" not in heads:
            raise ValueError("ori_rings_below_scale needs the scale head")
        self.ori_rings_below_scale = ori_rings_below_scale
        if ori_window >= 0 and "scale" not in heads:
            raise ValueError("ori_window needs the scale head")
        if ori_window >= 0 and (ori_min_ring or ori_rings_below_scale >= 0):
            raise ValueError("ori_window replaces ori_min_ring and ori_rings_below_scale; set one of them")
        self.ori_window = ori_window
        if grad_hist and (ori_window >= 0 or in_channels != 1):
            raise ValueError("grad_hist needs one input channel and every ring (ori_window = -1)")
        self.grad_hist, self.rings_per_octave = bool(grad_hist), rings_per_octave
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
            # per ring; with the default dilations (1, 1) the module is the one v2 was trained with
            layers, cin = [], (2 + harmonics) * c
            for d in scale_dilations:
                layers += [nn.Conv1d(cin, w, 3, padding=d, dilation=d), nn.ReLU(inplace=True)]
                cin = w
            self.scale_head = nn.Sequential(*layers, nn.Conv1d(w, 1, 3, padding=1))
        if "orientation" in self.heads:
            # hidden circular convs (kernel 3, given dilations), then one of ``ori_kernel`` taps: up to
            # the whole circle, so that each logit can weigh every direction (as an intensity centroid does)
            convs, cin = [], c * (rings if ori_window < 0 else 2 * ori_window + 1) + rings * self.grad_hist
            for d in ori_dilations:
                convs.append(nn.Conv1d(cin, w, 3, dilation=d))
                cin = w
            convs.append(nn.Conv1d(cin, 1, ori_kernel))
            self.ori_convs = nn.ModuleList(convs)
        self.ori_vector = None
        if ori_vector:
            if not {"scale", "orientation"} <= set(self.heads) or in_channels != 1:
                raise ValueError("ori_vector needs both heads and one input channel")
            self.ori_vector = OrientationVector(rings, num_scale_bins, w if ori_dilations else 0)

    def forward(self, x: torch.Tensor, heads=None) -> dict[str, torch.Tensor]:
        """``heads``: None (every head of the network) or the ones to compute, e.g. ``("scale",)``: a read
        whose orientation would be thrown away (the first of two passes) skips the orientation head,
        about half of the network's time for v6 and v7. The scale head also runs when the orientation head needs
        it. A head computed is the same either way."""
        want = select_heads(self.heads, heads)
        ori = "orientation" in want
        needs_scale = ori and (
            self.ori_rings_below_scale >= 0 or self.ori_window >= 0 or self.ori_vector is not None
        )
        pad = slice(None)
        if self.depth:
            pad = slice(self.depth, self.depth + x.shape[-1])
            x = F.pad(x, (self.depth, self.depth, 0, 0), mode="circular")
        f = self.features(x)  # (N, C, K, A)
        out = {}
        if "scale" in want or needs_scale:
            stats = [f.mean(3), f.amax(3)]
            if self.harmonics:
                spec = angular_harmonics(f, self.harmonics)
                stats.append(spec.permute(0, 1, 3, 2).flatten(1, 2))
            s = self.scale_head(torch.cat(stats, 1))[:, 0]  # (N, K)
            lo = self.scale_ring0
            out["scale_logits"] = s[:, lo : lo + self.num_scale_bins]
        if ori:
            fo = f
            if self.ori_min_ring:  # the innermost rings are zeros for this head (same parameters)
                k = self.ori_min_ring
                fo = torch.cat([torch.zeros_like(f[:, :, :k]), f[:, :, k:]], 2)
            if self.ori_rings_below_scale >= 0:
                # rings more than n rings inside the estimated characteristic radius are zeros: a cut that
                # moves with the content when it is zoomed (the scale bin b sits at ring lo + b)
                b = out["scale_logits"].detach().argmax(1)
                cut = self.scale_ring0 + b - self.ori_rings_below_scale  # (N,)
                keep = torch.arange(self.rings, device=f.device)[None] >= cut[:, None]
                fo = fo * keep[:, None, :, None].to(fo.dtype)
            if self.ori_window >= 0:
                fo = self._window(fo, out["scale_logits"])
            h = fo.flatten(1, 2)  # (N, C·K, A)
            if self.grad_hist:  # the gradient-direction histograms of every ring as K more channels
                h = torch.cat([h, gradient_orientation_histograms(x[:, 0, :, pad], self.rings_per_octave)], 1)
            for i, conv in enumerate(self.ori_convs):
                if i == len(self.ori_convs) - 1:
                    hidden = h  # the last hidden map (or the input channels without hidden convs)
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
            if self.ori_vector is not None:
                p = out["scale_logits"].detach().float().softmax(1)
                out["ori_vector"] = self.ori_vector(x[:, 0, :, pad], hidden, p)
        if "scale" not in want:
            out.pop("scale_logits", None)
        return out

    def with_grad_hist_inputs(
        self, state: dict[str, torch.Tensor], prefix: str = ""
    ) -> dict[str, torch.Tensor]:
        """``state`` of the same network *without* gradient histograms, made loadable into this one (which has
        them): the first orientation conv gets zero weights for the histogram channels, which :meth:`forward`
        appends after the samples' channels, so the loaded network gives exactly the old logits."""
        key = f"{prefix}ori_convs.0.weight"
        w = state[key]
        extra = self.ori_convs[0].weight.shape[1] - w.shape[1]
        return {**state, key: torch.cat([w, w.new_zeros(w.shape[0], extra, w.shape[2])], 1)}

    def _window(self, f: torch.Tensor, scale_logits: torch.Tensor) -> torch.Tensor:
        """The ``2·ori_window + 1`` rings centred on the characteristic ring that the scale head found
        (scale bin ``b`` sits at ring ``(rings − bins)/2 + b``), zeros where the window leaves the grid:
        ``(N, C, K, A)`` → ``(N, C, 2W + 1, A)``. A view zoomed by whole rings moves its content and its
        scale estimate together, so the orientation head sees the same window: scale-covariant."""
        n, c, k, a = f.shape
        w = self.ori_window
        centre = self.scale_ring0 + scale_logits.detach().argmax(1)  # (N,)
        idx = centre[:, None] + torch.arange(-w, w + 1, device=f.device)[None]  # (N, 2W+1)
        valid = ((idx >= 0) & (idx < k)).to(f.dtype)
        g = torch.gather(f, 2, idx.clamp(0, k - 1)[:, None, :, None].expand(n, c, 2 * w + 1, a))
        return g * valid[:, None, :, None]


__all__ = ["PolarNet"]
