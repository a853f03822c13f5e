"""``patchpose eval upright`` (#63): a learned feature trained upright (kornia's ALIKED-n16, weights from a peers
folder) on pairs of photos turned against each other, un-turned by our voted turn
(:func:`patchpose.match_upright`) against what its users do instead.

Rows, each matching photo 1 with photo k by mutual nearest neighbours:

* ``as_is`` — ALIKED-n16 as it comes (2 extractions a pair);
* ``rotation_trained`` — ALIKED-n16rot, the same network trained with turns (2);
* ``best_of_4`` — photo 1 at the four quarter turns, the one whose matches one fundamental matrix explains most
  kept (5; :func:`~patchpose.matching.upright.fundamental_support`, the library's own fallback);
* ``sift_turn`` — photo 1 un-turned by the turn of the affine map that SIFT's ratio-test matches agree on
  (RANSAC; ``rectify``'s first pass, :func:`~patchpose.matching.rectify.first_pass_affine`), the quarter turns
  where there is no map (2, or 5);
* ``ours`` — :func:`patchpose.match_upright`: photo 1 un-turned by our votes (:func:`patchpose.upright_pair`), the
  quarter turns where they show none (2, or 5);
* ``true_turn`` — photo 1 un-turned by the turn the homography makes: what a perfect vote gives (not a strict bound:
  a turn a fraction of a degree off resamples the photo differently, and ALIKED's matches move by a few).

Per pair: correct matches (within 3 px of where the homography maps photo 1's keypoint), matches, MMA@3, the
extractions and the seconds of the whole row (votes included; an extraction of a photo reused by several rows is
counted in each at the time it took). Intervals: bootstrap over sequences (or clusters of them), ``ours`` minus
each row.
"""

from __future__ import annotations

import hashlib
import math
import time
from pathlib import Path

import numpy as np

from ..data.patches import load_photo
from ..errors import InputError, require
from ..geometry import reprojection_errors
from ..matching.describe import Describer
from ..matching.features import sift_detected
from ..matching.matcher import mutual_nn
from ..matching.rectify import first_pass_affine
from ..matching.upright import VOTE_RETRY_KEYPOINTS, UprightTurn, match_upright, upright_pair
from .datasets.hpatches import load_hpatches
from .hpatches_eval import sequence_clusters, true_turn
from .intervals import DEFAULT_REPLICATES, check_bootstrap, count_intervals, format_interval
from .peers import Peers
from .report import write_results

ROWS = ("as_is", "rotation_trained", "best_of_4", "sift_turn", "ours", "true_turn")
LABELS = {
    "as_is": "ALIKED-n16 as it comes",
    "rotation_trained": "ALIKED-n16rot (trained with turns)",
    "best_of_4": "ALIKED-n16, photo 1 at the best of 4 quarter turns (fundamental-matrix support)",
    "sift_turn": "ALIKED-n16, photo 1 un-turned by SIFT's turn (ratio test → RANSAC affine)",
    "ours": "**ALIKED-n16, photo 1 un-turned by our voted turn** (`match_upright`)",
    "true_turn": "ALIKED-n16, photo 1 un-turned by the true turn (a perfect vote)",
}
#: degrees: the table by turn groups the pairs by their true turn to the nearest multiple of this
TURN_BIN_DEG = 15
#: the rows' names in the table by turn
SHORT = {
    "as_is": "as it comes",
    "rotation_trained": "n16rot",
    "best_of_4": "best of 4",
    "sift_turn": "SIFT's turn",
    "ours": "ours",
    "true_turn": "true turn",
}
#: px: a match is correct within this of where the homography maps its first keypoint
CORRECT_PX = 3.0


class _Timed:
    """An extractor that remembers what it extracted (by the image's bytes) and how long that took: rows that
    extract the same image reuse it, and each is charged the time it took once (:meth:`charge`)."""

    def __init__(self, extract):
        self.extract, self.memo = extract, {}
        self.charged = self.fresh = 0.0

    def __call__(self, image: np.ndarray):
        key = (image.shape, hashlib.sha1(np.ascontiguousarray(image).tobytes()).hexdigest())
        if key not in self.memo:
            t = time.perf_counter()
            self.memo[key] = (self.extract(image), time.perf_counter() - t)
            self.fresh += self.memo[key][1]
        out, seconds = self.memo[key]
        self.charged += seconds
        return out

    def charge(self) -> tuple[float, float]:
        """The seconds charged since the last call (every extraction at the time it took) and those spent
        extracting anew (already inside a caller's own timing), then reset."""
        out = (self.charged, self.fresh)
        self.charged = self.fresh = 0.0
        return out

    def clear(self) -> None:
        """Forget what was extracted (a new sequence)."""
        self.memo.clear()


def _score(H, xy1, xy2, m) -> dict:
    if len(m) == 0:
        return {"correct": 0, "matches": 0, "mma": 0.0}
    ok = reprojection_errors(H, xy1[m[:, 0]], xy2[m[:, 1]]) <= CORRECT_PX
    return {"correct": int(ok.sum()), "matches": int(len(m)), "mma": float(ok.mean())}


def sift_turn(image1: np.ndarray, image2: np.ndarray, max_keypoints: int) -> UprightTurn:
    """The turn (degrees CCW as displayed) of the affine map SIFT's ratio-test matches agree on (the rotation
    nearest its linear part), as an :class:`~patchpose.matching.upright.UprightTurn` (not found: no map)."""
    f1, f2 = (sift_detected(im, max_keypoints) for im in (image1, image2))
    return affine_turn(first_pass_affine(f1, f2, Describer())[0])


def affine_turn(A: np.ndarray | None) -> UprightTurn:
    """The turn of an affine map's linear part (the rotation nearest it) and its zoom, as an
    :class:`~patchpose.matching.upright.UprightTurn` (not found where ``A`` is None)."""
    if A is None:
        return UprightTurn(0.0, 0.0, 0, 0, False)
    # y down: a turn by θ CCW as displayed is [[cos, sin], [−sin, cos]]
    degrees = math.degrees(math.atan2(A[0, 1] - A[1, 0], A[0, 0] + A[1, 1])) % 360.0
    return UprightTurn(degrees, float(0.5 * math.log2(abs(np.linalg.det(A[:, :2])))), 0, 0, True)


def evaluate_upright(
    root: str | Path,
    out_dir: str | Path,
    peers: str | Path,
    *,
    max_keypoints: int = 2000,
    sequences: list[str] | None = None,
    cluster_pattern: str | None = None,
    bootstrap: int = DEFAULT_REPLICATES,
    progress: bool = True,
) -> dict:
    """Every pair (photo 1, photo k) of the HPatches-style sequences under ``root`` under each of :data:`ROWS`;
    writes ``results.json`` and ``results.md`` to ``out_dir``. ``peers``: the folder with ``aliked-n16.pth`` and
    ``aliked-n16rot.pth`` (never bundled)."""
    from ..integrations.kornia import aliked_extractor

    check_bootstrap(bootstrap)
    tqdm = require("tqdm", "eval").tqdm
    folder = Peers(peers)
    n16 = _Timed(aliked_extractor(folder.path("aliked"), "aliked-n16", max_keypoints))
    rot_path = Path(peers) / "aliked-n16rot.pth"
    if not rot_path.is_file():
        raise InputError(f"{rot_path} is missing: the rotation_trained row needs ALIKED-n16rot's weights")
    rot = _Timed(aliked_extractor(rot_path, "aliked-n16rot", max_keypoints))
    seqs = load_hpatches(root, names=sequences)
    if not seqs:
        raise InputError(f"no sequences under {root}")
    clusters = sequence_clusters([s.name for s in seqs], cluster_pattern)
    t_start = time.perf_counter()
    pairs = []
    for seq in tqdm(seqs, desc="sequences", disable=not progress):
        n16.clear()
        rot.clear()
        img1 = np.asarray(load_photo(seq.images[1]))
        for k, H in seq.homographies.items():
            imgk = np.asarray(load_photo(seq.images[k]))
            rec = {"sequence": seq.name, "k": int(k), "rows": {}}
            for row in ROWS:
                ext = rot if row == "rotation_trained" else n16
                ext.charge()
                t = time.perf_counter()
                if row in ("as_is", "rotation_trained"):
                    xy1, d1 = ext(img1)
                    xy2, d2 = ext(imgk)
                    m = mutual_nn(d1.astype(np.float32), d2.astype(np.float32))[0]
                    extra = {"extractions": 2}
                else:
                    if row == "best_of_4":
                        turn = UprightTurn(0.0, 0.0, 0, 0, False)
                    elif row == "sift_turn":
                        turn = sift_turn(img1, imgk, max_keypoints)
                    elif row == "ours":
                        turn = upright_pair(img1, imgk)
                    else:
                        truth = true_turn(
                            H, np.array([[img1.shape[1] / 2.0, img1.shape[0] / 2.0]]), imgk.shape
                        )
                        turn = UprightTurn(truth or 0.0, 0.0, 0, 0, True)
                    r = match_upright(img1, imgk, ext, turn=turn)
                    xy1, xy2, m = r.xy1, r.xy2, r.matches
                    extra = {"extractions": r.extractions, "degrees": r.degrees, "found": turn.found}
                    if row == "ours":
                        extra.update(confidence=turn.confidence, retried=turn.retried)
                # the time of this row: its own work, its new extractions' time counted once, its reused ones
                # at the time they took
                own = time.perf_counter() - t
                charged, fresh = ext.charge()
                seconds = own - fresh + charged
                rec["rows"][row] = {**_score(H, xy1, xy2, m), **extra, "seconds": seconds}
            rec["true_turn"] = rec["rows"]["true_turn"]["degrees"]
            pairs.append(rec)
    doc = summarize(pairs, clusters, bootstrap)
    doc["setup"] = {
        "root": str(root),
        "max_keypoints": int(max_keypoints),
        "peers": {n: folder.fingerprint([n])[f] for n, f in (("aliked", "aliked-n16.pth"),)},
        "cluster_pattern": cluster_pattern,
        "correct_px": CORRECT_PX,
    }
    doc["seconds"] = time.perf_counter() - t_start
    write_results(out_dir, doc, results_markdown(doc))
    return doc


def summarize(pairs: list[dict], clusters: dict[str, str], bootstrap: int) -> dict:
    """Means per row over pairs, and (``bootstrap`` > 0) intervals of correct matches per pair over clusters of
    sequences, ``ours`` minus each row."""
    rows = {}
    for row in ROWS:
        rs = [p["rows"][row] for p in pairs]
        rows[row] = {
            "correct": float(np.mean([r["correct"] for r in rs])),
            "matches": float(np.mean([r["matches"] for r in rs])),
            "mma": float(np.mean([r["mma"] for r in rs])),
            "extractions": float(np.mean([r["extractions"] for r in rs])),
            "seconds": float(np.mean([r["seconds"] for r in rs])),
        }
    ours = [p["rows"]["ours"] for p in pairs]
    rows["ours"]["not_found"] = int(sum(not r["found"] for r in ours))
    rows["ours"]["retried"] = int(sum(bool(r.get("retried")) for r in ours))
    errors = [
        abs(math.remainder(r["degrees"] - p["true_turn"], 360.0)) for r, p in zip(ours, pairs) if r["found"]
    ]
    rows["ours"]["turn_error_deg"] = {
        "median": float(np.median(errors)) if errors else None,
        "max": float(np.max(errors)) if errors else None,
    }
    by_turn = {}  # correct per pair by the size of the true turn either way (0°–180°), to the nearest TURN_BIN_DEG
    for p in pairs:
        size = abs(math.remainder(p["true_turn"], 360.0))
        by_turn.setdefault(int(TURN_BIN_DEG * round(size / TURN_BIN_DEG)), []).append(p)
    turns = {
        str(deg): {row: float(np.mean([p["rows"][row]["correct"] for p in ps])) for row in ROWS}
        | {"pairs": len(ps)}
        for deg, ps in sorted(by_turn.items())
    }
    intervals = {}
    if bootstrap and len(set(clusters.values())) >= 2:
        ids = {c: i for i, c in enumerate(dict.fromkeys(clusters.values()))}
        cl = np.array([ids[clusters[p["sequence"]]] for p in pairs])
        counts = {row: np.array([p["rows"][row]["correct"] for p in pairs], np.float64) for row in ROWS}
        intervals = count_intervals(counts, cl, "ours", bootstrap)
    return {
        "pairs": pairs,
        "rows": rows,
        "by_turn": turns,
        "correct_intervals": intervals,
        "n_pairs": len(pairs),
    }


def results_markdown(doc: dict) -> str:
    s = doc["setup"]
    lines = [
        "# A feature trained upright on turned pairs: un-turned by our voted turn",
        "",
        f"`{s['root']}`, {doc['n_pairs']} pairs, ≤ {s['max_keypoints']} ALIKED keypoints, mutual nearest "
        f"neighbours, correct within {s['correct_px']:g} px. Intervals: 95 % bootstrap over "
        f"{'clusters of sequences' if s['cluster_pattern'] else 'sequences'}, ours minus the row.",
        "",
        "| row | correct per pair | MMA@3 | matches | extractions a pair | s a pair | ours minus the row |",
        "|---|---|---|---|---|---|---|",
    ]
    iv = (doc.get("correct_intervals") or {}).get("minus_reference", {})
    for row in ROWS:
        r = doc["rows"][row]
        d = iv.get(row)
        diff = (
            "–"
            if d is None
            else format_interval(
                -d["value"],
                None if d["interval"] is None else [-d["interval"][1], -d["interval"][0]],
                signed=True,
            )
        )
        lines.append(
            f"| {LABELS[row]} | {r['correct']:.1f} | {r['mma']:.3f} | {r['matches']:.1f} | {r['extractions']:.2f} "
            f"| {r['seconds']:.2f} | {diff} |"
        )
    o = doc["rows"]["ours"]
    e = o["turn_error_deg"]
    lines += [
        "",
        f"Our votes found no turn in {o['not_found']} of {doc['n_pairs']} pairs (there: the 4 quarter turns; "
        f"voted again with {VOTE_RETRY_KEYPOINTS:,} corners in {o.get('retried', 0)}); "
        + (
            ""
            if e["median"] is None
            else f"the voted turn's error: median {e['median']:.2f}°, largest {e['max']:.2f}°."
        ),
        "",
    ]
    turns = doc.get("by_turn") or {}
    if len(turns) > 1:
        lines += [
            f"Correct per pair by the size of the true turn (either way, to the nearest {TURN_BIN_DEG:g}°):",
            "",
            "| turn | pairs | " + " | ".join(SHORT[row] for row in ROWS) + " |",
            "|---" * (len(ROWS) + 2) + "|",
        ]
        lines += [
            f"| {deg}° | {t['pairs']} | " + " | ".join(f"{t[row]:.1f}" for row in ROWS) + " |"
            for deg, t in turns.items()
        ]
        lines.append("")
    return "\n".join(lines)


__all__ = ["CORRECT_PX", "LABELS", "ROWS", "evaluate_upright", "results_markdown", "sift_turn", "summarize"]
