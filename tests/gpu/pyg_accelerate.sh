#!/usr/bin/env bash
# tests/gpu/pyg_accelerate.sh CARRY OUT: unmodified PyG models (GCN,
# GraphSAGE, GAT) under gop.pyg.accelerate on the GPU machine, against
# PyG eager and compiled, on ogbn-arxiv (tests/gpu/pyg_accelerate.py: the
# kernels carried, every layer on gop, the losses of 20 training steps
# within 1e-5 of PyG's, time per step). About 2 minutes; writes
# OUT/pyg_accelerate.{json,md,log}. GOP_PYG_ARGS passes more options
# (e.g. '--models "gcn gat"', '--deadline 0' to leave torch.compile out).
#
# tests/gpu/pyg_accelerate.sh --prepare [CARRY]: run here (LLVM, no GPU)
# first; makes CARRY (default .carry/pyg, a few MB): python/libgop.so
# built without LLVM (the GPU machine has none; static, build-pyg-nollvm),
# python/kernels/ (every kernel the run calls, compiled as packs by a
# libgop.so with LLVM, build-pyg) and datasets/ogbn-arxiv.mtx.gz.
source "$(dirname "$0")/../../tools/gpu-common.sh"
if [ "${1:-}" = --prepare ]; then
  set -e
  carry=${2:-.carry/pyg}
  # the first python3 with NumPy (as tests/python/run.sh): gop's graphs need it
  py=
  for p in python3 /usr/bin/python3; do
    "$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }
  done
  [ -n "$py" ] || { echo "no python3 with numpy"; exit 1; }
  cmake -S . -B build-pyg-nollvm -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-pyg-nollvm --target gop_shared >/dev/null
  cmake -S . -B build-pyg -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-pyg --target gop_shared -j2 >/dev/null
  rm -rf "$carry" && mkdir -p "$carry/python/kernels" "$carry/datasets"
  strip -o "$carry/python/libgop.so" build-pyg-nollvm/libgop.so
  # no tuning database on either side: "auto" is the cost model's pick here
  # and there
  env -u GOP_TUNE_DB GOP_LIBRARY=build-pyg/libgop.so GOP_CUDA_LIBRARY=/nonexistent/libcuda.so \
    GOP_CACHE_DIR="$carry/python/kernels" PYTHONPATH=python:tests/gpu \
    "$py" tests/gpu/pyg_accelerate.py --prepare --datasets ../shared/datasets
  cp ../shared/datasets/ogbn-arxiv.mtx.gz "$carry/datasets/"
  du -sh "$carry"
  exit 0
fi
gpu_usage "tests/gpu/pyg_accelerate.sh CARRY OUT  (or --prepare [CARRY])" 2 "$@"
gpu_python "$1" # GOP_LIBRARY, PYTHONPATH, a writable copy of the carried packs
gpu_out -a "$2"
unset GOP_TUNE_DB
export PYTHONPATH=$PWD/tests/gpu:$PYTHONPATH
eval "python3 tests/gpu/pyg_accelerate.py --datasets \"\$carry/datasets\" --out \"\$out\" \
  ${GOP_PYG_ARGS:-}" 2>&1 | tee "$out/pyg_accelerate.log"
exit "${PIPESTATUS[0]}"
