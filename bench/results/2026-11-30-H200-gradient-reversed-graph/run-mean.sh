#!/usr/bin/env bash
# The mean's derived gradient (copy_u_mean_grad_X: dX[v] sums dY[w] /
# in_degree(w) over v's out-edges), which gop.auto kept at the default
# mapping since 2026-11-25 (its pick then, spmm_rows(2, 1), was 2.3x slower
# on ogbn-arxiv): the default mapping, that row schedule, and the untuned
# choice now (transposed), at GraphSAGE's widths and wider. The untuned
# choice is checked against the interpreter.
# Carry as run.sh's (CARRY/gopc.xz, the graphs). There:
#   bash bench/results/2026-11-30-H200-gradient-reversed-graph/run-mean.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { /tmp/gopc run stdlib:$1 --graph "$c/$2.mtx.gz" --reorder none --F $3 --reps 20 "${@:4}" 2>&1 |
      grep -E "^  time|schedule:|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
for g in ogbn-arxiv soc-Slashdot0902; do
  for F in 8 40 128 256; do
    echo "== $g F=$F"
    echo "forward auto: $(t copy_u_mean $g $F)"
    echo "grad auto: $(t copy_u_mean $g $F --grad X --check)"
    echo "grad default mapping: $(t copy_u_mean $g $F --grad X --schedule '')"
    echo "grad spmm_rows(2, 1): $(t copy_u_mean $g $F --grad X --schedule 'spmm_rows(2, 1)')"
  done
done
