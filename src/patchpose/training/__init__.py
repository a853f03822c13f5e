"""Training runs. Their dependencies come with the 'train' extra, checked here once for every module below
(one line saying what to install, instead of an import error from the middle of a module)."""

from ..errors import require

require("omegaconf", "train")
require("tqdm", "train")
