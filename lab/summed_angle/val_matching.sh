#!/bin/sh
# ruff: noqa
# val: pose (summed windows) against the single window (old pose) per detector and root
. /work/venv/bin/activate
cd /work/main
for root in hpatches_val hpatches_val_zoom hpatches_val_turn; do
 for det in keynet sift gftt_scale gftt aliked; do
  case $det in gftt|aliked) rows=pose,ours_scale_gradient;; *) rows=pose,dominant_gradient;; esac
  o=/work/s78/val/${root}_$det
  [ -f $o/DONE ] && continue
  patchpose eval hpatches --root /work/data/$root --detector $det --peers ../shared/peers --weights patchpose-v10 --max-keypoints 1000 --no-pose --rows $rows --reference pose --out $o --no-progress > $o.log 2>&1 && touch $o/DONE
 done
done
