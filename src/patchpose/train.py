"""``python -m patchpose.train ARGS`` = ``patchpose train ARGS``; the entry point for torchrun:
``torchrun --nproc-per-node N -m patchpose.train --config polar --out runs/x``."""

import os
import sys

from .cli.main import main

if __name__ == "__main__":
    rc = main(["train", *sys.argv[1:]])
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # A torchrun worker whose run is over (checkpoints renamed into place, the process group torn
        # down): leave without the interpreter's finalisation, where a busy machine has seen gloo's C++
        # threads abort the process ("terminate called without an active exception") after a good run.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    sys.exit(rc)
