"""The benchmarks' pair rows (:mod:`patchpose.evaluation.rows`): ``shape_zoom_blend`` widens a fixed window by
the zoom our scales vote, on a photo zoomed by a known factor, in and out, and in the two-view chain; the
candidates' LAFs read back as their poses."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from patchpose.data.patches import load_photo, to_gray
from patchpose.data.photos import demo_photo
from patchpose.errors import InputError
from patchpose.evaluation.rows import Image, MatchConfig, Run, describe_rows, match_images, pair_descriptors
from patchpose.matching.describe import Describer
from patchpose.matching.features import detect


@pytest.fixture(scope="module")
def photo():
    return to_gray(load_photo(demo_photo(), 480))


def zoomed(photo: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """The photo enlarged ``z`` times about its centre on a canvas of the same size, and that homography."""
    h, w = photo.shape
    c = np.array([(w - 1) / 2, (h - 1) / 2])
    M = np.concatenate([z * np.eye(2), (c - z * c)[:, None]], 1)
    return cv2.warpAffine(photo, M, (w, h), flags=cv2.INTER_AREA if z < 1 else cv2.INTER_LINEAR), np.vstack(
        [M, [0, 0, 1]]
    )


@pytest.mark.parametrize("z", [2.5, 1 / 2.5])
def test_a_photo_zoomed_by_a_known_factor(photo, z):
    """A photo and its copy zoomed 2.5× in or out: the zoom voted is the true one, and ``shape_zoom_blend`` (the
    fixed window widened by it) finds several times the correct matches of the same blend at the fixed window
    (``shape_pooled_blend``), which a zoom defeats."""
    from patchpose import PatchPoseEstimator

    img2, H = zoomed(photo, z)
    run = Run(
        Describer(), PatchPoseEstimator.from_pretrained("patchpose-v10"), MatchConfig(200, detector="gftt")
    )
    res = match_images(photo, img2, run, rows=("shape_zoom_blend", "shape_pooled_blend"), H=H)["rows"]
    zoom = res["shape_zoom_blend"]["zoom"]
    assert abs(zoom.log2 - np.log2(z)) < 0.15 and zoom.votes >= 20, zoom  # measured: 1.34 and −1.32 (±1.32)
    found = {row: int((r["error_px"] < 3).sum()) for row, r in res.items()}
    assert found["shape_zoom_blend"] > 3 * max(found["shape_pooled_blend"], 5), found
    assert "zoom" not in res["shape_pooled_blend"]


def test_the_pair_row_sets_a_detectors_scale_aside_and_needs_both_photos(photo):
    """At SIFT keypoints the row's descriptors are those of the same keypoints without SIFT's scale (the fixed
    window, widened by the zoom); it refuses other rows, a missing estimator, and one photo at a time."""
    from dataclasses import replace

    from patchpose import PatchPoseEstimator

    f = detect(photo, 40)  # SIFT: a scale of their own
    assert f.detector_scale is not None and np.ptp(f.detector_scale) > 1
    bare = replace(f, detector_scale=None, memo={})
    run = Run(Describer(), PatchPoseEstimator.from_pretrained("patchpose-v10"))
    with_scale = pair_descriptors("shape_zoom_blend", run, Image(f), Image(f))
    without = pair_descriptors("shape_zoom_blend", run, Image(bare), Image(bare))
    assert with_scale[2] == without[2] and with_scale[2].log2 == 0.0  # a photo with itself: no zoom
    np.testing.assert_array_equal(with_scale[0], without[0])
    np.testing.assert_array_equal(with_scale[1], without[1])
    with pytest.raises(TypeError):  # not a pair row: no pair description
        pair_descriptors("shape_pooled_blend", run, Image(f), Image(f))
    with pytest.raises(InputError, match="needs our estimator"):
        pair_descriptors("shape_zoom_blend", Run(Describer()), Image(bare), Image(bare))
    with pytest.raises(InputError, match="pair_descriptors, not describe_rows"):
        describe_rows(("shape_zoom_blend",), run, Image(bare))


def test_two_view_pose_through_the_pair_row_on_a_zoomed_turned_camera(photo):
    """The pair row in the two-view chain (``eval pose``'s ``shape zoom blend@K``): a camera turned by 40° about
    its axis (and 3° off it) and zoomed out 2.5× sees the photo; SIFT keypoints, the row's blended descriptors
    and AdaLAM reading each match's closest candidate pair through its affine frame, its matches one-to-one,
    give back the rotation. The LAFs AdaLAM reads are those the candidates were cut in: kornia reads back their
    sizes exactly."""
    pytest.importorskip("kornia.feature.adalam")
    from patchpose import PatchPoseEstimator
    from patchpose.evaluation.datasets.posed_pairs import (
        default_intrinsics,
        rotate_camera,
        rotation_from_angles,
        zoomed,
    )
    from patchpose.evaluation.pose_eval import rotation_error_deg
    from patchpose.evaluation.rows import candidate_lafs, get_row
    from patchpose.evaluation.twoview import TwoViewConfig, _laf_poses, match_two_views, relative_pose

    K0 = default_intrinsics(photo.shape)
    K1 = zoomed(K0, -np.log2(2.5))
    R = rotation_from_angles(np.radians(40), np.radians(2), np.radians(-2))
    img1 = rotate_camera(photo, K0, R, K1)
    f0, f1 = detect(photo, 300), detect(img1, 300)
    est, rec = PatchPoseEstimator.from_pretrained("patchpose-v10"), Describer()
    cfg = TwoViewConfig(max_keypoints=300, describe_pose="shape_zoom_blend")
    m = match_two_views(f0, f1, rec, cfg, est=est)
    fit = relative_pose(f0.xy[m[:, 0]], f1.xy[m[:, 1]], K0, K1, cfg)
    assert fit["model"] == "rotation" and rotation_error_deg(R, fit["R"]) < 0.5, fit
    # measured: 69 inliers of 90 matches (155 before they were made one-to-one: an essential matrix, 16 inliers)
    assert fit["inliers"] >= 60 and len(np.unique(m[:, 1])) == len(m), (fit["inliers"], len(m))
    run = Run(rec, est)
    c0, c1, zoom, _ = get_row("shape_zoom_blend").pair(run, Image(f0), Image(f1))
    assert abs(zoom.log2 + np.log2(2.5)) < 0.15 and zoom.frames[1] == 0.0
    view = Image(f0.at_frame(zoom.frames[0]))  # the photo where things look larger: its window widened
    size, _ = _laf_poses(candidate_lafs("shape_pooled_blend", run, view, c0[0], c0[1]))
    np.testing.assert_allclose(size, c0[0], atol=1e-4)  # our log2 scale back: shapes of determinant 1
    with pytest.raises(InputError, match="needs our estimator"):
        match_two_views(f0, f1, rec, cfg)
    with pytest.raises(InputError, match="describes both photos together"):
        TwoViewConfig(describe_pose="shape_zoom_blend", adalam_pose="sift").validate()


def test_candidate_lafs_of_a_turned_row_read_back_as_the_candidates_poses(photo):
    """Candidates without an affine shape: kornia's LAF of each is our pose as :mod:`patchpose.interop` converts
    it (read back by ``from_laf``: the same centre, scale and orientation)."""
    from patchpose.evaluation.rows import candidate_lafs, get_row
    from patchpose.interop import from_laf

    f = detect(photo, 50)
    run = Run(Describer())
    s, o, _, _ = get_row("dominant_gradient_blend").candidates(run, Image(f))
    lafs = candidate_lafs("dominant_gradient_blend", run, Image(f), s, o)
    import torch

    xy, s_back, o_back = from_laf(torch.as_tensor(lafs.reshape(1, -1, 2, 3), dtype=torch.float32))
    np.testing.assert_allclose(xy, np.repeat(f.xy, s.shape[1], 0), atol=1e-3)
    np.testing.assert_allclose(s_back, s.reshape(-1), atol=1e-5)
    d = np.angle(np.exp(1j * (o_back - o.reshape(-1))))
    np.testing.assert_allclose(d, 0, atol=1e-4)
