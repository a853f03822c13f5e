# ruff: noqa
import re,os
print("| val sequences | keypoints | correct snapped / gradient | snapped − gradient (correct) | snapped − gradient (MMA@3) |")
print("|---|---|---|---|---|")
for root,kind in [("hpatches_val","viewpoint"),("hpatches_val_zoom","zoomed"),("hpatches_val_turn","turned")]:
  for det in ["sift","keynet","gftt_scale","gftt","aliked"]:
    d=f"v_{root}_{det}"
    t=open(f"{d}/results.md").read()
    def sect(name):
        s=t[t.index(name):]; s=s[:s.index("## Pose")]
        rows=[l for l in s.splitlines() if l.startswith("| ") and "sequences)" not in l and not l.startswith("|---")]
        new=[l for l in rows if " − " not in l.split("|")[1] and l.split("|")[1].strip().startswith("the pose recipe")][0]
        old=[l for l in rows if " − " not in l.split("|")[1] and not l.split("|")[1].strip().startswith("the pose recipe")][0]
        diff=[l for l in rows if " − " in l.split("|")[1]][0]
        return [x.split("|")[-2].strip() for x in (new,old,diff)]
    m=sect("95 % intervals of MMA"); c=sect("95 % intervals of correct")
    def neg(x, fmt):
        f=[-float(a) for a in re.findall(r"-?[0-9.]+", x.replace("−","-"))]
        return f"{f[0]:{fmt}} [{f[2]:{fmt}}, {f[1]:{fmt}}]".replace("-","−")
    print(f"| {kind} | {det} | {c[0].split()[0]} / {c[1].split()[0]} | {neg(c[2],'+.1f')} | {neg(m[2],'+.3f')} |")
