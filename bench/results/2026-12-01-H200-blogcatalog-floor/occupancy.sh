#!/bin/bash
# u_mul_e_sum / copy_u_sum on blogcatalog at F = 256 under spmm_groups(64, 8) at
# other occupancies (gopc run, CUDA events, median of 50, each checked).
# Carry: the static gopc and blogcatalog (tools/gpu-common.sh gpu_gopc_carry .carry/occ blogcatalog).
#   bash bench/results/2026-12-01-H200-blogcatalog-floor/occupancy.sh
c=.carry/occ
bash tools/gpu-unpack.sh $c
g=$c/datasets/blogcatalog.mtx.gz
for op in u_mul_e_sum copy_u_sum; do
for s in "spmm_groups(64, 8)" "spmm_groups(64, 8); occupancy(eo, 768)" "spmm_groups(64, 8); occupancy(eo, 512)" "spmm_groups(64, 8); occupancy(eo, 1536)" "spmm_groups(64, 16)" "spmm_groups(64, 8)"; do
  printf "%s %-44s " $op "$s"
  $c/gopc run stdlib:$op --graph $g --F 256 --reorder none --schedule "$s" --reps 50 --check 2>&1 | grep -E "ms|error|wrong" | tr '\n' ' '
  echo
done; done
