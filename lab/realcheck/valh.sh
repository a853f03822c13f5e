#!/bin/bash
. /work/venv/bin/activate; cd /work/main
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
D=/work/data; O=/work/sp60b/valh_$HALF
VIEW=$(ls $D/hpatches_val | grep '^v_' | paste -sd,)
job() { local set=$1 out=$2; shift 2
  [ -f $O/$out/results.json ] && return
  s=$(date +%s)
  python /work/sp60b/half.py eval hpatches --root $D/$set --out $O/$out --detector sift --descriptor sift --weights patchpose-v10 \
    --max-keypoints 2000 --no-pose --rows rectify --reference rectify --no-progress "$@" > $O/$out.log 2>&1
  echo "$out rc=$? $(( $(date +%s)-s )) s"
}
mkdir -p $O
job hpatches_val view --sequences $VIEW; job hpatches_val_zoom zoom; job hpatches_val_turn turn
job hpatches_val_tilt_pool tilt --cluster-pattern '^(.*)_s[0-9]+$'
echo done
