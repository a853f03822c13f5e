"""Summarize `patchpose eval colmap` over the rendered scenes (`patchpose generate scenes`): per (set, row), the
mean over scenes of each scene's mean over seeds, and each row against a reference row, in percent of the
reference, with a 95 % percentile bootstrap interval over scenes (2,000 draws, seed 0).

    python lab/scenes_colmap/summarize.py OUT.json /work/ev_scenes/*/results.json [--reference sift]
    python lab/scenes_colmap/summarize.py OUT.json /work/ev_aliked/*/results.json --reference aliked --reference-set upright
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

KEYS = (
    "registered",
    "points3D",
    "distinct_points3D",
    "observations",
    "track_length",
    "reprojection_px",
    "centre_error_median",
    "centre_error_max",
    "view_error_median",
    "view_error_max",
)


def per_scene(doc: dict) -> dict:
    """{(set, pose): {key: mean over seeds}} of one results.json."""
    out: dict = {}
    for r in doc["runs"]:
        out.setdefault((r["set"], r["pose"]), []).append(r)
    return {
        k: {key: float(np.mean([np.nan if r.get(key) is None else r[key] for r in rs])) for key in KEYS}
        | {
            "images": rs[0]["images"],
            "seeds": len(rs),
            "all_registered": all(r["registered"] == r["images"] for r in rs),
        }
        for k, rs in out.items()
    }


def interval(x: np.ndarray, rng) -> list[float]:
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return [float("nan")] * 2
    means = rng.choice(x, (2000, len(x))).mean(1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("results", nargs="+")
    ap.add_argument("--reference", default="sift")
    ap.add_argument("--reference-set", default=None, help="the reference row's set (default: each row's own)")
    a = ap.parse_args()
    scenes = {Path(p).parent.name: per_scene(json.loads(Path(p).read_text())) for p in a.results}
    names = sorted(scenes)
    rows = sorted({k for s in scenes.values() for k in s})
    summary = []
    for s, pose in rows:
        rs = a.reference_set or s
        have = [n for n in names if (s, pose) in scenes[n] and (rs, a.reference) in scenes[n]]
        rec = {
            "set": s,
            "pose": pose,
            "scenes": len(have),
            "all_registered": sum(scenes[n][(s, pose)]["all_registered"] for n in have),
        }
        for key in KEYS:
            v = np.array([scenes[n][(s, pose)][key] for n in have])
            ref = np.array([scenes[n][(rs, a.reference)][key] for n in have])
            rng = np.random.default_rng(0)
            rec[key] = float(np.nanmean(v)) if len(v) else None
            rel = 100.0 * (v / ref - 1.0)
            rec[f"{key}_vs_ref_pct"] = float(np.nanmean(rel)) if len(v) else None
            rec[f"{key}_vs_ref_pct_ci"] = interval(rel, rng)
        summary.append(rec)
    Path(a.out).write_text(
        json.dumps(
            {
                "reference": a.reference,
                "reference_set": a.reference_set,
                "scenes": names,
                "rows": summary,
                "per_scene": {n: {f"{k[0]}/{k[1]}": v for k, v in scenes[n].items()} for n in names},
            },
            indent=1,
        )
    )
    print(f"reference {a.reference}; {len(names)} scenes: {names}")
    print(
        "set | pose | all reg. scenes | registered | points (vs ref %) | distinct (vs ref %) | observations (vs ref %) | "
        "track (vs ref %) | reproj px (vs ref %) | centre err m median / max | axis err deg median / max"
    )
    for r in summary:

        def f(key, fmt, r=r):
            ci = r[f"{key}_vs_ref_pct_ci"]
            return f"{format(r[key], fmt)} ({r[f'{key}_vs_ref_pct']:+.1f} [{ci[0]:+.1f}, {ci[1]:+.1f}])"

        print(
            f"{r['set']} | {r['pose']} | {r['all_registered']}/{r['scenes']} | {r['registered']:.2f} | "
            f"{f('points3D', ',.0f')} | {f('distinct_points3D', ',.0f')} | {f('observations', ',.0f')} | "
            f"{f('track_length', '.2f')} | {f('reprojection_px', '.3f')} | "
            f"{r['centre_error_median']:.4f} / {r['centre_error_max']:.4f} | "
            f"{r['view_error_median']:.3f} / {r['view_error_max']:.3f}"
        )


if __name__ == "__main__":
    main()
