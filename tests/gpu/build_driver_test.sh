#!/usr/bin/env bash
# Builds tests/gpu/test_driver with gcc alone, for the GPU machines (they have
# gcc but no LLVM, flex or bison, so the whole library does not build there).
# It compiles only what the driver layer needs: runtime/'s driver files and
# ir/diag.c; no CUDA toolkit header is used.
#
#   tests/gpu/build_driver_test.sh [OUTDIR] [--run]
#
# OUTDIR defaults to /tmp/gop-gpu. With --run, runs the test after building;
# the exit status is then the test's. CC and CFLAGS are honoured.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=/tmp/gop-gpu
run=0
for arg in "$@"; do
  case "$arg" in
    --run) run=1 ;;
    *) out=$arg ;;
  esac
done
mkdir -p "$out"
${CC:-gcc} -std=gnu17 -O2 -g -Wall -Wextra -Werror ${CFLAGS:-} \
  -I"$root" -I"$root/include" \
  "$root"/runtime/cuda.c "$root"/runtime/dl.c "$root"/runtime/memory.c "$root"/runtime/devgraph.c \
  "$root"/runtime/module.c "$root"/graph/graph.c "$root"/graph/par.c "$root"/graph/groups.c "$root"/graph/panels.c "$root"/graph/reorder.c \
  "$root"/runtime/timing.c "$root"/ir/diag.c "$root"/ir/file.c "$root"/ir/limits.c "$root"/ir/names.c "$root"/tests/gpu/test_driver.c \
  -ldl -lpthread -lm -o "$out/test_driver"
echo "built $out/test_driver"
if [ "$run" = 1 ]; then
  exec "$out/test_driver"
fi
