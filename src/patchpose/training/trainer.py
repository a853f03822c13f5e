"""The training loop: self-supervised pairs → histogram alignment loss → checkpoints you can resume.

``patchpose train --config v1 --out runs/v1 [key=value ...] [--resume]``. The output folder holds ``config.yaml`` (the resolved config),
``checkpoint.pt`` (last), ``best.pt`` (best validation score) and ``metrics.jsonl``. Validation pairs are
not stored: they are regenerated from the seed, identical for every run with the same photos.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import OmegaConf
from tqdm import tqdm

from ..data.pairs import PairConfig, PairStream, PhotoPool
from ..data.photos import load_splits
from ..errors import InputError, TrainingError, WeightsError
from ..inference import autocast_ctx
from ..losses import LossConfig, distillation_loss, pose_loss
from ..models import ModelConfig, PoseNet
from .checkpoint import load_checkpoint, save_checkpoint, set_random_states
from .config import LEARNING_SECTIONS, config_changes, removed_settings_in_use, to_container
from .validation import evaluate_model, make_protocol_pairs

log = logging.getLogger(__name__)


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in ("cpu", "cuda"):
        raise InputError(f"run.device must be 'auto', 'cpu' or 'cuda', got {name!r}")
    if name == "cuda" and not torch.cuda.is_available():
        raise InputError("run.device=cuda asked for, but CUDA is not available")
    return torch.device(name)


def make_optimizer(model: torch.nn.Module, oc) -> torch.optim.Optimizer:
    if oc.optimizer == "sgd":
        return torch.optim.SGD(
            model.parameters(), lr=oc.lr, momentum=oc.momentum, weight_decay=oc.weight_decay
        )
    if oc.optimizer == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=oc.lr, weight_decay=oc.weight_decay)
    raise ValueError(f"unknown optimizer {oc.optimizer!r}")


def make_scheduler(opt, oc) -> torch.optim.lr_scheduler.LambdaLR:
    if oc.schedule not in ("cosine", "constant"):
        raise ValueError(f"optim.schedule must be 'cosine' or 'constant', got {oc.schedule!r}")

    def f(step: int) -> float:
        warm = min(1.0, (step + 1) / oc.warmup_steps) if oc.warmup_steps else 1.0
        if oc.schedule == "constant":
            return warm
        t = min(1.0, step / max(1, oc.steps))
        return warm * (0.02 + 0.98 * 0.5 * (1.0 + math.cos(math.pi * t)))

    return torch.optim.lr_scheduler.LambdaLR(opt, f)


class StopRequests:
    """Ctrl-C and SIGTERM (what ends the processes of a stopped session or a killed job) during training:
    the first asks the loop to stop once the current step is whole, so that the checkpoint it then writes is
    the state after a whole step (model, optimizer, schedule and BatchNorm statistics in step with ``step``)
    and ``--resume`` continues as if never stopped; a second stops at once, without a checkpoint (the last one
    stays). ``install`` / ``restore``, or a context manager; signals are only caught in the main
    thread."""

    def __init__(self) -> None:
        self.count = 0
        self._previous: dict = {}

    @property
    def requested(self) -> bool:
        return self.count > 0

    def _handler(self, signum, frame) -> None:
        self.count += 1
        if self.count > 1:
            raise KeyboardInterrupt(f"signal {signum} (again): stopped at once")
        log.warning(
            "signal %d: stopping when this step is done (again: at once, without a checkpoint)", signum
        )

    def install(self) -> StopRequests:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def restore(self) -> None:
        import signal

        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}

    def __enter__(self) -> StopRequests:
        return self.install()

    def __exit__(self, *exc) -> bool:
        self.restore()
        return False


#: settings a resumed run may change: the others are held by what the checkpoint restores (network,
#: optimizer, schedule), or would make the run a different one than its config.yaml says
RESUME_MAY_CHANGE = {("optim", "steps"), ("data", "num_workers")}


def _check_resumed_config(path: Path, stored: dict, given: dict) -> None:
    """InputError naming the settings that differ between a checkpoint's config and this command's, other
    than ``optim.steps``, ``data.num_workers`` and ``run.*`` (a key that only one of them has is not
    compared), or a removed setting the checkpoint was trained with (:data:`~.config.REMOVED_TRAINING_SETTINGS`;
    at its "off" value, as every config written while it existed names it, it is ignored)."""
    removed = removed_settings_in_use(stored)
    if removed:
        raise InputError(f"--resume: {path} was trained with {removed}")
    changed = config_changes(stored, given, LEARNING_SECTIONS, lambda s, k: (s, k) not in RESUME_MAY_CHANGE)
    if changed:
        raise InputError(
            f"--resume continues {path} as it was trained; this command changes {', '.join(changed[:6])}"
            f"{' …' if len(changed) > 6 else ''} (only optim.steps, data.num_workers and run.* may change)"
        )
    # what may change, said: a resume that leaves out an override of the first run takes the default instead
    moved = config_changes(
        stored, given, ("optim", "data", "run"), lambda s, k: s == "run" or (s, k) in RESUME_MAY_CHANGE
    )
    if moved:
        log.warning(
            "--resume: this command changes %s (give the first run's values to continue it as it was)",
            ", ".join(moved),
        )


def score(val: dict) -> float:
    """Model selection score: mean of the four accuracies on the scale-only, rotation-only and joint pairs."""
    vals = [v for proto in val.values() for m, v in proto.items() if m != "n_pairs"]
    return float(np.mean(vals)) if vals else 0.0


def _pair_config(dc) -> PairConfig:
    return PairConfig(**{k: v for k, v in dc.items() if k in PairConfig.__dataclass_fields__})


#: model settings that own no parameters (how the grid is read): fine-tuning from weights trained with other
#: values of them is allowed
INIT_FREE_KEYS = ("polar_view_min_step",)


def _init_weights(model: PoseNet, path: str) -> None:
    """Fine-tuning: copy the weights of a checkpoint or safetensors file of the same network."""
    from ..weights import load_weights

    p = Path(path)
    if p.suffix == ".safetensors":
        src, _ = load_weights(p)
        src_cfg, state = src.cfg.to_dict(), src.state_dict()
    else:
        ck = load_checkpoint(p)
        src_cfg, state = ck["config"]["model"], ck["model"]
    a, b = ModelConfig.from_dict(src_cfg).to_dict(), model.cfg.to_dict()
    for key in INIT_FREE_KEYS:  # settings without parameters of their own: a fine-tuning may change them
        a.pop(key, None), b.pop(key, None)
    if a != b:
        raise ValueError(f"run.init_from={path} holds another network than model: the configs differ")
    model.load_state_dict(state)
    log.info("initialised from %s", path)


def load_teacher(spec: str, student: ModelConfig) -> PoseNet:
    """The fixed network of ``run.teacher`` (a bundled model's name or a ``.safetensors`` file), checked to
    read what the student reads (same input, grid and bins), in eval mode and without gradients."""
    from ..weights import load_model

    model, _ = load_model(spec)
    t = model.cfg

    def reads(c: ModelConfig) -> tuple:
        return (c.input_shape, c.color, c.polar_grid, c.num_scale_bins, tuple(c.scale_range), c.num_ori_bins,
                None if c.is_polar else (c.patch_size, tuple(c.windows)))  # fmt: skip

    if reads(t) != reads(student):
        raise ValueError(
            f"run.teacher={spec} reads other inputs or bins than the model trained: {reads(t)} against "
            f"{reads(student)}"
        )
    if not set(student.heads) & set(t.heads):
        raise ValueError(f"run.teacher={spec} has none of the student's heads ({student.heads})")
    model.eval().requires_grad_(False)
    return model


def train(cfg, out_dir: str | Path, resume: bool = False, progress: bool = True) -> dict:
    """Train per ``cfg`` (an OmegaConf ``TrainConfig``) into ``out_dir``; returns the last validation.

    Under torchrun (``WORLD_SIZE`` > 1) this runs data-parallel (:mod:`patchpose.training.distributed`)."""
    from . import distributed as D

    dd = D.setup(cfg.run.device)
    try:
        result = _train(cfg, out_dir, resume, progress and dd.main, dd)
        D.finish_together(dd)
        return result
    finally:
        D.teardown(dd)


def truncate_metrics(path: Path, step: int) -> int:
    """Drop the lines of ``metrics.jsonl`` at ``path`` for steps after ``step`` (those a resumed run makes
    again) and any line that is not whole JSON (a write cut short by a kill), atomically; returns how many
    lines were dropped. No file: nothing to do."""
    from ..fileio import write_text_atomic

    if not path.is_file():
        return 0
    kept, dropped = [], 0
    for line in path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
            ok = isinstance(rec, dict) and int(rec["step"]) <= step
        except (ValueError, KeyError, TypeError):
            ok = False
        if ok:
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        write_text_atomic(path, "".join(f"{line}\n" for line in kept))
    return dropped


def _train(cfg, out_dir, resume: bool, progress: bool, dd) -> dict:
    from torch.nn.parallel import DistributedDataParallel as DDP

    from . import distributed as D

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / "checkpoint.pt"
    c = to_container(cfg)
    if resume and not ckpt_path.is_file():
        log.warning("--resume: no checkpoint in %s; starting a new run", out)
    if resume and ckpt_path.is_file():
        ckpt = load_checkpoint(ckpt_path)
        _check_resumed_config(ckpt_path, ckpt["config"], c)
        # the stored model config wins (a resumed run cannot change the network); loss, data, optim and
        # run settings are this command's (config.yaml records them)
        c = {**c, "model": ckpt["config"]["model"]}
    elif ckpt_path.is_file() and not resume:
        raise FileExistsError(f"{ckpt_path} exists: pass --resume to continue it, or choose another --out")
    else:
        ckpt = None
    if dd.main:
        (out / "config.yaml.tmp").write_text(OmegaConf.to_yaml(OmegaConf.create(c)))
        (out / "config.yaml.tmp").replace(out / "config.yaml")

    oc, rc = cfg.optim, cfg.run
    torch.manual_seed(rc.seed)
    if rc.threads:
        torch.set_num_threads(rc.threads)
    device = pick_device(rc.device)
    if dd.enabled and device.type == "cuda":
        device = torch.device("cuda", dd.local_rank)
    mcfg = ModelConfig.from_dict(c["model"])
    model = PoseNet(mcfg).to(device)
    if rc.init_from and ckpt is None:
        _init_weights(model, rc.init_from)
    if oc.channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = make_optimizer(model, oc)
    sched = make_scheduler(opt, oc)
    lcfg = LossConfig(**c["loss"])
    if (lcfg.distill > 0) != bool(rc.teacher):
        raise ValueError("loss.distill > 0 and run.teacher go together: give both or neither")
    teacher = load_teacher(rc.teacher, mcfg).to(device) if rc.teacher else None
    step, best = 0, -1.0
    running: dict[str, float] = {}
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        step, best = int(ckpt["step"]), float(ckpt.get("best", -1.0))
        running = {str(k): float(v) for k, v in ckpt.get("running", {}).items()}
        log.info("resumed from %s at step %d", ckpt_path, step)
        if "rng" not in ckpt:
            log.warning(
                "%s holds no random state (written by an older patchpose): the resumed run goes on, but not "
                "bit for bit as the uninterrupted one would have",
                ckpt_path,
            )
    core = model  # the plain network: checkpoints, validation
    if dd.enabled:  # replicas start equal (same seed and init) and DDP broadcasts rank 0's weights anyway
        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)

    splits = load_splits(cfg.data.photos)
    if not splits.get("train"):
        raise InputError(f"no training photos in {cfg.data.photos} (run 'patchpose photos fetch' first)")
    if dd.main and cfg.data.val_pairs > 0 and not splits.get("val"):
        # training goes on (the recipe's next stage and export read checkpoint.pt), but nothing is validated
        log.warning(
            "%s holds no val photos (its val split is empty): no validation, so best.pt is the last step's "
            "weights, not a chosen checkpoint; give a photo folder with a val split (patchpose photos fetch), or "
            "data.val_pairs=0 to train without validation",
            cfg.data.photos,
        )
    pcfg = _pair_config(c["data"])
    val_pairs = None
    if dd.main and splits.get("val") and cfg.data.val_pairs > 0:
        # validation pairs are the fixed synthetic protocols: no warped copies to find keypoints again in
        val_pool = PhotoPool(splits["val"], dataclasses.replace(pcfg, redetect=0.0), mcfg.color)
        val_pairs = make_protocol_pairs(
            val_pool,
            cfg.data.val_pairs,
            rc.seed + 12345,
            mcfg.patch_size,
            mcfg.windows,
            pcfg,
            polar=mcfg.polar_grid,
        )

    stream = PairStream(
        splits["train"],
        pcfg,
        oc.batch_size,
        mcfg.patch_size,
        mcfg.windows,
        mcfg.color,
        seed=rc.seed,
        rank=dd.rank,
        start_step=step,
        polar=mcfg.polar_grid,
    )
    nw = cfg.data.num_workers
    loader = torch.utils.data.DataLoader(
        stream,
        batch_size=None,
        # its own generator: making the iterator (worker seeds) then draws nothing from torch's global one
        generator=torch.Generator().manual_seed(rc.seed),
        num_workers=nw,
        persistent_workers=nw > 0,
        prefetch_factor=4 if nw > 0 else None,
    )
    amp = oc.amp if (oc.amp != "fp16" or device.type == "cuda") else "none"
    autocast_ctx(device, amp)  # an unknown value is refused here, before the first step
    if dd.main:  # each step once: the lines of steps this run makes again (after the checkpoint) go
        dropped = truncate_metrics(out / "metrics.jsonl", step)
        if dropped:
            log.info(
                "metrics.jsonl: dropped %d line(s) after step %d, which this run makes again", dropped, step
            )
    metrics_f = (out / "metrics.jsonl").open("a") if dd.main else open(os.devnull, "w")
    last_ckpt, t0 = time.time(), time.time()
    val: dict = dict(ckpt["metrics"]) if ckpt is not None and isinstance(ckpt.get("metrics"), dict) else {}

    def checkpoint(tag: str = "checkpoint.pt") -> None:
        if dd.main:
            save_checkpoint(
                out / tag,
                core,
                opt,
                sched,
                c,
                step,
                val,
                best,
                running=running,
            )

    bar = tqdm(total=oc.steps, initial=step, disable=not progress, desc="train", dynamic_ncols=True)
    it = iter(loader)
    if ckpt is not None and "rng" in ckpt:  # last: nothing between here and the first step draws from them
        try:
            set_random_states(ckpt["rng"])
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as e:
            raise WeightsError(f"{ckpt_path}: its random states cannot be restored ({e})") from None
    model.train()
    stops = StopRequests().install()
    whole = True  # whether model, optimizer and schedule are in step with ``step`` (between steps)
    try:
        while step < oc.steps:
            try:
                batch = next(it)
            except Exception:
                if stops.requested:  # the signal may have ended the loader's workers too
                    raise KeyboardInterrupt("stop requested") from None
                raise
            whole = False
            pa = batch["patch_a"].to(device, non_blocking=True)
            pb = batch["patch_b"].to(device, non_blocking=True)
            x = torch.cat([pa, pb])
            if oc.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with autocast_ctx(device, amp):
                o = model(x)
            n = len(pa)
            oa = {k: v[:n] for k, v in o.items()}
            ob = {k: v[n:] for k, v in o.items()}
            d_s = batch["d_scale"].to(device).float() * mcfg.scale_bins_per_octave
            d_o = batch["d_ori"].to(device).float() * mcfg.num_ori_bins / (2 * math.pi)
            losses = pose_loss(oa, ob, d_s, d_o, lcfg)
            if teacher is not None:  # the teacher reads the same views; its histograms are targets
                with torch.no_grad():
                    ot = teacher(x)
                kd = distillation_loss(o, ot, lcfg.temperature)
                losses["distill"] = kd.detach()
                losses["total"] = losses["total"] + lcfg.distill * kd
            if not torch.isfinite(losses["total"]):
                raise TrainingError(f"loss is not finite at step {step}: lower optim.lr or loss.temperature")
            opt.zero_grad(set_to_none=True)
            losses["total"].backward()
            if oc.grad_clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), oc.grad_clip)
            opt.step()
            sched.step()
            step += 1
            whole = True
            for k, v in losses.items():
                fv = float(v.detach())
                running[k] = 0.98 * running.get(k, fv) + 0.02 * fv
            bar.update(1)
            if step % rc.log_every == 0:
                post = {k: f"{v:.3f}" for k, v in running.items() if k in ("total", "scale", "orientation")}
                for proto, metric, short in (
                    ("scale", "scale_acc@1/3", "val_s@1/3"),
                    ("rotation", "ori_acc@10", "val_o@10"),
                ):
                    if metric in val.get(proto, {}):
                        post[short] = f"{val[proto][metric]:.1f}%"
                bar.set_postfix(post)
                if dd.main and not progress:  # --no-progress: the bar's line as a log line (logs only)
                    log.info("step %d/%d: %s", step, oc.steps, ", ".join(f"{k} {v}" for k, v in post.items()))
                metrics_f.write(
                    json.dumps(
                        {
                            "step": step,
                            "time": time.time() - t0,
                            "lr": sched.get_last_lr()[0],
                            **{k: round(v, 5) for k, v in running.items()},
                        }
                    )
                    + "\n"
                )
                metrics_f.flush()
            if val_pairs is not None and (step % rc.val_every == 0 or step == oc.steps):
                val = evaluate_model(core, val_pairs)
                model.train()
                s = score(val)
                metrics_f.write(json.dumps({"step": step, "val": val, "score": s}) + "\n")
                metrics_f.flush()
                log.debug("step %d val %s", step, json.dumps(val))
                if s > best:
                    best = s
                    checkpoint("best.pt")
                checkpoint()
                last_ckpt = time.time()
            elif (rc.checkpoint_every and step % rc.checkpoint_every == 0) or (
                time.time() - last_ckpt > 60 * rc.checkpoint_minutes
            ):
                checkpoint()
                last_ckpt = time.time()
            # every rank must leave the loop at the same step (DDP's all-reduce needs them all)
            timed_out = bool(rc.max_minutes) and time.time() - t0 > 60 * rc.max_minutes
            timed_out, stop = D.any_true([timed_out, stops.requested], dd, device)
            if timed_out:
                log.info("max_minutes reached at step %d", step)
                break
            if stop:  # every rank stops at this same step
                raise KeyboardInterrupt("stop requested")
    except KeyboardInterrupt:
        if whole:
            log.warning("interrupted at step %d: writing a checkpoint; continue with --resume", step)
            checkpoint()
        else:
            log.warning("stopped within step %d: no checkpoint written (the last one is kept)", step + 1)
        raise
    finally:
        stops.restore()
        bar.close()
        metrics_f.close()
    checkpoint()
    if dd.main and not (out / "best.pt").exists():
        checkpoint("best.pt")
    with torch.no_grad():  # identical on every rank when the replicas are in sync
        checksum = float(sum(p.double().sum() for p in core.parameters()))
    return {
        "step": step,
        "val": val,
        "best": best,
        "minutes": (time.time() - t0) / 60,
        "rank": dd.rank,
        "world": dd.world,
        "param_checksum": checksum,
    }
