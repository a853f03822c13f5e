"""The library side of the ``estimate``, ``demo`` and ``match`` commands: typed functions that compute, write
their output files and return what they found (the CLI parses options and prints; ``match`` computes with
:func:`patchpose.match_pair`, and :func:`write_match_outputs` writes its files).

Sits above the estimator and the matching recipes and below the benchmarks and :mod:`patchpose.cli`; nothing in
the library imports it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError, about, is_int_in
from .estimator import PatchPoseEstimator
from .fileio import make_folder, read_keypoints, write_text_atomic, written_together
from .outputs import POSE_FORMATS, draw_poses, write_matches_csv, write_matches_picture, write_poses

if TYPE_CHECKING:
    from .matching.pair import PairMatches


def output_folder(out_dir: str | Path) -> Path:
    """``out_dir`` as the folder the outputs go into: an :class:`InputError` where a file is in its place (checked
    before any work; the folder itself is made when the outputs are written)."""
    out = Path(out_dir)
    for p in (out, *out.parents):  # the nearest part of the path that exists must be a folder
        if p.exists():
            if p.is_dir():
                break
            if p == out:
                raise InputError(
                    f"the output folder {out} is a file; give a folder (the outputs are written inside it)"
                )
            raise InputError(f"{p}, in the output folder's path, is a file; give a folder there")
    return out


#: the files ``patchpose match`` writes in its output folder
MATCH_OUTPUTS = ("matches.png", "matches.csv", "summary.json")


def estimate_outputs(out_dir: str | Path, image_path: str | Path, fmt: str = "json") -> tuple[Path, Path]:
    """The poses file and the picture :func:`run_estimate` writes for ``image_path`` into ``out_dir``."""
    stem = Path(out_dir) / f"{Path(image_path).stem}_poses"
    return stem.with_name(f"{stem.name}.{fmt}"), stem.with_name(f"{stem.name}.png")


def check_outputs_free(paths, overwrite: bool = False, inputs=()) -> None:
    """An :class:`InputError` where one of ``paths`` (the files a command is about to write) is already there and
    ``overwrite`` is not set, checked before any work: a command run again into the same folder replaced an earlier
    run's outputs without a word. (Each file is still written whole: a new file beside it, then renamed.) One that
    is one of ``inputs`` (the files the command reads; None: not given), by any name or link, is refused even with
    ``overwrite``: ``--overwrite`` replaced the photo or keypoints file it read."""
    for path in paths:
        for given in inputs:
            if given is not None and _same_file(path, given):
                raise InputError(
                    f"{path} would be written over {given}, which this run reads; choose another --out"
                )
    if overwrite:
        return
    there = [Path(p) for p in paths if os.path.lexists(p)]
    if there:
        more = f" (and {len(there) - 1} more of its outputs)" if len(there) > 1 else ""
        raise InputError(
            f"{there[0]} exists{more}: pass --overwrite to replace it (overwrite=True), or choose another --out"
        )


def _same_file(a, b) -> bool:
    """Whether the paths ``a`` and ``b`` name one file that exists (through a link, another spelling)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # either is missing (or not a path)
        return False


def run_estimate(
    image_path: str | Path,
    keypoints_path: str | Path | None = None,
    *,
    out_dir: str | Path = "patchpose_out",
    weights: str | Path | None = None,
    max_keypoints: int = 300,
    top_k: int = 1,
    fmt: str = "json",
    overwrite: bool = False,
) -> dict:
    """Estimate the poses of an image's keypoints and write ``OUT/<stem>_poses.{json,csv}`` and a picture
    ``OUT/<stem>_poses.png`` (:func:`~patchpose.outputs.write_poses`, :func:`~patchpose.outputs.draw_poses`),
    together (both renamed into place once both are written: :func:`~patchpose.fileio.written_together`).

    Args:
        image_path: the image file.
        keypoints_path: a keypoints file (``.npy`` ``(N, 2)`` or text with x, y columns); None: the
            ``max_keypoints`` strongest SIFT keypoints.
        out_dir: folder that receives the files (created).
        weights: a bundled model's name or a weights file; None: the default model.
        top_k: candidates per keypoint written (1: one pose each); the picture shows the strongest.
        fmt: ``"json"`` or ``"csv"``.
        overwrite: replace the poses file and picture of an earlier run; without it their being there is an
            :class:`InputError`, before any work (:func:`check_outputs_free`); an output that is an input (the
            image, the keypoints or weights file) is an error either way.

    Returns ``{"poses": path, "picture": path, "n": keypoints, "seconds": estimation time}``."""
    from .data.keypoints import detect_sift
    from .data.patches import check_image_shape, check_warp_size, load_image

    if not is_int_in(max_keypoints, 1, integral_floats=True):
        raise InputError(f"max_keypoints (--max-keypoints) must be a positive integer, got {max_keypoints}")
    if not is_int_in(top_k, 1, integral_floats=True):
        raise InputError(f"top_k (--top-k) must be a positive integer, got {top_k}")
    output_folder(out_dir)
    if fmt not in POSE_FORMATS:  # before the names of its outputs are made of it
        raise InputError(f"poses format must be one of {POSE_FORMATS}, got {fmt!r}")
    check_outputs_free(
        estimate_outputs(out_dir, image_path, fmt), overwrite, (image_path, keypoints_path, weights)
    )
    image = load_image(image_path)
    # before detection: load_image gives checked uint8 RGB, so its size is all that is left to check
    with about(image_path):
        check_image_shape(image)
        check_warp_size(image.shape)  # the model reads it through OpenCV's remap
    est = PatchPoseEstimator.load(weights)
    if top_k > est.max_top_k:  # the estimator's own message speaks Python (None); say it as the option
        raise InputError(
            f"top_k (--top-k) must be a whole number from 1 to {est.max_top_k} (the model's bins), got {top_k}"
        )
    if keypoints_path:
        xy = read_keypoints(keypoints_path)
    else:
        xy, _ = detect_sift(image, max_keypoints)
        if len(xy) == 0:
            raise InputError(f"no SIFT keypoints found in {image_path} (a flat or tiny image?)")
    t = time.perf_counter()
    res = est.estimate(image, xy, top_k=top_k if top_k > 1 else None)
    dt = time.perf_counter() - t
    out = make_folder(out_dir, "output folder")
    stem = Path(image_path).stem
    first = lambda a: a[:, 0] if a.ndim == 2 else a  # noqa: E731
    # both files or neither: a kill in between left the poses alone, and a rerun refused
    with written_together():
        poses = write_poses(out / f"{stem}_poses", xy, res, fmt)
        pic = draw_poses(
            image,
            xy,
            first(res.scale),
            first(res.orientation),
            out / f"{stem}_poses.png",
            title=f"{Path(image_path).name}: {len(xy)} keypoints (circle = scale, arrow = orientation)",
        )
    return {"poses": str(poses), "picture": str(pic), "n": len(xy), "seconds": dt}


def write_match_outputs(
    out_dir: str | Path,
    image1: np.ndarray,
    image2: np.ndarray,
    result: PairMatches,
    *,
    overwrite: bool = False,
) -> dict:
    """Write ``OUT/matches.png`` (the pair with its matches), ``OUT/matches.csv`` (one row per match) and
    ``OUT/summary.json`` (:meth:`PairMatches.summary`), together (new files, renamed once all three are written:
    :func:`~patchpose.fileio.written_together`); return the summary.
    Those of an earlier run are replaced only with ``overwrite`` (:func:`check_outputs_free`; ``patchpose match``
    checks before it matches)."""
    out = output_folder(out_dir)
    check_outputs_free([out / name for name in MATCH_OUTPUTS], overwrite)
    make_folder(out, "output folder")
    r = result
    summary = r.summary()
    with written_together():  # the three files or none (a kill in between left a part, and a rerun refused)
        write_matches_picture(out / "matches.png", image1, image2, r.xy1, r.xy2, r.matches, r.correct)
        write_matches_csv(out / "matches.csv", r.xy1, r.xy2, r.matches, r.distances, r.error_px)
        write_text_atomic(out / "summary.json", json.dumps(summary, indent=1))
    return summary


__all__ = [
    "check_outputs_free",
    "run_estimate",
    "write_match_outputs",
]
