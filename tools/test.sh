#!/usr/bin/env bash
# The whole test suite, as CI runs it: install what gop needs, build with
# warnings as errors and run every test; build the Python wheel and test it
# in a fresh virtual environment (tests/install/wheel.sh); then build again with
# AddressSanitizer + UndefinedBehaviorSanitizer and run every test again
# but the ptxas matrix;
# then run each libFuzzer harness for a short time (tests/fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
jobs=$(nproc)

echo "== build (warnings are errors) and test"
cmake -S . -B build-ci -G Ninja -DGOP_WERROR=ON >/dev/null
cmake --build build-ci -j "$jobs"
ctest --test-dir build-ci --output-on-failure -j "$jobs"

echo "== the Python wheel: glibc only, installed in a fresh virtual environment"
GOP_BUILD_JOBS=$jobs bash tests/install/wheel.sh

echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer and test"
cmake -S . -B build-asan -G Ninja -DGOP_WERROR=ON -DGOP_SANITIZE=ON \
      -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j "$jobs"
# Sanitized code runs a few times slower: so may each test. The ptxas
# matrix (golden_ptxas, about 4,000 assemblies, most of its time in the
# toolkit's ptxas) ran in the build above; the sanitized emit paths it
# would add are those test_codegen, test_packs and golden_index64 run here;
# bench_cuda_builds (nvcc on bench/'s CUDA programs) has nothing sanitized.
# GOP_TEST_QUICK: the tests that interpret whole real graphs, build the
# largest generated ones or lower a whole schedule space per case take a
# subset (each names its own; the build above ran them all).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  GOP_TEST_QUICK=1 CK_TIMEOUT_MULTIPLIER=4 ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 3600 \
  -E '^(golden_ptxas|bench_cuda_builds)$'

echo "== fuzz: every libFuzzer harness for a short fixed time (docs/fuzzing.md)"
# A separate clang configure (the project builds with gcc); no LLVM needed:
# the harnesses read, check, schedule, lower and interpret, but emit no PTX.
CC=clang-14 cmake -S . -B build-fuzz -G Ninja -DGOP_FUZZ=ON -DGOP_WITH_LLVM=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzz
GOP_FUZZ_ARTIFACTS=$PWD/build-fuzz/artifacts bash tests/fuzz/run.sh build-fuzz "${GOP_FUZZ_SECONDS:-20}"

