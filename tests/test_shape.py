"""The affine shape reader (:mod:`patchpose.shape`) and its kornia module: conventions pinned on a photo
squeezed by a known affine map, the LAF's centre, scale and orientation kept, clear errors."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from patchpose.data.keypoints import detect_gftt
from patchpose.data.patches import load_photo, to_gray
from patchpose.data.photos import demo_photo
from patchpose.errors import InputError, WeightsError
from patchpose.shape import AffineShapeEstimator

KF = pytest.importorskip("kornia.feature")


@pytest.fixture(scope="module")
def est():
    return AffineShapeEstimator.from_pretrained()


@pytest.fixture(scope="module")
def photo():
    img = to_gray(load_photo(demo_photo(), 480))
    return img.astype(np.float32) / 255.0 if img.dtype == np.uint8 else img


def log_anisotropy(M: np.ndarray) -> np.ndarray:
    s = np.linalg.svd(M, compute_uv=False)
    return np.log(s[:, 0] / s[:, 1])


def squeezed(photo: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The photo through x2 = c + B·(x1 − c) (c its centre), and that map as a 2×3 matrix."""
    h, w = photo.shape
    c = np.array([(w - 1) / 2, (h - 1) / 2])
    M = np.concatenate([B, (c - B @ c)[:, None]], 1)
    return cv2.warpAffine(photo, M, (w, h), flags=cv2.INTER_LINEAR), M


@pytest.mark.parametrize("direction", [0.0, 0.9, 2.0])
def test_frames_are_covariant_under_a_known_squeeze(est, photo, direction):
    """Frames at corresponding points of a photo and of the photo squeezed 2× across ``direction``: the second
    is the first carried by the squeeze, up to a rotation (A2 ≈ B·A1·Q), far closer than discs are; carried by
    the squeeze's inverse (the wrong direction) it is not."""
    c, s = np.cos(direction), np.sin(direction)
    R = np.array([[c, -s], [s, c]])
    B = R @ np.diag([2**0.5, 2**-0.5]) @ R.T
    img2, M = squeezed(photo, B)
    h, w = photo.shape
    xy1 = detect_gftt(photo, 300, margin=30)
    xy2 = xy1 @ M[:, :2].T + M[:, 2]
    keep = (xy2 > 40).all(1) & (xy2[:, 0] < w - 41) & (xy2[:, 1] < h - 41)
    xy1, xy2 = xy1[keep], xy2[keep]
    assert len(xy1) > 50
    A1, A2 = est.frames(photo, xy1, 12.0), est.frames(img2, xy2, 12.0)
    assert np.allclose(np.linalg.det(A1), 144.0) and np.allclose(A1[:, 0, 1], 0.0)
    ours = np.median(log_anisotropy(np.linalg.inv(A2) @ B @ A1))
    discs = np.median(log_anisotropy(np.repeat(B[None], len(A1), 0)))  # identity frames: B's own
    backwards = np.median(log_anisotropy(np.linalg.inv(A2) @ np.linalg.inv(B) @ A1))  # the map the wrong way
    assert discs == pytest.approx(np.log(2.0))
    assert ours < 0.5 * discs, (ours, discs)
    assert backwards > 2 * discs - ours


def test_shapes_check_their_input(est, photo):
    with pytest.raises(InputError, match=r"\(N, 2\)"):
        est.shapes(photo, np.zeros((3, 3)), 10.0)
    with pytest.raises(InputError, match=r"\(N, 2\)"):
        est.shapes(photo, [[1.0, 2.0], [3.0]], 10.0)
    with pytest.raises(InputError, match="outside"):
        est.shapes(photo, [[1.0, 2.0], [3.0, 1e6]], 10.0)
    with pytest.raises(InputError, match="radius"):
        est.shapes(photo, np.full((3, 2), 50.0), [1.0, 2.0])
    with pytest.raises(InputError, match="radius must be finite and > 0"):
        est.shapes(photo, np.full((3, 2), 50.0), 0.0)
    assert est.frames(photo, np.zeros((0, 2)), 10.0).shape == (0, 2, 2)
    with pytest.raises(WeightsError, match="is a pose model"):
        AffineShapeEstimator.load("patchpose-v9")


def test_kornia_module_keeps_centre_scale_and_orientation(est, photo):
    from patchpose.integrations.kornia import LAFAffineShape

    xy = detect_gftt(photo, 40, margin=30)
    n = len(xy)
    ang = torch.linspace(-170, 170, n).view(1, n, 1)
    r = torch.linspace(6, 20, n).view(1, n, 1, 1)
    laf = KF.laf_from_center_scale_ori(torch.from_numpy(xy).float()[None], r, ang)
    timg = torch.from_numpy(photo)[None, None]
    out = LAFAffineShape(est)(laf, timg)
    assert torch.allclose(KF.get_laf_center(out), KF.get_laf_center(laf))
    assert torch.allclose(KF.get_laf_scale(out), r, rtol=1e-4)
    assert torch.allclose(KF.get_laf_orientation(out), ang, atol=1e-3)
    upright = KF.make_upright(out)[0, :, :, :2].double().numpy()
    want = est.frames(photo, xy, r.flatten().numpy())
    assert np.allclose(upright, want, atol=1e-3 * want.max())
    assert np.median(log_anisotropy(want)) > 0.05  # shapes, not discs
    rgb = torch.from_numpy(np.repeat(photo[:, :, None], 3, 2)).permute(2, 0, 1)[None]
    assert torch.allclose(LAFAffineShape(est)(laf, rgb), out, atol=1e-3)
    with pytest.raises(InputError, match="img must be"):
        LAFAffineShape(est)(laf, timg[0])
    with pytest.raises(InputError, match="laf must be"):
        LAFAffineShape(est)(laf[0], timg)
    with pytest.raises(InputError, match="NaN"):
        LAFAffineShape(est)(laf, torch.full_like(timg, float("nan")))
    two = LAFAffineShape(est)(torch.cat([laf, laf]), torch.cat([timg, timg]))  # a batch of two images
    assert torch.allclose(two[0], out[0]) and torch.allclose(two[1], out[0])
    assert LAFAffineShape(est)(laf[:, :0], timg).shape == (1, 0, 2, 3)


def test_kornia_module_as_aff_module_of_a_detector(photo):
    """kornia's own detector with our module as its ``aff_module``: affine LAFs out, of the detector's scale."""
    from patchpose.integrations.kornia import LAFAffineShape

    timg = torch.from_numpy(photo)[None, None]
    plain = KF.ScaleSpaceDetector(60)
    shaped = KF.ScaleSpaceDetector(60, aff_module=LAFAffineShape())
    with torch.no_grad():
        l0, _ = plain(timg)
        l1, _ = shaped(timg)
    assert torch.allclose(KF.get_laf_center(l1), KF.get_laf_center(l0), atol=1e-4)
    assert torch.allclose(KF.get_laf_scale(l1), KF.get_laf_scale(l0), rtol=1e-3)
    A = KF.make_upright(l1)[0, :, :, :2].double().numpy()
    assert np.median(log_anisotropy(A)) > 0.05


def test_the_shape_blend_beats_the_isotropic_blend_across_a_slant(photo):
    """Our shape network's blend (the benchmark row ``shape_pooled_blend``, what ``pair-pose`` falls back on) on a
    photo and its copy squeezed 2.2× across a diagonal: more correct matches than the same blend read on discs
    (``dominant_gradient_pooled_blend``)."""
    from patchpose.evaluation.rows import MatchConfig, Run, match_images
    from patchpose.matching.describe import Describer

    c, s = np.cos(0.6), np.sin(0.6)
    R = np.array([[c, -s], [s, c]])
    B = R @ np.diag([2.2**0.5, 2.2**-0.5]) @ R.T
    img2, M = squeezed(photo, B)
    H = np.vstack([M, [0, 0, 1]])
    run = Run(Describer(), cfg=MatchConfig(max_keypoints=300, detector="harris"))
    rows = ("shape_pooled_blend", "dominant_gradient_pooled_blend")
    res = match_images(photo, img2, run, rows, H)["rows"]
    correct = {r: int((res[r]["error_px"] <= 3).sum()) for r in rows}
    assert correct["shape_pooled_blend"] > 2 * correct["dominant_gradient_pooled_blend"], correct
