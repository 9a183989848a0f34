#!/usr/bin/env bash
# tests/gpu/grad.sh CARRY_DIR OUT_DIR: the derived gradient operators
# (gopc grad, docs/autodiff.md) on the GPU machine.
#
# 1. Every floating-point input of the representative stdlib operators and
#    of examples/models/layers.gop: the gradient operator compiled (cost
#    model's schedule), run on the GPU and checked against the interpreter
#    (gopc run --grad X --check) on cora and pubmed; the source-ordered
#    aggregations also under spmm_rows(2, 2).
# 2. GAT's attention backward, fused (gat_attention's three gradients) and
#    separate (gat_scores, edge_softmax_heads, gat_aggregate's five), timed
#    on pubmed and ogbn-arxiv with H = 8, C = 8: the sum of the median
#    times of each side, and the bytes of the per-edge tensors the separate
#    backward reads and writes.
# Inputs are gopc run's seeded random numbers (the math is checked against
# finite differences in CI; this checks the GPU code against the oracle).
# Prepare CARRY_DIR with tools/gpu-prepare.sh (cora pubmed ogbn-arxiv).
set -uo pipefail
cd "$(dirname "$0")/../.."
carry=${1:?usage: tests/gpu/grad.sh CARRY_DIR OUT_DIR}
out=${2:?usage: tests/gpu/grad.sh CARRY_DIR OUT_DIR}
mkdir -p "$out"
bash tools/gpu-unpack.sh "$carry"
gopc=$carry/gopc
layers=examples/models/layers.gop
status=0
pass=0
fail=0
log=$out/grad.log
: >"$log"

run() { # description, gopc run arguments...
  local what=$1
  shift
  if "$gopc" run "$@" --gpu --check >>"$log" 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    status=1
    echo "FAIL: $what: gopc run $*"
  fi
}

inputs() { # FILE OP: the float inputs of OP
  "$gopc" grad "$1" --op "$2" 2>/dev/null | sed -n 's/^op [A-Za-z0-9_]*_grad_\([A-Za-z0-9_]*\)(.*/\1/p'
}

echo "== gradient operators on the GPU, checked against the interpreter"
ops=$("$gopc" ops --representative | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p')
for g in cora pubmed; do
  graph=$carry/datasets/$g.mtx.gz
  [ -f "$graph" ] || { echo "no $graph"; status=1; continue; }
  for op in $ops; do
    for x in $(inputs "stdlib:$op" "$op"); do
      run "$op d$x on $g" "stdlib:$op" --grad "$x" --graph "$graph" --F 32 --H 4
    done
  done
  for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do
    run "$op dX spmm_rows on $g" "stdlib:$op" --grad X --graph "$graph" --F 64 \
      --schedule 'spmm_rows(2, 2)'
  done
  for op in bias bias_relu bias_elu gcn_propagate gin_aggregate gat_terms gat_scores \
            edge_softmax_heads gat_aggregate gat_attention; do
    for x in $(inputs "$layers" "$op"); do
      run "$op d$x on $g" "$layers" --op "$op" --grad "$x" --graph "$graph" --F 32 --H 4 --C 8
    done
  done
done
echo "checked: $pass passed, $fail failed (details in $log)"

echo "== GAT attention backward: fused against separate (H 8, C 8)"
time_of() { # gopc run arguments: prints the median ms
  "$gopc" run "$@" --gpu --reps 20 2>>"$log" | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p'
}
for g in pubmed ogbn-arxiv; do
  graph=$carry/datasets/$g.mtx.gz
  [ -f "$graph" ] || { echo "no $graph"; continue; }
  fused=0
  for x in Z As Ad; do
    t=$(time_of "$layers" --op gat_attention --grad "$x" --graph "$graph" --H 8 --C 8)
    echo "  $g fused gat_attention d$x: ${t:-?} ms"
    fused=$(awk -v a="$fused" -v b="${t:-0}" 'BEGIN { print a + b }')
  done
  sep=0
  for pair in gat_aggregate:Z gat_aggregate:P edge_softmax_heads:S gat_scores:As gat_scores:Ad; do
    op=${pair%%:*}
    x=${pair#*:}
    t=$(time_of "$layers" --op "$op" --grad "$x" --graph "$graph" --H 8 --C 8)
    echo "  $g separate $op d$x: ${t:-?} ms"
    sep=$(awk -v a="$sep" -v b="${t:-0}" 'BEGIN { print a + b }')
  done
  ne=$("$gopc" graph "$graph" | sed -n 's/.*|E| \([0-9]*\).*/\1/p' | head -1)
  echo "  $g: fused $fused ms, separate $sep ms; the separate backward also moves" \
       "the per-edge S, P and their adjoints ([|E|, 8] each, |E| = ${ne:-?})"
done
exit $status
