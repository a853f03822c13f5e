"""Merge each rendered scene's new un-turned rows (capped canvas) with the rows the cap does not touch (ALIKED as it
comes, n16rot) from the runs of git tag lab-scenes-colmap-2026-11-30, for summarize.py.

    python lab/unturn_capped/merge_scenes.py OLD_DIR NEW_DIR OUT_DIR    (each with SCENE/results.json)
"""
import json
import sys
from pathlib import Path

old, new, out = (Path(a) for a in sys.argv[1:4])
for f in sorted(new.glob("*/results.json")):
    doc = json.loads(f.read_text())
    kept = [r for r in json.loads((old / f.parent.name / "results.json").read_text())["runs"]
            if r["pose"] in ("aliked", "aliked_rot")]
    doc["runs"] = kept + doc["runs"]
    (out / f.parent.name).mkdir(parents=True, exist_ok=True)
    (out / f.parent.name / "results.json").write_text(json.dumps(doc))
    print(f.parent.name, len(kept), len(doc["runs"]))
