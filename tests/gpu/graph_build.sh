#!/usr/bin/env bash
# tests/gpu/graph_build.sh CARRY OUT: graphs built on the GPU from a CUDA
# edge_index (tests/gpu/graph_build.py), in phases:
#   build    the device build against the host build on R-MAT (4M, 17M and
#            67M edges, generated on the GPU) and ogbn-arxiv, timed, its
#            arrays and statistics checked equal to the host build's and
#            copy_u_sum on both graphs bit for bit;
#   tables   the neighbour-group tables built on the GPU against the host's,
#            bit for bit (plain, two classes, 3 and 8 classes), on the
#            carried shared graphs, R-MAT 18-22 and R-MAT 18 at 64-bit
#            indices; two group schedules equal on both graphs; the build
#            with the G = 32 table timed (target: 67M edges in 50 ms);
#   gopc     `gopc run` wall time on R-MAT 24 at F = 64 (R-MAT 26 too with
#            GOP_GBUILD_ARGS=--rmat26: an H200, about 45 GB of host RAM);
#   index64  copy_u_sum at 64-bit against 32-bit indices (spmm_vec4(2),
#            spmm_groups(32, 2); R-MAT 20, 22, ogbn-arxiv; F = 64);
#   train    GraphSAGE on 60 mini-batches of ogbn-arxiv
#            (examples/minibatch/sage_neighborloader.py), time per step split
#            into graph build and compute, losses against PyG's;
#   capture  gop.BatchGraph's arrays after each load against build_arrays,
#            and GraphSAGE (1,024 and 4,096 seeds) and GCN trained through
#            gop.train.CapturedBatches (one CUDA graph a step) against PyG.
# About five minutes on an H100 with every phase but R-MAT 26.
#
# CARRY is what `tests/gpu/graph_build.sh --prepare` made here (.carry/gbuild,
# about 14 MB): python/libgop.so and gopc (no LLVM: the GPU machine has
# none; SQLite linked in), python/kernels/ (the packs the Python phases
# run), packs/ (copy_u_sum for gopc, 32- and 64-bit) and datasets/ (the
# smaller shared graphs and ogbn-arxiv). Writes OUT/graph_build.log and
# OUT/{graph_build,tables,gopc,index64,train,capture-*}.json. GOP_GBUILD_ARGS passes
# more options (--phases tables,index64; --skip train; --scales 18,20;
# --steps 30; --rmat26).
if [ "${1:-}" = --prepare ]; then
  # here, on a machine with LLVM: libgop.so and gopc without LLVM for the
  # GPU machine, and the kernels compiled by a build with LLVM (the keys are
  # the same)
  set -euo pipefail
  cd "$(dirname "$0")/../.."
  out=.carry/gbuild
  cmake -S . -B build-gtab-nollvm -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-gtab-nollvm -j2 --target gop_shared gopc >/dev/null
  cmake -S . -B build-gtab -G Ninja >/dev/null
  cmake --build build-gtab -j2 --target gop_shared gopc >/dev/null
  rm -rf "$out" && mkdir -p "$out/python/kernels" "$out/datasets" "$out/packs"
  strip -o "$out/python/libgop.so" build-gtab-nollvm/libgop.so
  strip -o "$out/gopc" build-gtab-nollvm/gopc
  env -u GOP_TUNE_DB GOP_LIBRARY=build-gtab/libgop.so GOP_CUDA_LIBRARY=/nonexistent/libcuda.so \
    GOP_CACHE_DIR="$out/python/kernels" PYTHONPATH=python \
    python3 tests/gpu/graph_build.py --prepare
  for p in "vec4 spmm_vec4(2)" "groups spmm_groups(32, 2)"; do
    name=${p%% *} sched=${p#* }
    build-gtab/gopc pack stdlib:copy_u_sum --schedule "$sched" --target sm_90 \
      -o "$out/packs/$name-32.pack" >/dev/null
    build-gtab/gopc pack stdlib:copy_u_sum --schedule "$sched" --target sm_90 --index64 \
      -o "$out/packs/$name-64.pack" >/dev/null
  done
  for g in cora citeseer pubmed wiki-Vote proteins ca-HepPh delaunay_n16 musae-facebook \
           ogbn-arxiv; do
    cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"
  done
  du -sh "$out"
  exit 0
fi
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/graph_build.sh CARRY OUT" 2 "$@"
gpu_python "$1" # GOP_LIBRARY, PYTHONPATH, a writable copy of the carried packs
gpu_out -a "$2"
unset GOP_TUNE_DB
echo "$(gpu_name)" | tee "$out/graph_build.log"
python3 tests/gpu/graph_build.py --datasets "$carry/datasets" --out "$out" --carry "$carry" \
  ${GOP_GBUILD_ARGS:-} 2>&1 | tee -a "$out/graph_build.log"
exit "${PIPESTATUS[0]}"
