#!/bin/bash
# bf16 group schedules: occupancy and edges in flight
bash tools/gpu-unpack.sh .carry/gpu
g=.carry/gpu/gopc
run() { # dt graph F sched
  t=$($g run stdlib:copy_u_sum --graph .carry/gpu/datasets/$2.mtx.gz --F $3 --dtype $1 --schedule "$4" --gpu --warmup 5 --reps 30 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1)
  echo "$2 F=$3 $1 [$4]: $t"
}
for gr in ogbn-arxiv cnr-2000; do for F in 128 256; do
  for s in "spmm_groups(32, 4)" "spmm_teams8(64, 32)" "spmm_groups(32, 4); occupancy(eo, 2048)"; do run f32 $gr $F "$s"; done
  for s in "spmm_groups(32, 4)" "spmm_teams8(64, 32)" "spmm_teams8(64, 32); occupancy(eo, 2048)" "spmm_teams8(64, 16); occupancy(eo, 2048)" "spmm_teams8(32, 16); occupancy(eo, 2048)" "spmm_groups(32, 8)" "spmm_groups(32, 8); occupancy(eo, 2048)" "spmm_groups(32, 4); occupancy(eo, 2048)" "spmm_groups(64, 8); occupancy(eo, 2048)"; do run bf16 $gr $F "$s"; done
done; done
