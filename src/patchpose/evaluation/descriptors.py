"""The descriptors the benchmarks cut at each pose, by name (:func:`describer`):

* ``sift`` (default): RootSIFT (kornia's ``SIFTDescriptor``), the library's own (:class:`~patchpose.matching.describe.Describer`);
* ``hardnet`` / ``sosnet``: kornia's architectures with a weights file on disk (kornia downloads its pretrained
  weights, which cannot happen here);
* ``tfeat`` / ``hardtfeat``: TFeat (kornia's) and HardTFeat (:class:`~patchpose.evaluation.peers.HardTFeat`)
  with the weights of a peers folder (:class:`~patchpose.evaluation.peers.Peers`), for comparisons.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, require
from ..matching.describe import Describer
from ..weights import load_state_into
from .peers import Peers

DESCRIPTORS = ("sift", "hardnet", "sosnet", "tfeat", "hardtfeat")
#: the descriptors whose weights come from a peers folder
PEER_DESCRIPTORS = ("tfeat", "hardtfeat")


def describer(
    name: str = "sift", weights: str | Path | None = None, peers: Peers | str | Path | None = None
) -> Describer:
    """The :class:`~patchpose.matching.describe.Describer` of one of :data:`DESCRIPTORS`: ``weights``, a local
    state dict for ``hardnet`` / ``sosnet``; ``peers``, the folder ``tfeat`` and ``hardtfeat`` take theirs
    from. One-line errors for a missing one."""
    if name not in DESCRIPTORS:
        raise InputError(f"descriptor must be one of {DESCRIPTORS}, got {name!r}")
    if name == "sift":
        return Describer()
    if name in PEER_DESCRIPTORS:
        if peers is None:
            raise InputError(f"the {name} descriptor needs the peers' weights folder (--peers DIR)")
        return Describer(name, (peers if isinstance(peers, Peers) else Peers(peers)).descriptor(name))
    if not weights:
        raise InputError(
            f"the {name} descriptor needs a local weights file (--descriptor-weights); "
            "pretrained weights cannot be downloaded here"
        )
    KF = require("kornia.feature", "kornia")
    net = KF.HardNet(pretrained=False) if name == "hardnet" else KF.SOSNet(pretrained=False)
    load_state_into(net, weights, name)
    return Describer(name, net)


__all__ = ["DESCRIPTORS", "PEER_DESCRIPTORS", "describer"]
