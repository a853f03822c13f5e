import json,sys
r=json.load(open(sys.argv[1]))
keys=[k for k in next(iter(r.values())) if k!='n' and not k.endswith('serr')]
n=sum(v['n'] for v in r.values())
print(len(r), n)
for k in keys: print(k, round(100*sum(v[k] for v in r.values())/n,1))
