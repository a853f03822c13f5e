"""LAB (#63): the turns of an unordered collection voted over retrieval pairs (each photo's k most similar photos by
VLAD of its votes' descriptors, patchpose.matching.retrieval) against every pair of each scene alone. Collections:
the two shared real sets in one folder (27 photos, 2 scenes), and the 15 test photos' turned sequences in one folder
(90 photos, 15 scenes). Per k: the pairs voted, the share of them within one scene, each scene's photos in how many
groups, and each photo's turn against its scene's all-pairs turns after one common offset per scene.

python lab/unturn_retrieval/run.py OUT.json
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

from patchpose.data.patches import load_image
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.integrations.extract import image_names
from patchpose.matching.collection import collection_turns, upright_cue
from patchpose.matching.retrieval import nearest_pairs, vlad
from patchpose.matching.upright import turn_between, voters

torch.set_num_threads(1)
cv2.setNumThreads(1)


def wrap(a):
    return (np.asarray(a) + 180.0) % 360.0 - 180.0


def collections():
    real = []
    for scene in ("sacre_coeur", "tum_freiburg"):
        for _name, path in image_names(f"/work/shared/data/{scene}"):
            real.append((scene, lambda p=path: load_image(p)))
    hp = []
    for s in load_hpatches("/work/data/hpatches_turn"):
        if s.kind == "viewpoint":
            for k in [1, *s.targets]:
                hp.append((s.name, lambda s=s, k=k: s.image(k)))
    return {"real": real, "hp_turn": hp}


def main():
    outp = sys.argv[1]
    out = {}
    for cname, items in collections().items():
        labels = np.array([lab for lab, _ in items])
        t0 = time.perf_counter()
        vs, up = [], []
        for _, load in items:
            im = load()
            vs.append(voters(im))
            up.append(upright_cue(im))
        t_photos = time.perf_counter() - t0
        up = np.array(up)
        t0 = time.perf_counter()
        g = vlad([v[2] for v in vs])
        t_vlad = time.perf_counter() - t0
        cache = {}

        def turn(i, j):
            if (i, j) not in cache:
                t = turn_between(vs[i], vs[j])
                cache[(i, j)] = t.degrees if t.found else None
            return cache[(i, j)]

        # each scene alone, every pair: the reference
        ref = np.zeros(len(items))
        t0 = time.perf_counter()
        for lab in np.unique(labels):
            idx = np.flatnonzero(labels == lab)
            found = [(a, b, turn(int(idx[a]), int(idx[b]))) for a, b in itertools.combinations(range(len(idx)), 2)]
            ct = collection_turns(len(idx), [f for f in found if f[2] is not None], up[idx])
            ref[idx] = ct.degrees
        t_ref = time.perf_counter() - t0
        n_ref = sum(len(np.flatnonzero(labels == lab)) * (len(np.flatnonzero(labels == lab)) - 1) // 2
                    for lab in np.unique(labels))
        rec = {"photos": len(items), "scenes": len(np.unique(labels)), "seconds_photos": t_photos,
               "seconds_vlad": t_vlad, "ref_pairs": n_ref, "ref_seconds": t_ref, "k": {}}
        everyk = [*range(1, 6), 10]
        for k in everyk + ["all"]:
            pairs = (list(itertools.combinations(range(len(items)), 2)) if k == "all"
                     else nearest_pairs(g, k))
            t0 = time.perf_counter()
            found = [(i, j, turn(i, j)) for i, j in pairs]
            t_pairs = time.perf_counter() - t0
            found = [f for f in found if f[2] is not None]
            ct = collection_turns(len(items), found, up)
            same = np.mean([labels[i] == labels[j] for i, j in pairs])
            dev, groups, cross = [], {}, 0
            for lab in np.unique(labels):
                idx = np.flatnonzero(labels == lab)
                gs = sorted({int(x) for x in ct.group[idx]})
                groups[lab] = len(gs)
                # deviation after one common offset per group within the scene
                for gg in gs:
                    sel = idx[ct.group[idx] == gg]
                    if gg < 0 or len(sel) < 2:
                        continue
                    d = wrap(ct.degrees[sel] - ref[sel])
                    off = np.degrees(np.angle(np.mean(np.exp(1j * np.radians(d)))))
                    dev.extend(np.abs(wrap(d - off)).tolist())
            cross = int(sum(labels[i] != labels[j] for i, j, _ in found))
            rec["k"][str(k)] = {"pairs": len(pairs), "same_scene": float(same), "found": len(found),
                                "found_across_scenes": cross, "groups_per_scene": groups,
                                "not_found": int((~ct.found).sum()),
                                "dev_max": float(np.max(dev)) if dev else None,
                                "dev_median": float(np.median(dev)) if dev else None,
                                "dev_over_10": int(np.sum(np.array(dev) > 10)) if dev else 0,
                                "seconds_pairs": t_pairs}
            print(cname, k, rec["k"][str(k)], flush=True)
        out[cname] = rec
        Path(outp).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
