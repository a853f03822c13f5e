"""How a model reads keypoints: the read plan stored with its weights, the one read loop, and its result.

A *read* runs the network on the inputs sampled about every keypoint in a *frame* (a log2 scale: the model's
window covers ``16 · 2**frame`` px of radius, :mod:`patchpose.conventions`). The :class:`ReadPlan` says how
many reads a model is meant for and where each one looks:

1. the first read is in the caller's frame (0, or a detector's scale);
2. each later read is in a frame moved to the scale the read before it found, rounded to whole scale bins
   (so that the characteristic structure sits in the middle of the window and the histogram's bins keep
   their meaning); only the last read runs the orientation head;
3. on the last of two or more reads, the orientation is read ``orientation_offset`` octaves from that frame
   (negative: nearer the keypoint, where a change of viewpoint distorts the content less), and the scale is
   read again in that frame unless ``reread_scale`` is False (then the scale is the one the read before found,
   and the last read runs the orientation head alone).

:func:`read` is that loop. The estimator calls it on images (:meth:`~patchpose.PatchPoseEstimator.estimate`),
``eval patchpose`` on rendered views: one definition, so an evaluation measures what users run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch

from .checks import SCALE_LIMIT, flag
from .conventions import REFERENCE_RADIUS, ori_to_bin, scale_to_bin
from .errors import InputError, is_int_in
from .histogram import local_maxima
from .inference import decode_poses, predict_histograms
from .models import PoseNet
from .weights import (
    MAX_PASSES,
    PLAN_DEFAULTS,
    check_descriptor_region,
    check_orientation_offset,
    meta_string,
    parse_flag,
    stated_plan,
)

#: frames (log2 scales) stay within this many octaves of 0
MAX_FRAME = SCALE_LIMIT
#: SIFT keeps every orientation peak at least 80 % as high as its highest (Lowe 2004): the same rule on our
#: orientation histogram, :func:`strong_candidates`
PEAK_RATIO = 0.8
#: an orientation histogram whose highest and lowest bins differ by no more than this fraction of its mean bin
#: carries no orientation (:func:`informative`). A patch flat over the whole window the orientation is read in (the
#: bundled models' outer ring: 512 · 2**(frame − 4/3) px, its frame the scale the first read found) gives them an
#: exactly uniform histogram (difference 0). The margin above it is thin only at the rim of a flat region: on
#: a 2 px grid over the 10 Sacré-Cœur photos (1.89 M keypoints) none lies in (0, 1e-3], but the least non-flat
#: ones are 0.0034 of the mean (3.4×, patchpose-v9) and 0.0059 (5.9×, fast-v1), in one photo's clipped sky 20
#: to 30 px from the nearest pixel that differs (content reaches their window at its rim only); with such a pixel
#: within 20 px the least is 0.34 (fast-v1), 1.4 (v9), 1.6 (v10, anywhere: it flags none of them); 1 grey level of
#: noise on a flat patch gives over 7
FLAT_HIST_TOLERANCE = 1e-3


@dataclass(frozen=True)
class ReadPlan:
    """How a model is read; stored in its weights file (metadata ``passes``, ``orientation_offset``,
    ``descriptor_region``, ``reread_scale``) and carried by ONNX export, so a model is read the way it was chosen.

    Args:
        passes: reads per keypoint, 1 to :data:`~patchpose.weights.MAX_PASSES`. Reads before the last run the
            scale head alone, so a read before the last costs less than the last (``patchpose bench`` times
            the model's own plan against a single read).
        orientation_offset: octaves between the frame of the scale found and the frame the orientation is
            read in, on the last of two or more reads (a single read reads both in the caller's frame).
        descriptor_region: half-width of a descriptor patch cut at this model's pose, in units of its
            characteristic radius. Self-supervised training fixes only *relative* scale, so where a model
            puts scale 0 on a structure, and hence the window a descriptor needs about it, is the model's own.
            It changes no pose: :attr:`Poses.descriptor_radius` carries it to the integrations.
        reread_scale: on the last of two or more reads, whether the scale is read again in that read's frame
            (True) or the scale the read before found stands (False: the last read runs the orientation head
            alone, which saves a sampling of the grid and a scale head per keypoint). A single read reads
            both and ignores it.

    Experiments change a plan with :meth:`replace` or :meth:`override` (the CLI's ``--read KEY=VALUE``) and
    read with :meth:`PatchPoseEstimator.with_plan <patchpose.PatchPoseEstimator.with_plan>`.
    """

    passes: int = PLAN_DEFAULTS["passes"]
    orientation_offset: float = PLAN_DEFAULTS["orientation_offset"]
    descriptor_region: float = PLAN_DEFAULTS["descriptor_region"]
    reread_scale: bool = PLAN_DEFAULTS["reread_scale"]

    def __post_init__(self) -> None:
        if not is_int_in(self.passes, 1, MAX_PASSES):
            raise InputError(f"passes must be an integer from 1 to {MAX_PASSES}, got {self.passes!r}")
        object.__setattr__(self, "passes", int(self.passes))
        object.__setattr__(self, "reread_scale", flag(self.reread_scale, "reread_scale"))
        object.__setattr__(self, "orientation_offset", check_orientation_offset(self.orientation_offset))
        object.__setattr__(self, "descriptor_region", check_descriptor_region(self.descriptor_region))

    @classmethod
    def from_meta(cls, meta: dict | None, where: str = "the weights") -> ReadPlan:
        """The plan a weights file's metadata states; what it leaves out takes the defaults (one read, no
        offset, a descriptor window of one radius). A bad value is a :class:`~patchpose.WeightsError`."""
        return cls(**stated_plan(meta or {}, where))

    def to_meta(self) -> dict[str, str]:
        """The plan as weights-file metadata (strings that :meth:`from_meta` reads back exactly)."""
        return {k: meta_string(v) for k, v in asdict(self).items()}

    def replace(self, **changes: float | bool) -> ReadPlan:
        """This plan with ``changes`` (names of its fields); an unknown name is an
        :class:`~patchpose.InputError`."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise InputError(f"unknown read plan setting(s) {unknown}; the settings are {sorted(names)}")
        return ReadPlan(**{**asdict(self), **changes})

    def override(self, items: Iterable[str]) -> ReadPlan:
        """This plan with ``KEY=VALUE`` strings applied in order (``["passes=1", "orientation_offset=0"]``)."""
        return self.replace(**self.parse(items))

    @staticmethod
    def parse(items: Iterable[str]) -> dict[str, float | bool]:
        """``KEY=VALUE`` strings (the CLI's ``--read``) as the changes :meth:`replace` takes, later items
        winning; a malformed item, an unknown name or a value out of range is an
        :class:`~patchpose.InputError` (checked against the default plan)."""
        if isinstance(items, (str, bytes)):  # "passes=1" was read one character at a time ("got 'p'")
            raise InputError(
                f"read plan overrides are a list of KEY=VALUE strings, e.g. [{items!r}]; got a string"
            )
        changes: dict = {}
        for item in items:
            key, sep, value = str(item).partition("=")
            key = key.strip().replace("-", "_")
            if not sep or not key:
                raise InputError(f"a read plan override is KEY=VALUE (e.g. passes=1), got {item!r}")
            default = getattr(ReadPlan, key, None)  # a value of the field's type (an unknown name: a number)
            if isinstance(default, bool):
                changes[key] = parse_flag(value, f"read plan setting {key!r}")
                continue
            changes[key] = _integer(value, key) if isinstance(default, int) else _number(value, key)
        ReadPlan().replace(**changes)
        return changes


def _integer(value: str, key: str) -> int:
    """A ``--read`` value of an integer setting (``passes``): ``"1.0"`` is refused as not an integer."""
    wanted = "an integer (e.g. 2)"
    try:
        return int(value)
    except ValueError:
        _ratio(value, key, wanted)  # a fraction over zero said so
        raise InputError(f"read plan setting {key!r} must be {wanted}, got {value!r}") from None


def _number(value: str, key: str) -> float:
    """A ``--read`` value of a number setting: a decimal, or a fraction ``a/b`` as the docs' tables write the
    bundled values (``-4/3``, the exact value the bundled files hold; a typographic minus sign is read as -)."""
    wanted = "a number (a decimal or a fraction such as -4/3)"
    try:
        return float(value.strip().replace("\u2212", "-"))
    except ValueError:
        ratio = _ratio(value, key, wanted)
    if ratio is None:
        raise InputError(f"read plan setting {key!r} must be {wanted}, got {value!r}")
    return ratio


def _ratio(value: str, key: str, wanted: str) -> float | None:
    """``value`` as a fraction ``a/b`` of two numbers (a typographic minus sign read as -), or None where it is none;
    ``b`` zero is an :class:`~patchpose.InputError` that says "division by zero" (not only "must be a number")."""
    a, _, b = value.strip().replace("\u2212", "-").partition("/")
    try:
        num, den = float(a), float(b)  # no "/": b is "", no number
    except ValueError:
        return None
    if den == 0:
        raise InputError(f"read plan setting {key!r} got {value!r}: division by zero; it must be {wanted}")
    return num / den


@dataclass(frozen=True)
class Poses:
    """Scale and orientation of N keypoints (:meth:`~patchpose.PatchPoseEstimator.estimate`); with
    ``top_k=k`` the pose arrays are ``(N, k)``, strongest candidate first.

    Attributes:
        orientation: radians in ``[0, 2π)``, counter-clockwise as displayed.
        scale: log2 scale; the characteristic radius is ``16 · 2**scale`` px (:attr:`radius`).
        confidence: probability mass of the orientation histogram within one bin of each orientation.
        scale_confidence: the same for the scale histogram.
        descriptor_radius: half-width in px of the descriptor patch to cut at this pose (the read plan's
            ``descriptor_region`` times :attr:`radius`).
        orientation_hist: ``(N, B_o)`` probabilities of the last read (bin ``i`` at ``2πi/B_o``).
        scale_hist: ``(N, B_s)`` probabilities over log2 scale relative to the caller's frame (the
            detector's scale, or 0); what moved past either end of it between reads is dropped (with a plan
            that reads the scale again, ``reread_scale``, a row may then sum to far less than 1 and ``scale``
            lie outside the histogram's range, tell such rows by ``scale_hist.sum(1) < 0.99``; ``scale`` and
            ``scale_confidence`` are read in the last read's own frame and still peaked there, which measures
            nothing of whether such a ``scale`` is right).
        valid: ``(N,)`` True where the inner part of the window at the caller's frame (the rings out to
            :meth:`~patchpose.PatchPoseEstimator.margin`, 64 px at scale 0 for the bundled models, of a grid
            reaching 512 px) lies inside the image at any rotation (elsewhere the image was padded as the
            estimator's border policy says; the outer rings, and the reads after the first, are not checked,
            so poses, ``valid`` True or not, depend on the padding within 512·2**frame px of a border;
            noticeably within ~250 px) and the orientation
            histogram carries an orientation (:func:`informative`: False where all its bins are equal within
            :data:`FLAT_HIST_TOLERANCE` of their mean, as the bundled models read a patch flat over the whole
            window the orientation is read in: a uniform image, or a flat region wide for that window, e.g. a
            flat disk in noise from a radius of about 100 px; the pose is still returned, its ``confidence``
            that of a uniform histogram, 3/36). So ``~valid`` is not the border's keypoints alone: those with
            ``informative(orientation_hist)`` False are flat.
    """

    orientation: np.ndarray
    scale: np.ndarray
    confidence: np.ndarray
    scale_confidence: np.ndarray
    descriptor_radius: np.ndarray
    orientation_hist: np.ndarray
    scale_hist: np.ndarray
    valid: np.ndarray

    def __repr__(self) -> str:
        k = "" if self.orientation.ndim == 1 else f", top_k={self.orientation.shape[1]}"
        return f"Poses(n={len(self)}{k}, valid={int(self.valid.sum())})"

    @property
    def radius(self) -> np.ndarray:
        """The characteristic radius in px, ``16 · 2**scale``."""
        return REFERENCE_RADIUS * np.exp2(self.scale)

    def __len__(self) -> int:
        return len(self.valid)


#: ``inputs(frames)``: the model's inputs ``(N, ...)`` at every keypoint, each read in its frame, ``frames``
#: ``(N,)`` octaves from the caller's frame
Inputs = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Reading:
    """What :func:`read` returns: the last histograms read (each in its own frame) and, per keypoint, the
    frame of the scale histogram in whole scale bins from the caller's (``shift``, so
    ``shift / bins_per_octave`` octaves)."""

    hists: dict[str, np.ndarray]
    shift: np.ndarray


def next_shift(shift: np.ndarray, scale: np.ndarray, bins_per_octave: int, frame0) -> np.ndarray:
    """The frame of the next read, in whole scale bins from the caller's frame ``frame0`` (log2, ``(N,)`` or
    a scalar), after a read at ``shift`` found log2 ``scale`` (relative to its own frame); frames stay
    within ±:data:`MAX_FRAME` octaves."""
    new = shift + np.round(scale * bins_per_octave).astype(np.int64)
    lim = np.floor((MAX_FRAME - np.abs(frame0)) * bins_per_octave)
    return np.clip(new, -lim, lim).astype(np.int64)


def shift_bins(hist: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``hist`` ``(N, B)`` with row ``i`` moved ``shift[i]`` bins up (towards higher indices); what leaves
    the histogram is dropped and zeros enter."""
    n, b = hist.shape
    src = np.arange(b)[None, :] - np.asarray(shift, np.int64)[:, None]
    ok = (src >= 0) & (src < b)
    return np.where(ok, hist[np.arange(n)[:, None], np.clip(src, 0, b - 1)], 0.0).astype(hist.dtype)


def read(
    model: PoseNet,
    plan: ReadPlan,
    inputs: Inputs,
    n: int,
    *,
    frame0=0.0,
    batch_size: int = 512,
) -> Reading:
    """Read ``n`` keypoints as ``plan`` says (the module docstring); ``inputs`` samples them in given frames
    and ``frame0`` is the caller's frame (log2, ``(n,)`` or a scalar; it bounds how far frames move)."""
    cfg = model.cfg
    bpo = cfg.scale_bins_per_octave
    shift = np.zeros(n, np.int64)
    hists: dict[str, np.ndarray] = {}
    for p in range(plan.passes):
        frame = shift / bpo
        # reads before the last need only the scale, which is all that moves the frame
        if p + 1 < plan.passes:
            hists = predict_histograms(
                model, inputs(frame), batch_size, heads=("scale",) if "scale" in cfg.heads else None
            )
            s = decode_poses(hists, k=1, scale_range=cfg.scale_range)["scale"][:, 0]
            found_in, shift = shift, next_shift(shift, s, bpo, frame0)
            continue
        # the last read: the scale again, unless the read before found the one that stands
        reread = p == 0 or plan.reread_scale or "orientation" not in cfg.heads
        if not reread:
            shift = found_in  # the frame of that scale histogram
        # the orientation in a frame of its own: ``orientation_offset`` octaves from this read's
        apart = not reread or (p > 0 and plan.orientation_offset != 0.0)
        if reread:
            hists = predict_histograms(model, inputs(frame), batch_size, heads=("scale",) if apart else None)
        if apart:
            ori = predict_histograms(
                model, inputs(frame + plan.orientation_offset), batch_size, heads=("orientation",)
            )
            hists = {**hists, **ori}
    return Reading(hists, shift)


def peak_mass(hist: np.ndarray, bins: np.ndarray, circular: bool) -> np.ndarray:
    """Probability mass of ``hist`` ``(N, B)`` within one bin of the continuous bin coordinates ``bins``
    ``(N, k)`` (the peak bin and its two neighbours; at an end of a linear histogram, two bins)."""
    n, b = hist.shape
    centre = np.rint(bins).astype(np.int64)
    total = np.zeros(bins.shape)
    rows = np.arange(n)[:, None]
    for d in (-1, 0, 1):
        j = centre + d
        if circular:
            total += hist[rows, j % b]
        else:
            ok = (j >= 0) & (j < b)
            total += np.where(ok, hist[rows, np.clip(j, 0, b - 1)], 0.0)
    return total


def informative(hist: np.ndarray) -> np.ndarray:
    """``(N,)`` bool: False where the orientation histogram ``hist`` ``(N, B)`` carries no orientation, its highest
    and lowest bins within :data:`FLAT_HIST_TOLERANCE` of its mean bin (uniform, as a flat patch reads; an
    all-zero row too)."""
    h = np.asarray(hist, np.float64)
    return (h.max(axis=1) - h.min(axis=1)) > FLAT_HIST_TOLERANCE * h.mean(axis=1)


def poses_of(
    reading: Reading, cfg, plan: ReadPlan, frame0: np.ndarray, valid: np.ndarray, top_k: int | None
) -> Poses:
    """:class:`Poses` from a :func:`read` of a model of config ``cfg`` begun at the caller's frames
    ``frame0`` ``(N,)``: every peak refined below the bin width, the scale moved back to the caller's frame;
    ``valid`` (the window inside the image) is also False where the orientation histogram is flat
    (:func:`informative`)."""
    k = top_k or 1
    h = reading.hists
    dec = decode_poses(h, k=k, scale_range=cfg.scale_range)
    nb_s, nb_o = h["scale_hist"].shape[1], h["orientation_hist"].shape[1]
    s_bins = scale_to_bin(dec["scale"], nb_s, tuple(cfg.scale_range))  # in the scale histogram's own frame
    o_bins = ori_to_bin(dec["orientation"], nb_o)
    conf = peak_mass(h["orientation_hist"], o_bins, circular=True)
    s_conf = peak_mass(h["scale_hist"], s_bins, circular=False)
    scale = dec["scale"] + (frame0 + reading.shift / cfg.scale_bins_per_octave)[:, None]
    ori = dec["orientation"]

    def shape(a: np.ndarray) -> np.ndarray:
        return a if top_k else a[:, 0]

    return Poses(
        orientation=shape(ori),
        scale=shape(scale),
        confidence=shape(conf.astype(np.float32)),
        scale_confidence=shape(s_conf.astype(np.float32)),
        descriptor_radius=shape(plan.descriptor_region * REFERENCE_RADIUS * np.exp2(scale)),
        orientation_hist=h["orientation_hist"],
        scale_hist=shift_bins(h["scale_hist"], reading.shift),
        valid=np.asarray(valid, bool) & informative(h["orientation_hist"]),
    )


def strong_candidates(poses: Poses, ratio: float = PEAK_RATIO) -> np.ndarray:
    """``(N, k)`` bool: which orientation candidates of a ``top_k=k`` read are peaks of the orientation
    histogram at least ``ratio`` times as high as its highest, as SIFT keeps its orientations (the first
    always; a bin that only fills the list for want of peaks never). Describe a keypoint once per True
    candidate: as many descriptors as its histogram has strong modes."""
    if not (isinstance(ratio, (int, float)) and 0.0 < float(ratio) <= 1.0):
        raise InputError(f"ratio must be a number in (0, 1], got {ratio!r}")
    ori = np.asarray(poses.orientation)
    if ori.ndim != 2:
        raise InputError("strong_candidates needs the candidates of a top_k read (estimate(..., top_k=k))")
    h = np.asarray(poses.orientation_hist, np.float64)
    n, b = h.shape
    if n == 0:
        return np.zeros(ori.shape, bool)
    peak = local_maxima(torch.from_numpy(h), circular=True).numpy()
    j = np.rint(ori_to_bin(ori, b)).astype(np.int64) % b
    rows = np.arange(n)[:, None]
    height = h[rows, j]
    keep = peak[rows, j] & (height >= float(ratio) * h.max(axis=1, keepdims=True) - 1e-12)
    keep[:, 0] = True
    return keep
