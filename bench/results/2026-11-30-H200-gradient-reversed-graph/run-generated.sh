#!/usr/bin/env bash
# The sums' gradients on two generated graphs no choice was fitted on
# (R-MAT 18/16, a power law of 500,000 vertices), F = 64: the untuned choice
# (checked against the interpreter for the weighted sum) against the best
# row schedule of the earlier runs and three transposed schedules. Carry:
# CARRY/gopc.xz.
#   bash bench/results/2026-11-30-H200-gradient-reversed-graph/run-generated.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { /tmp/gopc run stdlib:$1 --graph "$2" --reorder none --F 64 --reps 20 "${@:3}" 2>&1 |
      grep -E "^  time|schedule:|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
for g in rmat:18:16 powerlaw:500000:8:21; do
  echo "== $g F=64"
  echo "forward auto: $(t u_mul_e_sum $g)"
  for op in u_mul_e_sum copy_u_sum; do
    chk=""; [ $op = u_mul_e_sum ] && chk=--check
    echo "$op grad auto: $(t $op $g --grad X $chk)"
    for s in "spmm_rows(2, 8)" "transpose(); spmm_teams8(64, 8)" "transpose(); spmm_groups(64, 4)" \
             "transpose(); spmm_teams(32, 8)"; do
      echo "$op grad $s: $(t $op $g --grad X --schedule "$s")"
    done
  done
done
