#!/usr/bin/env bash
# tests/grad/run.sh SUITE_DIR GOPC: golden tests of `gopc grad`, and the
# derived operators through the code generator and ptxas.
#
# Each NAME.args holds the arguments of one `gopc grad` run (of `gopc run`
# for run_NAME.args: a gradient operator run with --grad), from this
# folder; NAME.expected is its exact stdout and stderr followed by a line
# `exit N`. Golden outputs of a few operators show the derivation's rules
# (gather -> scatter by source, SDDMM, max= by count, mean= by degree, edge
# softmax by its saved output, GAT's fused attention in one edge pass); the
# refuse_*.gop files and the *_error cases show the refusals.
#
# Then the gradient operators of PTX_CASES (joint ones where several inputs
# are named) are compiled to PTX for sm_80 under the default schedule (and
# under spmm_rows(2, 2) for the source-ordered aggregations, gat_grad_groups
# for GAT's joint one), and assembled with ptxas -v: they must be real,
# schedulable operators; and GAT's attention under gat_groups for sm_80 and
# sm_90. ptxas is found as tests/ptxas/run.sh finds
# it; GOP_SKIP_PTXAS=1 skips that part on a machine without the toolkit.
#
# UPDATE=1 rewrites every NAME.expected instead of comparing; read each one
# before committing it.
set -u
source "$(dirname "$0")/../golden.sh"
golden_setup "$@"

for argsfile in *.args; do
  name=${argsfile%.args}
  # shellcheck disable=SC2046 # the file holds a word list
  eval "set -- $(cat "$argsfile")"
  cmd=grad
  case $name in run_*) cmd=run ;; esac # `gopc run --grad X`
  # the untuned schedule is the cost model's: a retrained built-in
  # predictor (tune/builtin.model) would move the golden line
  GOP_PREDICTOR=off "$gopc" "$cmd" "$@" >"$work/raw" 2>&1
  echo "exit $?" >>"$work/raw"
  # a run's wall time is not part of its output
  sed -E "s/(interpreter, (schedule .*, )?)[0-9]+\.[0-9]+ s$/\1T s/" "$work/raw" >"$work/out"
  golden_check "$name.expected" "$work/out" "gopc $cmd $(cat "$argsfile")"
done
golden_summary "golden: "
fail=$golden_fail

# ---- max=/min= on a saved f32 output (issue 15) ----
# The forward on the f32 interpreter writes Y; the gradient given that Y
# must meet its argmin (X * W rounded to f32, as stored) and not be 0.
for x in X W; do
  if ! "$gopc" run stdlib:u_mul_e_min --graph rmat:6:4 --F 4 --interp --out "Y=$work/y.npy" \
       >"$work/fw" 2>&1 ||
     ! "$gopc" run stdlib:u_mul_e_min --grad "$x" --graph rmat:6:4 --F 4 --interp \
       --in "Y=$work/y.npy" >"$work/bw" 2>&1; then
    fail=$((fail + 1))
    echo "FAIL: u_mul_e_min d$x on a saved Y"
    cat "$work/fw" "$work/bw"
  elif ! grep -qE "^  d$x \[.*L2 norm " "$work/bw" || grep -qE "^  d$x \[.*L2 norm 0$" "$work/bw"; then
    fail=$((fail + 1))
    echo "FAIL: u_mul_e_min d$x on its own saved Y is 0: no contribution met Y"
    cat "$work/bw"
  fi
done

# ---- the derived operators through codegen and ptxas ----
golden_find_ptxas
case $? in
  1) [ $fail -eq 0 ]; exit ;;
  2) exit 1 ;;
esac
layers=../../examples/models/layers.gop
# FILE OP INPUT [SCHEDULE]
PTX_CASES=(
  "stdlib: copy_u_sum X" "stdlib: copy_u_sum X spmm_rows(2, 2)"
  "stdlib: u_mul_e_sum X" "stdlib: u_mul_e_sum X spmm_rows(2, 2)" "stdlib: u_mul_e_sum W"
  "stdlib: copy_u_max X" "stdlib: copy_u_mean X" "stdlib: u_dot_v X" "stdlib: u_dot_v Y"
  "stdlib: edge_softmax S" "stdlib: u_div_e_min_heads W" "stdlib: e_mul_u W"
  "$layers gat_attention Z" "$layers gat_attention As" "$layers gat_attention Ad"
  "$layers gcn_propagate H" "$layers gcn_propagate W" "$layers gin_aggregate eps"
  "$layers bias_elu b" "$layers gat_terms a" "$layers edge_softmax_heads S"
  "$layers gat_attention Z,As,Ad" "stdlib: u_mul_e_sum X,W"
  "$layers gat_attention Z,As,Ad gat_grad_groups(32, 8, 16)"
  "$layers gat_attention Z,As,Ad gat_grad_groups(32, 2, 4)"
  "$layers gat_attention Z,As,Ad gat_grad_sources(16)"
  "$layers gat_attention Z,As,Ad gat_grad_teams(32, 4, 16)"
)
nptx=0
for c in "${PTX_CASES[@]}"; do
  read -r file op input sched <<<"$c"
  if [ "$file" = "stdlib:" ]; then file="stdlib:$op"; fi
  args=(grad "$file" --op "$op" --wrt "$input" --stage ptx --target sm_80)
  [ -n "${sched:-}" ] && args+=(--schedule "$sched")
  case $input in *,*) args+=(--joint) ;; esac # several inputs: one joint operator
  if ! "$gopc" "${args[@]}" >"$work/g.ptx" 2>"$work/err"; then
    fail=$((fail + 1))
    echo "FAIL: gopc ${args[*]}"
    head -5 "$work/err"
    continue
  fi
  if ! "$ptxas" -arch=sm_80 -v "$work/g.ptx" -o "$work/g.cubin" >"$work/ptxas" 2>&1; then
    fail=$((fail + 1))
    echo "FAIL: ptxas on the PTX of gopc ${args[*]}"
    head -5 "$work/ptxas"
    continue
  fi
  if grep -q "bytes spill" "$work/ptxas" && grep "bytes spill" "$work/ptxas" | grep -vq " 0 bytes spill stores, 0 bytes spill loads"; then
    echo "note: spills in $op d$input ${sched:-}"
  fi
  nptx=$((nptx + 1))
done
echo "ptx: $nptx gradient operators compiled and assembled for sm_80"
# GAT's attention under its named schedules (the 4-channel lanes of its
# weighted sum; its stages fused, gat_rows), for both targets
for target in sm_80 sm_90; do
  for sched in "gat_groups(32, 8, 16)" "gat_groups(32, 1, 16)" "gat_rows(8)"; do
    if ! "$gopc" emit "$layers" --op gat_attention --stage ptx --target "$target" \
         --schedule "$sched" >"$work/f.ptx" 2>"$work/err" ||
       ! "$ptxas" -arch="$target" -v "$work/f.ptx" -o "$work/f.cubin" >"$work/ptxas" 2>&1; then
      fail=$((fail + 1))
      echo "FAIL: gat_attention under $sched for $target"
      head -5 "$work/err" "$work/ptxas"
    fi
  done
done
[ $fail -eq 0 ]
