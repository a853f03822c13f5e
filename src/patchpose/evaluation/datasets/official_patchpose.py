"""Reader for the *released* PatchPose dataset layout of the official code (self-sca-ori), for users who
have a copy on disk (it cannot be downloaded here).

Layout::

    ROOT/patchPoseA/{cat}_{imgid}_{kpt}_angle{θ:03d}_scale{s:06.4f}.jpg    e.g. cow_2007_007772_0_angle010_scale0.7937.jpg
    ROOT/patchPoseB/...                                                   (same naming, random θ and s)
    ROOT/patchPoseAImageList/{train,val,test}_{acquired,pruned}.txt       (optional lists)

Patches are 32×32 crops at 1:1. The released JPEGs were written by PIL from an OpenCV BGR array, so red and
blue are swapped on disk; reading them with OpenCV (which returns BGR) therefore yields the true RGB order,
which is what ``swap_rb=True`` (default) does.

Pairs follow the official test: for scale, every ``angle000`` file against its group's ``scale1.0000``
reference; for orientation, every ``scale1.0000`` file against its ``angle000`` reference (identity pairs
included). Only models whose input is one 32-px window at 1:1 can run on these crops.
"""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np

from ...data.patches import load_image
from ...errors import InputError

NAME_RE = re.compile(
    r"^(?P<group>.+)_angle(?P<angle>\d{3})_scale(?P<scale>\d+\.\d{4})\.(jpg|jpeg|png)$", re.I
)


def parse_name(name: str) -> tuple[str, float, float]:
    """``cow_2007_007772_0_angle010_scale0.7937.jpg`` → ``("cow_2007_007772_0", 10.0, 0.7937)``."""
    m = NAME_RE.match(name)
    if not m:
        raise InputError(f"not a PatchPose file name: {name!r}")
    return m["group"], float(m["angle"]), float(m["scale"])


def _is_reference(angle_deg, scale_factor):
    """The reference patch of a group: angle 0, scale 1."""
    return (np.asarray(angle_deg) == 0) & (np.abs(np.asarray(scale_factor) - 1.0) < 1e-4)


def _list_filter(list_file: str | Path | None):
    if list_file is None:
        return None
    entries = [ln.split()[0] for ln in Path(list_file).read_text().splitlines() if ln.strip()]
    stems = {Path(e).name.rsplit(".", 1)[0] for e in entries}
    return lambda group, fname: fname.rsplit(".", 1)[0] in stems or any(group.startswith(s) for s in stems)


class OfficialPatchPose:
    """Patches, ground truth and pairs of one variant (``"A"`` or ``"B"``) of the released layout."""

    def __init__(
        self, root: str | Path, variant: str = "A", list_file: str | Path | None = None, swap_rb: bool = True
    ) -> None:
        folder = Path(root) / f"patchPose{variant}"
        if not folder.is_dir():
            raise InputError(f"no folder {folder} (expected the official PatchPose layout)")
        keep = _list_filter(list_file)
        every = []
        for p in sorted(folder.iterdir()):
            if NAME_RE.match(p.name):
                group, angle, scale = parse_name(p.name)
                every.append((group, angle, scale, p, keep is None or keep(group, p.name)))
        if not any(r[4] for r in every):
            raise InputError(
                f"no PatchPose patches in {folder}" + (f" listed in {list_file}" if list_file else "")
            )
        # a listed patch is scored against its group's reference, which the official test reads from disk
        # whether or not the list holds it (its lists are split by patch, so it mostly does not)
        listed_groups = {r[0] for r in every if r[4]}
        rows = [r for r in every if r[4] or (r[0] in listed_groups and _is_reference(r[1], r[2]))]
        groups = sorted({r[0] for r in rows})
        gid = {g: i for i, g in enumerate(groups)}
        imgs = []
        for _, _, _, p, _ in rows:
            im = load_image(p)  # RGB; refused before decoding past the pixel limit
            if swap_rb:
                im = cv2.cvtColor(im, cv2.COLOR_RGB2BGR)
            imgs.append(im)
        self.rgb = np.stack(imgs)  # (N, H, W, 3) in RGB order
        self.group = np.array([gid[r[0]] for r in rows])
        self.angle_deg = np.array([r[1] for r in rows])
        self.scale_factor = np.array([r[2] for r in rows])
        self.names = [r[3].name for r in rows]
        self.groups = groups
        #: whether each patch is in the list (every patch without one); the others are only references
        self.listed = np.array([r[4] for r in rows], dtype=bool)

    def patches(self, color: str = "gray") -> np.ndarray:
        """``(N, C, H, W)`` float32 in [0, 1]."""
        x = self.rgb.astype(np.float32) / 255.0
        if color == "gray":
            return np.stack([cv2.cvtColor(im, cv2.COLOR_RGB2GRAY) for im in x])[:, None]
        return x.transpose(0, 3, 1, 2).copy()

    def pairs(self, kind: str) -> dict:
        """``kind="scale"``: angle-0 files against their group's reference; ``"orientation"``: scale-1
        files against theirs (listed files only, when a list was given). Returns ``ref``/``trg`` indices,
        ``scale_factor`` and ``angle_deg``."""
        is_ref = _is_reference(self.angle_deg, self.scale_factor)
        ref_of = {int(g): int(i) for i, g in zip(np.nonzero(is_ref)[0], self.group[is_ref])}
        if kind == "scale":
            sel = np.nonzero((self.angle_deg == 0) & self.listed)[0]
        elif kind == "orientation":
            sel = np.nonzero((np.abs(self.scale_factor - 1.0) < 1e-4) & self.listed)[0]
        else:
            raise InputError(f"kind must be 'scale' or 'orientation', got {kind!r}")
        sel = np.array([i for i in sel if int(self.group[i]) in ref_of], dtype=np.int64)
        ref = np.array([ref_of[int(self.group[i])] for i in sel], dtype=np.int64)
        return {
            "ref": ref,
            "trg": sel,
            "scale_factor": self.scale_factor[sel],
            "angle_deg": self.angle_deg[sel],
        }
