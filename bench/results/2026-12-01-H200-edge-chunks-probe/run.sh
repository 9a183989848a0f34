#!/bin/bash
# bench/chunk_probe.cu on the shared graphs at F = 16, 32, 64: a team per
# destination against warps of K consecutive CSR edges. Needs nvcc only.
#   bash bench/results/2026-12-01-H200-edge-chunks-probe/run.sh DATASETS OUT
set -u
d=$1 o=$2
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
nvcc -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp bench/chunk_probe.cu -o /tmp/chunk_probe \
  2>&1 | tee -a "$o/run.log"
/tmp/chunk_probe --F "${FS:-16,32,64}" --reps 15 "$d"/*.mtx.gz | tee "$o/chunk_probe.csv"
