"""Keypoint files (``patchpose.fileio``): what is not a keypoint array is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

from patchpose.errors import InputError


def test_keypoint_files_that_are_not_keypoints_are_clear_errors(tmp_path):
    from patchpose.fileio import read_keypoints

    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(InputError, match="not a readable .npy"):
        read_keypoints(tmp_path / "bad.npy")
    np.save(tmp_path / "flat.npy", np.arange(6.0))
    with pytest.raises(InputError, match=r"\(N, 2\)"):
        read_keypoints(tmp_path / "flat.npy")
    (tmp_path / "bin.txt").write_bytes(bytes(range(256)))
    with pytest.raises(InputError, match="not a text file"):
        read_keypoints(tmp_path / "bin.txt")
    np.save(tmp_path / "ok.npy", np.array([[1.0, 2.0, 0.5]]))  # extra columns (e.g. a score) are dropped
    assert read_keypoints(tmp_path / "ok.npy").tolist() == [[1.0, 2.0]]
