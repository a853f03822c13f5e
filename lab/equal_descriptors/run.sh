#!/usr/bin/env bash
# LAB (#60): `pose` at SIFT keypoints against SIFT with all its orientations at equal descriptors: SIFT-all matches
# 1.21 descriptors a location on the test sequences, so `pose` (one a keypoint) gets 1,210 keypoints to its 1,000.
# bash lab/equal_descriptors/run.sh OUT   (from the folder that holds data/; then python lab/equal_descriptors/cmp.py OUT)
set -euo pipefail
out=$1
for r in hpatches hpatches_zoom hpatches_turn; do
  patchpose eval hpatches --root data/$r --detector sift --weights patchpose-v10 --max-keypoints 1210 --no-pose \
    --rows pose --reference pose --out "$out/pose1210_$r"
  patchpose eval hpatches --root data/$r --detector sift --weights patchpose-v10 --max-keypoints 1000 --no-pose \
    --rows pose,sift_all --reference sift_all --out "$out/sift1000_$r"
done
