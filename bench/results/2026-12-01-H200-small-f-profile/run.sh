#!/bin/bash
# Nsight Compute on gop's own sums at small F, where gop runs at 45% of
# the gather ceiling (2026-12-01-H200-gather-ceiling): copy_u_sum on
# ogbn-arxiv and deezer-HU at F = 16 under the tuned schedule of
# 2026-11-29 (spmm_teams(32, 4)), and at F = 128 under spmm_groups(64, 8)
# (71% of the ceiling) for comparison; every kernel launch of one run.
# Carry (here): strip -o C/gopc build-static/gopc && xz C/gopc, and the
# two graphs in C/datasets.
#   bash bench/results/2026-12-01-H200-small-f-profile/run.sh CARRY OUT
set -u
c=$1 o=$2
mkdir -p "$o"
bash tools/gpu-unpack.sh "$c" || exit 1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
prof() { # NAME GRAPH F SCHEDULE
  ncu --csv --page details --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section LaunchStats \
    "$c/gopc" run stdlib/aggregate.gop --op copy_u_sum --graph "$c/datasets/$2.mtx.gz" \
    --F "$3" --schedule "$4" --gpu --warmup 0 --reps 1 >"$o/$1.csv" 2>"$o/$1.log"
  echo "$1: rc=$? $(grep -c '"' "$o/$1.csv") lines" | tee -a "$o/run.log"
}
prof ogbn-arxiv-16 ogbn-arxiv 16 'spmm_teams(32, 4)'
prof deezer-HU-16 deezer-HU 16 'spmm_teams(32, 4)'
prof ogbn-arxiv-128 ogbn-arxiv 128 'spmm_groups(64, 8)'
