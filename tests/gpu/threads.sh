#!/usr/bin/env bash
# 8 threads, a CUDA stream each, device runs on shared graphs, on the GPU
# machine (docs/threads.md; tests/gpu/threads.c says what is checked).
#
# Prepare here (LLVM compiles the kernels into a cache folder of packs; the
# runner is built without LLVM, as the GPU machine has none):
#   bash tests/gpu/threads.sh --prepare [CARRY]  # fills CARRY/threads*
#                                               # (default .carry/gpu)
# (GOP_BUILD_LLVM and GOP_BUILD_NOLLVM name the build folders, default
# build-rel and build-nollvm), then on the GPU machine (carry CARRY):
#   bash tests/gpu/threads.sh CARRY [ITERS] [OUT_DIR]
# which prints the log and writes OUT_DIR/threads.log (default $OUT, else
# /tmp). ITERS: launches per thread (default 1000). Then, when
# compute-sanitizer is there, memcheck over THREADS_MEMCHECK_ITERS
# launches per thread (default 20; 0 leaves it out), within
# THREADS_MEMCHECK_TIMEOUT seconds (default 900). Exit status: 0 when
# every thread's outputs agree with the interpreter and memcheck found
# nothing.
if [ "${1:-}" = "--prepare" ]; then
  set -euo pipefail
  cd "$(dirname "$0")/../.."
  dest=${2:-.carry/gpu}
  llvm=${GOP_BUILD_LLVM:-build-rel}
  nollvm=${GOP_BUILD_NOLLVM:-build-nollvm}
  mkdir -p "$dest"
  [ -f "$llvm/CMakeCache.txt" ] || # a build of another type is kept as it is
    cmake -S . -B "$llvm" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$llvm" -j 2 --target gop_gpu_threads >/dev/null
  rm -rf "$dest/threads-kernels"
  GOP_CUDA_LIBRARY=/nonexistent/libcuda.so \
    "$llvm/tests/gop_gpu_threads" --prepare "$dest/threads-kernels"
  cmake -S . -B "$nollvm" -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$nollvm" -j 2 --target gop_gpu_threads >/dev/null
  strip -o "$dest/threads" "$nollvm/tests/gop_gpu_threads"
  echo "prepared $dest/threads and $dest/threads-kernels"
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
  # the same under compute-sanitizer's memcheck when it is there (slow:
  # fewer launches)
  iters=${THREADS_MEMCHECK_ITERS:-20}
  if [ "$iters" -gt 0 ] && command -v compute-sanitizer >/dev/null; then
    echo "== compute-sanitizer --tool memcheck, $iters launches per thread"
    timeout "${THREADS_MEMCHECK_TIMEOUT:-900}" compute-sanitizer --tool memcheck \
      --error-exitcode 9 "$carry/threads" "$carry/threads-kernels" "$iters"
    mc=$?
    echo "(exit $mc)"
    [ $rc -ne 0 ] || rc=$mc
  fi
  exit $rc
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
