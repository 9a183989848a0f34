#!/usr/bin/env bash
# tests/gpu/dtypes.sh CARRY_DIR OUT_DIR: f16, bf16 and f64 tensors (issue 19,
# docs/language.md "Types") on the GPU machine.
#
# 1. copy_u_sum, u_mul_e_sum and copy_u_mean instantiated in bf16, f16 and
#    f64 (gopc run --dtype), compiled under several vertex-parallel
#    schedules (16-bit outputs refuse atomics: docs/language.md says why),
#    run on the GPU and checked against the f64 oracle of the same rounded
#    inputs (gopc run --check: relative L2 under 1.5e-2 for bf16, 2e-3 for
#    f16, 1e-12 for f64) on cora, pubmed and an R-MAT graph, F = 32 and 128.
# 2. Timing: copy_u_sum in bf16 against f32, same schedules, on the graphs
#    above 1M edges (ogbn-arxiv, molhiv, cnr-2000, rmat:20:16) at F = 128 and
#    256: the best median of each dtype over the schedules, and the ratio
#    (the target of issue 19 is >= 1.7x).
# Prepare CARRY_DIR with tools/gpu-prepare.sh (cora pubmed ogbn-arxiv
# molhiv cnr-2000). Writes OUT_DIR/dtypes.log (every gopc output) and prints
# a summary; exits 1 if a check failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
carry=${1:?usage: tests/gpu/dtypes.sh CARRY_DIR OUT_DIR}
out=${2:?usage: tests/gpu/dtypes.sh CARRY_DIR OUT_DIR}
mkdir -p "$out"
bash tools/gpu-unpack.sh "$carry"
gopc=$carry/gopc
log=$out/dtypes.log
: >"$log"
status=0
pass=0
fail=0

graph_of() { # NAME: a dataset file of the carry, or a generator spec as is
  case $1 in rmat:*) echo "$1" ;; *) echo "$carry/datasets/$1.mtx.gz" ;; esac
}

# vertex-parallel schedules: plain reductions, no atomics
scheds=('warp_vertex(1, 1)' 'spmm_vec4(2)' 'spmm_rows(2, 2)' 'thread_vertex(1, 1)')

echo "== 1. bf16 / f16 / f64 operators on the GPU, checked against the f64 oracle"
for g in cora pubmed rmat:14:8; do
  graph=$(graph_of "$g")
  case $g in rmat:*) ;; *) [ -f "$graph" ] || { echo "no $graph"; continue; } ;; esac
  for op in copy_u_sum u_mul_e_sum copy_u_mean; do
    for dt in bf16 f16 f64; do
      for F in 32 128; do
        for s in "${scheds[@]}"; do
          echo "### $op $dt $g F=$F $s" >>"$log"
          if "$gopc" run "stdlib:$op" --graph "$graph" --F "$F" --dtype "$dt" \
               --schedule "$s" --gpu --check --reps 3 >>"$log" 2>&1; then
            pass=$((pass + 1))
          elif grep -q "no named schedule applies\|cannot apply\|does not apply" "$log"; then
            : # a schedule that does not fit this operator: not a failure
          else
            fail=$((fail + 1))
            status=1
            echo "FAIL: $op $dt on $g, F=$F, schedule $s (see $log)"
          fi
        done
      done
    done
  done
done
echo "checked: $pass passed, $fail failed"

echo "== 2. copy_u_sum: bf16 against f32 (best median over the schedules)"
time_of() { # DT GRAPH F SCHEDULE
  "$gopc" run stdlib:copy_u_sum --graph "$2" --F "$3" --dtype "$1" --schedule "$4" \
    --gpu --reps 20 2>>"$log" | tee -a "$log" | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p'
}
best() { sort -g | head -1; }
for g in ogbn-arxiv molhiv cnr-2000 rmat:20:16; do
  graph=$(graph_of "$g")
  case $g in rmat:*) ;; *) [ -f "$graph" ] || { echo "no $graph"; continue; } ;; esac
  for F in 128 256; do
    t32=$(for s in "${scheds[@]}" 'spmm_vec4(1)' 'gnnadvisor(1, 32)'; do time_of f32 "$graph" "$F" "$s"; done | best)
    t16=$(for s in "${scheds[@]}" 'spmm_vec4(1)' 'gnnadvisor(1, 32)'; do time_of bf16 "$graph" "$F" "$s"; done | best)
    ratio=$(awk -v a="$t32" -v b="$t16" 'BEGIN { if (a == "" || b == "" || b == 0) print "?"; else printf "%.2f", a / b }')
    echo "  $g F=$F: f32 ${t32:-?} ms, bf16 ${t16:-?} ms, f32/bf16 ${ratio}x"
  done
done
exit $status
