"""Key.Net and ALIKED keypoints upright in the collection against the orientation peers: correct matches per pair
and MMA@3 of each row (per descriptor and matcher), upright_ours minus the best peer row (the best in each measure
of the dominant gradient, OriNet, AffNet + OriNet and plain upright) and minus upright_sift (the network's share),
95 % intervals over the photos (4,000 draws); each angle within ±5° / ±10° at re-found keypoints (pooled, and its
interval over photos); seconds per image of each row's description.

python lab/learned_kp_upright/summarize.py OUT.json...   (each a run.py output)
python lab/learned_kp_upright/summarize.py --table VIEWPOINT.json ZOOMED.json TURNED.json SLANTED.json   (the docs' table)
"""

import json
import sys

import numpy as np

PEERS = ("dominant_gradient", "orinet", "affnet+orinet", "upright")
ANGLES = ("dominant_gradient", "orinet", "upright", "upright_ours", "upright_sift")


def interval(x, boot):
    lo, hi = np.percentile(x[boot].mean(1), [2.5, 97.5], axis=0)
    return lo, hi


for f in [] if sys.argv[1:2] == ["--table"] else sys.argv[1:]:
    d = json.load(open(f))
    seqs = d["sequences"]
    n = len(seqs)
    boot = np.random.default_rng(0).integers(0, n, (4000, n))
    print(f"== {f} ({n} sequences, <= {d.get('maxkp')} keypoints)")
    keys = list(seqs[0]["pairs"])
    per = {
        k: np.array([[np.mean([p[0] for p in s["pairs"][k]]), np.mean([p[0] / max(p[1], 1) for p in s["pairs"][k]])]
                     for s in seqs])
        for k in keys
    }  # fmt: skip
    groups = sorted({k.rsplit(":", 1)[0] for k in keys})  # descriptor|matcher|detector
    for g in groups:
        print(f"  {g}")
        for r in (*PEERS, "upright_ours", "upright_sift"):
            v = per[f"{g}:{r}"]
            print(f"     {r:18s} correct {v[:, 0].mean():7.1f}  MMA@3 {v[:, 1].mean():.3f}")
        ours = per[f"{g}:upright_ours"]
        best = [max(PEERS, key=lambda r, m=m: per[f"{g}:{r}"][:, m].mean()) for m in (0, 1)]
        for m, name in ((0, "correct"), (1, "MMA@3")):
            x = ours[:, m] - per[f"{g}:{best[m]}"][:, m]
            lo, hi = interval(x[:, None], boot)
            fmt = "+.1f" if m == 0 else "+.3f"
            print(
                f"     ours - best peer ({best[m]}) {name}: {x.mean():{fmt}} [{lo[0]:{fmt}}, {hi[0]:{fmt}}]"
            )
        x = ours - per[f"{g}:upright_sift"]
        lo, hi = interval(x, boot)
        print(f"     ours - SIFT's turns (network's share): correct {x[:, 0].mean():+.1f} [{lo[0]:+.1f}, {hi[0]:+.1f}]"
              f"  MMA@3 {x[:, 1].mean():+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]")  # fmt: skip
    print("  angle within ±5° / ±10° at re-found keypoints (pooled over pairs; ±5° interval over photos)")
    for det in seqs[0]["repeat"]:
        tot = sum(c["n"] for s in seqs for c in s["repeat"][det])
        line = [f"    {det:12s} n={tot}"]
        for a in ANGLES:
            c5 = np.array([sum(c[a][0] for c in s["repeat"][det]) for s in seqs], float)
            c10 = sum(c[a][1] for s in seqs for c in s["repeat"][det])
            ns = np.array([sum(c["n"] for c in s["repeat"][det]) for s in seqs], float)
            rates = c5[boot].sum(1) / np.maximum(ns[boot].sum(1), 1)
            lo, hi = np.percentile(rates, [2.5, 97.5])
            line.append(
                f"{a} {100 * c5.sum() / max(tot, 1):.1f} [{100 * lo:.1f}, {100 * hi:.1f}] / {100 * c10 / max(tot, 1):.1f}"
            )
        print("; ".join(line))
    print("  seconds per image (description of each row; detection; votes per sequence of 6)")
    imgs = 6 * n
    for k in seqs[0]["seconds_rows"]:
        print(f"    {k:40s} {sum(s['seconds_rows'][k] for s in seqs) / imgs:.3f}")
    for k in seqs[0]["seconds_detect"]:
        print(f"    detect {k:33s} {sum(s['seconds_detect'][k] for s in seqs) / imgs:.3f}")
    v = np.array([s["seconds_votes"] for s in seqs])
    print(f"    votes per sequence: ours {v[:, 0].mean():.2f} s, SIFT's turns {v[:, 1].mean():.2f} s")


def table(files):
    """The docs' table: per keypoints × descriptor × matcher, per kind (file), upright_ours's MMA@3 (correct) and
    its difference to the best peer in each measure, with intervals; and the network's share."""
    cols = []
    for f in files:
        d = json.load(open(f))
        seqs = d["sequences"]
        n = len(seqs)
        boot = np.random.default_rng(0).integers(0, n, (4000, n))
        per = {
            k: np.array([[np.mean([p[0] for p in s["pairs"][k]]),
                          np.mean([p[0] / max(p[1], 1) for p in s["pairs"][k]])] for s in seqs])
            for k in seqs[0]["pairs"]
        }  # fmt: skip
        cols.append((per, boot))
    groups = sorted({k.rsplit(":", 1)[0] for k in cols[0][0]})
    for g in groups:
        cells = []
        for per, boot in cols:
            ours = per[f"{g}:upright_ours"]
            best = [max(PEERS, key=lambda r, m=m: per[f"{g}:{r}"][:, m].mean()) for m in (0, 1)]
            xc = ours[:, 0] - per[f"{g}:{best[0]}"][:, 0]
            xm = ours[:, 1] - per[f"{g}:{best[1]}"][:, 1]
            (lc, hc), (lm, hm) = (np.percentile(x[boot].mean(1), [2.5, 97.5]) for x in (xc, xm))
            xs = ours - per[f"{g}:upright_sift"]
            ls, hs = np.percentile(xs[boot].mean(1), [2.5, 97.5], axis=0)
            cells.append(f"{ours[:, 1].mean():.3f} ({ours[:, 0].mean():.0f}); {xc.mean():+.1f} [{lc:+.1f}, {hc:+.1f}] "
                         f"({best[0]}), {xm.mean():+.3f} [{lm:+.3f}, {hm:+.3f}] ({best[1]}); share {xs[:, 0].mean():+.1f} "
                         f"[{ls[0]:+.1f}, {hs[0]:+.1f}], {xs[:, 1].mean():+.3f}")  # fmt: skip
        print(f"| {g} | " + " | ".join(cells) + " |")


if __name__ == "__main__" and sys.argv[1:2] == ["--table"]:
    table(sys.argv[2:])
