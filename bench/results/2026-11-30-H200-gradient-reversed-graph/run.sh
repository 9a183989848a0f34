#!/usr/bin/env bash
# The sums' derived gradients (u_mul_e_sum_grad_X, copy_u_sum_grad_X: dX[v]
# sums over v's out-edges) on the reversed graph (transpose(), its
# out-edges then in-edges, so the forward's neighbour-group schedules
# apply), against the row schedules they had (the best two of
# bench/results/2026-11-29-H200-gradient-out-degrees) and the forward, on
# directed graphs whose in- and out-degrees differ (--reorder none: edge ids
# in CSR order, as there). The untuned choice (printed) is checked against
# the interpreter in every case; every other schedule is checked at F = 40
# on the graphs named in CHECKED (the interpreter takes 15-50 s a run on
# cnr-2000), and timed everywhere.
# Prepared here: strip + xz of build-static/gopc into CARRY/gopc.xz, the
# graphs copied from ../shared/datasets. There:
#   bash bench/results/2026-11-30-H200-gradient-reversed-graph/run.sh CARRY "GRAPHS" "CHECKED"
c=$1
graphs=${2:-"ogbn-arxiv soc-Slashdot0902"}
checked=${3:-$graphs}
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { /tmp/gopc run stdlib:$1 --graph "$c/$2.mtx.gz" --reorder none --F $3 --reps 20 "${@:4}" 2>&1 |
      grep -E "^  time|schedule:|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
for g in $graphs; do
  for F in 40 128; do
    echo "== $g F=$F"
    echo "forward auto: $(t u_mul_e_sum $g $F)"
    chk=""
    case " $checked " in *" $g "*) [ "$F" = 40 ] && chk=--check ;; esac
    for op in u_mul_e_sum copy_u_sum; do
      echo "$op grad auto: $(t $op $g $F --grad X --check)"
      for s in "spmm_rows(2, 8)" "spmm_vec4(4)" \
               "transpose(); spmm_teams8(64, 8)" "transpose(); spmm_teams8(64, 16)" \
               "transpose(); spmm_teams8(32, 8)" "transpose(); spmm_teams(64, 8)" \
               "transpose(); spmm_groups(64, 4)" "transpose(); spmm_vec4(4)"; do
        echo "$op grad $s: $(t $op $g $F --grad X --schedule "$s" $chk)"
      done
    done
  done
done
