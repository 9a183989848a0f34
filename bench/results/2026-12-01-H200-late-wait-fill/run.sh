#!/bin/bash
# The late wait of neighbour-group stages against the wait at their start,
# with the fill stage's grid as it is or capped at a fraction of a wave
# (so that all its blocks start at once and the next stage's blocks find
# room beside them), in one GPU call. Carry: prepare.sh's. A variant is
# PLAN or PLAN:FRACTION (GOP_EXP_FILL_WAVE=FRACTION).
#   bash bench/results/2026-12-01-H200-late-wait-fill/run.sh CARRY OUT [VARIANTS]
set -u
c=$1
o=$2
variants=${3:-before late late:0.5 late:0.25 before:0.5}
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
SECONDS=0
timeout 40 "$c/gop_bench" run "$c/before" "$c/datasets" --csv /tmp/warm.csv --reps 5 \
  --budget-s 15 >/tmp/warm.log 2>&1
echo "warm-up done t=$SECONDS" | tee -a "$o/run.log"
n=0
for v in $variants; do
  n=$((n + 1))
  plan=${v%%:*}
  env=()
  [[ $v == *:* ]] && env=(GOP_EXP_FILL_WAVE=${v#*:})
  env "${env[@]}" timeout $((${BUDGET:-80} + 30)) "$c/gop_bench" run "$c/$plan" "$c/datasets" \
    --csv "$o/$n-${v/:/-}.csv" --reps 10 --budget-s "${BUDGET:-80}" >"$o/$n-${v/:/-}.log" 2>&1
  echo "$v rc=$? t=$SECONDS; $(tail -1 "$o/$n-${v/:/-}.log")" | tee -a "$o/run.log"
  grep -E "^FAIL" "$o/$n-${v/:/-}.log" | head -5
done
