"""Within +-5 deg at re-detected Key.Net keypoints, per photo (sequence): gradient vs the net; bootstrap over photos."""

import glob
import json
import sys

import numpy as np
import torch
from train import Net, angle

from patchpose.matching.gradient import histogram_candidates

rng = np.random.default_rng(0)
ck = torch.load(sys.argv[1], weights_only=True)
net = Net(len(ck["wins"]), ck["ch"], ck["layers"])
net.load_state_dict(ck["state"])
net.eval()
ref = ck["wins"].index(2)
res = {}
for d in sys.argv[2:]:
    g_, n_, w_ = [], [], []
    for f in sorted(glob.glob(f"{d}/*.npz")):
        z = np.load(f)
        G = N = W = 0
        for k in [x[2:] for x in z.files if x.startswith("dt")]:
            A = torch.tensor(z["A" + k][:, ck["wins"]])
            Bb = torch.tensor(z["B" + k][:, ck["wins"]])
            T = torch.tensor(z["dt" + k]).double()
            if len(T) == 0:
                continue
            with torch.no_grad():
                e = torch.rad2deg(
                    torch.angle(
                        torch.exp(1j * (angle(net(Bb, ref)).double() - angle(net(A, ref)).double() - T))
                    )
                ).abs()
            oa = histogram_candidates(A[:, ref].double().numpy(), 1)[0][:, 0]
            ob = histogram_candidates(Bb[:, ref].double().numpy(), 1)[0][:, 0]
            g = np.degrees(np.abs(np.angle(np.exp(1j * (ob - oa - T.numpy())))))
            G += (g <= 5).sum()
            N += (e <= 5).sum().item()
            W += len(T)
        g_.append(G)
        n_.append(N)
        w_.append(W)
    g_, n_, w_ = map(np.array, (g_, n_, w_))
    diffs = []
    for _ in range(2000):
        i = rng.integers(0, len(w_), len(w_))
        diffs.append((n_[i].sum() - g_[i].sum()) / w_[i].sum())
    r = {
        "photos": len(w_),
        "pairs_keypoints": int(w_.sum()),
        "gradient": g_.sum() / w_.sum(),
        "net": n_.sum() / w_.sum(),
        "diff": n_.sum() / w_.sum() - g_.sum() / w_.sum(),
        "ci": [float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))],
    }
    res[d] = r
    print(
        d,
        json.dumps(
            {
                k: (round(float(v), 4) if not isinstance(v, list) else [round(x, 4) for x in v])
                for k, v in r.items()
            }
        ),
    )
