"""The descriptors the benchmarks cut at each pose, by name (:func:`describer`):

* ``sift`` (default): RootSIFT (kornia's ``SIFTDescriptor``), the library's own (:class:`~patchpose.matching.describe.Describer`);
* ``tfeat`` / ``hardtfeat``: TFeat (kornia's) and HardTFeat (:class:`~patchpose.evaluation.peers.HardTFeat`)
  with the weights of a peers folder (:class:`~patchpose.evaluation.peers.Peers`), for comparisons.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..matching.describe import Describer
from .peers import Peers

DESCRIPTORS = ("sift", "tfeat", "hardtfeat")
#: the descriptors whose weights come from a peers folder
PEER_DESCRIPTORS = ("tfeat", "hardtfeat")


def describer(name: str = "sift", peers: Peers | str | Path | None = None) -> Describer:
    """The :class:`~patchpose.matching.describe.Describer` of one of :data:`DESCRIPTORS`: ``peers``, the folder
    ``tfeat`` and ``hardtfeat`` take their weights from. One-line errors for a missing one."""
    if name not in DESCRIPTORS:
        raise InputError(f"descriptor must be one of {DESCRIPTORS}, got {name!r}")
    if name == "sift":
        return Describer()
    if peers is None:
        raise InputError(f"the {name} descriptor needs the peers' weights folder (--peers DIR)")
    return Describer(name, (peers if isinstance(peers, Peers) else Peers(peers)).descriptor(name))


__all__ = ["DESCRIPTORS", "PEER_DESCRIPTORS", "describer"]
