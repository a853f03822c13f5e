import json, sys, numpy as np
d=json.load(open(sys.argv[1])); P=d["pairs"]
for name, sel in (("all", lambda p: True), ("not k=4 (exact 90° copies excluded)", lambda p: p["k"] != 4), ("k=4", lambda p: p["k"] == 4)):
    Q=[p for p in P if sel(p)]
    print(name, len(Q), {r: round(float(np.mean([p["rows"][r]["correct"] for p in Q])),1) for r in d["rows"]})
o=np.array([p["rows"]["ours"]["correct"] for p in P]); s=np.array([p["rows"]["sift_turn"]["correct"] for p in P])
print("ours>sift", (o>s).sum(), "ours<sift", (o<s).sum(), "tie", (o==s).sum())
print({r: round(v["seconds"],2) for r,v in d["rows"].items()})
