#!/bin/bash
# bench/panel_probe.cu with the weighted sum's kinds of slot positions
# (loaded, counted, shared) on the graphs whose neighbouring destinations
# share sources; then, with MINB="4 5", again built for at least that
# many blocks of 256 threads an SM (fewer registers). Needs nvcc only.
#   [MINB="4 5"] bash bench/results/2026-12-01-H200-weighted-panel-probe/run.sh DATASETS OUT
set -u
d=$1 o=$2
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
for mb in 1 ${MINB:-}; do
  nvcc -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp -DPANEL_MIN_BLOCKS=$mb bench/panel_probe.cu \
    -o /tmp/panel_probe 2>&1 | tee -a "$o/run.log"
  csv=probe.csv
  [ "$mb" = 1 ] || csv=probe-min-blocks-$mb.csv
  /tmp/panel_probe --F 128,256 --reps 15 "$d/cnr-2000.mtx.gz" "$d/delaunay_n16.mtx.gz" \
    "$d/proteins.mtx.gz" >"$o/$csv"
done
