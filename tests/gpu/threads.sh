#!/usr/bin/env bash
# 8 threads, a CUDA stream each, device runs on shared graphs, on the GPU
# machine (docs/threads.md; tests/gpu/threads.c says what is checked).
#
# Prepare here (LLVM compiles the kernels into a cache folder of packs; the
# runner is built without LLVM, as the GPU machine has none):
#   bash tests/gpu/threads.sh --prepare        # fills .carry/gpu/threads*
# then on the GPU machine (carry .carry/gpu):
#   bash tests/gpu/threads.sh .carry/gpu [ITERS] [OUT_DIR]
# which prints the log and writes OUT_DIR/threads.log (default $OUT, else
# /tmp). ITERS: launches per thread (default 1000). Exit status: 0 when
# every thread's outputs agree with the interpreter.
if [ "${1:-}" = "--prepare" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/../.."
  mkdir -p .carry/gpu
  cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build-rel -j 2 --target gop_gpu_threads >/dev/null
  GOP_CUDA_LIBRARY=/nonexistent/libcuda.so \
    build-rel/tests/gop_gpu_threads --prepare .carry/gpu/threads-kernels
  cmake -S . -B build-nollvm -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-nollvm -j 2 --target gop_gpu_threads >/dev/null
  strip -o .carry/gpu/threads build-nollvm/tests/gop_gpu_threads
  echo "prepared .carry/gpu/threads and .carry/gpu/threads-kernels"
  exit 0
fi
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/threads.sh CARRY_DIR [ITERS] [OUT_DIR]" 1 "$@"
carry=$1
gpu_out "${3:-${OUT:-/tmp}}"
log=$out/threads.log
{
  echo "== $(gpu_name), $(date -u +%Y-%m-%dT%H:%MZ)"
  timeout 600 "$carry/threads" "$carry/threads-kernels" "${2:-1000}"
  rc=$?
  echo "(exit $rc)"
  # the same under compute-sanitizer's racecheck when it is there (slow:
  # fewer launches)
  if command -v compute-sanitizer >/dev/null; then
    echo "== compute-sanitizer --tool memcheck, 20 launches per thread"
    timeout 900 compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$carry/threads" "$carry/threads-kernels" 20
    echo "(exit $?)"
  fi
  exit $rc
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
