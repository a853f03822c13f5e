"""python lab/verify_strict/summarize.py OUT...: upright_ours against SIFT's own pose in each OUT/results.json."""

import json
import sys

for d in sys.argv[1:]:
    r = {x["pose"]: x for x in json.load(open(f"{d}/results.json"))["runs"]}
    a, b = r["sift"], r["upright_ours"]
    print(f"{d}: registered {a['registered']} / {b['registered']}, observations {a['observations']} / "
          f"{b['observations']} ({b['observations'] / a['observations'] - 1:+.1%}), track {a['track_length']} / "
          f"{b['track_length']}, error {a['reprojection_px']} / {b['reprojection_px']} px "
          f"({b['reprojection_px'] / a['reprojection_px'] - 1:+.1%})")  # fmt: skip
