import json, sys, numpy as np
rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
keys=["as_is","n16rot","best4","sift_unturned","affine_unturned","ours_unturned","oracle"]
print(len(rows),'pairs')
for k in keys:
    c=np.array([r[k][0] for r in rows]); print(f"{k:16s} correct {c.mean():7.1f}  min {c.min()}  pairs<50% oracle {(c<0.5*np.array([r['oracle'][0] for r in rows])).sum()}")
for k in ("ours_turn","sift_turn","affine_turn"):
    e=[abs((r[k]-r['true']+180)%360-180) if r[k] is not None else None for r in rows]
    nf=sum(x is None for x in e); ee=np.array([x for x in e if x is not None])
    print(f"{k:12s} none {nf}  median err {np.median(ee):.2f}  >10deg {(ee>10).sum()}")
for k in ("t_aliked","t_ours","t_siftvotes","t_affine"):
    print(k, np.mean([r[k] for r in rows]).round(3))
