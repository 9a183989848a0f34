#!/usr/bin/env bash
# tests/gpu/python_check.sh CARRY OUT: the Python package on the GPU machine
# (tests/gpu/python_check.py: every stdlib operator on torch CUDA tensors,
# streams, errors, the kernel cache, per-call overhead, GCN/GAT/SAGE/GIN
# forward against PyG on pubmed and ogbn-arxiv). CARRY is what
# tools/gpu-prepare.sh made (.carry/gpu): python/libgop.so (no LLVM: the
# GPU machine has none; SQLite linked in), python/kernels/
# (every kernel the run needs, as packs) and datasets/. Writes
# OUT/python_check.{json,md,log}.
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/python_check.sh CARRY OUT" 2 "$@"
gpu_python "$1"
gpu_out -a "$2"
python3 tests/gpu/python_check.py --datasets "$carry/datasets" --out "$out" \
  ${GOP_PYCHECK_ARGS:-} 2>&1 | tee "$out/python_check.log"
exit "${PIPESTATUS[0]}"
