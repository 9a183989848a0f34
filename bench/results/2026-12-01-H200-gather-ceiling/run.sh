#!/bin/bash
# The SMs' rate of gathering whole feature rows from L2 and from DRAM
# (bench/gather_probe.cu), the ceiling bench/gather_cache.c divides by.
# Needs only nvcc on the GPU machine.
#   bash bench/results/2026-12-01-H200-gather-ceiling/run.sh OUT
set -u
o=$1
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
nvcc -std=c++17 -O3 -arch=sm_90 -Xcompiler -fopenmp bench/gather_probe.cu -o /tmp/gather_probe \
  2>&1 | tee -a "$o/run.log"
/tmp/gather_probe --F 16,32,64,128,256 --reps 20 | tee "$o/gather_probe.csv"
