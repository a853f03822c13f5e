"""``patchpose bench --scaling``: the sizes, one measurement in a fresh process, the results file."""

import json

import pytest

from patchpose.cli.main import main
from patchpose.errors import InputError
from patchpose.evaluation.bench import SCALING_SIZES, scaling, scaling_sizes


def test_scaling_sizes_go_up_by_four_to_the_maximum():
    assert scaling_sizes() == list(SCALING_SIZES) == [2048, 8192, 32768, 131072]
    assert scaling_sizes(1_000_000) == [2048, 8192, 32768, 131072, 524288, 1_000_000]
    assert scaling_sizes(100) == [100]
    for bad in (0, -5, 2.5, "a"):
        with pytest.raises(InputError, match="scaling-max"):
            scaling_sizes(bad)


def test_scaling_measures_each_size_in_a_fresh_process_and_writes_its_file(tmp_path):
    res = scaling(max_keypoints=300, threads=1, out=tmp_path)
    (row,) = res["rows"]
    assert row["num_keypoints"] == 300 and row["torch_threads"] == 1
    assert row["keypoints_per_s"] > 0 and row["peak_rss_bytes"] >= row["baseline_rss_bytes"] > 0
    assert row["result_bytes"] == 300 * 277  # float32 histograms, nothing else per keypoint
    assert json.loads((tmp_path / "scaling.json").read_text()) == res


def test_scaling_options_are_checked(tmp_path, capsys):
    assert main(["bench", "--scaling", "--threads", "0", "--out", str(tmp_path)]) == 2
    assert main(["bench", "--scaling-max", "0", "--out", str(tmp_path)]) == 2
    assert "scaling-max" in capsys.readouterr().err
