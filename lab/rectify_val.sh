#!/bin/bash
. /work/venv/bin/activate; cd /work/main
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
D=/work/data; O=/work/sp60b/val; ROWS=${ROWS:-pair_pose,second_pass,pair_pose_redetect}
VIEW=$(ls $D/hpatches_val | grep '^v_' | paste -sd,)
job() { local set=$1 out=$2; shift 2
  [ -f $O/$out/results.json ] && return
  s=$(date +%s)
  patchpose eval hpatches --root $D/$set --out $O/$out --detector sift --descriptor sift --weights patchpose-v10 \
    --max-keypoints 2000 --no-pose --rows $ROWS --reference pair_pose --no-progress "$@" > $O/$out.log 2>&1
  echo "$out rc=$? $(( $(date +%s)-s )) s"
}
mkdir -p $O
if [ "$1" = a ]; then job hpatches_val view --sequences $VIEW; job hpatches_val_zoom zoom
else job hpatches_val_tilt_pool tilt --cluster-pattern '^(.*)_s[0-9]+$'; job hpatches_val_turn turn; fi
echo done
