"""Data-parallel training on PyTorch DDP: ``torchrun --nproc-per-node N -m patchpose.train ARGS``.

torchrun sets ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``; :func:`setup` then joins the process group
(NCCL on GPUs, gloo on CPU). Every rank draws its own pairs (the pair stream is seeded by rank), DDP
averages the gradients so the replicas stay identical, and rank 0 alone writes the config, logs and
checkpoints. A checkpoint holds the plain model and optimizer, so a run resumes on any number of ranks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world > 1


def setup(device: str = "auto") -> Dist:
    """Join the process group when launched by torchrun (``WORLD_SIZE`` > 1); a no-op otherwise."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available() and device in ("auto", "cuda")
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    if cuda:
        torch.cuda.set_device(local)
    return Dist(rank, world, local)


def any_true(flags, d: Dist, device: torch.device):
    """Each of ``flags`` (a bool, or a sequence of them) true on every rank if it is true on any, in one
    collective (keeps the ranks' loops in step); returns the same shape."""
    one = isinstance(flags, bool)
    vals = [flags] if one else [bool(f) for f in flags]
    if d.enabled:
        t = torch.tensor([1.0 if f else 0.0 for f in vals], device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        vals = [bool(v > 0) for v in t.tolist()]
    return vals[0] if one else vals


def finish_together(d: Dist) -> None:
    """A barrier after a run that ended normally on this rank, so that no rank tears gloo down while
    another is still in a collective (which can abort that process at exit on a busy machine). Not for a
    failed run: a rank that raised must not wait for ranks that may never arrive."""
    if d.enabled and dist.is_initialized():
        dist.barrier()


def teardown(d: Dist) -> None:
    if d.enabled and dist.is_initialized():
        dist.destroy_process_group()


__all__ = ["Dist", "setup", "any_true", "finish_together", "teardown"]
