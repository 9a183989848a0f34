#!/usr/bin/env bash
# Nsight Compute on spmm_groups(64, 4) before and after the group's row is
# read at its top: where the warps wait (WarpStateStats), occupancy and
# throughput. CARRY/gopc-before.xz (the compiler before), CARRY/gopc.xz
# (after), CARRY/datasets/{cnr-2000,ogbn-arxiv}.mtx.gz.
#   bash bench/results/2026-11-30-H200-group-row-loads/run-ncu.sh CARRY OUT
source "$(dirname "$0")/../../../tools/gpu-common.sh"
gpu_usage "run-ncu.sh CARRY OUT" 2 "$@"
gpu_carry "$1"
gpu_out "$2"
xz -dc "$carry/gopc-before.xz" >/tmp/gopc-before && chmod +x /tmp/gopc-before
gpu_name; date -u
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for g in cnr-2000 ogbn-arxiv; do
  for c in /tmp/gopc-before "$gopc"; do
    echo "=== $g F=128 spmm_groups(64, 4) $([ "$c" = "$gopc" ] && echo after || echo before)"
    "$ncu" --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section LaunchStats -k regex:'copy_u_sum_s[1-9]' --launch-count 1 \
      "$c" run stdlib:copy_u_sum --graph "$carry/datasets/$g.mtx.gz" --reorder none --F 128 \
      --schedule 'spmm_groups(64, 4)' --gpu --reps 1 --warmup 1 2>&1 | grep -vE "^==PROF==|^\s*$"
  done
done
echo "done in $SECONDS s"
