#!/usr/bin/env bash
# tests/gpusuite/run.sh SUITE_DIR GOPC: the GPU suite's runner
# (tests/gpu/suite.c) end to end on the stand-in driver
# (tests/unit/fake_cuda.c, $GOP_FAKE_CUDA), with and without --no-poison,
# the mode tests/gpu/reliability.sh runs under compute-sanitizer's
# initcheck. Three packs, one kind of output each: plain stores (u_dot_v),
# an output the op fills itself (u_mul_e_sum under gnnadvisor: `filled`,
# passes/fill.c) and a reduction target the runtime fills with its
# identity (copy_u_max by edges: -inf). The stand-in runs no kernel and
# hands out zeroed memory, so every case fails its check (exit status 1),
# and how it fails says what was written before the run:
#   - by default the checked run poisons what the kernels write whole:
#     the first two read back NaN; the timed runs are made (the stand-in's
#     events say 0.01 ms);
#   - --no-poison leaves them as allocated: they read back 0; the
#     reduction target still gets -inf; one run a pack, nothing timed
#     (median 0), even with --reps.
# The runner is $GOP_GPU_SUITE (set by ctest), else tests/gop_gpu_suite
# beside GOPC.
set -u
source "$(dirname "$0")/../golden.sh"
golden_setup "$@"
golden_stand_in GOP_GPU_SUITE tests/gop_gpu_suite gop_gpu_suite
suite=$runner
# expect MESSAGE COMMAND...: counts a pass when COMMAND succeeds, else a
# failure saying MESSAGE
expect() {
  local msg=$1
  shift
  if "$@"; then golden_ok; else golden_bad "$msg"; fi
}

mkdir -p "$work/packs"
: >"$work/packs/list.txt"
while IFS='|' read -r name op sched; do
  if GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$gopc" pack "stdlib:$op" --schedule "$sched" \
       --target sm_90 -o "$work/packs/$name.pack" >"$work/pack.log" 2>&1; then
    printf '%s\t%s\t%s\n' "$op" "$sched" "$name.pack" >>"$work/packs/list.txt"
  else
    golden_bad "pack $op under $sched: $(tail -3 "$work/pack.log")"
  fi
done <<'LIST'
plain|u_dot_v|thread_edge(1, 1)
filled|u_mul_e_sum|gnnadvisor(4, 32)
reduced|copy_u_max|thread_edge(1, 1)
LIST
expect "u_mul_e_sum under gnnadvisor(4, 32) has no filled tensor" grep -q ' filled$' "$work/packs/filled.pack"

# run NAME ARGS...: the runner on grid:4x3 at F = 8 with 3 timed runs,
# into $work/NAME.log and $work/NAME.csv
run() {
  local name=$1
  shift
  GOP_CUDA_LIBRARY="$GOP_FAKE_CUDA" "$suite" run "$work/packs" grid:4x3 --F 8 --reps 3 \
    --csv "$work/$name.csv" "$@" >"$work/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 1 ] || golden_bad "$name: exit status $rc, not 1 (the stand-in's outputs fail the check): $(tail -3 "$work/$name.log")"
}
# fails NAME OP TEXT: OP's line in NAME's log is a FAIL holding TEXT
fails() {
  if grep -E "^FAIL .* $2 " "$work/$1.log" | grep -qF -- "$3"; then golden_ok; else
    golden_bad "$1: $2 does not fail with '$3': $(grep -E " $2 " "$work/$1.log")"
  fi
}
# medians NAME: the median_ms column of NAME's CSV (the schedule holds
# commas inside quotes: counted from the end)
medians() { tail -n +2 "$work/$1.csv" | awk -F, '{ print $(NF - 2) }' | sort -u | tr '\n' ' '; }

run poisoned
fails poisoned u_dot_v "S[0]: got nan,"
fails poisoned u_mul_e_sum "Y[0]: got nan,"
fails poisoned copy_u_max "Y[0]: got -inf,"
expect "poisoned: median times $(medians poisoned), want 0.01000 (timed)" \
  [ "$(medians poisoned)" = "0.01000 " ]
expect "poisoned: the log names --no-poison" \
  test "$(grep -c -- '--no-poison' "$work/poisoned.log")" -eq 0

run unpoisoned --no-poison
expect "unpoisoned: the log does not say --no-poison" grep -q '^# --no-poison: ' "$work/unpoisoned.log"
fails unpoisoned u_dot_v "S: relative L2 1 >= 1e-5" # every element 0
fails unpoisoned u_mul_e_sum "Y: relative L2 1 >= 1e-5"
fails unpoisoned copy_u_max "Y[0]: got -inf,"
expect "unpoisoned: median times $(medians unpoisoned), want 0.00000 (one run, untimed)" \
  [ "$(medians unpoisoned)" = "0.00000 " ]
n=$(tail -n +2 "$work/unpoisoned.csv" | wc -l)
expect "unpoisoned: $n CSV rows, want 3" [ "$n" -eq 3 ]

golden_summary "gpusuite: "
