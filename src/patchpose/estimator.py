"""The public estimator: image + keypoints → scale and orientation (see :mod:`patchpose.conventions`).

>>> import patchpose, numpy as np
>>> est = patchpose.PatchPoseEstimator.from_pretrained()
>>> img = (np.random.default_rng(0).random((96, 96)) * 255).astype(np.uint8)
>>> out = est.estimate(img, np.array([[48.0, 48.0]]))
>>> sorted(out)[:3]
['orientation', 'orientation_hist', 'scale']
"""

from __future__ import annotations

import logging
from pathlib import Path

import cv2
import numpy as np
import torch

from .data.inputs import extract_inputs
from .data.patches import Pyramid, check_image, to_gray, window_margin
from .data.polar import polar_margin
from .errors import InputError, WeightsError, is_int_in
from .inference import decode_poses, predict_histograms, turn_average, turn_bins
from .models import PoseNet
from .weights import (
    DEFAULT_MODEL,
    MAX_PASSES,
    check_descriptor_region,
    check_orientation_offset,
    load_bundled,
    load_model,
    load_weights,
    recommended_descriptor_region,
    recommended_orientation_offset,
    recommended_passes,
)

log = logging.getLogger(__name__)

BORDER_POLICIES = ("reflect", "constant", "error")


def check_keypoints(keypoints, shape: tuple[int, int]) -> np.ndarray:
    """Validate ``(N, 2)`` xy keypoints inside an image of ``shape = (H, W)``."""
    try:
        if np.iscomplexobj(keypoints):  # a float cast would drop the imaginary part with only a warning
            raise TypeError
        kp = np.asarray(keypoints, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            "keypoints must be an (N, 2) array of real numbers (x, y pixel coordinates)"
        ) from None
    if kp.ndim != 2 or kp.shape[1] != 2:
        raise InputError(f"keypoints must be an (N, 2) array of x, y pixel coordinates, got shape {kp.shape}")
    if len(kp) == 0:
        raise InputError("keypoints is empty: give at least one (x, y) keypoint")
    if not np.isfinite(kp).all():
        raise InputError("keypoints contain NaN or infinite values")
    h, w = shape
    outside = (kp[:, 0] < -0.5) | (kp[:, 0] > w - 0.5) | (kp[:, 1] < -0.5) | (kp[:, 1] > h - 0.5)
    if outside.any():
        i = int(np.nonzero(outside)[0][0])
        raise InputError(
            f"{int(outside.sum())} keypoint(s) lie outside the {w}×{h} image, e.g. #{i} at ({kp[i, 0]:g}, {kp[i, 1]:g}); "
            "pixel centres are at integer coordinates"
        )
    return kp


def check_frame_scale(frame_scale, n: int) -> np.ndarray:
    """``(n,)`` finite log2 frame scales (zeros when None; a scalar is broadcast)."""
    if frame_scale is None:
        return np.zeros(n)
    try:
        fs = np.broadcast_to(np.asarray(frame_scale, dtype=np.float64), (n,)).copy()
    except (TypeError, ValueError):
        raise InputError(f"frame_scale must be a number or one log2 scale per keypoint ({n}), got "
                         f"{np.shape(frame_scale)}") from None  # fmt: skip
    if not np.isfinite(fs).all() or np.abs(fs).max(initial=0.0) > 12:
        raise InputError("frame_scale must be finite log2 scales within ±12 (radius 16·2**s px)")
    return fs


POLAR_BATCH = 512
#: reads per keypoint (:class:`PatchPoseEstimator`'s ``passes``)
DEFAULT_PASSES = 1


def next_shift(shift: np.ndarray, scale: np.ndarray, bins_per_octave: int, frame0: np.ndarray) -> np.ndarray:
    """The frame shift (whole scale bins from the caller's frame ``frame0``) of the next pass, after a pass
    at ``shift`` found log2 ``scale`` (relative to its own frame); frames stay within ±12 octaves."""
    new = shift + np.round(scale * bins_per_octave).astype(np.int64)
    lim = np.floor((12.0 - np.abs(frame0)) * bins_per_octave)
    return np.clip(new, -lim, lim).astype(np.int64)


#: the heads of a read of the orientation alone (in the frame ``orientation_offset`` moves it to)
ORI_HEADS = ("orientation",)


def pass_heads(cfg, last: bool):
    """The heads a read runs: all of them on the last pass; before it only the scale head, whose scale is all
    that moves the frame (the orientation head is about half of the network's time for v6 and v7)."""
    return None if last or "scale" not in cfg.heads else ("scale",)


def pass_reads(cfg, p: int, passes: int, orientation_offset: float) -> tuple[tuple | None, float | None]:
    """What pass ``p`` of ``passes`` reads: the heads it runs in its own frame (:func:`pass_heads`), and the
    octaves by which a separate read of the orientation head alone moves from that frame, or None when there
    is none (every pass but the last of two or more, or an offset of 0). One rule for
    :meth:`PatchPoseEstimator.estimate` and ``eval patchpose``'s reads of rendered views."""
    last = p + 1 == passes
    if last and p > 0 and orientation_offset != 0.0:
        return ("scale",), float(orientation_offset)
    return pass_heads(cfg, last=last), None


def _check_passes(passes) -> None:
    if not is_int_in(passes, 1, MAX_PASSES):
        raise InputError(f"passes must be an integer from 1 to {MAX_PASSES}, got {passes!r}")


def default_passes(meta: dict | None) -> int:
    """The reads per keypoint of an estimator given no ``passes``: what its weights file recommends
    (:func:`~patchpose.weights.recommended_passes`), else :data:`DEFAULT_PASSES`."""
    return recommended_passes(meta or {}) or DEFAULT_PASSES


def shift_bins(hist: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``hist`` ``(N, B)`` with row ``i`` moved ``shift[i]`` bins up (towards higher indices); what leaves
    the histogram is dropped and zeros enter."""
    n, b = hist.shape
    src = np.arange(b)[None, :] - np.asarray(shift, np.int64)[:, None]
    ok = (src >= 0) & (src < b)
    return np.where(ok, hist[np.arange(n)[:, None], np.clip(src, 0, b - 1)], 0.0).astype(hist.dtype)


def turn_image(img: np.ndarray, angle: float, border: str = "reflect") -> tuple[np.ndarray, np.ndarray]:
    """``img`` turned counter-clockwise as displayed by ``angle`` radians about its centre, on a canvas that
    holds all of it (the corners beyond the image filled as the border policy pads: mirrored, or zeros), and
    the ``2×3`` affine map from ``img``'s pixel coordinates to the turned image's (pixel centres at integers,
    :mod:`patchpose.conventions`)."""
    h, w = img.shape[:2]
    c, s = float(np.cos(angle)), float(np.sin(angle))
    nw = int(np.ceil(abs(w * c) + abs(h * s) - 1e-9))
    nh = int(np.ceil(abs(w * s) + abs(h * c) - 1e-9))
    cx, cy, ncx, ncy = (w - 1) / 2, (h - 1) / 2, (nw - 1) / 2, (nh - 1) / 2
    # x' = c·x + s·y + tx, y' = −s·x + c·y + ty: counter-clockwise as displayed, since y points down
    m = np.array([[c, s, ncx - c * cx - s * cy], [-s, c, ncy + s * cx - c * cy]])
    mode = cv2.BORDER_CONSTANT if border == "constant" else cv2.BORDER_REFLECT_101
    turned = cv2.warpAffine(img, m, (nw, nh), flags=cv2.INTER_LINEAR, borderMode=mode)
    return turned, m


class PatchPoseEstimator:
    """Estimates the characteristic scale (log2) and orientation (radians, CCW as displayed) of keypoints.

    Args:
        model: a :class:`~patchpose.models.PoseNet` with both heads.
        device: ``"cpu"`` (default) or ``"cuda"``.
        batch_size: inputs per forward pass (inference is chunked: any number of keypoints fits).
            None picks what measured fastest on our 2-core CPUs: 32 for Cartesian patches,
            :data:`POLAR_BATCH` for log-polar grids.
        border: what to do where a keypoint's window reaches outside the image: ``"reflect"`` (default;
            mirror the image, and report ``valid=False`` for those keypoints), ``"constant"`` (zeros), or
            ``"error"`` (raise :class:`~patchpose.errors.InputError`).
        rotations: rotation test-time augmentation: 1 (off, default), 2 or 4 quarter turns averaged;
            4 is more accurate (docs/model_card.md) and 4× slower. A log-polar model is exactly equivariant to
            quarter turns, so for it this changes nothing: see ``turns``.
        turns: *turn averaging*, 1 (off, default) to the orientation bins in a quarter turn (9 for 36): the model
            reads every keypoint ``turns`` times, the image turned about its centre by whole orientation bins
            spread over a quarter turn (:func:`~patchpose.inference.turn_bins`; 3 turns: 0°, 30°, 60°), each
            read's orientation histogram turned back, and the orientation histograms averaged (on the last
            pass; the scale stays the upright read's). It averages out how a turn resamples the pixels, which
            decides between the two peaks of an ambiguous orientation histogram; each turn costs about half a
            read (the orientation head alone) plus turning the image (``docs/model_card.md``, "Turn averaging").
        passes: how many times the model reads each keypoint (default: what the weights file recommends, its
            ``passes`` metadata, else 1; :func:`~patchpose.weights.recommended_passes`). Pass ``p + 1`` reads it again
            in a frame moved to the scale pass ``p`` found, rounded to whole scale bins, so that the
            characteristic structure sits in the middle of the model's window; scale and orientation come
            from the last pass. A pass before the last runs the scale head alone (:func:`pass_heads`), so
            2 passes cost about 1.5× one (about 1.85× with an ``orientation_offset``, below). patchpose-v9, the
            default, recommends 2: it matches real photos better with its own pose when read twice (the val
            photos), and is still about as fast as SIFT detection;
            on the rendered PatchPose pairs one read does a little better (``docs/model_card.md``,
            "patchpose-v9"). The other bundled models read once by default (v7: 2
            passes were a little worse at matching on the val photos; with patchpose-v2 they hurt on real
            photos).
        descriptor_region: the half-width of a descriptor patch cut at our pose, in units of our
            characteristic radius (``16 · 2**σ`` px): what the matching pipeline (:mod:`patchpose.matching`),
            ``patchpose match`` and :func:`~patchpose.integrations.opencv.sift_size_factor` use. Default:
            what the weights file was calibrated with (its ``descriptor_region`` metadata,
            :func:`~patchpose.weights.recommended_descriptor_region`), else 1. It changes no pose.
        orientation_offset: octaves between the frame of the scale found and the frame the orientation is
            read in, on the last pass when there are 2 or more (a single read has no scale found yet, so it
            reads both in the caller's frame). Negative: a smaller frame, so the orientation rests on content
            nearer the keypoint, which a change of viewpoint distorts less. Default: what the weights file
            recommends (its ``orientation_offset`` metadata,
            :func:`~patchpose.weights.recommended_orientation_offset`), else 0 (both heads in one frame). A
            non-zero offset costs one more sampling of the grid (``docs/model_card.md``, "The orientation
            frame").
    """

    def __init__(
        self,
        model: PoseNet,
        device: str = "cpu",
        batch_size: int | None = None,
        border: str = "reflect",
        meta: dict | None = None,
        rotations: int = 1,
        passes: int | None = None,
        turns: int = 1,
        descriptor_region: float | None = None,
        orientation_offset: float | None = None,
    ) -> None:
        if border not in BORDER_POLICIES:
            raise InputError(f"border must be one of {BORDER_POLICIES}, got {border!r}")
        if set(model.cfg.heads) != {"scale", "orientation"}:
            raise InputError(f"the estimator needs a model with both heads, this one has {model.cfg.heads}")
        try:
            self.device = torch.device(device)
            self.model = model.to(self.device).eval()
        except (RuntimeError, AssertionError, TypeError) as e:  # unknown device, or no CUDA in this build
            raise InputError(
                f"device {device!r} cannot be used here ({str(e).splitlines()[0][:120]})"
            ) from None
        if rotations not in (1, 2, 4):
            raise InputError(f"rotations must be 1, 2 or 4, got {rotations!r}")
        if passes is None:
            passes = default_passes(meta)
        _check_passes(passes)
        turn_bins(turns, model.cfg.num_ori_bins)  # checks turns
        if batch_size is None:
            batch_size = POLAR_BATCH if model.cfg.is_polar else 32
        if not is_int_in(batch_size, 1):
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size, self.border, self.meta, self.rotations, self.passes = (
            int(batch_size),
            border,
            meta or {},
            rotations,
            int(passes),
        )
        self.turns = int(turns)
        self.descriptor_region = (
            check_descriptor_region(descriptor_region)
            if descriptor_region is not None
            else recommended_descriptor_region(self.meta) or 1.0
        )
        self.orientation_offset = (
            check_orientation_offset(orientation_offset)
            if orientation_offset is not None
            else recommended_orientation_offset(self.meta) or 0.0
        )

    @classmethod
    def from_pretrained(cls, name: str = DEFAULT_MODEL, **kwargs) -> PatchPoseEstimator:
        """The bundled model (no network access; checksum verified)."""
        model, meta = load_bundled(name)
        return cls(model, meta=meta, **kwargs)

    @classmethod
    def load(cls, weights: str | Path | None = None, backend: str = "torch", **kwargs) -> PatchPoseEstimator:
        """A weights file or the name of a bundled model if given, else the default bundled model.

        ``backend``: ``"torch"`` (default) or ``"onnx"`` (onnxruntime on CPU; ``weights`` may then also be
        an ``.onnx`` file written by ``patchpose export onnx``; see :mod:`patchpose.onnx_backend`)."""
        if backend not in ("torch", "onnx"):
            raise InputError(f"backend must be 'torch' or 'onnx', got {backend!r}")
        if backend == "onnx":
            from .onnx_backend import OnnxPoseNet, export_bytes

            if weights and str(weights).endswith(".onnx"):
                if not Path(weights).is_file():
                    raise WeightsError(f"ONNX file not found: {weights}")
                net = OnnxPoseNet(weights)  # it carries its weights' name, reads and descriptor window
                return cls(net, meta={"name": Path(weights).stem, **net.meta, "backend": "onnx"}, **kwargs)
            base = cls.load(weights)
            return cls(OnnxPoseNet(export_bytes(base.model)), meta={**base.meta, "backend": "onnx"}, **kwargs)
        model, meta = load_model(weights)
        return cls(model, meta=meta, **kwargs)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs) -> PatchPoseEstimator:
        """A patchpose safetensors file (``patchpose export`` writes them)."""
        model, meta = load_weights(path)
        return cls(model, meta=meta, **kwargs)

    @property
    def cfg(self):
        return self.model.cfg

    def margin(self) -> float:
        """Distance (px) from the border beyond which every window, at any rotation, lies inside the image
        (for a log-polar grid: every ring up to the largest scale bin's radius)."""
        if self.cfg.is_polar:
            return polar_margin(self.cfg.polar_grid)
        return window_margin(self.cfg.windows)

    def __repr__(self) -> str:
        return (
            f"PatchPoseEstimator(model={self.meta.get('name', 'custom')}, device={self.device}, "
            f"border={self.border}, rotations={self.rotations}, passes={self.passes}, turns={self.turns}, "
            f"descriptor_region={self.descriptor_region:g}, orientation_offset={self.orientation_offset:g})"
        )

    def extract(self, image, keypoints, frame_scale=None) -> tuple[np.ndarray, np.ndarray]:
        """Model inputs ``(N, C, PS, PS)`` (or ``(N, C, rings, angles)`` for a log-polar model) at the
        keypoints (upright; at scale 0, or at ``frame_scale``), and the ``valid`` mask (the window would lie
        inside the image at any rotation: :meth:`margin`, √2 times the upright window's half-width)."""
        img = check_image(image)
        kp = check_keypoints(keypoints, img.shape[:2])
        return self._extract(img, kp, check_frame_scale(frame_scale, len(kp)), self._pyramid(img))

    def _extract(
        self, img: np.ndarray, kp: np.ndarray, fs: np.ndarray, pyramid: Pyramid, check_border: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`extract` on inputs already checked, from ``pyramid`` (``img``'s)."""
        h, w = img.shape[:2]
        m = self.margin() * np.exp2(fs)
        valid = (
            (kp[:, 0] >= m - 0.5)
            & (kp[:, 0] <= w - 0.5 - m)
            & (kp[:, 1] >= m - 0.5)
            & (kp[:, 1] <= h - 0.5 - m)
        )
        if self.border == "error" and check_border and not valid.all():
            i = int(np.nonzero(~valid)[0][0])
            raise InputError(
                f"{int((~valid).sum())} keypoint(s) are closer than {m[i]:.0f} px to the image border (e.g. #{i} "
                f"at ({kp[i, 0]:g}, {kp[i, 1]:g})); use border='reflect' or drop them"
            )
        patches = extract_inputs(
            pyramid,
            kp,
            fs,
            0.0,
            self.cfg.patch_size,
            self.cfg.windows,
            self.cfg.polar_grid,
            border="constant" if self.border == "constant" else "reflect",
        )
        return patches, valid

    def _turned_inputs(self, src: np.ndarray, kp: np.ndarray, fs: np.ndarray, bins: int) -> np.ndarray:
        """The model's inputs at the keypoints ``kp`` of ``src`` (at frames ``fs``) with the image turned
        counter-clockwise by ``bins`` orientation bins (:func:`turn_image`), read upright where they went."""
        turned, m = turn_image(src, 2 * np.pi * bins / self.cfg.num_ori_bins, self.border)
        patches, _ = self._extract(turned, kp @ m[:, :2].T + m[:, 2], fs, self._pyramid(turned), False)
        return patches

    def _pyramid(self, img: np.ndarray) -> Pyramid:
        src = (
            to_gray(img)
            if self.cfg.color == "gray"
            else (img if img.ndim == 3 else np.repeat(img[..., None], 3, 2))
        )
        return Pyramid(src)

    def estimate(
        self,
        image,
        keypoints,
        top_k: int | None = None,
        refine: bool = True,
        frame_scale=None,
        passes: int | None = None,
        turns: int | None = None,
    ) -> dict[str, np.ndarray]:
        """Scale and orientation of each keypoint.

        Args:
            image: ``H×W×3`` uint8 RGB or ``H×W`` gray (uint8, or float in [0, 1]).
            keypoints: ``(N, 2)`` float ``x, y`` pixel coordinates (pixel centres at integers).
            top_k: None for one pose per keypoint; ``k`` for ``(N, k)`` candidates, strongest first.
            refine: sub-bin refinement of each peak (parabola through the peak and its neighbours); False
                gives the plain argmax bin centres.
            frame_scale: None (default: the model reads every keypoint at scale 0), or a log2 scale per
                keypoint (or one for all), e.g. a detector's: the model then reads the keypoint at that
                scale, so the orientation is the one of the detector's region, and the returned ``scale`` is
                ``frame_scale`` plus the model's correction. With SIFT keypoints, keeping SIFT's scale and
                taking our orientation in its frame matches far better than our orientation at scale 0
                (``docs/results.md``, rotation matching). With ``passes`` > 1 the later passes move
                from that frame to the scale the model finds; give ``passes=1`` to read the orientation
                in the detector's frame only.
            passes: None (the estimator's ``passes``) or how many times to read each keypoint (see the
                class).
            turns: None (the estimator's ``turns``) or how many turned copies of the image to read the
                orientation from and average (see the class).

        Returns:
            ``orientation`` ``(N,)`` or ``(N, k)`` radians in ``[0, 2π)``; ``scale`` log2 scale, same shape;
            ``orientation_hist`` ``(N, B_o)`` and ``scale_hist`` ``(N, B_s)`` probabilities of the last pass
            (the model's bins: 36 and 13 over [−2, 2] for the paper's layout, 25 over [−4, 4] for
            patchpose-v2 and v6; scale bins relative to ``frame_scale``); ``valid`` ``(N,)`` True where the
            window at the caller's frame (the first pass) lies inside the image at any rotation (the
            border policy's margin, :meth:`margin`).
        """
        n_bins = min(self.cfg.num_scale_bins, self.cfg.num_ori_bins)
        if top_k is not None and not is_int_in(top_k, 1, n_bins):
            raise InputError(f"top_k must be None or an integer from 1 to {n_bins} (the bins), got {top_k!r}")
        passes = self.passes if passes is None else passes
        _check_passes(passes)
        bins = turn_bins(self.turns if turns is None else turns, self.cfg.num_ori_bins)
        img = check_image(image)
        kp = check_keypoints(keypoints, img.shape[:2])
        fs0 = check_frame_scale(frame_scale, len(kp))
        pyramid = self._pyramid(img)
        bpo = self.cfg.scale_bins_per_octave
        shift = np.zeros(len(kp), np.int64)  # whole scale bins between the first frame and the current one
        for p in range(passes):
            # the border policy and ``valid`` concern the caller's frame (pass 1); later passes read
            # beyond the border the way the policy's padding does
            frame = fs0 + shift / bpo
            patches, v = self._extract(img, kp, frame, pyramid, check_border=p == 0)
            if p == 0:
                valid = v
            last = p + 1 == passes
            heads, move = pass_reads(self.cfg, p, passes, self.orientation_offset)
            hists = predict_histograms(
                self.model, patches, self.batch_size, rotations=self.rotations, heads=heads
            )
            ori_frame = frame if move is None else frame + move  # the orientation's own frame
            if move is not None:
                ori_patches, _ = self._extract(img, kp, ori_frame, pyramid, check_border=False)
                hists = {
                    **hists,
                    **predict_histograms(
                        self.model, ori_patches, self.batch_size, rotations=self.rotations, heads=ORI_HEADS
                    ),
                }
            # turn averaging: the last read's orientation; the scale stays the upright read's
            if last and len(bins) > 1:
                src = to_gray(img) if self.cfg.color == "gray" else img  # a third of the pixels to turn
                hists = turn_average(
                    self.model,
                    hists,
                    lambda b, src=src, f=ori_frame: self._turned_inputs(src, kp, f, b),
                    bins,
                    self.batch_size,
                    self.rotations,
                )
            if p + 1 < passes:  # move the frame to the scale found, in whole bins
                s = decode_poses(hists, k=1, refine=True, scale_range=self.cfg.scale_range)["scale"][:, 0]
                shift = next_shift(shift, s, bpo, fs0)
        poses = decode_poses(hists, k=top_k or 1, refine=refine, scale_range=self.cfg.scale_range)
        poses["scale"] = poses["scale"] + (fs0 + shift / bpo)[:, None]
        out = {
            "orientation": poses["orientation"] if top_k else poses["orientation"][:, 0],
            "scale": poses["scale"] if top_k else poses["scale"][:, 0],
            "orientation_hist": hists["orientation_hist"],
            # in the first frame's bins (what moved past either end of the histogram is dropped)
            "scale_hist": shift_bins(hists["scale_hist"], shift),
            "valid": valid,
        }
        return out


def as_estimator(estimator=None):
    """An estimator from ``None`` (the bundled default), a bundled model's name or a weights path, or a
    :class:`~patchpose.PatchPoseEstimator` itself."""
    if estimator is None or isinstance(estimator, (str, Path)):
        return PatchPoseEstimator.load(estimator)
    if not isinstance(estimator, PatchPoseEstimator):
        raise InputError(
            "estimator must be a PatchPoseEstimator, a bundled model's name or a weights file, got "
            f"{type(estimator).__name__}"
        )
    return estimator
