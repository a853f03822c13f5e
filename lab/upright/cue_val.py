"""Which way is up where a collection ties (#63): the rule chosen off the test photos. Random collections of N
photos of ``data/photos`` (its train and val splits, ``splits.json``: 48 photos; the 15 test photos left out), m of
them sideways (all one way, or each 90 or 270), the photos' relative turns known: how often each rule picks the true
upright, 400 collections per (N, m). Run from the folder that holds ``data/`` (``patchpose data`` makes it).

A: the largest set, ties to the first photo's set (the rule before); B: the upright cue alone (summed over the
photos); C: the largest set, ties broken by the cue (adopted). Usage: ``python lab/upright/cue_val.py``."""

import json

import numpy as np

from patchpose.data.patches import load_image
from patchpose.matching.collection import upright_cue

splits = json.loads(open("data/photos/splits.json").read())
files = [f"data/photos/{name}" for name in sorted(splits["train"] + splits["val"])]
C = np.array([upright_cue(load_image(f)) for f in files])
print(f"{len(C)} photos (train and val); the upright turn scores highest for {(C.argmax(1) == 0).mean():.2f}")
rng = np.random.default_rng(0)
for same in (True, False):
    print("sideways all one way" if same else "sideways either way")
    for n in (4, 10, 16):
        row = []
        for m in range(n + 1):
            hits = {"A": 0, "B": 0, "C": 0}
            trials = 400
            for _ in range(trials):
                idx = rng.choice(len(C), n, replace=False)
                s = np.zeros(n, int)  # photo i stored turned by s[i] quarter turns
                s[rng.choice(n, m, replace=False)] = 1 if same else rng.choice([1, 3], m)
                counts = np.array([(s == u).sum() for u in range(4)])
                cues = np.array(
                    [C[idx, u].sum() for u in range(4)]
                )  # under candidate u every photo shows turned u
                tied = np.nonzero(counts == counts.max())[0]
                a = s[0] if s[0] in tied else tied[0]
                b = int(np.argmax(cues))
                c = a if len(tied) == 1 else int(tied[np.argmax(cues[tied])])
                hits["A"] += a == 0
                hits["B"] += b == 0
                hits["C"] += c == 0
            row.append(
                f"m={m}: A{hits['A'] / trials:.2f} B{hits['B'] / trials:.2f} C{hits['C'] / trials:.2f}"
            )
        print(f"N={n}:", "; ".join(row))
