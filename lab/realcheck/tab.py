import json,sys,os
for d in sys.argv[1:]:
  for s in ['hpatches','hpatches_zoom','hpatches_turn','hpatches_tilt','view','zoom','turn','tilt']:
    f=f'{d}/{s}/results.json'
    if not os.path.exists(f): continue
    r=json.load(open(f))
    print(f'== {d} {s}')
    for k,c in r['correct_matches'].items():
        c=c.get('overall',c) if isinstance(c,dict) else c
        m=r["mma"][k]["overall"][2]; cost=r['costs'][k]
        print(f'  {k:22s} correct {c:7.1f} mma@3 {m:.3f} comp {cost["computations"]:.2f} desc {cost["descriptors"]:.2f} s {cost["seconds"]:.2f}')
