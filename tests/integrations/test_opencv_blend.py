"""``patchpose.opencv.compute_blended``: one blended descriptor per keypoint through an OpenCV extractor."""

import cv2
import numpy as np
import pytest

from conftest import make_textured_image
from patchpose.errors import InputError
from patchpose.integrations.opencv import assign, compute_blended


@pytest.fixture(scope="module")
def scene():
    img = (make_textured_image(260, seed=2) * 255).astype(np.uint8)
    kps = cv2.SIFT_create(nfeatures=120).detect(img, None)
    # one keypoint per location, inside the middle (the turned copy below keeps every window inside)
    seen, keep = set(), []
    for p in kps:
        if (p.pt, p.size) not in seen and 70 < p.pt[0] < 190 and 70 < p.pt[1] < 190:
            seen.add((p.pt, p.size))
            keep.append(p)
    return img, keep


def test_our_blend_is_opencvs_own_compute_at_our_top4_poses_weighted_by_their_masses(scene):
    from patchpose import PatchPoseEstimator
    from patchpose.interop import keypoint_xy
    from patchpose.matching.blend import blend_descriptors, blend_weights

    img, kps = scene
    sift = cv2.SIFT_create()
    out_kps, d = compute_blended(sift, img, kps, orientations="ours", keep_size=False)
    # our 4 strongest angles, each at our strongest scale (as the pipeline's ours_blend row cuts them)
    first, top4 = assign(img, kps), assign(img, kps, top_k=4)
    cands = [
        cv2.KeyPoint(
            *t.pt, f.size, t.angle, t.response, t.octave, t.class_id
        )  # SIFT reads its octave's layer
        for i, f in enumerate(first)
        for t in top4[4 * i : 4 * i + 4]
    ]
    _, plain = sift.compute(img, cands)
    poses = PatchPoseEstimator.from_pretrained().estimate(img, keypoint_xy(kps), top_k=4)
    expected = blend_descriptors(plain.reshape(len(kps), 4, -1), blend_weights(poses.confidence))
    assert d.shape == expected.shape and d.dtype == np.float32
    np.testing.assert_allclose(d, expected, atol=1e-5)
    assert [p.angle for p in out_kps] == pytest.approx([p.angle for p in first])


@pytest.mark.parametrize("keep_size", [True, False])
def test_blended_descriptors_survive_a_quarter_turn(scene, keep_size):
    """The same locations in the image turned by 90° (counter-clockwise as displayed) get nearly the same
    blended descriptors: each one's nearest neighbour among the other image's is its counterpart."""
    img, kps = scene
    w = img.shape[1]
    turned = np.ascontiguousarray(np.rot90(img))
    kps2 = [cv2.KeyPoint(p.pt[1], w - 1 - p.pt[0], p.size, p.angle) for p in kps]
    sift = cv2.SIFT_create()
    _, d1 = compute_blended(sift, img, kps, keep_size=keep_size, xy_bias=0.0)
    _, d2 = compute_blended(sift, turned, kps2, keep_size=keep_size, xy_bias=0.0)
    dist = np.linalg.norm(d1[:, None] - d2[None], axis=2)
    assert (dist.argmin(1) == np.arange(len(kps))).mean() > 0.9


def test_compute_blended_refuses_what_it_cannot_blend(scene):
    img, kps = scene
    sift = cv2.SIFT_create()
    with pytest.raises(InputError, match="orientations"):
        compute_blended(sift, img, kps, orientations="sift")
    with pytest.raises(InputError, match="compute"):
        compute_blended(object(), img, kps)
    # a binary extractor is refused before it computes: ORB at SIFT's keypoints asked OpenCV for 66 GB (#62)
    sift_kps = cv2.SIFT_create(200).detect(img, None)
    for size_kept in (True, False):
        with pytest.raises(InputError, match="binary descriptors") as e:
            compute_blended(cv2.ORB_create(), img, sift_kps, keep_size=size_kept)
        assert len(str(e.value).splitlines()) == 1

    class Bytes:  # an extractor that says nothing of its norm and gives bytes: refused after compute
        def compute(self, image, keypoints):
            return keypoints, np.zeros((len(keypoints), 32), np.uint8)

    with pytest.raises(InputError, match="float descriptors"):
        compute_blended(Bytes(), img, [cv2.KeyPoint(130.0, 130.0, 31.0)], keep_size=True)
    with pytest.raises(InputError, match="outside"):  # checked even where the model is not read
        compute_blended(sift, img, [cv2.KeyPoint(500.0, 5.0, 10.0)])
    out_kps, d = compute_blended(sift, img, [])
    assert out_kps == [] and d.shape == (0, 128)
    # our peaks read in each keypoint's own frame (its size kept): one unit descriptor per keypoint
    out_kps, d = compute_blended(sift, img, kps[:10], orientations="ours", keep_size=True)
    assert d.shape == (10, 128) and [p.size for p in out_kps] == pytest.approx([p.size for p in kps[:10]])


def test_pooling_over_sizes_matches_a_zoomed_copy_better_at_one_fixed_size(scene):
    """Corners given one fixed size in both images, the second zoomed by 2^0.5: with domain-size pooling
    (``pool_octaves=0.5``) more keypoints find their counterpart as nearest neighbour than without. The
    returned keypoints keep their size and bad ``pool_octaves`` is refused in one line."""
    img, _ = scene
    h, w = img.shape
    zoom = 2.0**0.5
    c = np.array([(w - 1) / 2.0, (h - 1) / 2.0])
    A = np.hstack([zoom * np.eye(2), ((1 - zoom) * c)[:, None]])
    zoomed = cv2.warpAffine(img, A, (w, h), flags=cv2.INTER_LINEAR)
    pts = cv2.goodFeaturesToTrack(img, 200, 0.01, 5)[:, 0].astype(np.float64)
    pts2 = pts * zoom + (1 - zoom) * c
    keep = np.all(
        (pts2 > 40) & (pts2 < np.array([w, h]) - 40) & (pts > 40) & (pts < np.array([w, h]) - 40), 1
    )
    pts, pts2 = pts[keep], pts2[keep]
    assert len(pts) >= 20
    size = 6.0
    kps1 = [cv2.KeyPoint(float(x), float(y), size) for x, y in pts]
    kps2 = [cv2.KeyPoint(float(x), float(y), size) for x, y in pts2]
    sift = cv2.SIFT_create()

    def found(**kw) -> float:
        _, d1 = compute_blended(sift, img, kps1, xy_bias=0.0, **kw)
        _, d2 = compute_blended(sift, zoomed, kps2, xy_bias=0.0, **kw)
        return float((np.linalg.norm(d1[:, None] - d2[None], axis=2).argmin(1) == np.arange(len(pts))).mean())

    plain, pooled = found(), found(pool_octaves=0.5)
    assert pooled > plain + 0.05, (plain, pooled)
    out, _ = compute_blended(sift, img, kps1[:5], pool_octaves=0.5)
    assert [p.size for p in out] == pytest.approx([size] * 5)
    for bad in (-0.5, 3.0, float("nan"), "0.5"):
        with pytest.raises(InputError, match="octaves"):
            compute_blended(sift, img, kps1[:5], pool_octaves=bad)


def test_a_colour_image_is_described_as_the_gray_image_the_histograms_read():
    """OpenCV would take an RGB image as BGR and describe another gray than the one whose histograms set the
    orientations: a colour image is turned gray as RGB for both (before: cosine down to 0.94 on the astronaut)."""
    import skimage.data

    from patchpose.data.keypoints import as_uint8_gray

    rgb = skimage.data.astronaut()[100:356, 100:356]
    gray = as_uint8_gray(rgb)
    sift = cv2.SIFT_create(nfeatures=150)
    kps = list({k.pt: k for k in sift.detect(gray, None)}.values())  # one per location
    _, from_rgb = compute_blended(sift, rgb, kps)
    _, from_gray = compute_blended(sift, gray, kps)
    cos = (from_rgb * from_gray).sum(1)
    assert len(cos) > 50 and cos.mean() > 0.995, (
        len(cos),
        cos.mean(),
    )  # 0.9990 measured; OpenCV's BGR gray 0.986
    # what OpenCV alone would have done with the colour image (taken as BGR) is measurably another description
    bgr_gray = cv2.cvtColor(rgb, cv2.COLOR_BGR2GRAY)
    _, from_bgr = compute_blended(sift, bgr_gray, kps)
    assert ((from_rgb * from_bgr).sum(1)).mean() < cos.mean()
