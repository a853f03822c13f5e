import numpy as np
import torch
from train import Net, angle, load

from patchpose.matching.gradient import histogram_candidates


def hybrid(h, la, k=3):
    """the gradient histogram's peak (of its k strongest, parabola-refined) nearest the net's angle"""
    o, m = histogram_candidates(h.double().numpy(), k)
    a = angle(la).double().numpy()[:, None]
    d = np.abs(np.angle(np.exp(1j * (o - a))))
    return torch.tensor(o[np.arange(len(o)), d.argmin(1)])


def err(a, b, t):
    return torch.rad2deg(torch.angle(torch.exp(1j * (b - a - t.double())))).abs()


if __name__ == "__main__":
    import sys

    ck = torch.load(sys.argv[1], weights_only=True)
    net = Net(len(ck["wins"]), ck["ch"], ck["layers"])
    net.load_state_dict(ck["state"])
    net.eval()
    ref = ck["wins"].index(2)
    for d in sys.argv[2:]:
        A, Bt, T = load(d, ck["wins"])
        with torch.no_grad():
            la, lb = net(A, ref), net(Bt, ref)
        e = err(angle(la).double(), angle(lb).double(), T)
        oa = torch.tensor(histogram_candidates(A[:, ref].double().numpy(), 1)[0][:, 0])
        ob = torch.tensor(histogram_candidates(Bt[:, ref].double().numpy(), 1)[0][:, 0])
        g = err(oa, ob, T)
        hy = err(hybrid(A[:, ref], la), hybrid(Bt[:, ref], lb), T)
        print(
            d,
            " ".join(
                f"<={th}: grad {(g <= th).float().mean():.3f} net {(e <= th).float().mean():.3f} hyb {(hy <= th).float().mean():.3f}"
                for th in (2, 5, 10, 30)
            ),
        )
        print(
            "   median error where <=5:",
            f"grad {g[g <= 5].median():.2f} net {e[e <= 5].median():.2f} hyb {hy[hy <= 5].median():.2f}",
        )
