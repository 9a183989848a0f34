#!/usr/bin/env bash
# tests/install/wheel.sh: the Python wheel as a user gets it (CI, from
# tools/test.sh). Builds it with `pip wheel ./python` (libgop.so built with
# -DGOP_STATIC=ON in build-wheel/, or $GOP_WHEEL_BUILD_DIR), checks its tag
# and that its libgop.so needs glibc only and exports gop_* only, installs
# it into a fresh virtual environment, and there compiles stdlib copy_u_sum
# to PTX (tests/install/wheel_check.py), which ptxas assembles when the
# CUDA toolkit is present. The machine's LLVM 16 stays installed: the check
# proves from the process's own mappings that it is not loaded.
#
# Offline: the wheel is built without build isolation (Debian's setuptools
# and wheel: python3-setuptools, python3-wheel) and installed with
# --no-index into an environment that sees the system's site-packages for
# NumPy, the package's one dependency; gop is in none of them.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS

# Debian's python3 has venv, setuptools, wheel and NumPy (tools/setup.sh);
# a python3 first on PATH (pyenv) may lack them
py=
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import venv, ensurepip, setuptools, wheel, numpy' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "FAIL: no python3 with venv, setuptools, wheel and numpy" \
  "(tools/setup.sh installs python3-venv python3-setuptools python3-wheel python3-numpy)"; exit 1; }

echo "== pip wheel ./python"
env -u GOP_LIBRARY -u GOP_NO_LIBRARY GOP_BUILD_JOBS="${GOP_BUILD_JOBS:-$(nproc)}" \
  "$py" -m pip wheel -v --no-build-isolation --no-deps --no-index ./python -w "$tmp/dist" \
  >"$tmp/pip-wheel.log" 2>&1 || { tail -30 "$tmp/pip-wheel.log"; echo "FAIL: pip wheel"; exit 1; }
grep -h "gop: " "$tmp/pip-wheel.log" | sed "s/^ *//" || true
whl=$(ls "$tmp"/dist/gop-*.whl)
name=$(basename "$whl")
arch=$(uname -m)
[[ $name == gop-*-py3-none-linux_$arch.whl ]] ||
  { echo "FAIL: $name: expected the tag py3-none-linux_$arch"; exit 1; }
echo "ok: $name, $(stat -c %s "$whl") bytes"

echo "== install into a fresh virtual environment"
# Without its own pip (ensurepip costs 20 s here): the system's pip
# installs into it (pip >= 22.3: --python), offline; NumPy from the system
"$py" -m venv --without-pip --system-site-packages "$tmp/venv"
vpy=$tmp/venv/bin/python
"$py" -m pip --python "$vpy" install --no-index --disable-pip-version-check -q "$whl"
lib=$("$vpy" -c 'import importlib.util, os; s = importlib.util.find_spec("gop"); print(os.path.join(os.path.dirname(s.origin), "libgop.so"))')
[ -f "$lib" ] || { echo "FAIL: the wheel installed no $lib"; exit 1; }
case $lib in "$tmp/venv/"*) ;; *) echo "FAIL: gop resolves to $lib, outside the environment"; exit 1;; esac

# glibc only: every ldd line is glibc's (or the kernel's vDSO)
ldd "$lib" | sed 's/^/  /'
bad=$(ldd "$lib" | grep -vE '^\s*(linux-vdso\.so|lib(c|m|pthread|dl|rt)\.so\.[0-9]|/lib(64)?/ld-linux|ld-linux)' || true)
[ -z "$bad" ] || { echo "FAIL: libgop.so needs more than glibc:"; echo "$bad"; exit 1; }
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "ok: libgop.so needs $needed(glibc only; libcuda is opened at run time)"
# awk reads all of nm's output (an early exit would end nm with SIGPIPE)
others=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ && $3 !~ /^gop_/ && n++ < 5 {print $3}')
[ -z "$others" ] || { echo "FAIL: libgop.so exports more than gop_*: $others"; exit 1; }
echo "ok: exports gop_* only ($(nm -D --defined-only "$lib" | grep -c ' T gop_') functions)"

echo "== compile an operator to PTX from Python, in the environment"
(cd "$tmp" && env -u GOP_LIBRARY -u PYTHONPATH GOP_CACHE_DIR="$tmp/cache" \
   "$vpy" "$src/tests/install/wheel_check.py" "$tmp/copy_u_sum.ptx")
ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)
if [ -n "$ptxas" ]; then
  "$ptxas" -arch=sm_80 -o "$tmp/copy_u_sum.cubin" "$tmp/copy_u_sum.ptx"
  echo "ok: ptxas assembles it for sm_80"
else
  echo "skip: no ptxas (CUDA toolkit) to assemble it"
fi
echo "wheel: ok ($((SECONDS - start)) s)"
