#!/usr/bin/env bash
# tests/install/run.sh SUITE_DIR GOPC: `cmake --install` of the build that
# made GOPC into a temporary prefix, then examples/embed built against the
# installed library twice, with pkg-config and with find_package(gop), and
# run (on the interpreter when there is no GPU). Checks that libgop.so
# exports the public API and nothing else.
set -euo pipefail
suite=$(cd "$1" && pwd)
build=$(cd "$(dirname "$2")" && pwd)
src=$(cd "$suite/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$prefix/lib/libgop.so
for f in "$lib" "$prefix/include/gop.h" "$prefix/lib/pkgconfig/gop.pc" \
         "$prefix/lib/cmake/gop/gopConfig.cmake"; do
  [ -e "$f" ] || { echo "FAIL: not installed: $f"; exit 1; }
done
# only gop_* is exported (api/libgop.map)
others=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDB]$/ && $3 !~ /^gop_/ {print $3}' | head -5)
[ -z "$others" ] || { echo "FAIL: libgop.so exports more than gop_*: $others"; exit 1; }
# grep reads all of nm's output (past 4 KB, grep -q would end nm with
# SIGPIPE, which pipefail counts as a failure)
nm -D --defined-only "$lib" | grep ' T gop_run_launch_ptrs$' >/dev/null ||
  { echo "FAIL: gop_run_launch_ptrs is not exported"; exit 1; }

# A sanitized build's libgop.so needs the sanitizer's runtime first in the
# program's libraries: the example is then built sanitized too.
san=""
if grep -qs "^GOP_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" || ldd "$lib" | grep libasan >/dev/null; then
  san="-fsanitize=address,undefined"
  export ASAN_OPTIONS=detect_leaks=0
fi
export GOP_CUDA_LIBRARY=${GOP_CUDA_LIBRARY:-/nonexistent/libcuda.so} # CI: no GPU

echo "== pkg-config"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
${CC:-cc} $san -o "$tmp/embed-pc" "$src/examples/embed/embed.c" $(pkg-config --cflags --libs gop) -lm
LD_LIBRARY_PATH=$prefix/lib "$tmp/embed-pc" | tee "$tmp/pc.out"
grep -q "results ok" "$tmp/pc.out"

echo "== find_package(gop)"
cmake -S "$src/examples/embed" -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="$san" >/dev/null
cmake --build "$tmp/build" >/dev/null
"$tmp/build/embed" | tee "$tmp/cmake.out"
grep -q "results ok" "$tmp/cmake.out"
echo "install: ok"
