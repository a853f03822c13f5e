"""``python -m patchpose.train ARGS`` = ``patchpose train ARGS``; the entry point for torchrun:
``torchrun --nproc-per-node N -m patchpose.train --config polar --out runs/x``."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
