#!/bin/bash
# bench/panel_probe.cu with the weighted sum's kinds of slot positions
# (loaded, counted, shared) on the graphs whose neighbouring destinations
# share sources; with MINB="4 5" (call 2) again built for at least that
# many blocks of 256 threads an SM (fewer registers); with PROFILE=1
# (call 3) instead Nsight Compute's issue, L1, L2 and DRAM throughputs of
# the P = 1 and 2 kernels on cnr-2000 at F = 128. Needs nvcc (and ncu).
#   [MINB="4 5" | PROFILE=1] \
#     bash bench/results/2026-12-01-H200-weighted-panel-probe/run.sh DATASETS OUT
set -u
d=$1 o=$2
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
if [ "${PROFILE:-0}" = 1 ]; then
  nvcc -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp bench/panel_probe.cu -o /tmp/panel_probe
  m=smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
  m=$m,sm__warps_active.avg.pct_of_peak_sustained_active
  m=$m,l1tex__throughput.avg.pct_of_peak_sustained_active
  m=$m,lts__throughput.avg.pct_of_peak_sustained_elapsed
  m=$m,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
  ncu --kernel-name regex:panel_sum --launch-count 40 --csv --page raw --metrics "$m" \
    /tmp/panel_probe --F 128 --reps 1 "$d/cnr-2000.mtx.gz" >"$o/ncu.csv" 2>"$o/ncu.log"
  exit
fi
for mb in 1 ${MINB:-}; do
  nvcc -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp -DPANEL_MIN_BLOCKS=$mb bench/panel_probe.cu \
    -o /tmp/panel_probe 2>&1 | tee -a "$o/run.log"
  csv=probe.csv
  [ "$mb" = 1 ] || csv=probe-min-blocks-$mb.csv
  /tmp/panel_probe --F 128,256 --reps 15 "$d/cnr-2000.mtx.gz" "$d/delaunay_n16.mtx.gz" \
    "$d/proteins.mtx.gz" >"$o/$csv"
done
