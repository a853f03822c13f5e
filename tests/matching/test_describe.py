"""The library's RootSIFT: kornia's SIFTDescriptor, bit for bit."""

import numpy as np
import pytest
import torch
from kornia.feature import SIFTDescriptor

from conftest import make_textured_image
from patchpose.data.patches import extract_patches
from patchpose.errors import InputError
from patchpose.matching.describe import PATCH_SIZE, Describer, RootSIFT
from patchpose.matching.features import detect


def _patches() -> torch.Tensor:
    """Real patches at SIFT keypoints (turned, at their scales), random ones, a flat, a half-flat and a saturated
    one."""
    img = make_textured_image(300, seed=4)
    f = detect(img, 300)
    rng = np.random.default_rng(0)
    real = extract_patches(
        f.pyramid, f.xy, f.sift_scale, rng.uniform(0, 2 * np.pi, len(f)), PATCH_SIZE, [1.0]
    )
    noise = rng.random((50, 1, PATCH_SIZE, PATCH_SIZE)).astype(np.float32)
    special = np.zeros((3, 1, PATCH_SIZE, PATCH_SIZE), np.float32)
    special[0] = 0.5
    special[1, :, :, PATCH_SIZE // 2 :] = 1.0
    special[2] = 1.0
    return torch.from_numpy(np.concatenate([real, noise, special]).astype(np.float32))


def test_rootsift_equals_kornias_sift_descriptor_bit_for_bit():
    x = _patches()
    assert len(x) > 150
    with torch.inference_mode():
        want = SIFTDescriptor(PATCH_SIZE, rootsift=True)(x)
        got = RootSIFT(PATCH_SIZE)(x)
        assert torch.equal(got, want)
        assert torch.equal(RootSIFT(PATCH_SIZE)(x[:7]), want[:7])  # any batch size
    assert torch.all(want[-3] == want[-3][0])  # a flat patch: no direction (kornia's eps in every bin)


def test_the_default_describer_is_rootsift():
    assert isinstance(Describer().net, RootSIFT)


def test_rootsift_refuses_patches_of_another_shape():
    with pytest.raises(InputError, match="patches must be"):
        RootSIFT(PATCH_SIZE)(torch.zeros(2, 1, 16, 16))
