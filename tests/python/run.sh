#!/usr/bin/env bash
# tests/python/run.sh SUITE_DIR GOPC: the Python package (python/) on the
# libgop.so of the build that made GOPC: its unit tests on NumPy (the
# reference interpreter), SciPy when installed, CPU torch when installed
# (skipped cleanly when not). tools/setup.sh installs python3-numpy.
set -euo pipefail
suite=$(cd "$1" && pwd)
build=$(cd "$(dirname "$2")" && pwd)
src=$(cd "$suite/../.." && pwd)
export GOP_LIBRARY=$build/libgop.so
[ -e "$GOP_LIBRARY" ] || { echo "FAIL: $GOP_LIBRARY was not built"; exit 1; }
# The first python3 on PATH with NumPy: a user's own Python (pyenv, a
# virtual environment) may come first without it, beside Debian's.
py=
for p in python3 /usr/bin/python3; do
  "$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] ||
  { echo "FAIL: python3 has no numpy (tools/setup.sh installs python3-numpy)"; exit 1; }
# A sanitized build's libgop.so needs the sanitizer's runtime loaded first;
# Python itself is not leak-free, so leak checking stays with the C tests.
if grep -qs "^GOP_SANITIZE:BOOL=ON" "$build/CMakeCache.txt" || ldd "$GOP_LIBRARY" | grep libasan >/dev/null; then
  export LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)
  export ASAN_OPTIONS=detect_leaks=0
fi
export GOP_CUDA_LIBRARY=/nonexistent/libcuda.so GOP_CACHE_DIR=$(mktemp -d)
trap 'rm -rf "$GOP_CACHE_DIR"' EXIT
cd "$src/python"
"$py" -m unittest discover -s tests -v 2>&1 | tail -40
exit "${PIPESTATUS[0]}"
