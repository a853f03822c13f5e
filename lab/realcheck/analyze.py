"""Summaries of realcheck.py's JSONs: python analyze.py tum_freiburg.json sacre_coeur.json > results_tables.md"""

from __future__ import annotations

import json
import sys

import numpy as np
import pycolmap

import realcheck as rc

METHODS = ["rectify", "pair-pose", "sift-mnn", "sift-ratio"]
B = 2000


def share(s):
    return s["correct"] / s["matches"] if s["matches"] else 0.0


def share_samp(s):
    return s["correct_sampson"] / s["matches"] if s["matches"] else 0.0


def boot(d, groups=None, seed=0):
    """95 % percentile bootstrap interval of mean(d) over pairs (or over groups of pairs)."""
    rng = np.random.default_rng(seed)
    d = np.asarray(d, float)
    if groups is None:
        idx = rng.integers(0, len(d), (B, len(d)))
        means = d[idx].mean(1)
    else:
        g = np.asarray(groups)
        ug = np.unique(g)
        members = [np.nonzero(g == u)[0] for u in ug]
        means = np.empty(B)
        for b in range(B):
            pick = rng.integers(0, len(ug), len(ug))
            ii = np.concatenate([members[p] for p in pick])
            means[b] = d[ii].mean()
    lo, hi = np.percentile(means, [2.5, 97.5])
    return d.mean(), lo, hi


def gt_ceiling(name, pairs):
    """Share of COLMAP's own co-observed inlier points within 2 px (sym max / Sampson), pooled over the pairs."""
    rec = pycolmap.Reconstruction(rc.MODEL.format(name))
    ims = {im.name: im for im in rec.images.values()}
    ok_s = ok_p = n = 0
    for p in pairs:
        a, b = ims[p["im1"]], ims[p["im2"]]
        o1 = {q.point3D_id: np.asarray(q.xy) - 0.5 for q in a.points2D if q.has_point3D()}
        o2 = {q.point3D_id: np.asarray(q.xy) - 0.5 for q in b.points2D if q.has_point3D()}
        ids = sorted(set(o1) & set(o2))
        if not ids:
            continue
        v1, v2 = rc.View(a), rc.View(b)
        s, sp = rc.epi_dists(rc.fundamental(v1, v2), v1.undistort_px(np.array([o1[i] for i in ids])),
                             v2.undistort_px(np.array([o2[i] for i in ids])))
        ok_s += int((s <= rc.THR).sum()); ok_p += int((sp <= rc.THR).sum()); n += len(ids)
    return ok_s / n, ok_p / n, n


def main():
    out = []
    pr = out.append
    for path in sys.argv[1:]:
        d = json.load(open(path))
        name, pairs = d["set"], d["pairs"]
        pr(f"\n## {name}: {len(pairs)} pairs, {d['registered']}/{d['n_images']} images registered in the COLMAP model\n")
        gs, gp, gn = gt_ceiling(name, pairs)
        pr(f"COLMAP's own co-observed inlier points of these pairs ({gn:,} point pairs) within 2 px: "
           f"{gs:.1%} (symmetric max), {gp:.1%} (Sampson): the pseudo ground truth's own ceiling.\n")
        pr(f"/work/main HEAD at start {d['git_start']['head'][:10]}, at end {d['git_end']['head'][:10]}; "
           f"matching/*.py md5 unchanged during run: {d['git_start']['md5'] == d['git_end']['md5']}; "
           f"load average at start {np.round(d['git_start']['loadavg'], 2).tolist()}, end {np.round(d['git_end']['loadavg'], 2).tolist()}; "
           f"run {d['seconds_total']:.0f} s\n")
        first_frame = [sorted({p['im1'] for p in pairs}).index(p["im1"]) for p in pairs]
        for cond in ("upright", "turned"):
            pr(f"\n### {name}, {cond}\n")
            pr("| method | mean correct (sym ≤2px) | mean share correct | mean matches | mean correct (Sampson ≤2px) | "
               "mean share (Sampson) | chance share | median s/pair | mean s/pair |")
            pr("|---|---|---|---|---|---|---|---|---|")
            for m in METHODS:
                S = [p[cond][m] for p in pairs]
                pr(f"| {m} | {np.mean([s['correct'] for s in S]):.2f} | {np.mean([share(s) for s in S]):.4f} | "
                   f"{np.mean([s['matches'] for s in S]):.1f} | {np.mean([s['correct_sampson'] for s in S]):.2f} | "
                   f"{np.mean([share_samp(s) for s in S]):.4f} | {np.nanmean([s['chance_share'] for s in S]):.4f} | "
                   f"{np.median([s['seconds'] for s in S]):.3f} | {np.mean([s['seconds'] for s in S]):.3f} |")
            pr("\nrectify minus each method, mean over pairs with 95 % bootstrap interval (2,000 resamples of pairs"
               + ("; TUM: pairs share frames, so the pair bootstrap is too narrow; 'by first frame' resamples the 14-16 "
                  "groups of pairs that start at one frame, a partial correction" if name == "tum_freiburg" else "")
               + "); W/T/L: pairs where rectify has more / equal / fewer correct matches\n")
            hdr = "| rectify − | Δ correct [95% CI] | Δ share [95% CI] | W/T/L |"
            if name == "tum_freiburg":
                hdr += " Δ correct, by first frame [95% CI] |"
            pr(hdr)
            pr("|---|---|---|---|" + ("---|" if name == "tum_freiburg" else ""))
            for m in METHODS[1:]:
                dc = [p[cond]["rectify"]["correct"] - p[cond][m]["correct"] for p in pairs]
                ds = [share(p[cond]["rectify"]) - share(p[cond][m]) for p in pairs]
                c, cl, ch = boot(dc)
                s, sl, sh = boot(ds)
                w, t, l = sum(x > 0 for x in dc), sum(x == 0 for x in dc), sum(x < 0 for x in dc)
                row = f"| {m} | {c:+.2f} [{cl:+.2f}, {ch:+.2f}] | {s:+.4f} [{sl:+.4f}, {sh:+.4f}] | {w}/{t}/{l} |"
                if name == "tum_freiburg":
                    c2, cl2, ch2 = boot(dc, first_frame)
                    row += f" {c2:+.2f} [{cl2:+.2f}, {ch2:+.2f}] |"
                pr(row)
            none = [p for p in pairs if p[cond]["rectify"]["diag"]["affine"] is None]
            worse = [p for p in pairs if p[cond]["rectify"]["correct"] < p[cond]["sift-mnn"]["correct"]]
            pr(f"\nrectify found no affine map: {len(none)}/{len(pairs)} pairs"
               + (": " + ", ".join(f"{p['im1']}–{p['im2']}" for p in none) if none else ""))
            pr(f"\nrectify fewer correct than SIFT-MNN: {len(worse)}/{len(pairs)} pairs\n")
            if worse:
                pr("| pair | rectify c/m | sift-mnn c/m | pair-pose c/m | ratio m | RANSAC inl | map? | warped | re-det kp | "
                   "overlap | map: GT pts ≤3px / ≤10px | best-affine GT ≤3px | turn° | sv |")
                pr("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
                for p in sorted(worse, key=lambda p: p[cond]["rectify"]["correct"] - p[cond]["sift-mnn"]["correct"]):
                    r, g = p[cond]["rectify"], p[cond]["rectify"]["diag"]
                    f = lambda k, fmt="{:.2f}": "–" if g.get(k) is None else fmt.format(g[k])
                    pr(f"| {p['im1'][:14]}–{p['im2'][:14]} | {r['correct']}/{r['matches']} | "
                       f"{p[cond]['sift-mnn']['correct']}/{p[cond]['sift-mnn']['matches']} | "
                       f"{p[cond]['pair-pose']['correct']}/{p[cond]['pair-pose']['matches']} | {g['ratio_matches']} | "
                       f"{g['affine_inliers']} | {'yes' if g['affine'] else 'no'} | {g.get('warped', '–')} | "
                       f"{g.get('redetected', '–')} | {f('overlap_of_kept_frame')} | {f('gt_within3_of_map')} / "
                       f"{f('gt_within10_of_map')} | {f('gt_best_affine_within3')} | {f('affine_turn_deg', '{:.1f}')} | "
                       f"{'–' if g.get('affine_sv') is None else np.round(g['affine_sv'], 2).tolist()} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
