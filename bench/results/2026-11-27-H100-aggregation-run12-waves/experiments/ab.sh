#!/bin/bash
# The A/B form of run 12 (2026-11-27)'s other three experiments (calls 1-3): gopc-old
# (commit c061b96) against gopc-new (the change under test), each case
# timed old, new, old again (gopc run --gpu --warmup 10 --reps 50, median
# ms), after --check runs of the new kernels against the interpreter on
# cora at F = 72 (every op x dtype x schedule listed in the .txt files):
#   masked-unroll.txt          edge loops unrolled without a remainder loop
#   early-guards.txt           a group's degree test read before its edges
#   one-wave-by-occupancy.txt  a groups stage's grid as one wave of the
#                              blocks that fit an SM (the driver's
#                              occupancy), not 8 blocks an SM
# Call 2 also profiled with Nsight Compute (ncu/, summary.py prints them):
#   ncu --section SpeedOfLight --section MemoryWorkloadAnalysis
#       --section MemoryWorkloadAnalysis_Tables --section WarpStateStats
#       --section Occupancy --section LaunchStats --section SchedulerStats
#       --csv --page details -k regex:_s1 -c 1 gopc run ... --reps 1
# and cuSPARSE's kernels the same way under bench/peers/cusparse_bench.cu.
cd "$(dirname "$0")/../.."
c=.carry/m
o=$OUT/ab.txt
t() { $c/gopc-$1 run stdlib:$2 --graph $3 --F $4 --dtype $5 --schedule "$6" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1; }
ab() { a=$(t old "$@"); n=$(t new "$@"); a2=$(t old "$@"); echo "$(basename $2) $1 F=$3 $4 [$5]: old $a new $n old2 $a2" | tee -a $o; }
for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do for dt in f32 bf16; do
  for s in "spmm_groups(16, 4)" "spmm_teams(16, 8)" "spmm_teams8(32, 16)" "spmm_vec4(4)" "spmm_rows(4, 4)" "spmm_rows_full(2, 4)" "spmm_groups(128, 8)"; do
    r=$($c/gopc-new run stdlib:$op --graph $c/datasets/cora.mtx.gz --F 72 --dtype $dt --schedule "$s" --gpu --check 2>&1 | grep -E "check|error" | head -1)
    echo "check $op $dt [$s]: $r" | tee -a $o
  done; done; done
A=$c/datasets/ogbn-arxiv.mtx.gz; C=$c/datasets/cnr-2000.mtx.gz
for op in copy_u_sum u_mul_e_sum; do
  ab $op $A 32 f32 "spmm_teams(32, 8)"
  ab $op $A 128 f32 "spmm_groups(32, 4)"
  ab $op $A 128 bf16 "spmm_groups(32, 4)"
  ab $op $A 256 bf16 "spmm_teams8(64, 32)"
  ab $op $C 128 f32 "spmm_groups(64, 4)"
  ab $op $C 256 f32 "spmm_groups(128, 8)"
  ab $op $C 256 bf16 "spmm_groups(128, 8)"
  ab $op $C 32 f32 "spmm_teams8(64, 4)"
  ab $op grid:1024x1024 64 f32 "spmm_rows_full(2, 4)"
  ab $op grid:1024x1024 256 f32 "spmm_vec4_full(4)"
done
