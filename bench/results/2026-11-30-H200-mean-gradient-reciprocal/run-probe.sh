#!/usr/bin/env bash
# Is the mean's gradient slow because of its division? The derived
# gradient dX[v] += dY[w] / in_degree(w) divides every feature of every
# edge (div.rn.f32 per element); the same sum with one reciprocal per edge
# (dY[w] * (1.0 / in_degree(w))), and without the scale at all (the sum's
# gradient), under the same transposed schedules. mg.gop (this folder) holds the three.
# Carry CARRY/gopc.xz, CARRY/mg.gop and the graphs. There:
#   bash bench/results/2026-11-30-H200-mean-gradient-reciprocal/run-probe.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { /tmp/gopc run "$c/mg.gop" --op $1 --graph "$c/$2.mtx.gz" --reorder none --F $3 --reps 20 "${@:4}" 2>&1 |
      grep -E "^  time|schedule:|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
for g in ogbn-arxiv soc-Slashdot0902 cnr-2000; do
  for F in 40 128; do
    echo "== $g F=$F"
    for s in 'transpose(); spmm_teams8(64, 16)' 'transpose(); spmm_groups(64, 4)' 'transpose(); spmm_rows(2, 8)'; do
      for op in mg_div mg_rcp mg_sum; do
        echo "$op [$s]: $(t $op $g $F --schedule "$s")"
      done
    done
    echo "mg_rcp auto: $(t mg_rcp $g $F --check)"
  done
done
