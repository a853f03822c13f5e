"""Round trips through cv2.KeyPoint and kornia LAFs, and agreement with each library's own reading."""

import math

import kornia.feature as KF
import numpy as np

from patchpose.conventions import REFERENCE_RADIUS
from patchpose.interop import from_cv2_keypoints, from_laf, to_cv2_keypoints, to_laf

XY = np.array([[10.0, 20.0], [100.5, 7.25], [3.0, 4.0]])
SCALE = np.array([0.0, 1.5, -2.0])
ORI = np.array([0.0, math.pi / 2, 5.0])


def _assert_poses(xy, s, o):
    """The keypoints, scales and orientations are XY, SCALE and ORI again."""
    np.testing.assert_allclose(xy, XY, atol=1e-4)
    np.testing.assert_allclose(s, SCALE, atol=1e-5)
    np.testing.assert_allclose(o, ORI, atol=1e-5)


def test_cv2_keypoints_round_trip():
    kps = to_cv2_keypoints(XY, SCALE, ORI)
    assert kps[0].size == 2 * REFERENCE_RADIUS and kps[1].angle == 270.0  # +90° CCW is 270° clockwise
    _assert_poses(*from_cv2_keypoints(kps))


def test_cv2_keypoints_from_opencv_sift_come_back_in_pixel_centres():
    """OpenCV SIFT's keypoints (its packed octave) lose their quarter-pixel bias; ``xy_bias`` overrides."""
    import cv2

    kps = [cv2.KeyPoint(x, y, 4.0, 30.0, 1.0, 255 + (2 << 8)) for x, y in XY]  # SIFT: octave −1, layer 2
    np.testing.assert_allclose(from_cv2_keypoints(kps)[0], XY - 0.25)
    np.testing.assert_allclose(from_cv2_keypoints(kps, xy_bias=0.0)[0], XY)
    np.testing.assert_allclose(from_cv2_keypoints(kps, xy_bias=-1.0)[0], XY + 1.0)


def test_laf_round_trip_and_kornia_reading():
    laf = to_laf(XY, SCALE, ORI)
    assert laf.shape == (1, 3, 2, 3)
    np.testing.assert_allclose(
        KF.get_laf_scale(laf)[0, :, 0, 0].numpy(), REFERENCE_RADIUS * 2.0**SCALE, rtol=1e-5
    )
    np.testing.assert_allclose(KF.get_laf_orientation(laf)[0, :, 0].numpy() % 360, np.degrees(ORI), atol=1e-3)
    _assert_poses(*from_laf(laf))


def test_cv2_and_laf_agree_the_kornia_moons_way():
    """kornia_moons' OpenCV→LAF rule (ori = −angle, scale ∝ size) equals going through our poses."""
    kps = to_cv2_keypoints(XY, SCALE, ORI)
    laf = to_laf(*from_cv2_keypoints(kps))
    ori_deg = KF.get_laf_orientation(laf)[0, :, 0].numpy()
    np.testing.assert_allclose(np.mod(ori_deg, 360), np.mod([-k.angle for k in kps], 360), atol=1e-3)
    np.testing.assert_allclose(
        KF.get_laf_scale(laf)[0, :, 0, 0].numpy(), [k.size / 2 for k in kps], rtol=1e-5
    )
