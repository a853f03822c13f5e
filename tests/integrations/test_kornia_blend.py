"""``patchpose.integrations.kornia.describe_blended``: one blended descriptor per kornia LAF."""

import math

import numpy as np
import pytest
import torch

from conftest import make_textured_image
from patchpose.errors import InputError

KF = pytest.importorskip("kornia.feature")


def _lafs(xy: np.ndarray, radius: float = 12.0, deg: float = 0.0) -> torch.Tensor:
    c = torch.as_tensor(xy[None], dtype=torch.float32)
    n = len(xy)
    return KF.laf_from_center_scale_ori(c, torch.full((1, n, 1, 1), radius), torch.full((1, n, 1), deg))


class _Recorder(torch.nn.Module):
    """A descriptor that records the LAFs it is given and describes each by its own numbers."""

    def __init__(self):
        super().__init__()
        self.lafs = None

    def forward(self, img, laf):
        self.lafs = laf.clone()
        return laf.flatten(2) + 1.0


def test_each_laf_is_described_at_its_gradient_peaks_with_its_scale_kept():
    from patchpose.data.patches import Pyramid
    from patchpose.integrations.kornia import describe_blended
    from patchpose.matching.blend import blend_descriptors, gradient_peaks

    img = torch.from_numpy(make_textured_image(160, seed=4))[None, None]
    xy = np.array([[50.0, 60.0], [80.0, 90.0], [110.0, 70.0]])
    laf = _lafs(xy, 10.0, 30.0)
    rec = _Recorder()
    out = describe_blended(img, laf, rec)
    assert out.shape == (1, 3, 6) and out.dtype == torch.float32
    seen = rec.lafs
    assert seen.shape == (1, 12, 2, 3)  # 4 candidates per LAF
    np.testing.assert_allclose(KF.get_laf_scale(seen).flatten().numpy(), 10.0, rtol=1e-5)
    np.testing.assert_allclose(KF.get_laf_center(seen)[0].numpy(), np.repeat(xy, 4, 0), atol=1e-4)
    # the orientations are the gradient histogram's peaks on the LAF's region, the weights their masses
    ori, w = gradient_peaks(Pyramid(img[0, 0].numpy()), xy, np.log2(10.0 / 16.0), 4)
    deg = KF.get_laf_orientation(seen)[0, :, 0].double().numpy()
    np.testing.assert_allclose(np.cos(np.radians(deg) - ori.reshape(-1)), 1.0, atol=1e-6)
    assert (np.ptp(ori, axis=1) > 0.02).all()  # distinct peaks per LAF
    d = (seen.flatten(2) + 1.0)[0].numpy().reshape(3, 4, 6)
    np.testing.assert_allclose(out[0].numpy(), blend_descriptors(d, w), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out[0].numpy(), axis=1), 1.0, rtol=1e-5)


def test_blended_kornia_descriptors_survive_a_quarter_turn():
    """With kornia's SIFT descriptor on LAFs at the same places of an image and its quarter turn, each blended
    descriptor's nearest neighbour is its counterpart; the same LAFs described upright mostly are not."""
    from patchpose.integrations.kornia import describe_blended

    img = make_textured_image(200, seed=6)
    w = img.shape[1]
    rng = np.random.default_rng(0)
    xy = rng.uniform(60, 140, (60, 2))
    turned = np.ascontiguousarray(np.rot90(img))
    xy2 = np.stack([xy[:, 1], w - 1 - xy[:, 0]], 1)
    desc = KF.LAFDescriptor(KF.SIFTDescriptor(32), patch_size=32)
    t1, t2 = torch.from_numpy(img)[None, None], torch.from_numpy(turned)[None, None]
    d1 = describe_blended(t1, _lafs(xy), desc)[0].numpy()
    d2 = describe_blended(t2, _lafs(xy2), desc)[0].numpy()
    hit = (np.linalg.norm(d1[:, None] - d2[None], axis=2).argmin(1) == np.arange(len(xy))).mean()
    with torch.inference_mode():
        u1, u2 = desc(t1, _lafs(xy))[0].numpy(), desc(t2, _lafs(xy2))[0].numpy()
    upright = (np.linalg.norm(u1[:, None] - u2[None], axis=2).argmin(1) == np.arange(len(xy))).mean()
    assert hit > 0.9 and upright < 0.5
    assert math.isclose(float(np.linalg.norm(d1[0])), 1.0, rel_tol=1e-5)


def test_describe_blended_refuses_bad_input():
    from patchpose.integrations.kornia import describe_blended

    img = torch.zeros(1, 1, 64, 64)
    laf = _lafs(np.array([[30.0, 30.0]]))
    with pytest.raises(InputError, match="img must be"):
        describe_blended(torch.zeros(64, 64), laf, _Recorder())
    with pytest.raises(InputError, match="laf"):
        describe_blended(img, torch.zeros(1, 1, 3, 3), _Recorder())
    with pytest.raises(InputError, match="wrap a patch descriptor in KF.LAFDescriptor"):
        describe_blended(img, laf, KF.SIFTDescriptor(32))  # a raw TypeError from kornia before


def test_affine_lafs_are_read_and_turned_in_their_own_frame_and_pooled_over_sizes():
    """An affine LAF: the peaks are those of its affine-normalised patch (gradient_peaks with its shape), each
    candidate LAF is the upright LAF turned in its own frame (A·R(θ)), its shape and scale kept; with
    pool_octaves, 12 LAFs per keypoint at 2**−0.5, 1 and 2**0.5 times the size, weighted 1/4, 1/2, 1/4."""
    from patchpose.data.patches import Pyramid
    from patchpose.integrations.kornia import describe_blended
    from patchpose.matching.blend import POOL_WEIGHTS, affine_parts, gradient_peaks, turned_shapes

    img = torch.from_numpy(make_textured_image(160, seed=4))[None, None]
    xy = np.array([[50.0, 60.0], [80.0, 90.0], [110.0, 70.0]])
    A = np.array([[15.0, 0.0], [4.0, 7.0]])  # upright, as AffNet gives them
    laf = torch.as_tensor(
        np.concatenate([np.repeat(A[None], 3, 0), xy[:, :, None]], 2)[None], dtype=torch.float32
    )
    rec = _Recorder()
    out = describe_blended(img, laf, rec)
    scale, shape = affine_parts(np.repeat(A[None], 3, 0))
    ori, w = gradient_peaks(Pyramid(img[0, 0].numpy()), xy, scale, 4, shape=shape)
    want = 16.0 * np.exp2(scale)[:, None, None, None] * turned_shapes(shape, ori)  # (3, 4, 2, 2)
    np.testing.assert_allclose(rec.lafs[0, :, :, :2].numpy(), want.reshape(-1, 2, 2), rtol=1e-4, atol=1e-4)
    iso, _ = gradient_peaks(Pyramid(img[0, 0].numpy()), xy, scale, 4)
    assert np.abs(angle_deg(ori[:, 0], iso[:, 0])).max() > 5  # not the peaks of the isotropic disc
    d = (rec.lafs.flatten(2) + 1.0)[0].numpy().reshape(3, 4, 6)
    from patchpose.matching.blend import blend_descriptors

    np.testing.assert_allclose(out[0].numpy(), blend_descriptors(d, w), rtol=1e-5, atol=1e-6)
    describe_blended(img, laf, rec, pool_octaves=0.5)
    pooled = rec.lafs[0, :, :, :2].numpy().reshape(3, 12, 2, 2)
    for j, f in enumerate((2**-0.5, 1.0, 2**0.5)):
        np.testing.assert_allclose(pooled[:, 4 * j : 4 * j + 4], f * want, rtol=1e-4, atol=1e-4)
    assert POOL_WEIGHTS == (0.25, 0.5, 0.25)
    with pytest.raises(InputError, match="octaves"):
        describe_blended(img, laf, rec, pool_octaves=3.0)


def angle_deg(a, b):
    return np.degrees((a - b + math.pi) % (2 * math.pi) - math.pi)


def test_affine_lafs_match_across_a_slant_where_discs_do_not():
    """An image and a copy squeezed 2.5× across a slanted direction (a plane seen at 66°): LAFs that carry the
    squeeze (as AffNet's would) give blended SIFT descriptors whose nearest neighbour is their counterpart;
    the same keypoints on isotropic discs mostly do not."""
    import cv2

    from patchpose.integrations.kornia import describe_blended

    img = make_textured_image(240, seed=6)
    u = np.array([math.cos(0.6), math.sin(0.6)])
    P = np.eye(2) - (1 - 1 / 2.5) * np.outer(u, u)
    c = np.array([120.0, 120.0])
    warped = cv2.warpAffine(img, np.hstack([P, (c - P @ c)[:, None]]), img.shape[::-1], flags=cv2.INTER_AREA)
    rng = np.random.default_rng(1)
    xy = rng.uniform(80, 160, (60, 2))
    xy2 = (xy - c) @ P.T + c
    desc = KF.LAFDescriptor(KF.SIFTDescriptor(32), patch_size=32)
    t1, t2 = torch.from_numpy(img)[None, None], torch.from_numpy(warped)[None, None]
    r = 14.0

    def lafs(pts, A):
        a = np.repeat((r * A)[None], len(pts), 0)
        return torch.as_tensor(np.concatenate([a, pts[:, :, None]], 2)[None], dtype=torch.float32)

    d1 = describe_blended(t1, lafs(xy, np.eye(2)), desc, pool_octaves=0.5)[0].numpy()
    d2 = describe_blended(t2, lafs(xy2, P), desc, pool_octaves=0.5)[0].numpy()  # the frame the warp makes
    hit = (np.linalg.norm(d1[:, None] - d2[None], axis=2).argmin(1) == np.arange(len(xy))).mean()
    iso = describe_blended(t2, lafs(xy2, np.eye(2)), desc, pool_octaves=0.5)[0].numpy()
    miss = (np.linalg.norm(d1[:, None] - iso[None], axis=2).argmin(1) == np.arange(len(xy))).mean()
    assert hit > 0.9 and miss < 0.6, (hit, miss)
