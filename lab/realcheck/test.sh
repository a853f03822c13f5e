#!/bin/bash
. /work/venv/bin/activate; cd /work/main
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
D=/work/data; O=/work/sp60b/${OUTT:-test}
VIEW=$(ls $D/hpatches | grep '^v_' | paste -sd,)
mkdir -p $O
for set in $SETS; do
  out=$O/$set; [ -f $out/results.json ] && continue
  seqs=""; [ $set = hpatches ] && seqs="--sequences $VIEW"
  s=$(date +%s)
  patchpose eval hpatches --root $D/$set --out $out --detector sift --descriptor sift --weights patchpose-v10 \
    --max-keypoints 2000 --no-pose --rows ${ROWS:-sift_all,pair_pose,second_pass,rectify} --reference ${REF:-pair_pose} $seqs --no-progress > $out.log 2>&1
  echo "$set rc=$? $(( $(date +%s)-s )) s"
done
echo done
