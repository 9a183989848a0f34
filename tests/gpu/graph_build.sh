#!/usr/bin/env bash
# tests/gpu/graph_build.sh CARRY OUT: graphs built on the GPU from a CUDA
# edge_index (tests/gpu/graph_build.py): the device build against the host
# build on R-MAT (4M, 17M and 67M edges, generated on the GPU) and
# ogbn-arxiv, timed, its arrays and statistics checked equal to the host
# build's and copy_u_sum on both graphs bit for bit; then GraphSAGE trained
# on 60 mini-batches of ogbn-arxiv (examples/minibatch/sage_neighborloader.py)
# with time per step split into graph build and compute, losses against
# PyG's. About two minutes on an H100.
#
# CARRY is what `tests/gpu/graph_build.sh --prepare` made here (.carry/gbuild,
# a few MB): python/libgop.so (no LLVM: the GPU machine has none; SQLite
# linked in), python/kernels/ (the packs both parts run) and
# datasets/ogbn-arxiv.mtx.gz. Writes OUT/graph_build.{log,json} and
# OUT/train.json. GOP_GBUILD_ARGS passes more options (--skip train,
# --scales 18,20, --steps 30).
if [ "${1:-}" = --prepare ]; then
  # here, on a machine with LLVM: a libgop.so without LLVM for the GPU
  # machine, and the kernels compiled by one with LLVM (the keys are the same)
  set -euo pipefail
  cd "$(dirname "$0")/../.."
  out=.carry/gbuild
  cmake -S . -B build-gbuild-nollvm -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-gbuild-nollvm --target gop_shared >/dev/null
  cmake -S . -B build-gbuild -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-gbuild --target gop_shared >/dev/null
  rm -rf "$out" && mkdir -p "$out/python/kernels" "$out/datasets"
  strip -o "$out/python/libgop.so" build-gbuild-nollvm/libgop.so
  env -u GOP_TUNE_DB GOP_LIBRARY=build-gbuild/libgop.so GOP_CUDA_LIBRARY=/nonexistent/libcuda.so \
    GOP_CACHE_DIR="$out/python/kernels" PYTHONPATH=python \
    python3 tests/gpu/graph_build.py --prepare
  cp ../shared/datasets/ogbn-arxiv.mtx.gz "$out/datasets/"
  du -sh "$out"
  exit 0
fi
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/graph_build.sh CARRY OUT" 2 "$@"
gpu_python "$1" # GOP_LIBRARY, PYTHONPATH, a writable copy of the carried packs
gpu_out -a "$2"
unset GOP_TUNE_DB
echo "$(gpu_name)" | tee "$out/graph_build.log"
python3 tests/gpu/graph_build.py --datasets "$carry/datasets" --out "$out" \
  ${GOP_GBUILD_ARGS:-} 2>&1 | tee -a "$out/graph_build.log"
exit "${PIPESTATUS[0]}"
