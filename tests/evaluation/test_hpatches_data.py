"""HPatches data (``patchpose.evaluation.datasets.hpatches``): the loader on a tiny replica of the real layout, the
generator, pooled seeds and the Graffiti pair written as a sequence."""

from __future__ import annotations

import json
import shutil

import cv2
import numpy as np
import pytest

from conftest import make_hpatches_replica, make_rgb_image
from patchpose.errors import InputError
from patchpose.evaluation.datasets.hpatches import (
    TURN_SETTINGS,
    ZOOM_SETTINGS,
    HPatchesGenConfig,
    generate_hpatches,
    load_hpatches,
    pool_sequences,
    random_viewpoint_homography,
    read_homography,
)
from patchpose.geometry import pose_change

# v_boat/H_1_4 of the real release, as printed in its file
BOAT_H14 = "0.39176 -0.48622 421.69\n0.48543 0.39488 -0.097812\n2.3979e-06 -3.3236e-06 1\n"


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
    make_hpatches_replica(tmp_path)
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
    rel = make_hpatches_replica(tmp_path / "r", names=("v_x",))
    (rel / "v_x" / "H_1_3").unlink()
    with pytest.raises(InputError, match="no homography H_1_3"):
        load_hpatches(rel)


def test_generator_writes_the_layout_and_images_follow_their_homographies(tmp_path):
    photo = tmp_path / "photo.png"
    cv2.imwrite(str(photo), make_rgb_image(300))
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
        cv2.imwrite(str(photos[-1]), make_rgb_image(200, seed=n))
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


def test_a_stopped_generation_is_not_scored_as_a_finished_one(tmp_path):
    """``manifest.json`` (the plan) is written before the sequences, so a run stopped half-way looked finished:
    ``eval hpatches`` scored the sequences it had made without a word. Reading such a folder is a one-line error
    until the rerun finishes it; a folder without a manifest (the release itself) is read as it is."""
    photos = []
    for n in range(2):
        photos.append(tmp_path / f"p{n}.png")
        cv2.imwrite(str(photos[-1]), make_rgb_image(200, seed=n))
    cfg = HPatchesGenConfig(max_side=160, targets=2)
    out = tmp_path / "hp"
    generate_hpatches(photos, out, cfg, kinds="v", progress=False)
    assert [s.name for s in load_hpatches(out)] == ["v_p0", "v_p1"]
    shutil.rmtree(out / "v_p1")  # as a run stopped before its second sequence leaves it
    with pytest.raises(InputError, match=r"unfinished: 1 of the 2 sequences .*\(e\.g\. v_p1\).*rerun it"):
        load_hpatches(out)
    generate_hpatches(photos, out, cfg, kinds="v", progress=False)  # the rerun finishes it
    assert [s.name for s in load_hpatches(out)] == ["v_p0", "v_p1"]
    (out / "manifest.json").unlink()
    shutil.rmtree(out / "v_p1")
    assert [s.name for s in load_hpatches(out)] == ["v_p0"]
    # a run stopped by a photo it cannot read, rerun without that photo: finished, not "unfinished" for good
    bad = tmp_path / "p9.png"
    bad.write_bytes(b"not an image")
    out2 = tmp_path / "hp2"
    with pytest.raises(InputError):
        generate_hpatches([*photos, bad], out2, cfg, kinds="v", progress=False)
    with pytest.raises(InputError, match="unfinished"):  # nor pooled as if it were finished
        pool_sequences([out2], tmp_path / "pool", kinds="v")
    assert not (tmp_path / "pool").exists()
    generate_hpatches(photos, out2, cfg, kinds="v", progress=False)
    assert [s.name for s in load_hpatches(out2)] == ["v_p0", "v_p1"]
    assert pool_sequences([out2], tmp_path / "pool", kinds="v") == ["v_p0_s0", "v_p1_s0"]


def test_generator_resume_refuses_other_settings_or_moved_names(tmp_path):
    """A folder is resumed only with the settings and photos that made it: other settings are refused (they
    were ignored), and so is a photo added to the folder that moves the name of a finished sequence."""
    ab, a_b = tmp_path / "ab.png", tmp_path / "a-b.png"
    cv2.imwrite(str(ab), make_rgb_image(160, seed=0))
    cv2.imwrite(str(a_b), make_rgb_image(160, seed=1))
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


def centre_changes(cfg: HPatchesGenConfig, draws: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 1–5, ``draws`` homographies each (seed 0): each one's step, scale change (octaves) and turn
    (degrees in [−180, 180)) at the centre of a 640×480 image."""
    rng = np.random.default_rng(0)
    steps = np.repeat(np.arange(1, 6), draws)
    out = [pose_change(random_viewpoint_homography(rng, (480, 640), k, cfg), [[319.5, 239.5]]) for k in steps]
    assert all(ok[0] for _, _, ok in out)
    ds = np.array([d[0] for d, _, _ in out])
    turn = (np.degrees([o[0] for _, o, _ in out]) + 180) % 360 - 180
    return steps, ds, turn


def test_zoom_sequences_zoom_by_exactly_their_step(tmp_path):
    """``--zoom``: image k's scale change at the image centre is ±0.4·(k−1) octaves exactly (without the
    preset's 1 % perspective), both signs occur, the turn stays within ±3°·(k−1); the mixed default draws zooms
    anywhere up to its bound. A folder made before ``zoom_exact`` existed resumes (its manifest lacks it)."""
    cfg = HPatchesGenConfig(**{**ZOOM_SETTINGS, "perspective": 0.0})  # the preset's 1 % moves it < 0.1
    step, ds, turn = centre_changes(cfg, 20)
    assert np.abs(np.abs(ds) - 0.4 * step).max() < 1e-6 and (np.abs(turn) < 3.0 * step + 1).all()
    assert set(np.sign(ds)) == {-1.0, 1.0}
    _, mixed, _ = centre_changes(HPatchesGenConfig(), 10)
    assert np.ptp(np.abs(mixed[-10:])) > 0.5  # the default's zooms (step 5) are spread, not one magnitude
    photo = tmp_path / "p.png"
    cv2.imwrite(str(photo), make_rgb_image(160))
    old = HPatchesGenConfig(max_side=128, targets=1)
    generate_hpatches([photo], tmp_path / "hp", old, kinds="v", progress=False)
    m = tmp_path / "hp" / "manifest.json"
    doc = json.loads(m.read_text())
    del doc["config"]["zoom_exact"]
    m.write_text(json.dumps(doc))
    assert generate_hpatches([photo], tmp_path / "hp", old, kinds="vi", progress=False) == ["v_p", "i_p"]
    with pytest.raises(InputError, match="other settings"):
        generate_hpatches(
            [photo], tmp_path / "hp", HPatchesGenConfig(max_side=128, targets=1, zoom_exact=True)
        )


def test_tilted_sequences_squeeze_by_exactly_their_step():
    """``--tilt``: image k's local map at the centre has singular values 1 and 2^−0.25·(k−1) exactly (a squeeze
    across one direction, no zoom along the other), the squeezed direction varies between draws, and the turn
    stays within ±3°·(k−1). Without a tilt the draws are those of before (the default's homographies unchanged)."""
    from patchpose.evaluation.datasets.hpatches import TILT_SETTINGS
    from patchpose.geometry import homography_jacobian

    rng = np.random.default_rng(0)
    cfg = HPatchesGenConfig(**TILT_SETTINGS)
    dirs = []
    for step in range(1, 6):
        for _ in range(10):
            J = homography_jacobian(
                random_viewpoint_homography(rng, (480, 640), step, cfg), [[319.5, 239.5]]
            )[0]
            U, sv, Vt = np.linalg.svd(J)
            assert np.allclose(sv, [1.0, 2.0 ** (-0.25 * step)], atol=1e-6)
            dirs.append(np.degrees(np.arctan2(Vt[1, 1], Vt[1, 0])) % 180)  # the squeezed direction
    assert np.ptp(dirs) > 90
    _, _, turn = centre_changes(cfg, 10)
    steps = np.repeat(np.arange(1, 6), 10)
    assert (np.abs(turn) < 3.0 * steps + 1).all()
    a = random_viewpoint_homography(np.random.default_rng(3), (480, 640), 2, HPatchesGenConfig())
    b = random_viewpoint_homography(
        np.random.default_rng(3), (480, 640), 2, HPatchesGenConfig(tilt_octaves=0.0)
    )
    assert np.array_equal(a, b)


def test_turned_sequences_turn_by_exactly_their_step():
    """``--turn``: image k is turned about the centre by exactly ±30°·(k−1), both ways occur, with no zoom."""
    step, ds, turn = centre_changes(HPatchesGenConfig(**TURN_SETTINGS), 10)
    assert np.abs(ds).max() < 1e-6 and np.abs(np.abs(turn) - 30.0 * step).max() < 1e-4
    assert set(np.sign(turn)) == {-1.0, 1.0}


def test_pooled_seeds_are_linked_by_seed_and_evaluated_by_photo(tmp_path, capsys):
    """Two seeds of the sequences of two photos (``--split all``: every photo of the folder) linked into one
    folder as <sequence>_s<seed>; a rerun keeps the links; the same seed twice, a folder that no generator
    wrote and a name taken by another sequence are errors; the pool's intervals are drawn by photo."""
    from patchpose.cli.main import main
    from patchpose.evaluation.datasets.hpatches import pool_sequences
    from patchpose.evaluation.hpatches_eval import evaluate_hpatches

    photos = tmp_path / "photos"
    photos.mkdir()
    for i, name in enumerate(("a.png", "b.png")):
        cv2.imwrite(str(photos / name), make_rgb_image(200, seed=i))
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


def test_graffiti_pair_is_written_as_a_sequence(tmp_path):
    from patchpose.data.photos import write_graffiti

    src = tmp_path / "src"
    src.mkdir()
    img = make_rgb_image(200)
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
