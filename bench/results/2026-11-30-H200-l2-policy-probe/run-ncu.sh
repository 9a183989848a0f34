#!/usr/bin/env bash
# Nsight Compute on gop's best copy_u_sum kernels where the sums stay under
# 40% of the fewest-bytes bound: is it DRAM, L2 or L1 that limits?
#   bash bench/results/2026-11-30-H200-l2-policy-probe/run-ncu.sh CARRY OUT
# GOP_NCU_SECTIONS, GOP_NCU_CASES ("GRAPH F SCHEDULE;...") choose other sections and cases.
source "$(dirname "$0")/../../../tools/gpu-common.sh"
gpu_usage "run-ncu.sh CARRY OUT" 2 "$@"
gpu_carry "$1"
gpu_out "$2"
gpu_name; date -u
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
sections=${GOP_NCU_SECTIONS:-SpeedOfLight MemoryWorkloadAnalysis Occupancy LaunchStats}
prof() { # GRAPH F SCHEDULE
  echo "=== $1 F=$2 $3"
  "$ncu" $(printf -- '--section %s ' $sections) -k regex:'copy_u_sum_s[1-9]' --launch-count 1 \
    "$gopc" run stdlib:copy_u_sum --graph "$carry/datasets/$1.mtx.gz" --reorder none --F "$2" \
    --schedule "$3" --gpu --reps 1 --warmup 1 2>&1 | grep -vE "^==PROF==|^\s*$"
}
cases=${GOP_NCU_CASES:-"cnr-2000 128 spmm_teams8(128,16);cnr-2000 128 spmm_tiles(64,8);ogbn-arxiv 128 spmm_teams8(128,16);ogbn-arxiv 256 spmm_groups(64,4);deezer-HU 256 spmm_teams8(128,32)"}
IFS=';' read -ra cs <<<"$cases"
for c in "${cs[@]}"; do
  read -r g F s <<<"$c"
  prof "$g" "$F" "$s"
done
echo "done in $SECONDS s"
