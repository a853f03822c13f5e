# ruff: noqa: UP031
"""A circular CNN over multi-window gradient histograms -> orientation distribution (36 bins, kornia's binning:
bin i at angle pi - 2 pi i / 36). Equivariant to turns by whole bins by construction. Trained on re-detected
keypoint pairs so that A's distribution turned by the true change agrees with B's (self-supervised: the warp)."""

import glob
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as Fn

from patchpose.matching.gradient import histogram_candidates

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(1)
B = 36


def load(d, wins):
    A, Bb, T = [], [], []
    for f in sorted(glob.glob(f"{d}/*.npz")):
        z = np.load(f)
        for k in [x[2:] for x in z.files if x.startswith("dt")]:
            A.append(z["A" + k][:, wins])
            Bb.append(z["B" + k][:, wins])
            T.append(z["dt" + k])
    return torch.tensor(np.concatenate(A)), torch.tensor(np.concatenate(Bb)), torch.tensor(np.concatenate(T))


def feats(h):  # (n, W, 36) -> normalized channels
    s = h.sum(-1, keepdim=True).clamp_min(1e-8)
    p = h / s
    return torch.cat([p * B, torch.sqrt(p * B), torch.log1p(100 * s).expand_as(p)], 1)


class Net(nn.Module):
    def __init__(self, w, ch=32, layers=4, k=5):
        super().__init__()
        mods, c = [], 3 * w
        for _ in range(layers):
            mods += [nn.Conv1d(c, ch, k, padding=k // 2, padding_mode="circular"), nn.ReLU()]
            c = ch
        mods += [nn.Conv1d(c, 1, k, padding=k // 2, padding_mode="circular")]
        self.body = nn.Sequential(*mods)
        self.base = nn.Parameter(torch.tensor(8.0))
        self.ref = None

    def forward(self, h, ref):
        p = h[:, ref] / h[:, ref].sum(-1, keepdim=True).clamp_min(1e-8)
        return self.base * p * B / 4 + self.body(feats(h))[:, 0]


def shift(p, s):  # p (n, 36), s (n,) fractional bins: out(b) = p(b - s)
    lo = torch.floor(s)
    fr = (s - lo)[:, None]
    idx = (torch.arange(B)[None] - lo[:, None].long()) % B
    a = p.gather(1, idx)
    b = p.gather(1, (idx - 1) % B)
    return (1 - fr) * a + fr * b


def angle(logits):  # argmax + parabola -> radians (kornia's convention)
    n = len(logits)
    i = logits.argmax(1)
    lft, c, r = (
        logits[torch.arange(n), (i - 1) % B],
        logits[torch.arange(n), i],
        logits[torch.arange(n), (i + 1) % B],
    )
    den = lft - 2 * c + r
    off = torch.where(den.abs() > 1e-9, 0.5 * (lft - r) / den, torch.zeros_like(den))
    return math.pi - 2 * math.pi * (i.float() + off) / B


def within(la, lb, dt, deg=5.0):
    e = torch.rad2deg(torch.angle(torch.exp(1j * (angle(lb) - angle(la) - dt).double()))).abs()
    return (e <= deg).float().mean().item()


def main():
    wins = [int(x) for x in sys.argv[1].split(",")] if len(sys.argv) > 1 else [0, 1, 2, 3, 4]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    ch = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    layers = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    wd = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    tag = sys.argv[6] if len(sys.argv) > 6 else "run"
    ref = wins.index(2)
    sfx = os.environ.get("SFX", "")
    A, Bt, T = load("train" + sfx, wins)
    if os.environ.get("TRAIN_TURN"):
        A2, B2, T2 = load("train" + sfx + "_turn", wins)
        A, Bt, T = torch.cat([A, A2]), torch.cat([Bt, B2]), torch.cat([T, T2])
    VA, VB, VT = load("val" + sfx, wins)
    TA, TB, TT = load("val" + sfx + "_turn", wins)
    print("train", len(T), "val", len(VT), "val_turn", len(TT))

    # the baseline: kornia's peak on window 1.0
    def grad_within(a, b, t):
        oa = torch.tensor(histogram_candidates(a[:, ref].double().numpy(), 1)[0][:, 0])
        ob = torch.tensor(histogram_candidates(b[:, ref].double().numpy(), 1)[0][:, 0])
        e = torch.rad2deg(torch.angle(torch.exp(1j * (ob - oa - t.double())))).abs()
        return (e <= 5).float().mean().item()

    print(
        "gradient: val %.3f val_turn %.3f train %.3f"
        % (grad_within(VA, VB, VT), grad_within(TA, TB, TT), grad_within(A, Bt, T))
    )
    net = Net(len(wins), ch, layers)
    print("params", sum(p.numel() for p in net.parameters()))
    opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=wd)
    best = (-1, None, 0)
    for step in range(steps + 1):
        idx = torch.randint(0, len(T), (512,))
        a, b, t = A[idx], Bt[idx], T[idx]
        # drawn and not used (no augmentation): kept so that the logged runs reproduce
        _ = torch.randint(0, B, (len(idx),))
        la, lb = net(a, ref), net(b, ref)
        pa, pb = Fn.softmax(la, 1), Fn.softmax(lb, 1)
        s = -t * B / (2 * math.pi)
        agree = (shift(pa, s) * pb).sum(1)
        loss = -torch.log(agree + 1e-6).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 250 == 0:
            with torch.no_grad():
                v1, v2 = within(net(VA, ref), net(VB, ref), VT), within(net(TA, ref), net(TB, ref), TT)
                print(
                    step,
                    "loss %.3f" % loss.item(),
                    "val %.3f val_turn %.3f" % (v1, v2),
                    "base %.2f" % net.base.item(),
                    flush=True,
                )
                if (v1 + v2) / 2 > best[0]:
                    best = ((v1 + v2) / 2, {k: v.clone() for k, v in net.state_dict().items()}, step)
    print("best", best[0], "at", best[2])
    torch.save({"state": best[1], "wins": wins, "ch": ch, "layers": layers}, f"net_{tag}.pt")


if __name__ == "__main__":
    main()
