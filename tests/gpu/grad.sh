#!/usr/bin/env bash
# tests/gpu/grad.sh CARRY_DIR OUT_DIR: the derived gradient operators
# (gopc grad, docs/autodiff.md) on the GPU machine.
#
# 1. Every floating-point input of the representative stdlib operators and
#    of examples/models/layers.gop: the gradient operator compiled (cost
#    model's schedule), run on the GPU and checked against the interpreter
#    (gopc run --grad X --check) on cora and pubmed; the source-ordered
#    aggregations also under spmm_rows(2, 2). Sums are compared with the
#    check's allowance for their length (docs/gopc.md, --check; issue 15: d eps of
#    gin_aggregate sums |V| F terms in the GPU's atomic order).
# 2. GAT's attention backward, fused (gat_attention's three gradients, and
#    the joint operator computing all three) and separate (gat_scores,
#    edge_softmax_heads, gat_aggregate's five gradients), timed
#    on pubmed and ogbn-arxiv with H = 8, C = 8: the sum of the median
#    times of each side, and the bytes of the per-edge tensors the separate
#    backward reads and writes.
# Inputs are gopc run's seeded random numbers (the math is checked against
# finite differences in CI; this checks the GPU code against the oracle).
# Prepare CARRY_DIR with tools/gpu-prepare.sh (cora pubmed ogbn-arxiv).
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/grad.sh CARRY_DIR OUT_DIR" 2 "$@"
gpu_carry "$1"
gpu_out "$2"
layers=examples/models/layers.gop
status=0
pass=0
fail=0
log=$out/grad.log
: >"$log"

run() { # description, gopc run arguments...
  local what=$1
  shift
  # the cost model's schedule; where no named one applies (vertex-only
  # stages), a thread per vertex in every stage
  if "$gopc" run "$@" --gpu --check >"$log.one" 2>&1 ||
     { grep -q "no named schedule applies" "$log.one" &&
       "$gopc" run "$@" --schedule 'bind(v, thread)' --gpu --check >"$log.one" 2>&1; }; then
    cat "$log.one" >>"$log"
    pass=$((pass + 1))
  else
    cat "$log.one" >>"$log"
    fail=$((fail + 1))
    status=1
    echo "FAIL: $what: gopc run $*"
  fi
}

nonzero() { # description, gopc run arguments...: run, and the output's L2 norm is not 0
  local what=$1 before=$fail
  run "$@"
  if [ "$fail" = "$before" ] && grep -qE '^  d[A-Za-z0-9_]* \[.*L2 norm 0$' "$log.one"; then
    # a max=/min= gradient that never meets its argmax is 0 on both sides
    fail=$((fail + 1)) pass=$((pass - 1))
    status=1
    echo "FAIL: $what: the gradient is 0 (no contribution met the saved output)"
  fi
}

ext() { # FILE OP X [F H C]: the extent flags the gradient operator has
  local text flags=()
  # its extents: in the tensors' shapes and the range loops' bounds
  text=$("$gopc" grad "$1" --op "$2" --wrt "$3" 2>/dev/null |
         grep -oE '[a-z0-9]+\[[^]]*\]|\.\.[A-Za-z_]+' | grep -vE '^[a-z0-9]+\[(src|dst|edge)?\]$' |
         grep -oE '(f32|\.)[^ ]*' | tr -c 'A-Za-z_\n' ' ')
  grep -qw F <<<"$text" && flags+=(--F "${4:-32}")
  grep -qw H <<<"$text" && flags+=(--H "${5:-4}")
  grep -qw C <<<"$text" && flags+=(--C "${6:-8}")
  echo "${flags[@]}"
}

only_inputs() { # FILE OP X NAME=PATH...: the --in flags the gradient of X takes
  local sig file=$1 op=$2 x=$3
  shift 3
  local joint=()
  case $x in *,*) joint=(--joint) ;; esac
  sig=$("$gopc" grad "$file" --op "$op" --wrt "$x" "${joint[@]}" 2>/dev/null | head -1 |
        sed 's/->.*//')
  for a in "$@"; do
    grep -q "[(, ]${a%%=*}:" <<<"$sig" && echo "--in $a"
  done
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
      # shellcheck disable=SC2046 # ext gives a word list
      run "$op d$x on $g" "stdlib:$op" --grad "$x" --graph "$graph" $(ext "stdlib:$op" "$op" "$x")
    done
  done
  for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do
    run "$op dX spmm_rows on $g" "stdlib:$op" --grad X --graph "$graph" --F 64 \
      --schedule 'spmm_rows(2, 2)'
  done
  for op in bias bias_relu bias_elu gcn_propagate gin_aggregate gat_terms gat_scores \
            edge_softmax_heads gat_aggregate gat_attention; do
    for x in $(inputs "$layers" "$op"); do
      # shellcheck disable=SC2046
      run "$op d$x on $g" "$layers" --op "$op" --grad "$x" --graph "$graph" $(ext "$layers" "$op" "$x")
    done
  done
done
# Saved outputs consistent with the inputs: the forward runs on the GPU
# first (--out), so max=/min= meet their maxima and GAT's Y is its own.
# The GPU gradient and the f32 interpreter's must find the same argmax in
# that Y (issue 15: the interpreter kept X * W in double and met none), and
# the gradient must not be 0.
npy() { # PATH SHAPE(AxB...) SEED: uniform [-1, 1) float32
  python3 -c "import numpy as np, sys; r = np.random.default_rng(int(sys.argv[3])); \
np.save(sys.argv[1], r.uniform(-1, 1, [int(s) for s in sys.argv[2].split('x')]).astype(np.float32))" "$@"
}
for g in cora pubmed; do
  graph=$carry/datasets/$g.mtx.gz
  [ -f "$graph" ] || continue
  nv=$("$gopc" graph "$graph" | sed -n 's/.*|V| \([0-9]*\).*/\1/p')
  ne=$("$gopc" graph "$graph" | sed -n 's/.*|E| \([0-9]*\).*/\1/p')
  d=$out/npy-$g
  mkdir -p "$d"
  npy "$d/x.npy" "${nv}x32" 1 && npy "$d/w.npy" "$ne" 2 && npy "$d/z.npy" "${nv}x4x8" 3 &&
    npy "$d/as.npy" "${nv}x4" 4 && npy "$d/ad.npy" "${nv}x4" 5 || { status=1; continue; }
  for op in copy_u_max u_mul_e_min; do
    ins=(--in "X=$d/x.npy")
    [ "$op" = u_mul_e_min ] && ins+=(--in "W=$d/w.npy")
    if "$gopc" run "stdlib:$op" --graph "$graph" --F 32 "${ins[@]}" --out "Y=$d/y-$op.npy" \
         --gpu >>"$log" 2>&1; then
      for x in $(inputs "stdlib:$op" "$op"); do
        # shellcheck disable=SC2046 # only_inputs gives a word list
        nonzero "$op d$x on $g, saved Y" "stdlib:$op" --grad "$x" --graph "$graph" --F 32 \
          $(only_inputs "stdlib:$op" "$op" "$x" "X=$d/x.npy" "W=$d/w.npy" "Y=$d/y-$op.npy")
      done
    else
      fail=$((fail + 1)); status=1; echo "FAIL: forward $op on $g"
    fi
  done
  gins=(--in "Z=$d/z.npy" --in "As=$d/as.npy" --in "Ad=$d/ad.npy")
  if "$gopc" run "$layers" --op gat_attention --graph "$graph" --H 4 --C 8 "${gins[@]}" \
       --out "Y=$d/y-gat.npy" --gpu >>"$log" 2>&1; then
    for x in Z As Ad Z,As,Ad; do
      # shellcheck disable=SC2046
      run "gat_attention d$x on $g, saved Y" "$layers" --op gat_attention --grad "$x" \
        --graph "$graph" --H 4 --C 8 $(only_inputs "$layers" gat_attention "$x" "Z=$d/z.npy" \
        "As=$d/as.npy" "Ad=$d/ad.npy" "Y=$d/y-gat.npy")
    done
  else
    fail=$((fail + 1)); status=1; echo "FAIL: forward gat_attention on $g"
  fi
done
echo "checked: $pass passed, $fail failed (details in $log)"

echo "== GAT attention backward: fused against separate (H 8, C 8, F 64)"
# The median ms of one gradient operator: under a thread per vertex in
# every stage (one mapping for all), and under the cost model's schedule.
time_of() { # SCHEDULE-or-empty gopc-run-arguments...
  local sched=$1
  shift
  if [ -n "$sched" ]; then
    "$gopc" run "$@" --gpu --reps 20 --schedule "$sched" 2>>"$log"
  else
    "$gopc" run "$@" --gpu --reps 20 2>>"$log"
  fi | gpu_ms
}
add() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "") print "?"; else if (a == "?") print "?"; else print a + b }'; }
for g in pubmed ogbn-arxiv; do
  graph=$carry/datasets/$g.mtx.gz
  [ -f "$graph" ] || { echo "no $graph"; continue; }
  for side in joint fused separate; do
    if [ $side = joint ]; then cases="gat_attention:Z,As,Ad"
    elif [ $side = fused ]; then cases="gat_attention:Z gat_attention:As gat_attention:Ad"
    else cases="gat_aggregate:Z gat_aggregate:P edge_softmax_heads:S gat_scores:As gat_scores:Ad"; fi
    tb=0
    tc=0
    for pair in $cases; do
      op=${pair%%:*}
      x=${pair#*:}
      # shellcheck disable=SC2046
      a=$(time_of 'bind(v, thread)' "$layers" --op "$op" --grad "$x" --graph "$graph" \
          $(ext "$layers" "$op" "$x" 64 8 8))
      # shellcheck disable=SC2046
      b=$(time_of '' "$layers" --op "$op" --grad "$x" --graph "$graph" $(ext "$layers" "$op" "$x" 64 8 8))
      echo "  $g $side $op d$x: ${a:-?} ms (thread per vertex), ${b:-?} ms (cost model)"
      tb=$(add "$tb" "$a")
      tc=$(add "$tc" "$b")
    done
    echo "  $g $side total: $tb ms (thread per vertex), $tc ms (cost model)"
  done
  ne=$("$gopc" graph "$graph" | sed -n 's/.*|E| \([0-9]*\).*/\1/p' | head -1)
  # bytes through per-edge tensors (gopc grad --edge-traffic, per |E|·H),
  # of the derived operators only (the first block is the forward's)
  sep=0
  for op in gat_scores edge_softmax_heads gat_aggregate; do
    b=$("$gopc" grad "$layers" --op "$op" --edge-traffic |
        awk '/^edge traffic of/ { n++ } n > 1 && /total:/ { sub(/.*total: /, ""); sub(/·.*/, ""); t += $0 }
             END { print t + 0 }')
    sep=$((sep + b))
  done
  fus=$("$gopc" grad "$layers" --op gat_attention --joint --edge-traffic |
        awk '/^edge traffic of/ { n++ } n > 1 && /total:/ { sub(/.*total: /, ""); sub(/·.*/, ""); t += $0 }
             END { print t + 0 }')
  echo "  $g: per-edge tensors moved by the backward (gopc grad --edge-traffic):" \
       "separate $sep·|E|·H bytes = $(awk -v b="$sep" -v e="${ne:-0}" 'BEGIN { printf "%.1f", b * e * 8 / 1e6 }') MB," \
       "fused $fus·|E|·H bytes (|E| = ${ne:-?}, H = 8)"
done
exit $status
