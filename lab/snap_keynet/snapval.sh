#!/bin/sh
# ruff: noqa
. /work/venv/bin/activate
cd /work/main
for root in hpatches_val hpatches_val_turn hpatches_val_zoom; do
 for det in keynet sift aliked gftt_scale gftt; do
  case $det in gftt|aliked) rows=pose,ours_scale_gradient;; *) rows=pose,dominant_gradient;; esac
  o=/work/s78/canon/v_${root}_$det
  [ -f $o/DONE ] && continue
  python /work/s78/canon/snaprun.py 2 eval hpatches --root /work/data/$root --detector $det --peers ../shared/peers --weights patchpose-v10 --max-keypoints 1000 --no-pose --rows $rows --reference pose --out $o --no-progress > $o.log 2>&1 && touch $o/DONE
 done
done
