"""``patchpose eval upright`` (#63): SIFT's turn peer reads the turn the right way round, the summary's intervals are
ours minus each row, and without a peers folder the command is one line."""

from __future__ import annotations

import numpy as np
import pytest

from patchpose.cli.main import main
from patchpose.data.patches import load_photo
from patchpose.data.photos import demo_photo
from patchpose.evaluation.upright_eval import ROWS, results_markdown, sift_turn, summarize
from patchpose.matching.upright import turn_image


def test_sifts_turn_is_the_turn_counter_clockwise_as_displayed():
    photo = np.asarray(load_photo(demo_photo(), 400))
    for degrees in (40.0, 200.0):
        turned, _ = turn_image(photo, degrees)
        t = sift_turn(photo, turned, 1000)
        assert t.found and abs((t.degrees - degrees + 180.0) % 360.0 - 180.0) < 1.0, t
        assert abs(t.zoom) < 0.05
    noise = (np.random.default_rng(0).random((200, 200)) * 255).astype(np.uint8)
    assert not sift_turn(photo, noise, 500).found


def test_the_summary_reports_ours_minus_each_row_over_sequences():
    rng = np.random.default_rng(0)
    pairs = []
    for s in range(6):
        for k in range(2, 5):
            rows = {
                row: {"correct": 100 + 10 * i + int(rng.integers(0, 5)), "matches": 200, "mma": 0.5, "extractions": 2,
                      "seconds": 1.0, "degrees": 30.0, "found": True, "confidence": 20.0}
                for i, row in enumerate(ROWS)
            }  # fmt: skip
            rows["ours"] = {**rows["ours"], "retried": s == 0 and k < 4, "found": not (s == 0 and k == 2)}
            pairs.append({"sequence": f"v_{s}", "k": k, "rows": rows, "true_turn": 30.5})
    doc = summarize(pairs, {f"v_{s}": f"v_{s}" for s in range(6)}, 500)
    assert (doc["rows"]["ours"]["not_found"], doc["rows"]["ours"]["retried"]) == (1, 2)
    d = doc["correct_intervals"]["minus_reference"]
    # ROWS[i] counts 10·i more: the row minus ours is 10·(i − 4) give or take the noise
    for i, row in enumerate(ROWS):
        if row != "ours":
            assert abs(d[row]["value"] - 10 * (i - ROWS.index("ours"))) < 5
            assert d[row]["interval"][0] <= d[row]["value"] <= d[row]["interval"][1]
    assert doc["rows"]["ours"]["turn_error_deg"]["median"] == pytest.approx(0.5)
    doc["setup"] = {"root": "r", "max_keypoints": 10, "cluster_pattern": None, "correct_px": 3.0}
    md = results_markdown(doc)
    as_is = next(line for line in md.splitlines() if line.startswith("| ALIKED-n16 as it comes |"))
    assert as_is.startswith("| ALIKED-n16 as it comes | 101.8 |") and "| +40.2 [" in as_is  # ours minus as_is
    assert "no turn in 1 of 18 pairs (there: the 4 quarter turns; voted again with 2,000 corners in 2)" in md


def test_the_report_splits_correct_matches_by_the_size_of_the_true_turn():
    """Pairs turned either way by about the same angle fall in one line (to the nearest 15°); one angle only: no
    table."""
    pairs = []
    for i, turn in enumerate(
        (15.2, 338.0, 165.0, 194.7)
    ):  # true turns in [0, 360): 338° is 22° the other way
        rows = {row: {"correct": 10 * i + j, "matches": 50, "mma": 0.5, "extractions": 2, "seconds": 1.0,
                      "degrees": turn, "found": True, "confidence": 20.0}
                for j, row in enumerate(ROWS)}  # fmt: skip
        pairs.append({"sequence": f"v_{i}", "k": 2, "rows": rows, "true_turn": turn})
    doc = summarize(pairs, {f"v_{i}": f"v_{i}" for i in range(4)}, 0)
    assert list(doc["by_turn"]) == ["15", "165"] and doc["by_turn"]["165"]["pairs"] == 2
    assert doc["by_turn"]["15"]["ours"] == pytest.approx(5.0 + ROWS.index("ours"))
    assert doc["by_turn"]["165"]["as_is"] == pytest.approx(25.0)
    doc["setup"] = {"root": "r", "max_keypoints": 10, "cluster_pattern": None, "correct_px": 3.0}
    md = results_markdown(doc)
    assert "| 165° | 2 | 25.0 |" in md
    one = summarize(pairs[:2], {"v_0": "v_0", "v_1": "v_1"}, 0)
    one["setup"] = doc["setup"]
    assert "by the size of the true turn" not in results_markdown(one)


def test_each_extraction_is_charged_once_at_the_time_it_took():
    """The benchmark's memo: a new extraction is timed by the row that makes it (and not charged again), a reused
    one is charged at the time it first took; a new sequence forgets."""
    import time

    from patchpose.evaluation.upright_eval import _Timed

    calls = []

    def slow(image):
        calls.append(1)
        time.sleep(0.05)
        return np.zeros((0, 2)), np.zeros((0, 4))

    ext = _Timed(slow)
    a, b = np.zeros((4, 4), np.uint8), np.ones((4, 4), np.uint8)
    ext(a)
    charged, fresh = ext.charge()
    assert (
        charged == pytest.approx(fresh) and fresh >= 0.05
    )  # the caller's own timing holds it: own − fresh + charged
    ext(a)
    ext(b)
    charged, fresh = ext.charge()
    assert len(calls) == 2 and charged == pytest.approx(
        fresh + ext.memo[(a.shape, next(iter(ext.memo))[1])][1]
    )
    assert ext.charge() == (0.0, 0.0)
    ext.clear()
    ext(a)
    assert len(calls) == 3


def test_without_peers_it_is_one_line(capsys, tmp_path):
    assert main(["eval", "upright", "--root", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "needs --peers" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
