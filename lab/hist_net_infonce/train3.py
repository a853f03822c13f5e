# ruff: noqa: UP031
"""The histogram network (train.py's Net) trained for matching, not agreement: each keypoint's descriptor is the
blend of its RootSIFT descriptors at the 36 bin angles weighted by the network's distribution; InfoNCE over the
re-detected keypoints of one image pair (the others are the negatives), plus an entropy penalty so that the
argmax (one descriptor at inference) is what was trained. Val: mutual nearest neighbours among re-detected
keypoints with the argmax bin's descriptor, the share that pairs a keypoint with its own re-detection."""

import glob
import sys

import numpy as np
import torch
import torch.nn.functional as Fn
from train import Net

torch.manual_seed(0)
torch.set_num_threads(1)


def load(d):
    G = []
    for f in sorted(glob.glob(f"{d}/*.npz")):
        z = np.load(f)
        for k in [x[2:] for x in z.files if x.startswith("dt")]:
            if len(z["dt" + k]) >= 8:
                G.append(tuple(torch.tensor(z[p + k].astype(np.float32)) for p in ("A", "B", "DA", "DB")))
    return G


def blend(p, D):
    d = torch.einsum("nb,nbk->nk", p, D)
    return Fn.normalize(d, dim=1)


def mnn_share(DA, DB):
    s = DA @ DB.T
    a, b = s.argmax(1), s.argmax(0)
    idx = torch.arange(len(DA))
    return ((a == idx) & (b[a] == idx)).float().sum().item(), len(DA)


def evaluate(net, G):
    tot = {"gradient": [0, 0], "net": [0, 0]}
    with torch.no_grad():
        for A, B_, DA, DB in G:
            n = len(A)
            for name, (ia, ib) in (
                ("gradient", (A[:, 2].argmax(1), B_[:, 2].argmax(1))),
                ("net", (net(A, 2).argmax(1), net(B_, 2).argmax(1))),
            ):
                c, m = mnn_share(
                    Fn.normalize(DA[torch.arange(n), ia], dim=1), Fn.normalize(DB[torch.arange(n), ib], dim=1)
                )
                tot[name][0] += c
                tot[name][1] += m
    return {k: v[0] / v[1] for k, v in tot.items()}


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    tau = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    lam = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
    tag = sys.argv[4] if len(sys.argv) > 4 else "m"
    import os

    G, V = load("train3"), load("val3")
    if os.environ.get("TRAIN_TURN"):
        G = G + load("train3_turn")
    print("train pairs", len(G), "keypoints", sum(len(g[0]) for g in G), "val", sum(len(g[0]) for g in V))
    net = Net(5, 16, 3)
    opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=0.01)
    print(0, evaluate(net, V), flush=True)
    best = (-1.0, None, 0)
    for step in range(1, steps + 1):
        A, B_, DA, DB = G[np.random.randint(len(G))]
        if len(A) > 256:
            sel = torch.randperm(len(A))[:256]
            A, B_, DA, DB = A[sel], B_[sel], DA[sel], DB[sel]
        pa, pb = Fn.softmax(net(A, 2), 1), Fn.softmax(net(B_, 2), 1)
        da, db = blend(pa, DA), blend(pb, DB)
        s = da @ db.T / tau
        t = torch.arange(len(A))
        ent = -(pa * torch.log(pa + 1e-9)).sum(1).mean() - (pb * torch.log(pb + 1e-9)).sum(1).mean()
        loss = Fn.cross_entropy(s, t) + Fn.cross_entropy(s.T, t) + lam * ent
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 250 == 0:
            r = evaluate(net, V)
            print(step, "loss %.3f ent %.2f" % (loss.item(), ent.item() / 2), r, flush=True)
            if r["net"] > best[0]:
                best = (r["net"], {k: v.clone() for k, v in net.state_dict().items()}, step)
    print("best", best[0], "at", best[2])
    torch.save({"state": best[1], "wins": [0, 1, 2, 3, 4], "ch": 16, "layers": 3}, f"net_{tag}.pt")


if __name__ == "__main__":
    main()
