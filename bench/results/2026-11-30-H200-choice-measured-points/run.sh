#!/bin/bash
# On the GPU machine: gop_bench over prepare.sh's plan, every row checked
# (the interpreter up to 2^25 edge-features, else the default schedule's
# output) and timed by graph replay.
#   bash bench/results/2026-11-30-H200-choice-measured-points/run.sh CARRY OUT
set -u
c=$1 o=$2
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
SECONDS=0
timeout $((${BUDGET:-420} + 60)) "$c/gop_bench" run "$c/bench" "$c/datasets" --csv "$o/gop_bench.csv" \
  --reps 10 --budget-s "${BUDGET:-420}" >"$o/gop_bench.log" 2>&1
echo "gop rc=$? t=$SECONDS; $(tail -1 "$o/gop_bench.log")" | tee -a "$o/run.log"
