"""HPatches: the loader on a tiny replica of the real layout, the generator, matching and its evaluation."""

from __future__ import annotations

import json
import math
import shutil

import cv2
import numpy as np
import pytest

from conftest import make_textured_image
from patchpose.conventions import similarity_about
from patchpose.data.hpatches import (
    HPatchesGenConfig,
    generate_hpatches,
    load_hpatches,
    read_homography,
    write_homography,
)
from patchpose.errors import InputError
from patchpose.evaluation.hpatches_eval import pair_mma, summarize_matching
from patchpose.geometry import apply_homography
from patchpose.matching.matcher import keypoint_distances, mutual_nn
from patchpose.matching.pipeline import detect, keypoint_poses

# v_boat/H_1_4 of the real release, as printed in its file
BOAT_H14 = "0.39176 -0.48622 421.69\n0.48543 0.39488 -0.097812\n2.3979e-06 -3.3236e-06 1\n"


def _rgb(size=240, seed=0) -> np.ndarray:
    g = (make_textured_image(size, seed) * 255).astype(np.uint8)
    return np.repeat(g[..., None], 3, 2)


def make_replica(root, names=("i_ajuntament", "v_boat", "v_talent"), targets=2):
    """A tiny copy of ``hpatches-sequences-release/`` (ppm images, ASCII homographies)."""
    rel = root / "hpatches-sequences-release"
    for n, name in enumerate(names):
        d = rel / name
        d.mkdir(parents=True)
        img = _rgb(200, seed=n)
        cv2.imwrite(str(d / "1.ppm"), img)
        for k in range(2, targets + 2):
            H = np.eye(3) if name.startswith("i_") else similarity_about((100, 100), 0.1 * k, 0.3 * k)
            cv2.imwrite(str(d / f"{k}.ppm"), cv2.warpPerspective(img, H, (200, 200)))
            write_homography(d / f"H_1_{k}", H)
    return rel


def test_read_homography_parses_the_release_format(tmp_path):
    p = tmp_path / "H_1_4"
    p.write_text(BOAT_H14)
    H = read_homography(p)
    assert H.shape == (3, 3) and H[0, 2] == pytest.approx(421.69) and H[2, 1] == pytest.approx(-3.3236e-06)
    (tmp_path / "bad").write_text("1 2 3\n4 5 6\n")
    with pytest.raises(InputError, match="3×3"):
        read_homography(tmp_path / "bad")
    (tmp_path / "words").write_text("a b c\n")
    with pytest.raises(InputError, match="cannot read"):
        read_homography(tmp_path / "words")


def test_loader_reads_the_real_layout_and_drops_high_res(tmp_path):
    make_replica(tmp_path)
    seqs = load_hpatches(tmp_path)  # the folder that holds hpatches-sequences-release/
    assert [s.name for s in seqs] == ["i_ajuntament", "v_boat", "v_talent"]
    assert [s.kind for s in seqs] == ["illumination", "viewpoint", "viewpoint"]
    assert seqs[1].targets == [2, 3]
    np.testing.assert_allclose(seqs[0].homographies[2], np.eye(3))
    assert seqs[1].image(1).shape == (200, 200, 3)
    assert [s.name for s in load_hpatches(tmp_path, drop_high_res=True)] == ["i_ajuntament", "v_boat"]
    assert [s.name for s in load_hpatches(tmp_path / "hpatches-sequences-release", names=["v_boat"])] == [
        "v_boat"
    ]
    with pytest.raises(InputError, match="not found"):
        load_hpatches(tmp_path, names=["v_nope"])
    # a selection of high-resolution sequences only: an error, not an evaluation of nothing
    with pytest.raises(InputError, match="8 high-resolution ones"):
        load_hpatches(tmp_path, drop_high_res=True, names=["v_talent"])


def test_loader_errors_are_clear(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_hpatches(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no HPatches sequences"):
        load_hpatches(tmp_path / "empty")
    rel = make_replica(tmp_path / "r", names=("v_x",))
    (rel / "v_x" / "H_1_3").unlink()
    with pytest.raises(InputError, match="no homography H_1_3"):
        load_hpatches(rel)


def test_generator_writes_the_layout_and_images_follow_their_homographies(tmp_path):
    photo = tmp_path / "photo.png"
    cv2.imwrite(str(photo), _rgb(300))
    cfg = HPatchesGenConfig(max_side=256, targets=2)
    names = generate_hpatches([photo], tmp_path / "hp", cfg, progress=False)
    assert names == ["v_photo", "i_photo"]
    seqs = {s.name: s for s in load_hpatches(tmp_path / "hp")}
    v, i = seqs["v_photo"], seqs["i_photo"]
    np.testing.assert_allclose(i.homographies[3], np.eye(3))
    img1 = v.image(1)
    assert max(img1.shape[:2]) == 256
    for k in v.targets:
        H = v.homographies[k]
        assert not np.allclose(H, np.eye(3))
        # image k is image 1 seen through H: compare on the pixels that H keeps inside
        ref = cv2.warpPerspective(img1, H, img1.shape[1::-1]).astype(np.float64)
        mask = cv2.warpPerspective(np.ones(img1.shape[:2], np.uint8), H, img1.shape[1::-1]) > 0
        mask = cv2.erode(mask.astype(np.uint8), np.ones((9, 9), np.uint8)) > 0
        got = v.image(k).astype(np.float64)
        a, b = ref[mask].ravel(), got[mask].ravel()
        assert np.corrcoef(a, b)[0, 1] > 0.95
    assert json.loads((tmp_path / "hp" / "manifest.json").read_text())["config"]["targets"] == 2


def test_generator_resumes_to_the_same_content(tmp_path):
    photos = []
    for n in range(2):
        photos.append(tmp_path / f"p{n}.png")
        cv2.imwrite(str(photos[-1]), _rgb(200, seed=n))
    cfg = HPatchesGenConfig(max_side=160, targets=2)
    generate_hpatches(photos, tmp_path / "a", cfg, progress=False)
    # a run killed half-way: one sequence done, one left as a temporary folder
    generate_hpatches(photos[:1], tmp_path / "b", cfg, kinds="v", progress=False)
    (tmp_path / "b" / ".tmp_v_p1").mkdir()
    (tmp_path / "b" / ".tmp_v_p1" / "1.ppm").write_bytes(b"half")
    generate_hpatches(photos, tmp_path / "b", cfg, progress=False)
    for name in ("v_p0", "v_p1", "i_p0", "i_p1"):
        for f in sorted((tmp_path / "a" / name).iterdir()):
            assert f.read_bytes() == (tmp_path / "b" / name / f.name).read_bytes(), (name, f.name)
    assert not (tmp_path / "b" / ".tmp_v_p1").exists()


def test_generator_resume_refuses_other_settings_or_moved_names(tmp_path):
    """A folder is resumed only with the settings and photos that made it: other settings are refused (they
    were ignored), and so is a photo added to the folder that moves the name of a finished sequence."""
    ab, a_b = tmp_path / "ab.png", tmp_path / "a-b.png"
    cv2.imwrite(str(ab), _rgb(160, seed=0))
    cv2.imwrite(str(a_b), _rgb(160, seed=1))
    cfg = HPatchesGenConfig(max_side=128, targets=1)
    assert generate_hpatches([ab], tmp_path / "hp", cfg, kinds="v", progress=False) == ["v_ab"]
    with pytest.raises(InputError, match="other settings"):
        generate_hpatches([ab], tmp_path / "hp", HPatchesGenConfig(max_side=128, targets=2), progress=False)
    with pytest.raises(InputError, match="v_ab was made from"):  # a-b.png sorts first and would be v_ab
        generate_hpatches([ab, a_b], tmp_path / "hp", cfg, kinds="v", progress=False)
    # the same photos and settings resume, and illumination sequences may be added
    assert generate_hpatches([ab], tmp_path / "hp", cfg, kinds="vi", progress=False) == ["v_ab", "i_ab"]
    m = json.loads((tmp_path / "hp" / "manifest.json").read_text())
    assert m["kinds"] == "vi" and set(m["sequences"]) == {"v_ab", "i_ab"}
    # a sequence folder that no manifest accounts for is not taken as finished
    (tmp_path / "hp2" / "v_ab").mkdir(parents=True)
    with pytest.raises(InputError, match="no manifest"):
        generate_hpatches([ab], tmp_path / "hp2", cfg, kinds="v", progress=False)


def test_mutual_nn_on_a_hand_built_case():
    d1 = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7]])
    d2 = np.array([[0.0, 1.0], [0.9, 0.1], [-1.0, 0.0]])
    pairs, dist = mutual_nn(d1, d2)
    # 0↔1 and 1↔0 are mutual; 2's nearest is d2[1] (0.63) but d2[1]'s nearest is d1[0] (0.14)
    assert pairs.tolist() == [[0, 1], [1, 0]]
    np.testing.assert_allclose(dist, [math.hypot(0.1, 0.1), 0.0], atol=1e-6)
    e0, e1 = mutual_nn(np.zeros((0, 2)), d2)
    assert e0.shape == (0, 2) and e1.shape == (0,)


def test_several_descriptors_per_keypoint_take_the_closest_pair():
    d1 = np.array([[[1.0, 0.0], [0.0, 1.0]]])  # one keypoint, two candidates
    d2 = np.array([[[0.0, 1.0]], [[0.6, 0.0]]])  # two keypoints, one candidate each
    np.testing.assert_allclose(keypoint_distances(d1, d2), [[0.0, 0.4]], atol=1e-6)


def test_pair_mma_exact_values():
    assert pair_mma([0.5, 2.5, 4.0], (1, 2, 3, 4, 5)) == pytest.approx([1 / 3, 1 / 3, 2 / 3, 1.0, 1.0])
    assert pair_mma([], (1, 2)) == [0.0, 0.0]
    per_seq = {
        "i_a": [{"mma": {"r": [1.0, 1.0]}, "matches": {"r": 10}}],
        "v_b": [
            {"mma": {"r": [0.0, 0.5]}, "matches": {"r": 2}},
            {"mma": {"r": [0.5, 0.5]}, "matches": {"r": 4}},
        ],
    }
    mma, matches = summarize_matching(per_seq, ["r"])
    assert mma["r"]["illumination"] == [1.0, 1.0]
    assert mma["r"]["viewpoint"] == [0.25, 0.5]
    assert mma["r"]["overall"] == pytest.approx([0.5, 2 / 3])
    assert matches["r"] == pytest.approx(16 / 3)


def test_upper_row_takes_the_pose_that_h_makes():
    img = make_textured_image(240)
    H = similarity_about((120, 120), 0.5, 1.0)
    feats = detect(img, 100)
    s, t = keypoint_poses("upper", feats, H_from_1=H)
    np.testing.assert_allclose(s, 0.5, atol=1e-9)
    np.testing.assert_allclose(np.exp(1j * t), np.exp(1j * 1.0), atol=1e-9)
    s1, t1 = keypoint_poses("upper", feats)  # image 1 itself: upright at the reference size
    assert (s1 == 0).all() and (t1 == 0).all()
    with pytest.raises(InputError, match="unknown pose row"):
        keypoint_poses("bogus", feats)


def test_sift_row_follows_the_image_rotation():
    """SIFT's own angle, converted to our convention, turns with the image (sign pinned)."""
    img = (make_textured_image(300) * 255).astype(np.uint8)
    H = similarity_about((149.5, 149.5), 0.0, math.radians(40))
    f1 = detect(img, 300)
    f2 = detect(cv2.warpPerspective(img, H, (300, 300)), 300)
    p = apply_homography(H, f1.xy)
    d = np.linalg.norm(p[:, None] - f2.xy[None], axis=2)
    i = np.nonzero(d.min(1) < 0.5)[0]
    j = d[i].argmin(1)
    assert len(i) >= 10
    diff = np.degrees(np.angle(np.exp(1j * (f2.sift_ori[j] - f1.sift_ori[i]))))
    assert np.median(np.abs(diff - 40.0)) < 3.0


def test_evaluation_end_to_end_and_resume(tmp_path):
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    make_replica(tmp_path, names=("i_a", "v_b"), targets=2)
    out = tmp_path / "out"
    doc = evaluate_hpatches(tmp_path, out, max_keypoints=200, progress=False)
    saved = json.loads((out / "results.json").read_text())
    rows = ["lower", "sift", "ours", "ours_top4", "upper"]
    assert saved["protocol"] == "d2net" and list(saved["mma"]) == rows[:4] + [
        "ours_angle",
        "sift_scale+ours_angle",
        "sift_resolved_by_ours",
        "dominant_gradient",
        "log+dominant_gradient",
        "upper",
    ]
    for row in saved["mma"]:
        for kind in ("overall", "illumination", "viewpoint"):
            v = saved["mma"][row][kind]
            assert len(v) == 10 and all(0.0 <= x <= 1.0 for x in v)
            assert v == sorted(v)  # MMA grows with the threshold
        assert saved["matches"][row] > 0
    assert list(saved["pose_accuracy"]) == rows
    assert saved["pose_accuracy"]["upper"] == {
        "scale_acc@1/6": 100.0,
        "scale_acc@1/3": 100.0,
        "ori_acc@5": 100.0,
        "ori_acc@10": 100.0,
    }
    # illumination pairs have no geometric change: the lower bound is exact there
    assert saved["pose"]["illumination"]["official"]["lower"]["ori_acc@5"] == 100.0
    assert (out / "mma.png").stat().st_size > 10_000 and "| ours (top-4) |" in (
        out / "results.md"
    ).read_text()
    # intervals of MMA@3 px over sequences; one sequence per kind: no interval there, one over both kinds
    iv = saved["intervals"]
    assert set(iv) == {"overall", "illumination", "viewpoint"} and iv["viewpoint"]["n_clusters"] == 1
    ours = saved["mma"]["ours"]["viewpoint"][2]
    assert iv["viewpoint"]["mean"]["ours"]["interval"] is None
    lo, hi = iv["overall"]["mean"]["ours"]["interval"]
    assert lo <= saved["mma"]["ours"]["overall"][2] <= hi
    assert "no interval: fewer than 2" in (out / "results.md").read_text()
    assert (
        "ours" not in iv["overall"]["minus_reference"] and "ours (argmax)" in (out / "results.md").read_text()
    )
    assert "− ours (argmax)" in (out / "results.md").read_text()
    vs = saved["intervals_vs_sift"]["viewpoint"]  # our rows against SIFT's own pose, in the same run
    assert vs["reference"] == "sift" and set(vs["minus_reference"]) == {"ours", "ours_top4"}
    sift = saved["mma"]["sift"]["viewpoint"][2]
    assert vs["minus_reference"]["ours"]["value"] == pytest.approx(ours - sift)
    assert "| ours (top-4) − SIFT's own pose |" in (out / "results.md").read_text()
    # a second run reads every sequence from the cache and gives the same numbers
    caches = list((out / "cache").rglob("*.match.json"))
    assert len(caches) == 2
    again = evaluate_hpatches(tmp_path, out, max_keypoints=200, progress=False)
    assert again["mma"] == doc["mma"] and again["pose_accuracy"] == doc["pose_accuracy"]
    # a sequence whose files changed is evaluated again, not read from the cache
    seq = tmp_path / "hpatches-sequences-release" / "v_b"
    cv2.imwrite(str(seq / "3.ppm"), np.full((200, 200, 3), 128, np.uint8))
    changed = evaluate_hpatches(tmp_path, out, max_keypoints=200, pose=False, progress=False)
    assert changed["mma"]["ours"]["viewpoint"] != doc["mma"]["ours"]["viewpoint"]
    assert changed["mma"]["ours"]["illumination"] == doc["mma"]["ours"]["illumination"]


def test_a_sequence_without_pose_pairs_does_not_shift_the_others(tmp_path):
    """A viewpoint sequence whose H moves every keypoint out of the image has no pose-transfer pairs; it used
    to count its samples anyway, so the pairs of the sequences after it pointed past their arrays."""
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    rel = make_replica(tmp_path / "one", names=("v_b",), targets=2)
    alone = evaluate_hpatches(rel, tmp_path / "o1", max_keypoints=100, bootstrap=0, progress=False)
    away = tmp_path / "two" / "hpatches-sequences-release"
    shutil.copytree(rel / "v_b", away / "v_b")
    (away / "v_a").mkdir()  # sorts first
    img = _rgb(200, seed=5)
    cv2.imwrite(str(away / "v_a" / "1.ppm"), img)
    H = np.array([[1.0, 0.0, 5000.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    for k in (2, 3):
        cv2.imwrite(str(away / "v_a" / f"{k}.ppm"), img)
        write_homography(away / "v_a" / f"H_1_{k}", H)
    both = evaluate_hpatches(away, tmp_path / "o2", max_keypoints=100, bootstrap=0, progress=False)
    assert both["pose_accuracy"] == alone["pose_accuracy"]


def test_a_descriptor_weights_file_replaced_under_its_name_is_not_read_from_the_cache(tmp_path):
    import kornia.feature as KF
    import torch

    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    rel = make_replica(tmp_path, names=("v_b",), targets=1)
    w = tmp_path / "hardnet.pth"
    mmas = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        torch.save(KF.HardNet(pretrained=False).state_dict(), w)
        doc = evaluate_hpatches(
            rel,
            tmp_path / "o",
            descriptor="hardnet",
            descriptor_weights=str(w),
            max_keypoints=100,
            pose=False,
            bootstrap=0,
            progress=False,
        )
        mmas.append(doc["mma"]["lower"]["viewpoint"])
    assert mmas[0] != mmas[1]


def test_mma_intervals_resample_sequences():
    """Two viewpoint sequences of two pairs each; ours scores 0.6 and 0.2 on them (0.4 overall), SIFT's pose
    0.1 more on every pair: sift − ours is +0.1 in every replicate, and ours' interval spans the two
    sequences' means."""
    from patchpose.evaluation.hpatches_eval import mma_intervals

    def pair(ours):
        return {"mma": {"ours": [0.0, 0.0, ours], "sift": [0.0, 0.0, ours + 0.1]}}

    per_seq = {"v_a": [pair(0.5), pair(0.7)], "v_b": [pair(0.1), pair(0.3)]}
    iv = mma_intervals(per_seq, ["ours", "sift"], (1, 2, 3), replicates=400)
    assert set(iv) == {"overall", "viewpoint"}  # no illumination sequence
    v = iv["viewpoint"]
    assert v["reference"] == "ours" and v["n_clusters"] == 2
    assert v["mean"]["ours"]["value"] == pytest.approx(0.4)
    assert v["mean"]["ours"]["interval"] == pytest.approx([0.2, 0.6])
    assert v["minus_reference"]["sift"]["value"] == pytest.approx(0.1)
    assert v["minus_reference"]["sift"]["interval"] == pytest.approx([0.1, 0.1])
    w = mma_intervals(per_seq, ["sift", "ours"], (1, 2, 3), replicates=400, reference="sift")["viewpoint"]
    assert w["reference"] == "sift" and w["minus_reference"]["ours"]["value"] == pytest.approx(-0.1)
    assert w["minus_reference"]["ours"]["interval"] == pytest.approx([-0.1, -0.1])


def test_correct_match_intervals_count_matches_within_3px():
    """Correct matches per pair = matches × MMA@3: ours 100 × 0.5 and 300 × 0.5 (mean 100), SIFT's 80 × 1.0 on
    both (80): ours finds 20 more per pair at a lower MMA, and with one sequence per pair the interval of the
    difference spans the two sequences' differences (−30 and +70)."""
    from patchpose.evaluation.hpatches_eval import mma_intervals

    def pair(n_ours, n_sift):
        return {
            "mma": {"ours": [0.0, 0.0, 0.5], "sift": [0.0, 0.0, 1.0]},
            "matches": {"ours": n_ours, "sift": n_sift},
        }

    per_seq = {"v_a": [pair(100, 80)], "v_b": [pair(300, 80)]}
    iv = mma_intervals(per_seq, ["sift", "ours"], (1, 2, 3), 2000, reference="sift", correct=True)[
        "viewpoint"
    ]
    assert iv["mean"]["ours"]["value"] == pytest.approx(100.0)
    assert iv["mean"]["sift"]["value"] == pytest.approx(80.0)
    assert iv["mean"]["sift"]["interval"] == pytest.approx([80.0, 80.0])
    assert iv["minus_reference"]["ours"]["value"] == pytest.approx(20.0)
    assert iv["minus_reference"]["ours"]["interval"] == pytest.approx([-30.0, 70.0])


def test_mma_intervals_draw_clusters_of_sequences_together():
    """Six sequences, three per photo (seeds 0 to 2): photo a's score 0.8 on each, photo b's 0.2. Drawn one
    sequence at a time, a replicate holds all six from one photo only 1 time in 32, so the interval stays
    inside (0.2, 0.8); drawn by photo, the sequences come in two blocks, and one time in two a replicate
    holds only one photo's: the interval is [0.2, 0.8]."""
    from patchpose.evaluation.hpatches_eval import mma_intervals, sequence_clusters

    def pair(v):
        return {"mma": {"ours": [0.0, 0.0, v]}}

    per_seq = {f"v_{p}_s{k}": [pair(0.8 if p == "a" else 0.2)] for p in "ab" for k in range(3)}
    groups = sequence_clusters(per_seq, r"^(.*)_s\d+$")
    assert groups == {f"v_{p}_s{k}": f"v_{p}" for p in "ab" for k in range(3)}
    by_seq = mma_intervals(per_seq, ["ours"], (1, 2, 3), replicates=2000)["viewpoint"]
    by_photo = mma_intervals(per_seq, ["ours"], (1, 2, 3), replicates=2000, clusters=groups)["viewpoint"]
    assert by_seq["n_clusters"] == 6 and by_photo["n_clusters"] == 2
    assert by_photo["mean"]["ours"]["value"] == pytest.approx(0.5)
    assert by_photo["mean"]["ours"]["interval"] == pytest.approx([0.2, 0.8])
    lo, hi = by_seq["mean"]["ours"]["interval"]
    assert 0.2 < lo < 0.5 < hi < 0.8
    # no group: the whole match; no pattern: each sequence its own cluster
    assert sequence_clusters(["v_a_s0", "v_b_s0"], r"^v_.") == {"v_a_s0": "v_a", "v_b_s0": "v_b"}
    assert sequence_clusters(["v_a"], None) == {"v_a": "v_a"}
    with pytest.raises(InputError, match="does not match the sequence 'i_c'"):
        sequence_clusters(["v_a_s0", "i_c"], r"^(.*)_s\d+$")
    with pytest.raises(InputError, match="not a regular expression"):
        sequence_clusters(["v_a"], "(")


def test_eval_hpatches_refuses_a_cluster_pattern_that_misses_a_sequence_before_any_work(tmp_path, capsys):
    from patchpose.cli.main import main

    make_replica(tmp_path, names=("v_boat",), targets=1)
    out = tmp_path / "o"
    rc = main(
        ["eval", "hpatches", "--root", str(tmp_path), "--out", str(out), "--cluster-pattern", "_s[0-9]+$"]
    )
    assert rc == 2
    assert "does not match the sequence 'v_boat'" in capsys.readouterr().err
    assert not out.exists()


def test_keynet_protocol_keeps_all_sequences_and_five_thresholds(tmp_path):
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    make_replica(tmp_path, names=("v_talent",), targets=1)
    doc = evaluate_hpatches(
        tmp_path, tmp_path / "o", protocol="keynet", max_keypoints=100, pose=False, progress=False
    )
    assert doc["setup"]["sequences"] == 1 and doc["thresholds_px"] == [1, 2, 3, 4, 5]
    assert len(doc["mma"]["ours"]["overall"]) == 5 and doc["pose_accuracy"] == {}
    with pytest.raises(InputError, match="protocol"):
        evaluate_hpatches(tmp_path, tmp_path / "o", protocol="nope", progress=False)


def test_pooled_seeds_are_linked_by_seed_and_evaluated_by_photo(tmp_path, capsys):
    """Two seeds of the sequences of two photos (``--split all``: every photo of the folder) linked into one
    folder as <sequence>_s<seed>; a rerun keeps the links; the same seed twice, a folder that no generator
    wrote and a name taken by another sequence are errors; the pool's intervals are drawn by photo."""
    from patchpose.cli.main import main
    from patchpose.data.hpatches import pool_sequences
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    photos = tmp_path / "photos"
    photos.mkdir()
    for i, name in enumerate(("a.png", "b.png")):
        cv2.imwrite(str(photos / name), _rgb(200, seed=i))
    for seed in (0, 1):
        argv = ["generate", "hpatches", "--images", str(photos), "--split", "all", "--targets", "1"]
        assert main([*argv, "--seed", str(seed), "--out", str(tmp_path / f"s{seed}"), "--no-progress"]) == 0
    pool = tmp_path / "pool"
    assert (
        main(
            [
                "generate",
                "hpatches-pool",
                "--out",
                str(pool),
                "--kinds",
                "v",
                str(tmp_path / "s0"),
                str(tmp_path / "s1"),
            ]
        )
        == 0
    )
    names = ["v_a_s0", "v_a_s1", "v_b_s0", "v_b_s1"]
    assert sorted(p.name for p in pool.iterdir()) == names
    assert (pool / "v_a_s1").resolve() == (tmp_path / "s1" / "v_a").resolve()
    # seed 1's sequence of a photo is not seed 0's
    assert not np.allclose(
        read_homography(pool / "v_a_s0" / "H_1_2"), read_homography(pool / "v_a_s1" / "H_1_2")
    )
    assert pool_sequences([tmp_path / "s0", tmp_path / "s1"], pool, kinds="v") == names  # a rerun
    with pytest.raises(InputError, match="one folder per seed"):
        pool_sequences([tmp_path / "s0", tmp_path / "s0"], tmp_path / "p2")
    with pytest.raises(InputError, match="no manifest.json"):
        pool_sequences([photos], tmp_path / "p3")
    (pool / "v_a_s0").unlink()
    (pool / "v_a_s0").symlink_to((tmp_path / "s1" / "v_b").resolve(), target_is_directory=True)
    with pytest.raises(InputError, match="is not a link to"):
        pool_sequences([tmp_path / "s0"], pool)  # with kinds "vi": nothing linked before the error
    (pool / "v_a_s0").unlink()
    doc = evaluate_hpatches(
        pool,
        tmp_path / "o",
        max_keypoints=100,
        pose=False,
        progress=False,
        bootstrap=200,
        cluster_pattern=r"^(.*)_s[0-9]+$",
    )
    assert doc["setup"]["sequences"] == 3 and doc["intervals"]["viewpoint"]["n_clusters"] == 2


def test_cli_generate_eval_and_match(tmp_path, capsys):
    from patchpose.cli.main import main

    photos = tmp_path / "photos"
    photos.mkdir()
    cv2.imwrite(str(photos / "a.png"), _rgb(260))
    (tmp_path / "none").mkdir()
    rc = main(["generate", "hpatches", "--images", str(tmp_path / "none"), "--out", str(tmp_path / "x")])
    assert rc == 2 and "no photos" in capsys.readouterr().err
    (photos / "splits.json").write_text(json.dumps({"train": [], "val": [], "test": ["a.png"]}))
    assert (
        main(
            [
                "generate",
                "hpatches",
                "--images",
                str(photos),
                "--out",
                str(tmp_path / "hp"),
                "--targets",
                "1",
                "--kinds",
                "v",
                "--max-side",
                "200",
                "--no-progress",
            ]
        )
        == 0
    )
    seq = tmp_path / "hp" / "v_a"
    out = tmp_path / "m"
    rc = main(
        [
            "match",
            str(seq / "1.ppm"),
            str(seq / "2.ppm"),
            "--homography",
            str(seq / "H_1_2"),
            "--out",
            str(out),
            "--max-keypoints",
            "300",
        ]
    )
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    lines = (out / "matches.csv").read_text().splitlines()
    assert lines[0] == "x1,y1,x2,y2,distance,error_px" and len(lines) == summary["matches"] + 1
    assert cv2.imread(str(out / "matches.png")).shape[1] == 400
    rc = main(["match", str(seq / "1.ppm"), str(seq / "2.ppm"), "--pose", "sift-resolved", "--out", str(out)])
    assert rc == 0 and json.loads((out / "summary.json").read_text())["pose"] == "sift-resolved"
    rc = main(
        [
            "match",
            str(seq / "1.ppm"),
            str(seq / "2.ppm"),
            "--pose",
            "log-dominant-gradient",
            "--detector",
            "harris",
            "--homography",
            str(seq / "H_1_2"),
            "--out",
            str(out),
        ]
    )
    summary = json.loads((out / "summary.json").read_text())
    assert rc == 0 and summary["pose"] == "log-dominant-gradient" and summary["matches"] > 0
    np.savetxt(tmp_path / "kp.csv", [[50.0, 60.0], [80.0, 90.0]], delimiter=",")
    capsys.readouterr()
    kp = ["--keypoints1", str(tmp_path / "kp.csv"), "--keypoints2", str(tmp_path / "kp.csv")]
    rc = main(
        ["match", str(seq / "1.ppm"), str(seq / "2.ppm"), "--pose", "sift-resolved", *kp, "--out", str(out)]
    )
    assert rc == 2 and "SIFT detections" in capsys.readouterr().err  # keypoints from a file have no SIFT pose
    (tmp_path / "badH").write_text("not a matrix")
    rc = main(
        [
            "match",
            str(seq / "1.ppm"),
            str(seq / "2.ppm"),
            "--homography",
            str(tmp_path / "badH"),
            "--out",
            str(out),
        ]
    )
    assert rc == 2 and "cannot read homography" in capsys.readouterr().err
    rc = main(["eval", "hpatches", "--root", str(tmp_path / "nothing"), "--out", str(out)])
    assert rc == 2 and "not found" in capsys.readouterr().err


def test_graffiti_pair_is_written_as_a_sequence(tmp_path):
    from patchpose.data.photos import write_graffiti

    src = tmp_path / "src"
    src.mkdir()
    img = _rgb(200)
    cv2.imwrite(str(src / "graf1.png"), img)
    cv2.imwrite(str(src / "graf3.png"), img[::-1].copy())
    H = np.array([[0.76, -0.3, 225.7], [0.33, 1.01, -77.0], [3.5e-4, -1.4e-5, 1.0]])
    fs = cv2.FileStorage(str(src / "H1to3p.xml"), cv2.FILE_STORAGE_WRITE)
    fs.write("H13", H)
    fs.release()
    write_graffiti(src, tmp_path / "g")
    (seq,) = load_hpatches(tmp_path / "g")
    assert seq.name == "v_graffiti" and seq.targets == [2]
    np.testing.assert_allclose(seq.homographies[2], H, rtol=1e-9)
    np.testing.assert_array_equal(seq.image(1), img[..., ::-1])  # stored BGR on disk, read back as RGB


def test_repeated_pose_counts_on_a_hand_built_case():
    from patchpose.evaluation.hpatches_eval import repeated_pose_counts

    class F:
        def __init__(self, xy):
            self.xy = np.asarray(xy, float)

        def __len__(self):
            return len(self.xy)

    H = similarity_about((0.0, 0.0), 0.5, math.radians(30))
    x1 = np.array([[10.0, 10.0], [50.0, 50.0], [90.0, 20.0]])
    xk = apply_homography(H, x1)
    xk[2] += 5.0  # the third keypoint was not detected again (5 px off)
    f1, fk = F(x1), F(np.vstack([xk, [[300.0, 300.0]]]))
    t = math.radians(30)
    good = (np.zeros(3), np.zeros(3)), (np.full(4, 0.5), np.full(4, t))
    half = (
        (np.zeros(3), np.zeros(3)),
        (np.array([0.5, 0.8, 0.5, 0]), np.array([t + math.radians(7), t, t, 0])),
    )
    res = repeated_pose_counts(H, f1, fk, {"a": good[0], "b": half[0]}, {"a": good[1], "b": half[1]})
    assert res["n"] == 2
    assert res["a"] == [2, 2, 2, 2]
    # keypoint 0: scale exact, 7° off; keypoint 1: scale 0.3 octave off, orientation exact
    assert res["b"] == [1, 2, 1, 2]


def test_sift_candidates_and_the_resolved_row():
    """detect() keeps every orientation SIFT found at a location (its own first, in our convention), and the
    resolved row takes the candidate nearest our angle, circularly."""
    from patchpose.matching.pipeline import nearest_candidates

    img = (make_textured_image(300, seed=3) * 255).astype(np.uint8)
    f = detect(img, 400)
    assert len(f.sift_ori_candidates) == len(f)
    own = np.array([c[0] for c in f.sift_ori_candidates])
    np.testing.assert_allclose(own, f.sift_ori)
    assert any(len(c) > 1 for c in f.sift_ori_candidates)  # SIFT finds several orientations somewhere
    raw = cv2.SIFT_create(nfeatures=400).detect(img, None)
    assert sum(len(c) for c in f.sift_ori_candidates) == len(raw)  # every detection is a candidate
    cands = [np.array([0.1, 3.0]), np.array([0.05, 3.0]), np.array([1.0])]
    np.testing.assert_allclose(nearest_candidates(cands, np.array([2.9, 6.25, 4.0])), [3.0, 0.05, 1.0])
    given = detect(img, keypoints=f.xy[:5])
    assert given.sift_ori_candidates is None


def test_handcrafted_rows_follow_a_zoom_and_a_turn():
    """The hand-crafted pose (LoG scale, dominant gradient orientation) moves with the image: +0.5 octave
    and +40° (CCW as displayed) at the keypoints' images under H; and the LoG σ is in pixels as stated."""
    from patchpose.matching.pipeline import SIFT_REGION, handcrafted_poses

    yy, xx = np.mgrid[0:200, 0:200]
    blob = (0.2 + 0.6 * np.exp(-((xx - 100.0) ** 2 + (yy - 100.0) ** 2) / (2 * 4.0**2))).astype(np.float32)
    s, _ = handcrafted_poses(detect(blob, keypoints=np.array([[100.0, 100.0]])))
    sigma_px = 16.0 * 2.0 ** (s[0] - math.log2(2 * SIFT_REGION))  # the patch half-width is 2·SIFT_REGION·σ
    assert abs(math.log2(sigma_px / 4.0)) < 0.05  # a Gaussian blob of σ = 4 px selects σ = 4 px

    img = make_textured_image(320, seed=3)
    xy = detect(img, 60).xy
    xy = xy[np.all((xy > 90) & (xy < 230), axis=1)]
    H = similarity_about((159.5, 159.5), 0.5, math.radians(40))
    warped = cv2.warpPerspective(img, H, (320, 320), flags=cv2.INTER_LINEAR)
    s1, o1 = handcrafted_poses(detect(img, keypoints=xy))
    s2, o2 = handcrafted_poses(detect(warped, keypoints=apply_homography(H, xy)))
    assert len(xy) >= 10
    assert abs(np.median(s2 - s1) - 0.5) < 0.1
    turn = np.degrees(np.angle(np.exp(1j * (o2 - o1))))
    assert abs(np.median(turn) - 40.0) < 3.0
    _, o0 = handcrafted_poses(detect(img, keypoints=xy), scale=False)  # upright row: same orientation kind
    assert o0.shape == (len(xy),) and np.isfinite(o0).all()


def test_harris_and_file_keypoints_evaluate_without_sift_rows(tmp_path):
    """Harris corners and the same corners given as files give the same matching numbers; neither has
    the rows that read SIFT's pose; a missing keypoint file is a clear error."""
    from patchpose.data.keypoints import detect_harris
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches
    from patchpose.matching.pipeline import pose_rows

    assert pose_rows(4, sift=False) == (
        "lower",
        "ours",
        "ours_top4",
        "ours_angle",
        "dominant_gradient",
        "log+dominant_gradient",
        "upper",
    )
    rel = make_replica(tmp_path, names=("v_b",), targets=2)
    doc = evaluate_hpatches(
        tmp_path, tmp_path / "h", detector="harris", max_keypoints=150, pose=False, progress=False
    )
    assert list(doc["mma"]) == list(pose_rows(4, sift=False))
    assert doc["setup"]["detector"].startswith("Harris")
    assert set(doc["repeated_keypoints_pose"]["overall"]) == {
        "n",
        "ours",
        "dominant_gradient",
        "log+dominant_gradient",
    }
    kdir = tmp_path / "kp" / "v_b"
    kdir.mkdir(parents=True)
    for k in (1, 2, 3):
        xy = detect_harris(cv2.imread(str(rel / "v_b" / f"{k}.ppm"))[..., ::-1].copy(), 150)
        if k == 3:
            np.savetxt(kdir / "3.txt", xy)
        else:
            np.save(kdir / f"{k}.npy", xy)
    again = evaluate_hpatches(
        tmp_path, tmp_path / "f", keypoints_dir=tmp_path / "kp", max_keypoints=150, pose=False, progress=False
    )
    assert again["mma"] == doc["mma"] and again["matches"] == doc["matches"]
    assert "keypoints from" in again["setup"]["detector"]
    (kdir / "3.txt").unlink()
    with pytest.raises(InputError, match="no keypoints for v_b image 3"):
        evaluate_hpatches(tmp_path, tmp_path / "g", keypoints_dir=tmp_path / "kp", pose=False, progress=False)
    with pytest.raises(InputError, match="keypoints folder not found"):
        evaluate_hpatches(tmp_path, tmp_path / "g", keypoints_dir=tmp_path / "nope", progress=False)
    with pytest.raises(InputError, match="detector must be one of"):
        evaluate_hpatches(tmp_path, tmp_path / "g", detector="orb", progress=False)


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


def test_a_bad_image_in_a_sequence_is_named(tmp_path):
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    rel = make_replica(tmp_path, names=("v_b",), targets=1)
    cv2.imwrite(str(rel / "v_b" / "2.ppm"), np.zeros((5, 5, 3), np.uint8))
    with pytest.raises(InputError, match=r"sequence .*v_b: image is too small"):
        evaluate_hpatches(tmp_path, tmp_path / "o", max_keypoints=50, pose=False, progress=False)


class _Recorder:
    """A describer that records the frames it is asked to describe (one row per call)."""

    dim = 3

    def __init__(self):
        self.calls = []

    def describe(self, pyramid, xy, log2_scale, theta, region=1.0):
        s = np.asarray(log2_scale, np.float64).reshape(-1)
        self.calls.append((s.copy(), np.asarray(theta, np.float64).reshape(-1).copy(), region))
        return np.stack([s, np.asarray(theta, np.float64).reshape(-1), np.zeros_like(s)], 1).astype(
            np.float32
        )


def test_rows_at_our_scale_cut_the_estimators_descriptor_window():
    """The rows cut at our scale (``ours``, ``ours_topK``) widen their window by the estimator's
    ``descriptor_region`` (log2 added to our scale), every other row keeps its own window, and the poses
    themselves do not change; the two-view chain does the same for ``describe_pose="ours"``."""
    from patchpose import PatchPoseEstimator
    from patchpose.matching.pipeline import MatchConfig, describe_rows, ours_window
    from patchpose.matching.twoview import TwoViewConfig, match_two_views

    img = (make_textured_image(240, seed=5) * 255).astype(np.uint8)
    f = detect(img, 60)
    rows = ("lower", "sift", "ours", "ours_top2", "ours_angle", "sift_scale+ours_angle")
    cfg = MatchConfig(top_k=2)
    out = {}
    for region in (1.0, 2.0):
        est = PatchPoseEstimator.load("patchpose-v7").with_plan(descriptor_region=region)
        ours = est.estimate(f.image, f.xy, top_k=2)
        rec = _Recorder()
        describe_rows(f, rows, rec, est, None, cfg, ours=ours)
        out[region] = dict(zip(rows, rec.calls))
        np.testing.assert_allclose(out[region]["ours"][0], ours.scale[:, 0] + math.log2(region))
        np.testing.assert_allclose(out[region]["ours"][1], ours.orientation[:, 0])
        np.testing.assert_allclose(
            out[region]["ours_top2"][0], np.repeat(ours.scale[:, 0], 2) + math.log2(region)
        )
        assert ours_window("ours", region) == ours_window("ours_top2", region) == math.log2(region)
        assert ours_window("sift", region) == ours_window("ours_angle", region) == 0.0
    for row in ("lower", "sift", "ours_angle", "sift_scale+ours_angle"):  # untouched by the setting
        for a, b in zip(out[1.0][row][:2], out[2.0][row][:2]):
            np.testing.assert_array_equal(a, b)

    rec = _Recorder()
    ours = PatchPoseEstimator.load("patchpose-v7").estimate(f.image, f.xy, top_k=1)
    match_two_views(
        f, f, rec, TwoViewConfig(describe_pose="ours", matcher="mnn", descriptor_region=4.0), ours, ours
    )
    np.testing.assert_allclose(rec.calls[0][0], ours.scale[:, 0] + 2.0)
    rec = _Recorder()
    match_two_views(
        f, f, rec, TwoViewConfig(describe_pose="sift", matcher="mnn", descriptor_region=4.0), ours, ours
    )
    np.testing.assert_allclose(rec.calls[0][0], f.sift_scale)
    for bad in (0.0, -1.0, float("nan"), 17.0):
        with pytest.raises(InputError, match="descriptor_region must be a number in"):
            TwoViewConfig(descriptor_region=bad).validate()
