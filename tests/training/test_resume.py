"""A run killed with SIGKILL (no chance to write anything) at any point and resumed with ``--resume`` ends
bit for bit where the uninterrupted run ends, and its metrics.jsonl holds each step once, as that run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import make_train_photos
from patchpose.training.checkpoint import load_checkpoint
from patchpose.training.config import load_config
from patchpose.training.trainer import train, truncate_metrics

STEPS = 160
#: a tiny network and batch, a checkpoint every 20 steps, a log line every step: 160 steps in a few seconds
TINY = [
    "model.windows=[1.0]",
    "model.width=0.25",
    "model.embed_dim=32",
    f"optim.steps={STEPS}",
    "optim.batch_size=8",
    "optim.warmup_steps=5",
    "optim.amp=none",
    "data.num_workers=0",
    "data.val_pairs=0",
    "data.long_side=256",
    "run.threads=1",
    "run.log_every=1",
    "run.checkpoint_every=20",
]
#: kill once the log reaches these steps: before the first checkpoint, then between later ones
KILL_AT = (7, 55, 110)


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    return make_train_photos(tmp_path_factory.mktemp("photos"))


def overrides(photos, *extra) -> list[str]:
    return [f"data.photos={photos}", *TINY, *extra]


def start(photos, out: Path, *extra) -> subprocess.Popen:
    """``patchpose train --config v1 --out OUT --resume`` in a process of its own (a new run the first time)."""
    cmd = [
        "train",
        "--config",
        "v1",
        "--out",
        str(out),
        "--resume",
        "--no-progress",
        *overrides(photos, *extra),
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "patchpose.cli.main", *cmd], stderr=subprocess.PIPE, text=True
    )


def logged_steps(path: Path) -> list[int]:
    if not path.is_file():
        return []
    steps = []
    for line in path.read_text().splitlines():
        try:
            steps.append(json.loads(line)["step"])
        except ValueError:  # a line being written
            pass
    return steps


def untimed(path: Path) -> list[dict]:
    return [
        {k: v for k, v in json.loads(line).items() if k != "time"} for line in path.read_text().splitlines()
    ]


def test_killed_and_resumed_run_is_the_uninterrupted_run_bit_for_bit(photos, tmp_path):
    whole = tmp_path / "whole"
    train(load_config("v1", overrides(photos)), whole, progress=False)

    out = tmp_path / "killed"
    report = []
    for target in KILL_AT:
        proc = start(photos, out)
        t0 = time.time()
        while max(logged_steps(out / "metrics.jsonl"), default=0) < target and proc.poll() is None:
            assert time.time() - t0 < 120, "training did not reach the kill point"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
        reached = max(logged_steps(out / "metrics.jsonl"))
        ck = out / "checkpoint.pt"
        saved = load_checkpoint(ck)["step"] if ck.is_file() else 0
        assert saved < STEPS
        report.append((reached, saved))
    # the last part with a worker process: the stream of pairs is a function of the step alone
    proc = start(photos, out, "data.num_workers=1")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    print("kills (last logged step, checkpoint step):", report)
    assert any(reached > saved for reached, saved in report), "no kill lost a step: nothing was run again"

    a, b = load_checkpoint(whole / "checkpoint.pt"), load_checkpoint(out / "checkpoint.pt")
    assert a["step"] == b["step"] == STEPS
    diff = max(float((a["model"][k] - b["model"][k]).abs().max()) for k in a["model"])
    assert diff == 0.0
    for k, v in a["model"].items():
        assert torch.equal(v, b["model"][k]), k
    for i, s in a["optimizer"]["state"].items():
        for k, v in s.items():
            assert torch.equal(torch.as_tensor(v), torch.as_tensor(b["optimizer"]["state"][i][k])), (i, k)
    assert a["scheduler"] == b["scheduler"] and a["running"] == b["running"]
    # each step once, the same lines as the uninterrupted run's but for the wall time
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, STEPS + 1))
    assert untimed(out / "metrics.jsonl") == untimed(whole / "metrics.jsonl")


def test_truncate_metrics_drops_later_steps_and_cut_lines_atomically(tmp_path):
    m = tmp_path / "metrics.jsonl"
    m.write_text('{"step": 1, "total": 1.0}\n{"step": 2}\n{"step": 2, "val": {}}\n{"step": 3}\n{"st')
    assert truncate_metrics(m, 2) == 2
    assert [json.loads(line)["step"] for line in m.read_text().splitlines()] == [1, 2, 2]
    assert not list(tmp_path.glob("*.tmp"))
    assert truncate_metrics(m, 2) == 0  # nothing more to drop
    assert truncate_metrics(m, 0) == 3 and m.read_text() == ""
    assert truncate_metrics(tmp_path / "none.jsonl", 0) == 0


def test_checkpoints_carry_random_states_that_load_weights_only(photos, tmp_path):
    """torch's, numpy's and Python's global generators are in the checkpoint (as plain types and tensors,
    readable with weights_only=True) and restored on resume."""
    import random

    import numpy as np

    from patchpose.training.checkpoint import random_states, set_random_states

    train(load_config("v1", overrides(photos, "optim.steps=2")), tmp_path / "r", progress=False)
    ck = torch.load(tmp_path / "r" / "checkpoint.pt", weights_only=True)
    assert set(ck["rng"]) >= {"torch", "numpy", "python"} and ck["version"] == 2
    s = random_states()
    first = (torch.rand(2), np.random.rand(2), random.random())
    set_random_states(s)
    again = (torch.rand(2), np.random.rand(2), random.random())
    assert torch.equal(first[0], again[0]) and (first[1] == again[1]).all() and first[2] == again[2]


def test_a_checkpoint_with_broken_random_states_is_one_line(photos, tmp_path):
    from patchpose.errors import WeightsError

    out = tmp_path / "r"
    train(load_config("v1", overrides(photos, "optim.steps=2")), out, progress=False)
    ck = torch.load(out / "checkpoint.pt", weights_only=True)
    ck["rng"]["torch"] = torch.zeros(3, dtype=torch.uint8)
    torch.save(ck, out / "checkpoint.pt")
    with pytest.raises(WeightsError, match="random states"):
        train(load_config("v1", overrides(photos, "optim.steps=4")), out, resume=True, progress=False)
