"""The retry in a collection (tried, not adopted): upright_collection with every pair voted, where a pair's 500
corners show no turn its photos vote again with RETRY corners (as upright_pair does). `install(retry)` puts it in
place of the library's for `colmap`, `eval colmap` and `extract` (patchpose.integrations.colmap and .extract call it by name)."""
import itertools

import patchpose.integrations.colmap as K
import patchpose.integrations.extract as E
import patchpose.matching.collection as C
from patchpose.estimator import as_estimator
from patchpose.matching.upright import VOTE_KEYPOINTS, turn_between, voters

RETRY = 2000


def upright_collection(images, pairs=None, *, max_keypoints=VOTE_KEYPOINTS, estimator=None, progress=False,
                       retrieval=None):
    import numpy as np
    assert retrieval is None, "every pair or given pairs only"
    n = len(images)
    pairs = list(itertools.combinations(range(n), 2)) if pairs is None else [tuple(p) for p in pairs]
    est = as_estimator(estimator, "upright")
    used = {int(k) for p in pairs for k in p}
    votes, up = {}, np.zeros((n, 4))
    for k in range(n):
        im = images[k]
        if k in used:
            votes[k] = voters(im, max_keypoints, est)
            up[k] = C.upright_cue(im)
    found, missed = [], []
    for i, j in pairs:
        t = turn_between(votes[int(i)], votes[int(j)])
        if t.found:
            found.append((int(i), int(j), t.degrees))
        elif max_keypoints < RETRY:
            missed.append((int(i), int(j)))
    for k in sorted({k for p in missed for k in p}):
        votes[k] = voters(images[k], RETRY, est)
    for i, j in missed:
        t = turn_between(votes[i], votes[j])
        if t.found:
            found.append((i, j, t.degrees))
    return C.collection_turns(n, found, up)


def install(retry=2000):
    global RETRY
    RETRY = retry
    C.upright_collection = upright_collection
    E.upright_collection = upright_collection
    K.upright_collection = upright_collection
