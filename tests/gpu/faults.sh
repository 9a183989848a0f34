#!/usr/bin/env bash
# GPU faults on the GPU machine (issue 17): out of device memory, a launch
# the device refuses, a driver call failing mid-run (GOP_CUDA_FAIL), and a
# kernel that faults on a corrupted graph table, each reported with the CUDA
# call and the reason; the process goes on where the context survives, and
# refuses GPU work cleanly where it does not (tests/gpu/faults.c says how
# each is checked). Then the same through gopc, one process per case.
#
# Prepare here with tools/gpu-prepare.sh (it builds `faults` and the pack
# into .carry/gpu), then on the GPU machine:
#   bash tests/gpu/faults.sh .carry/gpu [OUT_DIR]
# which prints the log and writes it to OUT_DIR/faults.log (default $OUT, else
# /tmp). Exit status: 0 when every check passed.
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/faults.sh CARRY_DIR [OUT_DIR]" 1 "$@"
gpu_carry "$1"
gpu_out "${2:-${OUT:-/tmp}}"
log=$out/faults.log
pack=$carry/faults.pack
graph=$carry/datasets/cora.mtx.gz
[ -f "$graph" ] || graph=rmat:14:8
status=0
{
  echo "== $(gpu_name), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "== faults (one process: each case, then whether the next run works)"
  timeout 300 "$carry/faults" "$pack" "$graph"
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "(exit $rc)"

  echo "== gopc, one process per case"
  expect() { # expect NAME STATUS PATTERN -- COMMAND...: the exit status and a line of the output
    local name=$1 want=$2 pat=$3
    shift 4
    local text rc
    text=$("$@" 2>&1)
    rc=$?
    echo "-- $name: exit $rc"
    echo "$text" | sed 's/^/   | /' | head -8
    if [ "$rc" = "$want" ] && echo "$text" | grep -q -- "$pat"; then
      echo "PASS $name"
    else
      echo "FAIL $name (wanted exit $want and '$pat')"
      status=1
    fi
  }
  expect "a good run" 0 "agrees with the interpreter" -- \
    "$gopc" run --pack "$pack" --graph "$graph" --F 64 --reps 1 --check
  expect "a failed allocation" 1 "CUDA error in cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY" -- \
    env GOP_CUDA_FAIL=cuMemAlloc_v2:2 "$gopc" run --pack "$pack" --graph "$graph" --F 64 --reps 1
  expect "a failed launch" 1 "CUDA error in cuLaunchKernel" -- \
    env GOP_CUDA_FAIL=cuLaunchKernel:1 "$gopc" run --pack "$pack" --graph "$graph" --F 64 --reps 1
  expect "a sticky error at synchronisation" 1 "refuses further GPU work" -- \
    env GOP_CUDA_FAIL=cuCtxSynchronize:700 "$gopc" run --pack "$pack" --graph "$graph" --F 64 --reps 1
  echo "== done: $([ $status -eq 0 ] && echo every check passed || echo SOME CHECKS FAILED)"
} 2>&1 | tee "$log"
exit $status
