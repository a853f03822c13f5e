"""Files that the estimate and match commands write: a picture of poses, a poses file (JSON or CSV), a picture
of matches and a matches file. Every file is written to a temporary sibling and renamed into place, so an
interrupted run never leaves a half-written output under its final name."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import cv2
import numpy as np

from .conventions import REFERENCE_RADIUS
from .errors import InputError
from .fileio import write_text_atomic, write_through

POSE_FORMATS = ("json", "csv")
#: :func:`draw_poses`'s figure: its long side and, at least, its short side (in inches; an image 1,000 times as long
#: as it is wide still leaves its title room), at 120 dots per inch: at most 960 × 960 pixels whatever the image
PICTURE_INCHES, PICTURE_MIN_INCHES, PICTURE_DPI = 8.0, 4.0, 120


def _picture_path(path) -> Path:
    """``path`` with its folder made, or a one-line :class:`InputError` (a folder in the way is a file)."""
    path = Path(path)
    if not path.suffix:
        raise InputError(f"picture {path}: name its type by a suffix, e.g. {path}.png")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"picture {path}: cannot make its folder ({e.strerror or e})") from None
    return path


def _write_picture(path: Path, write) -> Path:
    """:func:`~patchpose.fileio.write_through` of a picture; a type its writer does not know (the suffix) is a
    one-line :class:`InputError` too."""
    try:
        return write_through(path, write, "picture")
    except InputError:  # said already (a full disk: write_through's own line), not wrapped again
        raise
    except (ValueError, cv2.error) as e:  # matplotlib's and OpenCV's refusals of a format
        raise InputError(f"picture {path}: cannot write it ({' '.join(str(e).split())[:160]})") from None


def draw_poses(
    image: np.ndarray,
    xy: np.ndarray,
    scale: np.ndarray,
    orientation: np.ndarray,
    path: str | Path,
    title: str = "",
) -> Path:
    """Draw each keypoint's pose on ``image`` and save the figure to ``path``.

    A circle of the characteristic radius ``REFERENCE_RADIUS · 2**scale`` and an arrow along the
    orientation (radians, counter-clockwise as displayed), like the paper's Figure 1. ``xy``: ``(N, 2)``
    pixels; ``scale``, ``orientation``: ``(N,)``, one pose per keypoint. The figure's long side is
    :data:`PICTURE_INCHES` and its short side follows the image's, but never under :data:`PICTURE_MIN_INCHES`: a
    picture of at most 960 × 960 pixels for an image of any shape, the image kept undistorted inside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import EllipseCollection

    h, w = image.shape[:2]
    # sized by the long side, in both directions: sized by the width alone, an image 20 px wide and 32,000 high
    # asked for a figure 8 × 12,800 inches (40 GiB), one 32,000 wide and 20 high for one of no pixel rows
    short = min(max(PICTURE_INCHES * min(h, w) / max(h, w), PICTURE_MIN_INCHES), PICTURE_INCHES)
    figsize = (PICTURE_INCHES, short) if w >= h else (short, PICTURE_INCHES)
    fig, ax = plt.subplots(figsize=figsize, dpi=PICTURE_DPI)
    # the photo at no more than twice the figure's long side in pixels (matplotlib resamples what it is given as
    # float RGBA: 1.5 GB for a 48-megapixel photo), laid over the same pixel coordinates
    shown, most = image, 2 * PICTURE_INCHES * PICTURE_DPI
    resizable = image.dtype in (np.uint8, np.uint16, np.float32, np.float64)  # what cv2.resize takes
    if max(h, w) > most and resizable:
        f = most / max(h, w)
        shown = cv2.resize(image, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA)
    ax.imshow(shown, cmap="gray" if image.ndim == 2 else None, extent=(-0.5, w - 0.5, h - 0.5, -0.5))
    r = REFERENCE_RADIUS * np.power(2.0, scale)
    # one collection of arrays (a Circle patch per keypoint: 190 MiB for 100,000 keypoints)
    ax.add_collection(
        EllipseCollection(
            2 * r,
            2 * r,
            np.zeros_like(r),
            units="xy",
            offsets=xy,
            offset_transform=ax.transData,
            facecolor="none",
            edgecolor="yellow",
            linewidth=0.8,
        )
    )
    # y axis points down: the on-screen CCW direction of θ is (cos θ, −sin θ)
    ax.quiver(
        xy[:, 0],
        xy[:, 1],
        r * np.cos(orientation),
        -r * np.sin(orientation),
        angles="xy",
        scale_units="xy",
        scale=1,
        color="red",
        width=0.002,
        headwidth=4,
    )
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)
    ax.set_axis_off()
    ax.set_title(title or f"{len(xy)} keypoints: circle = scale, arrow = orientation", fontsize=10, wrap=True)
    fig.tight_layout()
    path = _picture_path(path)
    try:
        _write_picture(path, fig.savefig)
    finally:
        plt.close(fig)
    return path


def write_poses(path: str | Path, xy: np.ndarray, poses, fmt: str = "json") -> Path:
    """Write the keypoints and their poses to ``path`` plus ``.json`` or ``.csv`` and return that path.

    ``poses``: a :class:`~patchpose.reading.Poses` (``scale``, ``orientation``: ``(N,)``, or ``(N, k)``
    candidates strongest first; ``valid``: ``(N,)``). JSON holds ``{"conventions": …, "keypoints": [{x, y,
    scale, orientation, valid}]}``, a list per field where there are several candidates; CSV has one row per
    keypoint with columns ``scale0…``, ``orientation0…``. The suffix is appended, not substituted, so that
    names with dots (``scene.1_poses``) keep a file of their own."""
    if fmt not in POSE_FORMATS:
        raise InputError(f"poses format must be one of {POSE_FORMATS}, got {fmt!r}")
    path = Path(path)
    path = path.with_name(path.name + "." + fmt)
    scale, ori = np.atleast_2d(poses.scale.T).T, np.atleast_2d(poses.orientation.T).T
    if fmt == "json":
        doc = {
            "conventions": "x, y: pixels, pixel centres at integers; orientation: radians in [0, 2pi), counter-clockwise "
            "as displayed; scale: log2, radius_px = 16 * 2**scale; candidates strongest first; valid: false where the "
            "model's window crossed the image border (mirrored there) or the patch showed no orientation (flat)",
            "keypoints": [
                {
                    "x": float(p[0]),
                    "y": float(p[1]),
                    "scale": s.tolist() if len(s) > 1 else float(s[0]),
                    "orientation": o.tolist() if len(o) > 1 else float(o[0]),
                    "valid": bool(v),
                }
                for p, s, o, v in zip(xy, scale, ori, poses.valid)
            ],
        }
        text = json.dumps(doc, indent=1)
    else:
        with io.StringIO(newline="") as f:
            wr = csv.writer(f)
            k = scale.shape[1]
            wr.writerow(
                ["x", "y"]
                + [f"scale{i}" for i in range(k)]
                + [f"orientation{i}" for i in range(k)]
                + ["valid"]
            )
            for p, s, o, v in zip(xy, scale, ori, poses.valid):
                wr.writerow(
                    [f"{p[0]:.3f}", f"{p[1]:.3f}"]
                    + [f"{x:.5f}" for x in s]
                    + [f"{x:.5f}" for x in o]
                    + [int(v)]
                )
            text = f.getvalue()
    return write_text_atomic(path, text, "poses file")


def write_matches_picture(
    path: str | Path,
    image1: np.ndarray,
    image2: np.ndarray,
    xy1: np.ndarray,
    xy2: np.ndarray,
    matches: np.ndarray,
    correct: np.ndarray | None = None,
) -> Path:
    """Save the two images side by side with a line per match (:func:`~patchpose.matching.draw.draw_matches`:
    green correct, red wrong, blue when ``correct`` is None, i.e. without ground truth). The file type
    follows ``path``'s suffix (``.png``)."""
    import cv2

    from .matching.draw import draw_matches

    path = _picture_path(path)
    pic = draw_matches(image1, image2, xy1, xy2, matches, correct)

    def write(tmp: Path) -> None:
        if not cv2.imwrite(str(tmp), cv2.cvtColor(pic, cv2.COLOR_RGB2BGR)):
            raise OSError(f"OpenCV could not write a {path.suffix or 'suffix-less'} picture")

    return _write_picture(path, write)


def write_matches_csv(
    path: str | Path,
    xy1: np.ndarray,
    xy2: np.ndarray,
    matches: np.ndarray,
    distances: np.ndarray,
    error_px: np.ndarray | None = None,
) -> Path:
    """One row per match: ``x1, y1, x2, y2, distance`` (descriptor distance) and, with ground truth,
    ``error_px`` (reprojection error of the match in image 2)."""
    path = Path(path)
    with io.StringIO(newline="") as f:
        w = csv.writer(f)
        w.writerow(["x1", "y1", "x2", "y2", "distance"] + ([] if error_px is None else ["error_px"]))
        for i, (p, q) in enumerate(matches):
            x1, y1 = xy1[p]
            x2, y2 = xy2[q]
            extra = [] if error_px is None else [f"{error_px[i]:.3f}"]
            w.writerow([f"{x1:.2f}", f"{y1:.2f}", f"{x2:.2f}", f"{y2:.2f}", f"{distances[i]:.4f}"] + extra)
        text = f.getvalue()
    return write_text_atomic(path, text, "matches file")


__all__ = ["POSE_FORMATS", "draw_poses", "write_matches_csv", "write_matches_picture", "write_poses"]
