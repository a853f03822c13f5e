"""The photo pool: photos that ship inside our dependencies and Debian packages, and split by image.

``patchpose photos fetch --out DIR`` copies the photos of the pool into ``DIR/<source>/`` and writes
``DIR/splits.json``. The **test** split is the 15 photos that ship with scikit-image, scikit-learn and
matplotlib (so every machine that has patchpose installed can rerun the evaluations); the Debian
wallpapers and OpenCV sample photos are split into **train** and **val** by image group (same-scene
photos such as ``aero1``/``aero3`` stay together). Photos are fetched, never committed (mixed licences).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import InputError, require

log = logging.getLogger(__name__)

IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".ppm", ".pgm", ".bmp", ".tif", ".tiff", ".webp"}

# Photos inside Python wheels we depend on: (source, module, relative path).
WHEEL_PHOTOS = [
    ("skimage", "skimage", f"data/{n}")
    for n in (
        "astronaut.png camera.png chelsea.png coffee.png coins.png brick.png grass.png gravel.png rocket.jpg "
        "moon.png motorcycle_left.png motorcycle_right.png"
    ).split()
] + [
    ("sklearn", "sklearn", "datasets/images/china.jpg"),
    ("sklearn", "sklearn", "datasets/images/flower.jpg"),
    ("matplotlib", "matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
]

# Debian packages (bookworm) and the photo files inside them.
DEBIAN_PHOTOS = {
    "mate-backgrounds": (
        "usr/share/backgrounds/mate/nature",
        "Aqua Blinds Dune FreshFlower Garden GreenMeadow LadyBird RainDrops Storm TwoWings Wood YellowFlower".split(),
    ),
    "lxqt-themes": (
        "usr/share/lxqt/wallpapers",
        "Butterfly-Kenneth-Wimer Valendas after-the-rain appleflower beam butterfly cloud drop flowers fog "
        "this-is-not-windows".split(),
    ),
    "opencv-doc": (
        "usr/share/doc/opencv-doc/examples",
        [
            f"data/{n}"
            for n in "aero1 aero3 aloeL baboon building butterfly fruits home messi5 orange apple "
            "squirrel_cls ela_original box_in_scene board rubberwhale1 leuvenA".split()
        ]
        + [f"text/scenetext0{i}" for i in range(1, 7)]
        + ["alphamat/input_images/plant", "hfs/data/000"],
    ),
}

# More photographs in Debian packages (their renders and illustrations left out), fetched only with
# ``photos fetch --extra``: 28 photos, 22 of which hash to train and 6 to val. Not in the default pool, so
# that the splits, the recipes and every val number in the docs keep meaning what they say; the bundled
# models never saw them (docs/model_card.md, "Training data"). A Plasma wallpaper is a folder with
# one file per screen size: its largest file is taken, named after the folder.
EXTRA_DEBIAN_PHOTOS = {
    "plasma-workspace-wallpapers": (
        "usr/share/wallpapers",
        "BytheWater ColdRipple ColorfulCups DarkestHour EveningGlow FallenLeaf Grey Kite OneStandsOut Path "
        "summer_1am".split(),
    ),
    "lomiri-wallpapers-16.04": (
        "usr/share/backgrounds",
        [
            f"{n}_by_{a}"
            for n, a in (
                ("Bridge", "Sander_Klootwijk"),
                ("Dragonfly", "Bolly"),
                ("Picture_0B", "freespace"),
                ("Picture_1A", "freespace"),
                ("Wine", "Jakkub_Mede"),
                ("aitzgorri", "Aitzol_Berasategi"),
                ("analogpattern", "Peter_Nerlich"),
                ("free", "Peter_Nerlich"),
                ("friends", "Aitzol_Berasategi"),
                ("greentock", "Peter_Nerlich"),
                ("life", "Aitzol_Berasategi"),
                ("picosdeeuropa", "Aitzol_Berasategi"),
                ("seeding", "Clements_Engelhardt"),
                ("sunset", "Aitzol_Berasategi"),
                ("umang", "Abhishek_Mudgal"),
            )
        ],
    ),
    "lomiri-wallpapers-20.04": (
        "usr/share/backgrounds",
        ["Infinite-Sea_by_Aury88", "Kleiber_by_Lukas_Baubkus"],
    ),
}


def _package_photos(root: Path, names: list[str]) -> list[tuple[Path, str]]:
    """``(file, name to copy it as)`` for each of ``names`` below an unpacked package folder ``root``: a
    file ``NAME.<image ext>``, or, where ``NAME`` is a folder (a Plasma wallpaper: one file per screen
    size), its largest image, copied as ``NAME.<its ext>``."""
    out = []
    for name in names:
        folder = root / name
        if folder.is_dir():
            if (folder / "contents" / "images").is_dir():  # not the screenshot, not the dark variant
                folder = folder / "contents" / "images"
            files = [f for f in folder.rglob("*") if f.is_file() and f.suffix.lower() in IMAGE_EXTS]
            big = max(files, key=lambda f: (f.stat().st_size, f.name)) if files else None
            hits = [(big, Path(name).name + big.suffix.lower())] if big else []
        else:
            hits = [(h, h.name) for h in sorted(root.glob(name + ".*")) if h.suffix.lower() in IMAGE_EXTS]
        if not hits:
            log.warning("photo %s not found in the package (%s); skipped", name, root)
        out += hits
    return out


def _wheel_photos() -> list[tuple[str, Path]]:
    """``(source, path)`` of each photo of :data:`WHEEL_PHOTOS` that its wheel holds. A wheel that is not
    installed is an :class:`InputError` naming the extra that installs it: the test split is these photos,
    and one that silently lacked some would not be the split that results are reported on."""
    out = []
    for src, module, rel in WHEEL_PHOTOS:
        mod = require(module, "eval")
        p = Path(mod.__file__).parent / rel
        if p.is_file():
            out.append((src, p))
    return out


def wheel_photo_paths() -> list[Path]:
    """Paths of the photos shipped inside installed wheels (the test split and the demo photos)."""
    return [p for _, p in _wheel_photos()]


def demo_photo() -> Path:
    """A photo that ships with our dependencies (scikit-image's 'astronaut')."""
    import skimage

    return Path(skimage.__file__).parent / "data" / "astronaut.png"


def group_of(path: str | Path) -> str:
    """Scene group of a photo: the file stem without a trailing view marker (``aero1``, ``aero3`` →
    ``aero``; ``motorcycle_left`` → ``motorcycle``; ``leuvenA`` → ``leuven``; ``aloeL`` → ``aloe``).

    A view number has one or two digits; longer runs are a camera's counter (``IMG_0001``, ``DSC00042``)
    and stay, so that a folder of camera files is split photo by photo, not as one group per camera."""
    stem = Path(path).stem
    stem = re.sub(r"[_-]?(left|right)$", "", stem, flags=re.I)
    stem = re.sub(r"(?<=[a-z])[LRAB]$", "", stem)
    return re.sub(r"(?<![0-9])[_-]?\d{1,2}$", "", stem).lower() or Path(path).stem.lower()


def split_by_image(paths, val_frac: float = 0.1, test_frac: float = 0.1, salt: str = "patchpose") -> dict:
    """Deterministic split **by image group** (a stable hash of :func:`group_of`), never by patch."""
    splits = {"train": [], "val": [], "test": []}
    for p in sorted(paths, key=str):
        h = int(hashlib.sha256(f"{salt}:{group_of(p)}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        key = "test" if h < test_frac else "val" if h < test_frac + val_frac else "train"
        splits[key].append(p)
    return splits


def list_images(folder: str | Path) -> list[Path]:
    """Every image file below ``folder`` (by extension, any case), sorted; hidden files and folders (a name that
    starts with a dot: macOS's ``._IMG.JPG`` beside each photo copied from a Mac, ``.thumbnails/``) are not images."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"photo folder not found: {folder}")
    return sorted(
        p
        for p in folder.rglob("*")
        if p.suffix.lower() in IMAGE_EXTS
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
        and p.is_file()
    )


def load_splits(folder: str | Path) -> dict[str, list[Path]]:
    """Splits of a photo folder: ``splits.json`` if present (paths relative to the folder), else
    :func:`split_by_image` over every image below it."""
    folder = Path(folder)
    sj = folder / "splits.json"
    if sj.is_file():
        try:
            d = json.loads(sj.read_text())
        except (ValueError, UnicodeDecodeError):
            raise InputError(f"{sj} is not JSON (a split name -> list of photo paths)") from None
        if not isinstance(d, dict) or not all(
            isinstance(v, list) and all(isinstance(p, str) for p in v) for v in d.values()
        ):
            raise InputError(f"{sj} must map each split name to a list of photo paths")
        return {k: [folder / p for p in v] for k, v in d.items()}
    return split_by_image(list_images(folder))


def photos_of(folder: str | Path, split: str | None = None, allow_none: bool = False) -> list[Path]:
    """The photos of ``folder`` (every image below it, or with ``split`` those of that split,
    :func:`load_splits`); an :class:`InputError` if the folder does not exist, or (unless ``allow_none``)
    if it holds none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            f"photo folder not found: {folder}" if not folder.exists() else f"{folder} is not a folder"
        )
    photos = load_splits(folder).get(split, []) if split else list_images(folder)
    if not photos and not allow_none:
        of = f" of the {split!r} split" if split else ""
        raise InputError(
            f"{folder} holds no photos{of} (image files: {', '.join(sorted(IMAGE_EXTS))}; 'patchpose photos "
            f"fetch --out {folder}' makes a photo pool)"
        )
    return photos


def _unpack_debian(pkg: str, tmp: Path) -> Path | None:
    """``apt-get download PKG`` and ``dpkg -x`` it under ``tmp``; the unpacked root, or None (warned)."""
    try:
        subprocess.run(["apt-get", "download", pkg], cwd=tmp, check=True, capture_output=True)
        deb = next(Path(tmp).glob(f"{pkg}_*.deb"))
        subprocess.run(["dpkg", "-x", str(deb), str(tmp / "x")], check=True, capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError, StopIteration) as e:
        log.warning("could not fetch Debian package %s (%s); run 'apt-get update' first?", pkg, e)
        return None
    return tmp / "x"


#: opencv-doc's Oxford "graffiti" pair (img1 → img3, 800×640) and its ground-truth homography.
GRAFFITI = ("usr/share/doc/opencv-doc/examples/data", "graf1.png", "graf3.png", "H1to3p.xml", "H13")


def write_graffiti(folder: str | Path, out: str | Path) -> Path:
    """Write the graffiti pair found in ``folder`` (an unpacked opencv-doc, or a folder holding
    ``graf1.png``, ``graf3.png``, ``H1to3p.xml``) as the HPatches sequence ``out/v_graffiti``."""
    import cv2
    import numpy as np

    from .patches import load_image
    from .warps import write_homography

    base, im1, im3, hxml, node = GRAFFITI
    folder = Path(folder)
    src = folder / base if (folder / base).is_dir() else folder
    paths = [src / n for n in (im1, im3, hxml)]
    if not all(p.is_file() for p in paths):
        raise FileNotFoundError(f"graffiti files not found in {src}")
    fs = cv2.FileStorage(str(paths[2]), cv2.FILE_STORAGE_READ)
    H = np.asarray(fs.getNode(node).mat(), np.float64)
    fs.release()
    seq = Path(out) / "v_graffiti"
    tmp = Path(out) / ".tmp_v_graffiti"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for k, p in ((1, paths[0]), (2, paths[1])):
        img = cv2.cvtColor(load_image(p), cv2.COLOR_RGB2BGR)  # one-line InputError if unreadable
        cv2.imwrite(str(tmp / f"{k}.ppm"), img)
    write_homography(tmp / "H_1_2", H)
    shutil.rmtree(seq, ignore_errors=True)
    tmp.replace(seq)
    return seq


def fetch_graffiti(out: str | Path) -> Path:
    """Download opencv-doc (Debian) and write its graffiti pair as ``out/v_graffiti`` (HPatches layout)."""
    seq = Path(out) / "v_graffiti"
    if (seq / "H_1_2").is_file():
        return seq
    with tempfile.TemporaryDirectory() as tmp:
        x = _unpack_debian("opencv-doc", Path(tmp))
        if x is None:
            raise FileNotFoundError("could not download opencv-doc (run 'apt-get update' first)")
        return write_graffiti(x, out)


def fetch_photos(
    out: str | Path,
    debian: bool = True,
    val_frac: float = 0.15,
    extra: bool = False,
    extra_only: bool = False,
) -> dict[str, list[str]]:
    """Copy the pool into ``out`` and write ``out/splits.json``. Debian packages are downloaded with
    ``apt-get download`` (run ``apt-get update`` first on a fresh machine) and unpacked with ``dpkg -x``;
    already fetched sources are skipped. ``extra`` adds :data:`EXTRA_DEBIAN_PHOTOS` to the Debian
    packages (split by the same hash, so the default pool's photos keep their splits); ``extra_only``
    fetches those alone (the same splits; photos that no bundled model saw, for held-out evaluation)."""
    if (extra or extra_only) and not debian:
        raise InputError("--extra and --extra-only fetch Debian packages: they cannot go with --no-debian")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    test = []
    for src, p in [] if extra_only else _wheel_photos():
        dst = out / src / p.name
        dst.parent.mkdir(exist_ok=True)
        if not dst.exists():
            shutil.copy2(p, dst)
        test.append(dst.relative_to(out).as_posix())
    trainval = []
    if debian:
        packages = {
            **({} if extra_only else DEBIAN_PHOTOS),
            **(EXTRA_DEBIAN_PHOTOS if extra or extra_only else {}),
        }
        for pkg, (base, names) in packages.items():
            dst_dir = out / pkg
            if dst_dir.is_dir() and any(dst_dir.iterdir()):
                trainval += [p.relative_to(out).as_posix() for p in list_images(dst_dir)]
                continue
            with tempfile.TemporaryDirectory() as tmp:
                x = _unpack_debian(pkg, Path(tmp))
                if x is None:
                    continue
                dst_dir.mkdir(exist_ok=True)
                for src_file, name in _package_photos(x / base, names):
                    shutil.copy2(src_file, dst_dir / name)
                    trainval.append((dst_dir / name).relative_to(out).as_posix())
    sp = split_by_image(trainval, val_frac=val_frac, test_frac=0.0)
    splits = {"train": [str(p) for p in sp["train"]], "val": [str(p) for p in sp["val"]], "test": test}
    tmpf = out / "splits.json.tmp"
    tmpf.write_text(json.dumps(splits, indent=1))
    tmpf.replace(out / "splits.json")
    return splits
