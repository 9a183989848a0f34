#!/bin/bash
# A group's row (its edges' range, destination and the destination's
# in-degree) loaded at the top of its groups loop, and the next row's
# entries loaded one iteration ahead (codegen/loop.c: group_prologue; the
# pipelined groups loop was built for this run and not kept), against the
# kernels before, in one GPU call.
# Carry (made here, bench/results/2026-11-30-H200-group-row-loads/prepare.sh):
# CARRY/gop_bench (no LLVM), CARRY/{before,rows,ahead}/ (one plan each,
# the same rows, packs compiled by the three code generators),
# CARRY/datasets/.
#   bash bench/results/2026-11-30-H200-group-row-loads/run.sh CARRY OUT [VARIANTS]
set -u
c=$1
o=$2
variants=${3:-before rows ahead before}
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
SECONDS=0
timeout 40 "$c/gop_bench" run "$c/before" "$c/datasets" --csv /tmp/warm.csv --reps 5 \
  --budget-s 15 >/tmp/warm.log 2>&1
echo "warm-up done t=$SECONDS" | tee -a "$o/run.log"
n=0
for v in $variants; do
  n=$((n + 1))
  timeout $((${BUDGET:-100} + 30)) "$c/gop_bench" run "$c/$v" "$c/datasets" \
    --csv "$o/$n-$v.csv" --reps 10 --budget-s "${BUDGET:-100}" >"$o/$n-$v.log" 2>&1
  echo "$v rc=$? t=$SECONDS; $(tail -1 "$o/$n-$v.log")" | tee -a "$o/run.log"
  grep -E "^FAIL" "$o/$n-$v.log" | head -5
done
