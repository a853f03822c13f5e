"""Photo pools (``patchpose.data.photos``): splits by scene, and the fetched wheel and Debian photos."""

import pytest

from patchpose.data.photos import group_of, split_by_image


def test_split_by_image_keeps_scene_groups_together():
    assert group_of("aero1.jpg") == group_of("aero3.jpg") == "aero"
    assert group_of("motorcycle_left.png") == group_of("motorcycle_right.png")
    assert group_of("leuvenA.jpg") == group_of("leuvenB.jpg")
    paths = [f"{n}{i}.jpg" for n in ("aero", "boat", "cat", "dog", "elk", "fox", "gnu") for i in (1, 2, 3)]
    sp = split_by_image(paths, val_frac=0.3, test_frac=0.3)
    assert sorted(sum(sp.values(), [])) == sorted(paths)
    where = {group_of(p): k for k, v in sp.items() for p in v}
    for k, v in sp.items():
        assert all(where[group_of(p)] == k for p in v)
    assert split_by_image(paths, 0.3, 0.3) == sp  # deterministic


def test_camera_file_names_are_split_photo_by_photo():
    """A camera's counter (IMG_0001, DSC00042) is not a view number: stripping it put every photo of a
    camera folder into one group, so one split got all of them."""
    assert group_of("IMG_0001.jpg") != group_of("IMG_0002.jpg")
    assert group_of("DSC00042.JPG") == "dsc00042"
    assert group_of("scenetext01.jpg") == group_of("scenetext06.jpg") == "scenetext"  # views: 1-2 digits
    paths = [f"IMG_{i:04d}.jpg" for i in range(200)] + [f"DSC{i:05d}.JPG" for i in range(100)]
    sp = split_by_image(paths, val_frac=0.1, test_frac=0.1)
    assert all(len(v) >= 10 for v in sp.values())


def test_fetched_wheel_photos_are_filed_under_their_own_source_and_need_every_wheel(tmp_path, monkeypatch):
    """Each wheel's photos go to its own folder; a wheel that is not installed is an error, not a test split
    silently short of its photos."""
    import patchpose.data.photos as P
    from patchpose.errors import InputError

    mpl = [w for w in P.WHEEL_PHOTOS if w[0] == "matplotlib"]
    monkeypatch.setattr(P, "WHEEL_PHOTOS", mpl)
    splits = P.fetch_photos(tmp_path / "a", debian=False)
    assert splits["test"] == ["matplotlib/grace_hopper.jpg"]
    assert (tmp_path / "a" / "matplotlib" / "grace_hopper.jpg").is_file()
    monkeypatch.setattr(P, "WHEEL_PHOTOS", [("nowheel", "no_such_module_patchpose", "a.png"), *mpl])
    with pytest.raises(InputError, match=r"\[eval\]"):
        P.fetch_photos(tmp_path / "b", debian=False)
    assert not (tmp_path / "b" / "splits.json").exists()


def test_fetched_debian_photos_take_a_plasma_wallpapers_largest_image(tmp_path, monkeypatch, caplog):
    """A Plasma wallpaper is a folder (``NAME/contents/images/<w>x<h>.jpg``, a screenshot and a dark
    variant beside it): its largest image is copied as ``NAME.jpg``; a plain ``NAME.<ext>`` file is copied as
    it is, and files of the package not listed are not."""
    import cv2
    import numpy as np

    import patchpose.data.photos as P

    root = tmp_path / "unpacked"
    wall = root / "usr/share/wallpapers/Path/contents"
    (wall / "images").mkdir(parents=True)
    (wall / "images_dark").mkdir()
    rng = np.random.default_rng(0)
    cv2.imwrite(str(wall / "images" / "640x480.jpg"), rng.integers(0, 255, (48, 64), dtype=np.uint8))
    cv2.imwrite(str(wall / "images" / "1280x960.jpg"), rng.integers(0, 255, (96, 128), dtype=np.uint8))
    cv2.imwrite(str(wall / "images_dark" / "2560x1920.jpg"), rng.integers(0, 255, (192, 256), dtype=np.uint8))
    cv2.imwrite(str(wall / "screenshot.png"), rng.integers(0, 255, (300, 300), dtype=np.uint8))
    cv2.imwrite(str(root / "usr/share/wallpapers/Plain.png"), np.zeros((40, 40), np.uint8))
    cv2.imwrite(str(root / "usr/share/wallpapers/Other.png"), np.zeros((40, 40), np.uint8))
    monkeypatch.setattr(P, "WHEEL_PHOTOS", [])
    monkeypatch.setattr(P, "DEBIAN_PHOTOS", {"fake-base": ("usr/share/wallpapers", ["Plain"])})
    monkeypatch.setattr(P, "EXTRA_DEBIAN_PHOTOS", {"fake-extra": ("usr/share/wallpapers", ["Path", "Gone"])})
    monkeypatch.setattr(P, "_unpack_debian", lambda pkg, tmp: root)
    splits = P.fetch_photos(tmp_path / "pool", debian=True)
    assert sorted(splits["train"] + splits["val"]) == ["fake-base/Plain.png"]  # the extra pool is opt-in
    splits = P.fetch_photos(tmp_path / "pool", debian=True, extra=True)
    got = sorted(splits["train"] + splits["val"])
    assert got == ["fake-base/Plain.png", "fake-extra/Path.jpg"]
    assert (
        "photo Gone not found" in caplog.text
    )  # a listed photo the package lacks is said, not dropped silently
    copied = cv2.imread(str(tmp_path / "pool" / "fake-extra" / "Path.jpg"), cv2.IMREAD_GRAYSCALE)
    assert copied.shape == (96, 128)  # the largest of contents/images, not the dark variant or the screenshot
    # the extra photos alone, no wheel photo and no default Debian photo: a held-out folder
    from patchpose.errors import InputError

    monkeypatch.setattr(P, "WHEEL_PHOTOS", [w for w in P.WHEEL_PHOTOS if w[0] == "matplotlib"])
    alone = P.fetch_photos(tmp_path / "held_out", debian=True, extra_only=True)
    assert alone["test"] == [] and sorted(alone["train"] + alone["val"]) == ["fake-extra/Path.jpg"]
    assert sorted(p.name for p in (tmp_path / "held_out").rglob("*.*")) == ["Path.jpg", "splits.json"]
    with pytest.raises(InputError, match="--no-debian"):
        P.fetch_photos(tmp_path / "x", debian=False, extra_only=True)
