"""Training the affine shape network (:class:`~patchpose.models.shapenet.ShapeNet`) without labels.

Each training pair is one keypoint of a training photo cut twice: through an upright isotropic frame ``r·I``
and through ``r·B``, ``B`` a random affine map of determinant 1 (anisotropy up to ``2**max_log2_anisotropy``
along a random direction, then any rotation). The network's two shapes must be covariant under ``B``
(:func:`~patchpose.losses.shape_alignment_loss`). Keypoints: Shi-Tomasi corners and SIFT keypoints of the
photos of the ``train`` split, on each photo at a long side of ``long_side`` px.

``train_shape(cfg, out)`` writes ``OUT/checkpoint.pt`` (every ``checkpoint_every`` steps, atomically),
``OUT/metrics.jsonl`` and, at the end, ``OUT/shape.safetensors``. A run is seeded: step ``i``'s pairs come from
``numpy.random.default_rng((seed, i))`` and the initial weights from ``torch.manual_seed(seed)``, so that a run
resumed (``resume=True``) from any checkpoint is the uninterrupted run. Ctrl-C or SIGTERM stops after the current
step with a checkpoint.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from ..checks import MAX_THREADS
from ..conventions import rotation_matrix
from ..data.keypoints import detect_gftt, detect_sift
from ..data.patches import Pyramid, check_gray, extract_patches, load_photo
from ..data.photos import photos_of
from ..errors import InputError, TrainingError, WeightsError, is_int_in
from ..losses import shape_alignment_loss
from ..models.shapenet import ShapeNet, ShapeNetConfig
from ..weights import load_torch_file, save_shape_weights
from .checkpoint import atomic_save
from .trainer import StopRequests, truncate_metrics

log = logging.getLogger(__name__)

#: settings a resumed run may change (they do not change what is trained)
RESUME_FREE = ("threads", "checkpoint_every", "log_every")
#: the step whose pairs measure a finished network (no run draws them: ``steps`` stays far below)
FRESH_STEP = 2**31 - 1
#: the weights file a finished run writes in its folder
SHAPE_WEIGHTS_FILE = "shape.safetensors"


@dataclass
class ShapeTrainConfig:
    """A shape training run (``patchpose train-shape`` takes each as ``key=value``)."""

    photos: str = "data/photos"  #: photo folder; its ``train`` split (``splits.json``) is used
    steps: int = 2500
    batch: int = 256  #: pairs per step
    #: the pairs of a step come from this many photos, ``batch / photos_per_batch`` each
    photos_per_batch: int = 16
    lr: float = 1e-3  #: peak of a one-cycle schedule (Adam)
    warmup: float = 0.1  #: fraction of the steps that the learning rate rises
    seed: int = 0
    threads: int = 2  #: torch threads (0: torch's default)
    long_side: int = 640  #: photos are resized to this long side first
    keypoints: int = 400  #: Shi-Tomasi corners and as many SIFT keypoints per photo
    margin: float = 50.0  #: keypoints at least this far from the border (px)
    log2_radius: tuple[float, float] = (-0.7, 1.0)  #: frame half-width 16·2**u px, u uniform in this range
    max_log2_anisotropy: float = 1.25  #: ``B``'s anisotropy is 2**u, u uniform in ±this
    checkpoint_every: int = 250
    log_every: int = 50

    def validate(self) -> None:
        for name in (
            "steps",
            "batch",
            "photos_per_batch",
            "long_side",
            "keypoints",
            "checkpoint_every",
            "log_every",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be a whole number >= 1, got {v!r}")
        if self.steps >= FRESH_STEP:
            raise InputError(f"steps must be below {FRESH_STEP}, got {self.steps}")
        if self.batch % self.photos_per_batch:
            raise InputError(
                f"batch ({self.batch}) must be a multiple of photos_per_batch ({self.photos_per_batch})"
            )
        if not is_int_in(self.threads, 0, MAX_THREADS):
            raise InputError(f"threads must be a whole number from 0 to {MAX_THREADS}, got {self.threads!r}")
        if not (isinstance(self.seed, int) and not isinstance(self.seed, bool) and 0 <= self.seed < 2**63):
            raise InputError(f"seed must be a whole number from 0 to 2**63 - 1, got {self.seed!r}")
        if not isinstance(self.photos, str) or not self.photos.strip():
            raise InputError(f"photos must name a photo folder, got {self.photos!r}")
        for name, lo, hi in (
            ("lr", 0, 1),
            ("warmup", 0, 1),
            ("max_log2_anisotropy", 0, 3),
            ("margin", -1, 1e4),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v < hi:
                raise InputError(f"{name} must be a number in ({lo}, {hi}), got {v!r}")
        lo, hi = self.log2_radius
        if not -3 <= lo <= hi <= 3:
            raise InputError(f"log2_radius must be two numbers lo <= hi in [-3, 3], got {self.log2_radius!r}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["log2_radius"] = list(self.log2_radius)
        return d

    @classmethod
    def from_overrides(cls, overrides: list[str] | None = None, base: dict | None = None) -> ShapeTrainConfig:
        """The defaults, then ``base`` (a stored config), then ``key=value`` strings; bad keys or values are
        one-line :class:`~patchpose.errors.InputError`."""
        types = {f.name: f.type for f in fields(cls)}
        d = dict(base or {})
        for item in overrides or []:
            key, sep, value = item.partition("=")
            if not sep or key not in types:
                raise InputError(f"train-shape: {item!r} is not KEY=VALUE with KEY one of {sorted(types)}")
            try:
                v = json.loads(value) if key != "photos" else value
            except ValueError:
                raise InputError(f"train-shape: {key}={value!r} is not a number or list") from None
            d[key] = v
        unknown = sorted(set(d) - set(types))
        if unknown:
            raise InputError(f"unknown shape training settings {unknown}")
        if "log2_radius" in d:
            r = d["log2_radius"]
            if not (
                isinstance(r, (list, tuple))
                and len(r) == 2
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)
            ):
                raise InputError(f"log2_radius must be two numbers [lo, hi], got {r!r}")
            d["log2_radius"] = (float(r[0]), float(r[1]))
        for key in ("lr", "warmup", "max_log2_anisotropy", "margin"):
            if isinstance(d.get(key), int) and not isinstance(d.get(key), bool):
                d[key] = float(d[key])
        cfg = cls(**d)
        cfg.validate()
        return cfg


def random_affine(rng: np.random.Generator, n: int, max_log2_anisotropy: float) -> np.ndarray:
    """``(n, 2, 2)`` affine maps of determinant 1: a squeeze by ``2**u`` (``u`` uniform in
    ``±max_log2_anisotropy``) along a uniform direction, then a uniform rotation."""
    lt = rng.uniform(-max_log2_anisotropy, max_log2_anisotropy, n)
    phi = rng.uniform(0, np.pi, n)
    psi = rng.uniform(0, 2 * np.pi, n)
    D = np.zeros((n, 2, 2))
    D[:, 0, 0] = 2 ** (lt / 2)
    D[:, 1, 1] = 2 ** (-lt / 2)
    return rotation_matrix(psi) @ rotation_matrix(-phi) @ D @ rotation_matrix(phi)


class ShapePairs:
    """The training photos' pyramids and keypoints, and the pairs of each step (:meth:`batch`)."""

    def __init__(self, cfg: ShapeTrainConfig, progress: bool = True, patch_size: int = 32) -> None:
        self.cfg = cfg
        self.patch_size = patch_size
        self.pyramids: list[Pyramid] = []
        self.keypoints: list[np.ndarray] = []
        paths = photos_of(cfg.photos, "train")
        for path in tqdm(paths, desc="photos", disable=not progress, dynamic_ncols=True):
            # float gray in [0, 1], as check_gray reads images (interpolated patches are not rounded)
            img = check_gray(load_photo(path, cfg.long_side))
            h, w = img.shape
            xy = np.concatenate(
                [
                    detect_gftt(img, cfg.keypoints).reshape(-1, 2),
                    detect_sift(img, cfg.keypoints)[0].reshape(-1, 2),
                ]
            )
            m = cfg.margin
            xy = xy[(xy[:, 0] > m) & (xy[:, 0] < w - 1 - m) & (xy[:, 1] > m) & (xy[:, 1] < h - 1 - m)]
            if len(xy):
                self.pyramids.append(Pyramid(img))
                self.keypoints.append(xy)
        if not self.pyramids:
            raise InputError(
                f"{cfg.photos}: no training photo has a keypoint {cfg.margin:g} px inside its border"
            )

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Step ``step``'s pairs: patches through ``r·I`` and through ``r·B`` (each ``(batch, 1, P, P)``) and
        ``B`` ``(batch, 2, 2)``; the same for the same step and seed."""
        cfg = self.cfg
        rng = np.random.default_rng((cfg.seed, step))
        per = cfg.batch // cfg.photos_per_batch
        x1, x2, bs = [], [], []
        for _ in range(cfg.photos_per_batch):
            i = int(rng.integers(len(self.pyramids)))
            xy = self.keypoints[i][rng.integers(len(self.keypoints[i]), size=per)]
            logr = rng.uniform(*cfg.log2_radius, per)
            b = random_affine(rng, per, cfg.max_log2_anisotropy)
            zero = np.zeros(per)
            x1.append(extract_patches(self.pyramids[i], xy, logr, zero, self.patch_size))
            x2.append(extract_patches(self.pyramids[i], xy, logr, zero, self.patch_size, shape=b))
            bs.append(b)
        return (
            torch.from_numpy(np.concatenate(x1)),
            torch.from_numpy(np.concatenate(x2)),
            torch.from_numpy(np.concatenate(bs)).float(),
        )


def _optimizer(net: ShapeNet, cfg: ShapeTrainConfig):
    opt = torch.optim.Adam(net.parameters(), cfg.lr)
    try:
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.lr, total_steps=cfg.steps, pct_start=cfg.warmup)
    except ZeroDivisionError:  # warmup·steps = 1: a phase of no length
        raise InputError(
            f"warmup={cfg.warmup} over steps={cfg.steps} makes a warm-up of exactly one step: change either"
        ) from None
    return opt, sched


def load_shape_checkpoint(path: str | Path) -> dict:
    """A checkpoint :func:`train_shape` wrote (``torch.load(weights_only=True)``), checked: its keys, a valid
    configuration, weights that fit it. Anything else is a one-line :class:`~patchpose.errors.WeightsError`."""
    path = Path(path)
    ckpt = load_torch_file(path, "shape training checkpoint")
    keys = ("model", "model_config", "train_config", "optimizer", "scheduler", "step")
    if not isinstance(ckpt, dict) or any(k not in ckpt for k in keys):
        raise WeightsError(f"{path} is not a shape training checkpoint (it needs {', '.join(keys)})")
    try:
        net = ShapeNet(ShapeNetConfig.from_dict(ckpt["model_config"]))
        net.load_state_dict(ckpt["model"])
    except (ValueError, TypeError, KeyError, RuntimeError) as e:
        raise WeightsError(f"{path}: the weights do not fit its shape network config ({e})") from None
    return ckpt


def train_shape(
    cfg: ShapeTrainConfig, out_dir: str | Path, resume: bool = False, progress: bool = True
) -> dict:
    """Train a :class:`ShapeNet` per ``cfg`` into ``out_dir`` (module docstring); returns ``{"step",
    "loss", "identity_loss", "minutes", "weights"}``: the losses of the trained network and of discs on a fresh
    batch of the train photos (one no step drew), the file written."""
    cfg.validate()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "checkpoint.pt"
    ckpt = None
    if resume and ckpt_path.is_file():
        ckpt = load_shape_checkpoint(ckpt_path)
        stored = ShapeTrainConfig.from_overrides(base=ckpt["train_config"]).to_dict()
        diff = sorted(k for k, v in cfg.to_dict().items() if stored[k] != v and k not in RESUME_FREE)
        if diff:
            raise InputError(
                f"{ckpt_path} was trained with other settings ({', '.join(diff)}): resume without them"
            )
    elif resume:
        log.warning("--resume: no checkpoint in %s; starting a new run", out)
    elif ckpt_path.is_file():
        raise FileExistsError(f"{ckpt_path} exists: pass --resume to continue it, or choose another --out")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    net = ShapeNet(None if ckpt is None else ShapeNetConfig.from_dict(ckpt["model_config"]))
    opt, sched = _optimizer(net, cfg)
    step, running = 0, None
    if ckpt is not None:
        net.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        step, running = int(ckpt["step"]), ckpt.get("running")
    pairs = ShapePairs(cfg, progress, net.cfg.patch_size)

    def checkpoint() -> None:
        atomic_save(
            {
                "model": net.state_dict(),
                "model_config": net.cfg.to_dict(),
                "train_config": cfg.to_dict(),
                "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(),
                "step": step,
                "running": running,
            },
            ckpt_path,
        )

    truncate_metrics(out / "metrics.jsonl", step)
    t0 = time.time()
    identity = torch.eye(2).expand(cfg.batch, 2, 2)
    bar = tqdm(total=cfg.steps, initial=step, disable=not progress, desc="train-shape", dynamic_ncols=True)
    stops = StopRequests().install()
    whole = True
    net.train()
    try:
        with (out / "metrics.jsonl").open("a") as metrics:
            while step < cfg.steps:
                x1, x2, B = pairs.batch(step)
                whole = False
                S = net(torch.cat([x1, x2]))
                loss = shape_alignment_loss(S[: cfg.batch], S[cfg.batch :], B)
                if not torch.isfinite(loss):
                    raise TrainingError(f"loss is not finite at step {step}: lower lr")
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
                step += 1
                value = float(loss.detach())
                running = value if running is None else 0.98 * running + 0.02 * value
                bar.update(1)
                if step % cfg.log_every == 0 or step == cfg.steps:
                    base = float(shape_alignment_loss(identity, identity, B))
                    bar.set_postfix(loss=f"{running:.4f}", identity=f"{base:.4f}")
                    if not progress:  # --no-progress: the bar's line as a log line (logs only, not nothing)
                        log.info("step %d/%d: loss %.4f, identity %.4f", step, cfg.steps, running, base)
                    rec = {"step": step, "time": round(time.time() - t0, 1), "loss": round(running, 5)}
                    metrics.write(json.dumps({**rec, "identity_loss": round(base, 5)}) + "\n")
                    metrics.flush()
                whole = True  # model, optimizer, schedule, running loss and log in step with ``step``
                if step % cfg.checkpoint_every == 0:
                    checkpoint()
                if stops.requested:
                    raise KeyboardInterrupt("stop requested")
    except KeyboardInterrupt:
        if whole:
            log.warning("interrupted at step %d: writing a checkpoint; continue with --resume", step)
            checkpoint()
        raise
    finally:
        stops.restore()
        bar.close()
    checkpoint()
    net.eval()
    weights = save_shape_weights(
        net,
        out / SHAPE_WEIGHTS_FILE,
        name="custom-shape",
        notes=f"patchpose train-shape, {step} steps, seed {cfg.seed}",
        train_config=cfg.to_dict(),
    )
    x1, x2, B = pairs.batch(FRESH_STEP)
    with torch.no_grad():
        S = net(torch.cat([x1, x2]))
        fresh = float(shape_alignment_loss(S[: cfg.batch], S[cfg.batch :], B))
        base = float(shape_alignment_loss(identity, identity, B))
    return {
        "step": step,
        "loss": fresh,
        "identity_loss": base,
        "minutes": (time.time() - t0) / 60,
        "weights": str(weights),
    }


__all__ = [
    "SHAPE_WEIGHTS_FILE",
    "ShapeTrainConfig",
    "ShapePairs",
    "random_affine",
    "load_shape_checkpoint",
    "train_shape",
]
