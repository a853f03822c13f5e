"""LAB (#63), lab/unturn_retrieval_v2's run with each photo's found pairs counted: do photos joined by one found pair
(leaves) carry the flips? Every photo's error against the truth (one offset per scene, all photos scored) by its
number of found pairs, for our retrieval at K = 8, 9, 10, 12, 15, 20 and every pair of each scene alone.

Turns voted over retrieval pairs where scenes are much larger than K: each photo's four generated
sequences (viewpoint, zoomed, turned, slanted; 24 images a scene) in one folder — val (8 photos, 192 images: K is
chosen here) and test (15 photos, 360 images: reported only). Retrieval by VLAD (patchpose.matching.retrieval) of
our votes' descriptors (`voters`, what `--unturn-retrieval` uses) or, with the network replaced, of the gradient's
blend at the same corners (`GradientVotes`); either way the chosen pairs are voted by our votes. Against every pair
of each scene alone and against the truth (H's rotation), after one common offset per scene (per group where a scene
splits). Rule, stated before the run: the smallest K on val with
every scene one group, every photo a turn, and every turn within 1° of every pair's.

python lab/unturn_retrieval_v2/run.py OUT.json
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import torch

from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.geometry import pose_change
from patchpose.matching.collection import collection_turns, upright_cue
from patchpose.matching.retrieval import nearest_pairs, vlad
from patchpose.matching.upright import turn_between, voters

torch.set_num_threads(1)
cv2.setNumThreads(1)
KS = [8, 9, 10, 12, 15, 20]


def wrap(a):
    return (np.asarray(a) + 180.0) % 360.0 - 180.0


def folder(split):
    suffix = "_val" if split == "val" else ""
    items = []
    for kind in ("", "_zoom", "_turn", "_tilt"):
        for s in load_hpatches(f"/work/data/hpatches{suffix}{kind}"):
            if s.kind == "viewpoint":
                items.extend((s.name, s, k) for k in [1, *s.targets])
    return items


def main():
    outp = sys.argv[1]
    out = json.loads(Path(outp).read_text()) if Path(outp).is_file() else {}
    for split in ("val", "test"):
        if split in out:
            continue
        items = folder(split)
        labels = np.array([lab for lab, _, _ in items])
        vs, gv, up = [], [], []
        t_ours = t_grad = 0.0
        for _, s, k in items:
            im = s.image(k)
            t0 = time.perf_counter()
            vs.append(voters(im))
            up.append(upright_cue(im))
            t_ours += time.perf_counter() - t0
            t0 = time.perf_counter()
            gv.append(None)
            t_grad += time.perf_counter() - t0
        up = np.array(up)
        # the truth: photo k of a sequence shows image 1's structures turned by H's rotation at image 1's centre;
        # every kind's image 1 is the photo itself, so a scene's truth needs one offset
        truth = np.zeros(len(items))
        for n, (_, s, k) in enumerate(items):
            if k != 1:
                h, w = s.image(1).shape[:2]
                truth[n] = -np.degrees(pose_change(s.homographies[k], [((w - 1) / 2, (h - 1) / 2)])[1][0])
        vectors = {"ours": vlad([v[2] for v in vs])}
        cache = {}

        def turn(i, j, cache=cache, vs=vs):
            if (i, j) not in cache:
                t = turn_between(vs[i], vs[j])
                cache[(i, j)] = t.degrees if t.found else None
            return cache[(i, j)]

        ref = np.zeros(len(items))
        n_ref = 0
        for lab in np.unique(labels):
            idx = np.flatnonzero(labels == lab)
            found = [(a, b, turn(int(idx[a]), int(idx[b]))) for a, b in itertools.combinations(range(len(idx)), 2)]
            n_ref += len(found)
            ref[idx] = collection_turns(len(idx), [f for f in found if f[2] is not None], up[idx]).degrees

        def against(est, sel_groups):
            """Each photo's |turn − reference| after one offset per group: (to every pair's, to the truth)."""
            out = ([], [])
            for sel in sel_groups:
                for target, o in ((ref, out[0]), (truth, out[1])):
                    d = wrap(est[sel] - target[sel])
                    off = np.degrees(np.angle(np.mean(np.exp(1j * np.radians(d)))))
                    o.extend(np.abs(wrap(d - off)).tolist())
            return out

        ref_truth = against(ref, [np.flatnonzero(labels == lab) for lab in np.unique(labels)])[1]
        rec = {"images": len(items), "scenes": len(np.unique(labels)), "seconds_voters": t_ours,
               "every_pair_of_each_scene_to_truth": {"max": max(ref_truth), "median": float(np.median(ref_truth)),
                                                     "over_2": int(np.sum(np.array(ref_truth) > 2)),
                                                     "over_10": int(np.sum(np.array(ref_truth) > 10))},
               "seconds_gradient_voters": t_grad, "ref_pairs": n_ref, "rows": {}}
        for src, vec in vectors.items():
            for k in KS if vec is not None else ["all"]:
                pairs = nearest_pairs(vec, k) if vec is not None else list(itertools.combinations(range(len(items)), 2))
                found = [(i, j, turn(i, j)) for i, j in pairs]
                found = [f for f in found if f[2] is not None]
                ct = collection_turns(len(items), found, up)
                split_scenes, groups = 0, []
                for lab in np.unique(labels):
                    idx = np.flatnonzero(labels == lab)
                    gs = sorted({int(x) for x in ct.group[idx]})
                    split_scenes += len(gs) > 1
                    groups.extend(idx[ct.group[idx] == g] for g in gs if g >= 0 and (ct.group[idx] == g).sum() >= 2)
                dev, dev_truth = against(ct.degrees, groups)
                degree = np.zeros(len(items), int)
                for i, j, _ in found:
                    degree[i] += 1
                    degree[j] += 1
                err = np.zeros(len(items))
                for lab in np.unique(labels):
                    idx = np.flatnonzero(labels == lab)
                    d = wrap(ct.degrees[idx] - truth[idx])
                    off = np.degrees(np.angle(np.mean(np.exp(1j * np.radians(d)))))
                    err[idx] = np.abs(wrap(d - off))
                rec.setdefault("photos", {})[f"{src}:{k}"] = {"degree": degree.tolist(), "error": err.round(2).tolist(),
                                                            "found": ct.found.tolist()}
                within = np.mean([labels[i] == labels[j] for i, j in pairs])
                r = {"pairs": len(pairs), "same_scene": float(within),
                     "within_scene_of_all": float(sum(labels[i] == labels[j] for i, j in pairs) / n_ref),
                     "split_scenes": int(split_scenes), "not_found": int((~ct.found).sum()),
                     "dev_max": float(max(dev)) if dev else None,
                     "dev_median": float(np.median(dev)) if dev else None,
                     "dev_over_2": int(np.sum(np.array(dev) > 2)), "dev_over_10": int(np.sum(np.array(dev) > 10)),
                     "found_across_scenes": int(sum(labels[i] != labels[j] for i, j, _ in found)),
                     "truth_max": float(max(dev_truth)) if dev_truth else None,
                     "truth_median": float(np.median(dev_truth)) if dev_truth else None,
                     "truth_over_2": int(np.sum(np.array(dev_truth) > 2)),
                     "truth_over_10": int(np.sum(np.array(dev_truth) > 10))}
                rec["rows"][f"{src}:{k}"] = r
                print(split, src, k, r, flush=True)
        out[split] = rec
        Path(outp).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
