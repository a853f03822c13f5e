"""LAB (#60): Key.Net and ALIKED keypoints (no orientation of their own) described upright in the collection,
against the orientation peers at their best, on generated sequences (val: chosen on; test: only reported).

Each sequence (6 images) is a collection: each image's turn by our votes (`upright_collection`, patchpose-v10) or by
SIFT's pairwise turns averaged alike (`sift_collection_turns`, no network). Keypoints (≤ MAXKP, strongest first):
Key.Net (its own scale) and ALIKED-n16 (no scale: once at a fixed 16 px frame as the peers run it, once at our
scale as the `pose` recipe gives it). At each, one descriptor per keypoint (RootSIFT and HardTFeat) at: the
dominant gradient's angle, OriNet's, AffNet's shape + OriNet's angle, angle 0 (plain upright: no votes), and the
angle that shows each image upright (ours / SIFT's turns). Pairs (1, k), matched by mutual nearest neighbours and by
the ratio test with a cross check; correct within 3 px of H's image of the keypoint. Also, at the keypoints the
detector finds again (mutually nearest within 1.5 px of H's image), each angle within ±5°/±10° of H's turn there.

python lab/learned_kp_upright/run.py ROOT OUT.json   (a rerun resumes; one thread)
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.conventions import REFERENCE_RADIUS
from patchpose.estimator import as_estimator
from patchpose.evaluation.colmap_eval import sift_collection_turns
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.descriptors import describer
from patchpose.evaluation.metrics import redetections
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, get_row, row_descriptors
from patchpose.geometry import apply_homography, pose_change
from patchpose.matching.candidates import recipe_poses
from patchpose.matching.collection import upright_collection
from patchpose.matching.features import features_at
from patchpose.matching.matcher import mutual_nn, ratio_matches

torch.set_num_threads(1)
cv2.setNumThreads(1)
MAXKP, THR, REPEAT_PX = 1000, 3.0, 1.5
EST = as_estimator("patchpose-v10")
PEERS = Peers("/work/shared/peers")
RUNS = {
    d: Run(describer(d, peers=PEERS), EST, MatchConfig(max_keypoints=MAXKP), PEERS)
    for d in ("sift", "hardtfeat")
}
PEER_ROWS = ("dominant_gradient", "orinet", "affnet+orinet")
ANGLE_ROWS = ("dominant_gradient", "orinet", "upright", "upright_ours", "upright_sift")
DETECTORS = ("keynet", "aliked16", "aliked_ours")


def features(image, detector):
    if detector == "keynet":
        return detect(image, MAXKP, detector="keynet", peers=PEERS)
    f = detect(image, MAXKP, detector="aliked", peers=PEERS)
    if detector == "aliked16":
        return f
    r = recipe_poses(
        f, EST.estimate(image, f.xy)
    ).descriptor_radius  # our scale, as the recipe `pose` reads it
    return features_at(image, f.xy, np.log2(np.maximum(r, 1e-12) / REFERENCE_RADIUS))


def angles(f, run, turns_deg):
    out = {}
    for r in ("dominant_gradient", "orinet"):
        out[r] = np.asarray(get_row(r).poses(run, Image(f))[1])[:, 0]
    out["upright"] = np.zeros(len(f))
    for name, t in turns_deg.items():
        out[name] = np.full(len(f), -math.radians(t))
    return out


def main():
    root, outp = sys.argv[1], sys.argv[2]
    seqs = [s for s in load_hpatches(root) if s.kind == "viewpoint"]
    rows = [f"{d}:{r}" for d in DETECTORS for r in (*PEER_ROWS, "upright", "upright_ours", "upright_sift")]
    out = {"root": root, "rows": rows, "maxkp": MAXKP, "sequences": []}
    if Path(outp).is_file():  # resumed: the finished sequences are kept
        out = json.loads(Path(outp).read_text())
    done = {r["name"] for r in out["sequences"]}
    for s in seqs:
        if s.name in done:
            continue
        ks = [1, *s.targets]
        ims = [s.image(k) for k in ks]
        t0 = time.perf_counter()
        ours = np.asarray(upright_collection(ims, estimator="patchpose-v10").degrees, float)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        sift_t = np.asarray(sift_collection_turns(ims).degrees, float)
        t_sift = time.perf_counter() - t0
        desc = {(dn, r): [] for dn in RUNS for r in rows}
        secs = {f"{dn}|{r}": 0.0 for dn in RUNS for r in rows}
        secs_detect = {d: 0.0 for d in DETECTORS}
        feats = {d: [] for d in DETECTORS}
        angs = {d: [] for d in DETECTORS}
        for i, im in enumerate(ims):
            for d in DETECTORS:
                t0 = time.perf_counter()
                f = features(im, d)
                secs_detect[d] += time.perf_counter() - t0
                feats[d].append(f)
                a = angles(f, RUNS["sift"], {"upright_ours": ours[i], "upright_sift": sift_t[i]})
                angs[d].append(a)
                for dn, run in RUNS.items():
                    for r in PEER_ROWS:
                        t0 = time.perf_counter()
                        desc[dn, f"{d}:{r}"].append(row_descriptors(r, run, Image(f)).reshape(len(f), -1))
                        secs[f"{dn}|{d}:{r}"] += time.perf_counter() - t0
                    for r in ("upright", "upright_ours", "upright_sift"):
                        t0 = time.perf_counter()
                        dd = run.describer.describe(f.pyramid, f.xy, f.frame, a[r])
                        desc[dn, f"{d}:{r}"].append(dd.reshape(len(f), -1))
                        secs[f"{dn}|{d}:{r}"] += time.perf_counter() - t0
        rec = {"name": s.name, "turns_ours": ours.round(2).tolist(), "turns_sift": sift_t.round(2).tolist(),
               "seconds_votes": [t_ours, t_sift], "seconds_rows": secs, "seconds_detect": secs_detect,
               "pairs": {}, "repeat": {}}  # fmt: skip
        for j, k in enumerate(ks[1:], start=1):
            H = s.homographies[k]
            for dn in RUNS:
                for r in rows:
                    d = r.split(":")[0]
                    x1, x2 = feats[d][0].xy, feats[d][j].xy
                    for mname in ("mnn", "ratio"):
                        fn = mutual_nn if mname == "mnn" else ratio_matches
                        m = fn(desc[dn, r][0], desc[dn, r][j])[0]
                        err = np.linalg.norm(apply_homography(H, x1[m[:, 0]]) - x2[m[:, 1]], axis=1)
                        rec["pairs"].setdefault(f"{dn}|{mname}|{r}", []).append(
                            [int((err <= THR).sum()), int(len(m)), len(x1), len(x2)]
                        )
            for d in DETECTORS:
                f1, fk = feats[d][0], feats[d][j]
                i1, jk, _ = redetections(apply_homography(H, f1.xy), fk.xy, REPEAT_PX)
                _, dt, ok = pose_change(H, f1.xy[i1])
                i1, jk, dt = i1[ok], jk[ok], dt[ok]
                cnt = {"n": int(len(i1))}
                for a in ANGLE_ROWS:
                    e = np.degrees(
                        np.abs(np.angle(np.exp(1j * (angs[d][j][a][jk] - angs[d][0][a][i1] - dt))))
                    )
                    cnt[a] = [int((e <= 5).sum()), int((e <= 10).sum())]
                rec["repeat"].setdefault(d, []).append(cnt)
        out["sequences"].append(rec)
        print(s.name, {r: np.array(v)[:, 0].mean().round(1) for r, v in rec["pairs"].items() if r.startswith("sift|mnn")},
              flush=True)  # fmt: skip
        tmp = Path(str(outp) + ".tmp")
        tmp.write_text(json.dumps(out))
        tmp.replace(outp)


if __name__ == "__main__":
    main()
