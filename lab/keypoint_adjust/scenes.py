"""LAB (#61): run.py on the rendered scenes (true cameras), half-width 2 scales, at least 3 px (chosen on TUM).

    patchpose eval colmap data/scenes/NAME --poses sift upright_ours --sets upright --seeds 0 --threads 1 \
        --out RUNS/NAME        # for each of the 8 scenes of `patchpose generate scenes --out data/scenes`
    python lab/keypoint_adjust/scenes.py data/scenes RUNS sift OUT.json   # and 'upright_ours@patchpose-v10'

Prints each scene's model before and after the adjustment: points, observations, error and the cameras' errors
against the truth (median centre error in metres, median optical-axis error in degrees)."""

import json
import subprocess
import sys
from pathlib import Path

from patchpose.evaluation.colmap_eval import camera_errors
from patchpose.evaluation.datasets.scenes import read_cameras

scenes, runs, row, outp = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
res = {}
for sc in sorted(d for d in scenes.iterdir() if d.is_dir()):
    run = runs / sc.name / "runs" / "upright" / f"{row}-seed0"
    dest = outp.parent / "work" / row / sc.name
    subprocess.run([sys.executable, str(Path(__file__).with_name("run.py")), str(sc), str(run), str(dest), "2", "3"],
                   capture_output=True, check=True)  # fmt: skip
    out = json.loads((dest / "result.json").read_text())
    cams = read_cameras(sc)
    for name in ("orig", "adj"):
        d = dest / f"run_{name}"
        (d / "sparse").mkdir(parents=True, exist_ok=True)
        link = d / "sparse" / "0"
        if not link.exists():
            link.symlink_to((dest / f"sparse_{name}" / "0").resolve())
        out[name].update(camera_errors(d, cams))
    res[sc.name] = out
    print(sc.name, json.dumps({k: out[k] for k in ("orig", "adj")}), flush=True)
outp.write_text(json.dumps(res, indent=1))
