"""LAB (#60): does an image's median network scale follow a zoom? (a diagnostic before run.py; nothing chosen)

For the first 4 val viewpoint sequences (plain and zoomed), each image's median of the network's per-keypoint frames
(log2, as the `pose` recipe reads them; <= 1,000 ALIKED-n16 / gftt keypoints), minus image 1's, against H's log2
zoom at the image centre.

python lab/image_scale/diagnose.py   (about 3 min, one thread)
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import run  # noqa: E402

from patchpose.evaluation.datasets.hpatches import load_hpatches  # noqa: E402
from patchpose.evaluation.rows import detect  # noqa: E402
from patchpose.geometry import pose_change  # noqa: E402

for root in ["/work/data/hpatches_val_zoom", "/work/data/hpatches_val"]:
    for s in [s for s in load_hpatches(root) if s.kind == "viewpoint"][:4]:
        ms = {}
        for det in ["aliked", "gftt"]:
            ms[det] = []
            for k in [1, *s.targets]:
                im = s.image(k)
                f = detect(im, 1000, detector=det, peers=run.PEERS)
                ms[det].append(run.frames_for(f, im)[2])
        h, w = s.image(1).shape[:2]
        true = [0.0] + [float(pose_change(s.homographies[k], np.array([[w / 2, h / 2]]))[0][0]) for k in s.targets]
        print(root.split("/")[-1], s.name, "true", np.round(true, 2),
              "aliked", np.round(np.array(ms["aliked"]) - ms["aliked"][0], 2),
              "gftt", np.round(np.array(ms["gftt"]) - ms["gftt"][0], 2))
