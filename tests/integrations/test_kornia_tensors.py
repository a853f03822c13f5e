"""The kornia modules take the tensors kornia pipelines hand them (#62): a tensor that requires grad is read without
a warning and gives no graph back, bfloat16 and float64 are read, and a meta tensor (no values) is a one-line
InputError instead of torch's ``Tensor.item()`` error."""

from __future__ import annotations

import warnings

import pytest
import torch

kf = pytest.importorskip("kornia.feature")

from patchpose.errors import InputError  # noqa: E402
from patchpose.integrations.kornia import LAFAffineShape, LAFPoseAssigner, kornia_angle_detector  # noqa: E402


@pytest.fixture(scope="module")
def inputs():
    torch.manual_seed(0)
    img = torch.rand(1, 1, 64, 64)
    laf = kf.laf_from_center_scale_ori(
        torch.tensor([[[32.0, 32.0], [20.0, 40.0]]]), torch.full((1, 2, 1, 1), 8.0), torch.zeros(1, 2, 1)
    )
    return img, laf


@pytest.mark.parametrize("module", [LAFPoseAssigner, LAFAffineShape])
def test_the_laf_modules_read_grad_bfloat16_and_float64_and_refuse_meta(inputs, module):
    img, laf = inputs
    mod = module()
    want = mod(laf, img)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Converting a tensor with requires_grad=True to a scalar" was one
        got = mod(laf.clone().requires_grad_(True), img.clone().requires_grad_(True))
    assert not got.requires_grad
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(mod(laf, img.double()), want)
    assert torch.isfinite(mod(laf, img.to(torch.bfloat16))).all()
    with pytest.raises(InputError, match="img is a meta tensor"):
        mod(laf, torch.empty(1, 1, 64, 64, device="meta"))
    with pytest.raises(InputError, match="laf is a meta tensor"):
        mod(torch.empty(1, 2, 2, 3, device="meta"), img)


def test_the_angle_detector_refuses_meta_patches():
    det = kornia_angle_detector()
    patches = torch.rand(2, 1, 32, 32)
    assert det(patches.clone().requires_grad_(True)).shape == (2,)
    with pytest.raises(InputError, match="patches is a meta tensor"):
        det(torch.empty(2, 1, 32, 32, device="meta"))
