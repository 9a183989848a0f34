#!/usr/bin/env bash
# The thread stress test (tests/unit/test_threads.c) under ThreadSanitizer:
# a gcc -fsanitize=thread build of the library, the test and the stand-in
# driver in build-tsan/, then the test with ITERS iterations per thread
# (default 25: about 4 minutes on a 2-core machine; GOP_THREAD_DEVICE_ITERS
# sets the device case's launches apart, e.g. 1,000). Exit status: the test's, and 66 when TSan reported
# a race. Not part of tools/test.sh: the instrumented build alone takes
# about 8 minutes on CI's 2 cores (docs/reliability.md).
#   tools/tsan.sh [ITERS]
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-25}
jobs=$(( $(nproc) < 2 ? 1 : 2 ))
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build build-tsan -j "$jobs" --target test_threads gop_fake_cuda
# CK_FORK=no: one process, so that TSan sees every thread of every case
GOP_FAKE_CUDA=$PWD/build-tsan/tests/libgop_fake_cuda.so GOP_THREAD_ITERS=$iters CK_FORK=no \
  TSAN_OPTIONS="exitcode=66 history_size=2 suppressions=$PWD/tests/tsan.supp ${TSAN_OPTIONS:-}" \
  build-tsan/tests/test_threads
