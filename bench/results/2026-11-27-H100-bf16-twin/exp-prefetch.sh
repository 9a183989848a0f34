#!/bin/bash
bash tools/gpu-unpack.sh .carry/gpu
g=.carry/gpu/gopc
run() { t=$($g run stdlib:$5 --graph .carry/gpu/datasets/$2.mtx.gz --F $3 --dtype $1 --schedule "$4" --gpu --warmup 5 --reps 30 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1); echo "$2 $5 F=$3 $1 [$4]: $t"; }
for gr in ogbn-arxiv cnr-2000; do for F in 128; do for dt in f32 bf16; do
  for s in "spmm_groups(32, 4)" "spmm_groupsp(32, 4)" "spmm_groupsp(32, 8)" "spmm_groupsp(64, 4)" "spmm_groupsp(32, 4); occupancy(eo, 2048)" "spmm_groupsp(64, 8); occupancy(eo, 2048)" "gnnadvisorp(32, 32)"; do run $dt $gr $F "$s" copy_u_sum; done
done; done; done
