#!/usr/bin/env bash
# tests/gpu/python_check.sh CARRY OUT: the Python package on the GPU machine
# (tests/gpu/python_check.py: every stdlib operator on torch CUDA tensors,
# streams, errors, the kernel cache, per-call overhead, GCN/GAT/SAGE/GIN
# forward against PyG on pubmed and ogbn-arxiv). CARRY is what
# tools/gpu-prepare.sh made (.carry/gpu): python/libgop.so (no LLVM: the
# GPU machine has none), python/libsqlite3.so.0 beside it, python/kernels/
# (every kernel the run needs, as packs) and datasets/. Writes
# OUT/python_check.{json,md,log}.
set -uo pipefail
cd "$(dirname "$0")/../.."
carry=$(cd "${1:?usage: tests/gpu/python_check.sh CARRY OUT}" && pwd)
out=${2:?usage: tests/gpu/python_check.sh CARRY OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -e "$carry/python/libgop.so" ] || {
  echo "no $carry/python/libgop.so: run tools/gpu-prepare.sh (or GOP_PREPARE_ONLY=python)"; exit 1; }
export GOP_LIBRARY=$carry/python/libgop.so
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
# a writable copy of the carried packs: the check also counts its hits
export GOP_CACHE_DIR=$(mktemp -d)
trap 'rm -rf "$GOP_CACHE_DIR"' EXIT
cp "$carry"/python/kernels/*.gopk "$GOP_CACHE_DIR"/
python3 tests/gpu/python_check.py --datasets "$carry/datasets" --out "$out" \
  ${GOP_PYCHECK_ARGS:-} 2>&1 | tee "$out/python_check.log"
exit "${PIPESTATUS[0]}"
