# ruff: noqa: E402, E741, UP031
"""Within-image distinctiveness: median distance from each Key.Net keypoint's RootSIFT descriptor to its nearest other
in the same image, at the gradient's angle and at the network's (python distinct.py NET.pt; first 6 test photos)."""

import cv2
import numpy as np
import torch
from train import Net, angle

from patchpose.data.patches import extract_patches
from patchpose.estimator import as_estimator
from patchpose.evaluation.datasets.hpatches import load_hpatches
from patchpose.evaluation.peers import Peers
from patchpose.evaluation.rows import Image, MatchConfig, Run, detect, get_row
from patchpose.matching.describe import Describer
from patchpose.matching.gradient import ORI_PATCH, dominant_gradient_histograms

torch.set_num_threads(1)
cv2.setNumThreads(1)
PEERS = Peers("/work/shared/peers")
RUN = Run(Describer(), as_estimator("patchpose-v10"), MatchConfig(max_keypoints=1000), PEERS)
MULTS = np.array([0.5, 0.71, 1.0, 1.41, 2.0])
import sys

ck = torch.load(sys.argv[1], weights_only=True)
net = Net(5, ck["ch"], ck["layers"])
net.load_state_dict(ck["state"])
net.eval()
res = {"pose": [], "learned": []}
for s in [s for s in load_hpatches("/work/data/hpatches") if s.kind == "viewpoint"][:6]:
    f = detect(s.image(1), 1000, detector="keynet", peers=PEERS)
    g = np.asarray(get_row("pose").poses(RUN, Image(f))[1])[:, 0]
    hs = [
        dominant_gradient_histograms(
            extract_patches(f.pyramid, f.xy, f.frame + np.log2(m), np.zeros(len(f)), ORI_PATCH, [1.0])
        )
        for m in MULTS
    ]
    with torch.no_grad():
        l = np.mod(
            angle(net(torch.tensor(np.stack(hs, 1), dtype=torch.float32), 2)).double().numpy(), 2 * np.pi
        )
    for r, a in (("pose", g), ("learned", l)):
        d = RUN.describer.describe(f.pyramid, f.xy, f.frame, a).astype(np.float32)
        D = np.linalg.norm(d[:, None] - d[None], axis=2)
        np.fill_diagonal(D, np.inf)
        res[r].append(np.median(D.min(1)))
    diff = np.degrees(np.abs(np.angle(np.exp(1j * (l - g)))))
    print(
        s.name,
        {r: round(float(v[-1]), 4) for r, v in res.items()},
        "angle change median %.1f, >20deg %.2f" % (np.median(diff), (diff > 20).mean()),
        flush=True,
    )
