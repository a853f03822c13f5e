"""The public estimator: image + keypoints → scale and orientation (see :mod:`patchpose.conventions`).

>>> import patchpose, numpy as np
>>> est = patchpose.PatchPoseEstimator.from_pretrained()
>>> img = (np.random.default_rng(0).random((96, 96)) * 255).astype(np.uint8)
>>> poses = est.estimate(img, np.array([[48.0, 48.0]]))
>>> poses.orientation.shape, poses.scale.shape
((1,), (1,))
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Union

import numpy as np
import torch
from numpy.typing import ArrayLike

from . import checks
from .data.inputs import extract_inputs
from .data.patches import Pyramid, check_image, gray_codes, window_margin
from .data.polar import PolarReads, polar_margin
from .errors import InputError, WeightsError, is_int_in
from .models import PoseNet
from .reading import MAX_FRAME, Poses, ReadPlan, poses_of, read
from .recipes import MODELS
from .weights import DEFAULT_MODEL, load_bundled, load_model, one_line

log = logging.getLogger(__name__)

BORDER_POLICIES = ("reflect", "constant", "error")
_POOL_LOCK = threading.Lock()  # estimators' reading threads are made one at a time


def check_keypoints(keypoints, shape: tuple[int, int], allow_empty: bool = False) -> np.ndarray:
    """Validate ``(N, 2)`` xy keypoints (a numpy array, a sequence or a torch tensor) inside an image of
    ``shape = (H, W)``; ``allow_empty``: no keypoints pass, as ``(0, 2)`` (else it is an error). No keypoints
    may also come as an empty list or any empty numeric 1-D array (``[]``, ``np.array([])``, shape ``(0,)``)."""
    # booleans, strings, complex numbers and objects are no coordinates (a float cast would read True as 1)
    kp = checks.real_array(keypoints, "keypoints", "an (N, 2) array of real numbers (x, y pixel coordinates)")
    if kp.shape == (0,):  # [] or np.array([]): no keypoints, whatever shape the caller's empty list took
        kp = kp.reshape(0, 2)
    if kp.ndim != 2 or kp.shape[1] != 2:
        raise InputError(f"keypoints must be an (N, 2) array of x, y pixel coordinates, got shape {kp.shape}")
    if len(kp) == 0 and not allow_empty:
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


def check_detector_scale(detector_scale, n: int) -> np.ndarray:
    """``(n,)`` finite log2 scales within ±:data:`~patchpose.reading.MAX_FRAME` (zeros for None; a scalar is
    broadcast)."""
    if detector_scale is None:
        return np.zeros(n)
    # booleans, strings and complex values are not numbers (checks.real_array); tensors read as values; one value
    # in an array of one is one value for every keypoint, as a number is
    what = f"finite log2 scales within ±{MAX_FRAME:g}, radius 16·2**s px"
    values = checks.real_array(detector_scale, "detector_scale", f"a number or {n} numbers ({what})")
    if values.size == 1:
        values = values.reshape(())
    return checks.per_point(values, n, "detector_scale", what, -MAX_FRAME, MAX_FRAME)


#: inputs per forward pass of a log-polar model (fastest measured on our 2-core CPUs); 32 for a Cartesian one
POLAR_BATCH = 512
#: keypoints read together by :meth:`PatchPoseEstimator.estimate` (rounded up to a multiple of the batch
#: size): each chunk's inputs, sampling buffers and histograms (about 22 kB per keypoint for patchpose-v9,
#: so some 45 MB) are freed before the next, so memory stays bounded at any number of keypoints
READ_CHUNK = 2048


def _is_cpu(device) -> bool:
    """Whether ``device`` names the CPU as torch reads it (``"cpu"``, ``"cpu:0"``, ``torch.device("cpu")``); a string
    torch does not take is not."""
    try:
        return torch.device(device).type == "cpu"
    except (RuntimeError, TypeError, ValueError):
        return False


class PatchPoseEstimator:
    """Estimates the characteristic scale (log2) and orientation (radians, CCW as displayed) of keypoints.

    >>> est = PatchPoseEstimator.from_pretrained()          # the default bundled model, on the CPU
    >>> poses = est.estimate(image, keypoints)              # doctest: +SKIP

    How the model reads each keypoint is its :class:`~patchpose.reading.ReadPlan` (:attr:`plan`), stored in
    its weights file; :meth:`with_plan` changes it.

    Args:
        model: a :class:`~patchpose.models.PoseNet` with both heads.
        meta: the weights file's metadata (its name and read plan).
        plan: how to read the model; default: the plan ``meta`` states.
        device: ``"cpu"`` (default) or ``"cuda"``.
        batch_size: inputs per forward pass (inference is chunked: any number of keypoints fits); default
            :data:`POLAR_BATCH` for log-polar models, 32 for Cartesian ones.
        chunk_size: keypoints read together (:data:`READ_CHUNK` by default), rounded up to a multiple of
            ``batch_size`` so that every forward pass sees the same inputs as an unchunked read (the result
            does not depend on it); only the result is kept per keypoint, so memory is bounded by the chunk.
            On the CPU, as many chunks as the calling thread has torch threads (``torch.set_num_threads``) are
            read at once, side by side, each on one torch thread (smaller chunks when the keypoints do not fill
            that many); the answer is one thread's, bit for bit.
        border: where a keypoint's window reaches outside the image: ``"reflect"`` (default; mirror the
            image), ``"constant"`` (zeros), or ``"error"`` (:class:`~patchpose.errors.InputError`); the first
            two report ``valid=False`` where the first read's window within :meth:`margin` crosses the border,
            and ``"error"`` refuses those keypoints. Only that is checked: the grid's outer rings (to 512 px at
            scale 0) and the later reads of a two-read plan read padded pixels without a flag.
    """

    def __init__(
        self,
        model: PoseNet,
        meta: dict | None = None,
        *,
        plan: ReadPlan | None = None,
        device: str = "cpu",
        batch_size: int | None = None,
        border: str = "reflect",
        chunk_size: int = READ_CHUNK,
    ) -> None:
        if border not in BORDER_POLICIES:
            raise InputError(f"border must be one of {BORDER_POLICIES}, got {border!r}")
        if set(model.cfg.heads) != {"scale", "orientation"}:
            raise InputError(f"the estimator needs a model with both heads, this one has {model.cfg.heads}")
        if plan is not None and not isinstance(plan, ReadPlan):
            raise InputError(f"plan must be a patchpose.ReadPlan, got {type(plan).__name__}")
        try:
            self.device = torch.device(device)
            if self.device.type == "meta":  # no data: every read would fail inside torch
                raise InputError("device 'meta' holds no weights: the estimator needs 'cpu' or 'cuda'")
            self.model = model.to(self.device).eval()
        except (RuntimeError, AssertionError, TypeError) as e:  # unknown device, or no CUDA in this build
            raise InputError(
                f"device {device!r} cannot be used here: the estimator runs on 'cpu' or 'cuda' ('cuda:N' for the "
                f"N-th GPU, where this torch has CUDA) (torch: {one_line(e, 500)})"
            ) from None
        if batch_size is None:
            batch_size = POLAR_BATCH if model.cfg.is_polar else 32
        if not is_int_in(batch_size, 1):
            raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not is_int_in(chunk_size, 1):
            raise InputError(f"chunk_size must be a positive integer, got {chunk_size!r}")
        self.batch_size, self.border, self.meta = int(batch_size), border, dict(meta or {})
        self.chunk_size = -(-int(chunk_size) // self.batch_size) * self.batch_size
        self.plan = plan if plan is not None else ReadPlan.from_meta(self.meta)
        self._fingerprint: str | None = None

    @classmethod
    def from_pretrained(cls, name: str | None = None, device: str = "cpu") -> PatchPoseEstimator:
        """A bundled model (default: :data:`~patchpose.weights.DEFAULT_MODEL`), checksum verified; no
        network access."""
        model, meta = load_bundled(name or DEFAULT_MODEL)
        return cls(model, meta, device=device)

    @classmethod
    def load(
        cls,
        weights: str | Path | None = None,
        *,
        backend: str = "torch",
        device: str = "cpu",
        plan: ReadPlan | None = None,
        batch_size: int | None = None,
        border: str = "reflect",
        chunk_size: int = READ_CHUNK,
    ) -> PatchPoseEstimator:
        """A bundled model's name or a weights file (``.safetensors``; with ``backend="onnx"`` also an
        ``.onnx`` file written by ``patchpose export onnx``), else the default bundled model.

        ``backend``: ``"torch"`` (default) or ``"onnx"`` (onnxruntime on the CPU,
        :mod:`patchpose.onnx_backend`: ``device`` must be the CPU, ``"cpu"`` or ``"cpu:0"``). The other
        arguments are the constructor's."""
        if backend not in ("torch", "onnx"):
            raise InputError(f"backend must be 'torch' or 'onnx', got {backend!r}")
        if backend == "onnx" and not _is_cpu(device):  # onnxruntime's CPU provider: any other was ignored
            raise InputError(
                f"backend='onnx' runs on the CPU only (onnxruntime's CPU provider): device must be 'cpu', got "
                f"{device!r}; for a GPU use backend='torch' with device='cuda'"
            )
        kwargs = {"plan": plan, "batch_size": batch_size, "border": border, "chunk_size": chunk_size}
        if backend == "onnx":
            from .onnx_backend import OnnxPoseNet, export_bytes

            if weights and str(weights).lower().endswith(".onnx"):
                if not Path(weights).is_file():
                    raise WeightsError(f"ONNX file not found: {weights}")
                net = OnnxPoseNet(weights)  # it carries its weights' name and read plan
                return cls(net, {"name": Path(weights).stem, **net.meta, "backend": "onnx"}, **kwargs)
            model, meta = load_model(weights)
            return cls(OnnxPoseNet(export_bytes(model)), {**meta, "backend": "onnx"}, **kwargs)
        model, meta = load_model(weights)
        return cls(model, meta, device=device, **kwargs)

    def with_plan(self, **changes: float | bool) -> PatchPoseEstimator:
        """An estimator on the same network read with this plan changed (:meth:`ReadPlan.replace`), e.g.
        ``est.with_plan(passes=1)``."""
        return PatchPoseEstimator(
            self.model,
            self.meta,
            plan=self.plan.replace(**changes),
            device=str(self.device),
            batch_size=self.batch_size,
            border=self.border,
            chunk_size=self.chunk_size,
        )

    @property
    def cfg(self):
        """The network's :class:`~patchpose.models.ModelConfig`."""
        return self.model.cfg

    @property
    def name(self) -> str:
        """The weights' name (``"custom"`` when the file gives none)."""
        return str(self.meta.get("name", "custom"))

    @property
    def fingerprint(self) -> str:
        """The first 16 hex digits of the SHA-256 of the network's weights (each tensor's name, shape, dtype and
        bytes, in order; an ONNX model's file bytes): what finished outputs record beside :attr:`name`, so that two
        models of one name (two runs of one recipe, or two files without a name) are not taken for each other."""
        if self._fingerprint is None:
            digest = getattr(self.model, "digest", None)
            if digest is None:
                h = hashlib.sha256()
                for key, t in self.model.state_dict().items():
                    t = t.detach().cpu().contiguous()
                    h.update(f"{key}:{tuple(t.shape)}:{t.dtype};".encode())
                    h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
                digest = h.hexdigest()
            self._fingerprint = digest[:16]
        return self._fingerprint

    def margin(self) -> float:
        """Distance (px) from the border beyond which the checked part of the window, at any rotation, lies
        inside the image at scale 0 (times ``2**frame`` in another frame): for a log-polar grid, the rings up to
        scale +2 (64 px; :func:`~patchpose.data.polar.polar_margin`), not its outer rings (to 512 px for the
        bundled models), which near the border read padded pixels with ``valid`` True."""
        if self.cfg.is_polar:
            return polar_margin(self.cfg.polar_grid)
        return window_margin(self.cfg.windows)

    def __repr__(self) -> str:
        return (
            f"PatchPoseEstimator(model={self.name}, device={self.device}, border={self.border}, "
            f"plan={self.plan})"
        )

    @property
    def max_top_k(self) -> int:
        """The largest ``top_k`` :meth:`estimate` takes: the fewer of the model's scale and orientation bins."""
        return min(self.cfg.num_scale_bins, self.cfg.num_ori_bins)

    def estimate(
        self,
        image: np.ndarray,
        keypoints: ArrayLike,
        *,
        top_k: int | None = None,
        detector_scale: ArrayLike | None = None,
    ) -> Poses:
        """Scale and orientation of each keypoint.

        Args:
            image: ``H×W×3`` uint8 RGB or ``H×W`` gray (uint8, or float in [0, 1]).
            keypoints: ``(N, 2)`` ``x, y`` pixel coordinates (pixel centres at integers).
            top_k: None for one pose per keypoint; ``k`` for ``(N, k)`` candidates, strongest first.
            detector_scale: None (every keypoint is first read at scale 0), or a log2 scale per keypoint (or
                one for all), e.g. a detector's: the first read is then in that frame and the returned scale
                is relative to 0 as always.

        Returns:
            :class:`~patchpose.reading.Poses`.
        """
        n_bins = self.max_top_k
        if top_k is not None and not is_int_in(top_k, 1, n_bins):
            raise InputError(f"top_k must be None or an integer from 1 to {n_bins} (the bins), got {top_k!r}")
        img, kp, fs0 = self._checked(image, keypoints, detector_scale)
        if len(kp) == 0:
            return self._no_poses(top_k)
        valid = self._valid(img.shape[:2], kp, fs0)
        pyramid = self._pyramid(img)
        n, out = len(kp), {}
        workers = self._workers()
        # chunks whole batches long (so every forward pass sees what an unchunked read's does), as many as
        # there are workers when that is fewer than chunk_size keypoints each
        per_worker = -(-n // workers)
        size = min(self.chunk_size, -(-per_worker // self.batch_size) * self.batch_size)
        parts = [slice(lo, min(lo + size, n)) for lo in range(0, n, size)]

        def read_part(part: slice) -> Poses:
            kp_c, fs_c = kp[part], fs0[part]
            reading = read(
                self.model,
                self.plan,
                self._inputs(pyramid, kp_c, fs_c),
                len(kp_c),
                frame0=fs_c,
                batch_size=self.batch_size,
            )
            return poses_of(reading, self.cfg, self.plan, fs_c, valid[part], top_k)

        # chunk by chunk, each written into the result at once: nothing else per keypoint outlives its chunk;
        # on several CPU threads, chunks are read side by side (sampling and the network release the GIL),
        # each on one torch thread (two threads' ops each on every core run slower than one after another)
        threads = torch.get_num_threads()
        pool = self._read_pool(workers) if workers > 1 and len(parts) > 1 else None
        # Executor.map lets go of each chunk's result once it is taken, and cancels what has not started when
        # closed (an error, an interrupt)
        done = pool.map(read_part, parts) if pool is not None else map(read_part, parts)
        try:
            for part, poses in zip(parts, done):
                for name in Poses.__dataclass_fields__:
                    v = getattr(poses, name)
                    if name not in out:
                        out[name] = np.empty((n, *v.shape[1:]), v.dtype)
                    out[name][part] = v
        finally:
            if pool is not None:
                done.close()
                # a worker's torch.set_num_threads(1) also set the count that threads started later begin
                # with: back to the caller's (its own count is its own)
                torch.set_num_threads(threads)
        return Poses(**out)

    def _read_pool(self, workers: int) -> ThreadPoolExecutor:
        """The threads that read chunks side by side, each on one torch thread; kept from call to call (fresh
        threads cost 3–8 % of a read of 2,048 keypoints), made anew for another number of workers or in a
        forked process (which has none of its parent's threads), never copied with the estimator. A pool
        replaced is not shut down: a call still using it finishes, and its idle threads end with it."""
        with _POOL_LOCK:
            held = self.__dict__.get("_pool")
            if held is None or held[:2] != (workers, os.getpid()):
                pool = ThreadPoolExecutor(
                    workers,
                    thread_name_prefix="patchpose-read",
                    initializer=torch.set_num_threads,
                    initargs=(1,),
                )
                held = self.__dict__["_pool"] = (workers, os.getpid(), pool)
            return held[2]

    def __getstate__(self) -> dict:
        """Everything but the reading threads (copy, deepcopy and pickle all come through here)."""
        return {k: v for k, v in self.__dict__.items() if k != "_pool"}

    def _workers(self) -> int:
        """Chunks read at once: the calling thread's torch threads on the CPU; one on a GPU, and for
        onnxruntime (its session has threads of its own)."""
        if self.device.type != "cpu" or not isinstance(self.model, PoseNet):
            return 1
        return max(1, torch.get_num_threads())

    def _no_poses(self, top_k: int | None) -> Poses:
        """The :class:`Poses` of no keypoints (an image without detections), shaped as for N keypoints."""
        shape = (0,) if top_k is None else (0, top_k)
        empty = np.zeros(shape)
        return Poses(
            orientation=empty,
            scale=empty,
            confidence=empty.astype(np.float32),
            scale_confidence=empty.astype(np.float32),
            descriptor_radius=empty,
            orientation_hist=np.zeros((0, self.cfg.num_ori_bins), np.float32),
            scale_hist=np.zeros((0, self.cfg.num_scale_bins), np.float32),
            valid=np.zeros(0, bool),
        )

    def extract(
        self, image: np.ndarray, keypoints: ArrayLike, *, detector_scale: ArrayLike | None = None
    ) -> np.ndarray:
        """The model's inputs of the first read (``(N, C, rings, angles)`` for a log-polar model,
        ``(N, C, PS, PS)`` for a Cartesian one), checked as :meth:`estimate` checks its arguments: what
        the network sees, for inspection and timing."""
        img, kp, fs0 = self._checked(image, keypoints, detector_scale)
        return self._extract(self._pyramid(img), kp, fs0)

    def _checked(self, image, keypoints, detector_scale) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The image (for a gray model its gray codes, :func:`~patchpose.data.patches.gray_codes`: never a
        float copy of every channel), ``(N, 2)`` keypoints (N may be 0) and ``(N,)`` first-read frames,
        checked."""
        img = gray_codes(image) if self.cfg.color == "gray" else check_image(image)
        kp = check_keypoints(keypoints, img.shape[:2], allow_empty=True)
        return img, kp, check_detector_scale(detector_scale, len(kp))

    def _valid(self, shape: tuple[int, int], kp: np.ndarray, fs: np.ndarray) -> np.ndarray:
        """``(N,)`` True where the window's checked part (:meth:`margin`) at the first read's frames ``fs`` lies
        inside an image of ``shape`` at any rotation; with ``border="error"`` a keypoint outside that is an
        :class:`InputError`. Later reads' frames are not checked."""
        h, w = shape
        m = self.margin() * np.exp2(fs)
        valid = (
            (kp[:, 0] >= m - 0.5)
            & (kp[:, 0] <= w - 0.5 - m)
            & (kp[:, 1] >= m - 0.5)
            & (kp[:, 1] <= h - 0.5 - m)
        )
        if self.border == "error" and not valid.all():
            i = int(np.nonzero(~valid)[0][0])
            raise InputError(
                f"{int((~valid).sum())} keypoint(s) are closer than {m[i]:.0f} px to the image border (e.g. #{i} "
                f"at ({kp[i, 0]:g}, {kp[i, 1]:g})); use border='reflect' or drop them"
            )
        return valid

    def _extract(self, pyramid: Pyramid, kp: np.ndarray, fs: np.ndarray) -> np.ndarray:
        """The model's inputs at the keypoints ``kp``, upright, in the frames ``fs`` (log2)."""
        return extract_inputs(
            pyramid,
            kp,
            fs,
            0.0,
            self.cfg.patch_size,
            self.cfg.windows,
            self.cfg.polar_grid,
            border="constant" if self.border == "constant" else "reflect",
        )

    def _inputs(self, pyramid: Pyramid, kp: np.ndarray, fs: np.ndarray):
        """``inputs(frames)`` for :func:`~patchpose.reading.read`: the model's inputs at ``kp`` in frames
        ``fs + frames``; a log-polar model's reads share the rings they have in common
        (:class:`~patchpose.data.polar.PolarReads`)."""
        if self.cfg.is_polar:
            border = "constant" if self.border == "constant" else "reflect"
            return PolarReads(pyramid, kp, fs, self.cfg.polar_grid, border)
        return lambda frames: self._extract(pyramid, kp, fs + frames)

    def _pyramid(self, img: np.ndarray) -> Pyramid:
        """The pyramid the model reads of :meth:`_checked`'s image: compact for a gray model (half the
        memory, sampled faster), float RGB for a colour one."""
        if self.cfg.color == "gray":
            return Pyramid.of_codes(img)
        return Pyramid(img if img.ndim == 3 else np.repeat(img[..., None], 3, 2))


#: what the integrations accept as an estimator: one, a bundled model's name, a weights file, or None (the default)
EstimatorLike = Union["PatchPoseEstimator", str, Path, None]


def as_estimator(estimator: EstimatorLike = None, use: str = "estimate") -> PatchPoseEstimator:
    """An estimator from ``None`` (the bundled model :data:`patchpose.recipes.MODELS` names for ``use``), a bundled
    model's name or a weights path, or a :class:`~patchpose.PatchPoseEstimator` itself."""
    if estimator is None:
        estimator = MODELS[use]
    if isinstance(estimator, (str, Path)):
        return PatchPoseEstimator.load(estimator)
    if not isinstance(estimator, PatchPoseEstimator):
        raise InputError(
            "estimator must be a PatchPoseEstimator, a bundled model's name or a weights file, got "
            f"{type(estimator).__name__}"
        )
    return estimator
