"""python analyze_budget.py budget_tum_freiburg.json budget_sacre_coeur.json tum_freiburg.json sacre_coeur.json"""
import json, sys
import numpy as np
from analyze import boot, share
B = {json.load(open(p))["set"]: json.load(open(p)) for p in sys.argv[1:3]}
M = {json.load(open(p))["set"]: json.load(open(p)) for p in sys.argv[3:5]}
print("| set | cond | shipped: mean correct / share | budget after mask: mean correct / share | Δ correct [95% CI] | W/T/L | pairs changed | shipped = main run? | fixed − SIFT-MNN [95% CI] | fixed − pair-pose [95% CI] |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name in ("tum_freiburg", "sacre_coeur"):
    P, Q = B[name]["pairs"], M[name]["pairs"]
    for cond in ("upright", "turned"):
        s = [p[f"{cond}_shipped"] for p in P]; f = [p[f"{cond}_fixed"] for p in P]
        same = all(a["correct"] == q[cond]["rectify"]["correct"] and a["matches"] == q[cond]["rectify"]["matches"] for a, q in zip(s, Q))
        d = [b["correct"] - a["correct"] for a, b in zip(s, f)]
        c, lo, hi = boot(d)
        changed = sum((a["kp1"], a["kp2"]) != (b["kp1"], b["kp2"]) for a, b in zip(s, f))
        dm = [b["correct"] - q[cond]["sift-mnn"]["correct"] for b, q in zip(f, Q)]
        dp = [b["correct"] - q[cond]["pair-pose"]["correct"] for b, q in zip(f, Q)]
        c2, l2, h2 = boot(dm); c3, l3, h3 = boot(dp)
        print(f"| {name} | {cond} | {np.mean([a['correct'] for a in s]):.2f} / {np.mean([share(a) for a in s]):.4f} | "
              f"{np.mean([a['correct'] for a in f]):.2f} / {np.mean([share(a) for a in f]):.4f} | {c:+.2f} [{lo:+.2f}, {hi:+.2f}] | "
              f"{sum(x>0 for x in d)}/{sum(x==0 for x in d)}/{sum(x<0 for x in d)} | {changed} | {same} | {c2:+.2f} [{l2:+.2f}, {h2:+.2f}] "
              f"(W/T/L {sum(x>0 for x in dm)}/{sum(x==0 for x in dm)}/{sum(x<0 for x in dm)}) | {c3:+.2f} [{l3:+.2f}, {h3:+.2f}] |")
