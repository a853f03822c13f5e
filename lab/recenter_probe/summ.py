# ruff: noqa
import json, sys
r=json.load(open(sys.argv[1]))
tot={}
for k,row in r.items():
  for v,d in row.items():
    if v=='n': tot['n']=tot.get('n',0)+d; continue
    for m,x in d.items():
      if m=='off_med': continue
      tot[(v,m)]=tot.get((v,m),0)+x
n=tot.pop('n'); print('n',n)
for k,x in sorted(tot.items()): print(k, round(x/n*100,1))
