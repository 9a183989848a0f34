#!/usr/bin/env bash
# The derived gradient of the sums (u_mul_e_sum_grad_X, copy_u_sum_grad_X:
# dX[v] sums over v's out-edges) against the forward, on three directed
# graphs whose in- and out-degrees differ (edge ids in CSR order, --reorder
# none), F = 40 and 128: the untuned choice (gopc run's, printed), the
# choice the model made before it read out-degrees (named below), and the
# row schedules around them, each checked against the interpreter.
# Prepared here: strip + xz of build-static/gopc into CARRY/gopc.xz, the
# three graphs copied from ../shared/datasets. There:
#   bash bench/results/2026-11-29-H200-gradient-out-degrees/run.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { /tmp/gopc run stdlib:$1 --graph "$c/$2.mtx.gz" --reorder none --F $3 --reps 20 --check "${@:4}" 2>&1 |
      grep -E "^  time|schedule:|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
for g in ogbn-arxiv cnr-2000 soc-Slashdot0902; do
  for F in 40 128; do
    echo "== $g F=$F"
    echo "forward auto: $(t u_mul_e_sum $g $F)"
    for op in u_mul_e_sum copy_u_sum; do
      echo "$op grad auto: $(t $op $g $F --grad X)"
      for s in "spmm_rows8_full(2, 1)" "spmm_rows8_full(2, 4)" "spmm_rows8_full(2, 8)" \
               "spmm_rows8_full(2, 16)" "spmm_rows(2, 4)" "spmm_rows(2, 8)" "spmm_rows(2, 16)" \
               "spmm_rows_full(2, 8)" "warp_vertex(1, 1)" "spmm_vec4(4)"; do
        echo "$op grad $s: $(t $op $g $F --grad X --schedule "$s")"
      done
    done
  done
done
