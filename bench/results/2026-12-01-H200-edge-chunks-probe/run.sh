#!/bin/bash
# bench/chunk_probe.cu on the shared graphs at F = 16, 32, 64: a team per
# destination against warps of K consecutive CSR edges. Needs nvcc only.
#   [GRAPHS="g ..."] [FS=16,32] [CSV=name.csv] \
#     bash bench/results/2026-12-01-H200-edge-chunks-probe/run.sh DATASETS OUT
set -u
d=$1 o=$2
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
nvcc -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp bench/chunk_probe.cu -o /tmp/chunk_probe \
  2>&1 | tee -a "$o/run.log"
# GRAPHS: names of graphs in DATASETS (default: all)
files=()
for g in ${GRAPHS:-}; do files+=("$d/$g.mtx.gz"); done
[ ${#files[@]} -gt 0 ] || files=("$d"/*.mtx.gz)
/tmp/chunk_probe --F "${FS:-16,32,64}" --reps 15 "${files[@]}" | tee "$o/${CSV:-chunk_probe.csv}"
