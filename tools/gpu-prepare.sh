#!/usr/bin/env bash
# Prepares what the GPU machine needs for bench/run-all.sh and
# tests/gpu/run.sh, in .carry/gpu/ (git-ignored; name `.carry/gpu` in the
# device tool's carry list; about 50 MB, under its 64 MiB limit):
#   gopc, gop        gopc and the REPL with LLVM's NVPTX backend linked in
#                    statically (xz'ed when the graphs take much room;
#                    tools/gpu-unpack.sh unpacks them on the GPU machine)
#   suite, gop_bench the GPU suite and benchmark runners, built without LLVM
#   faults           the GPU fault tests' runner (tests/gpu/faults.sh), and
#   faults.pack      copy_u_sum's kernel pack, which it breaks
#   packs/           the representative ops x named schedules x settings as
#                    kernel packs (docs/operators.md names the subset)
#   packs-all.tar.xz every stdlib op x named schedule x setting (xz'ed)
#   bench/           the benchmark's plan (bench/gop_bench.c) and its packs
#   python/          the Python package's GPU checks (tests/gpu/python_check.sh,
#                    tests/gpu/train.sh): libgop.so without LLVM,
#                    libsqlite3.so.0 beside it, and kernels/, every kernel
#                    the checks run (forward and derived backward) as packs
#   datasets/        the graphs, from ../shared/datasets
# Usage: tools/gpu-prepare.sh [GRAPH...]   (default: all 14 of MANIFEST.md)
# GOP_BENCH_TOP (default 3) is the number of the cost model's best points
# the benchmark measures per case, besides each strategy's best;
# GOP_BENCH_OPS (default: gop_bench's seven) the operators it plans;
# GOP_PREPARE_SUITE=0 leaves out the suite's packs (a benchmark-only call);
# GOP_PREPARE_ONLY=python prepares only python/ and the graphs (a few MB:
#   GOP_PREPARE_ONLY=python tools/gpu-prepare.sh cora pubmed ogbn-arxiv);
# GOP_PREPARE_ONLY=models only gopc and the graphs, for tests/gpu/models.sh
#   and bench/models.sh (GOP_PREPARE_ONLY=models tools/gpu-prepare.sh, by
#   default cora, pubmed, ogbn-arxiv and molhiv).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.carry/gpu
graphs=("$@")

# The Python package's check: a libgop.so without LLVM (the GPU machine has
# none) and the kernels it needs, compiled here into a cache folder of packs
# by a libgop.so with LLVM (both load them: the keys are the same).
prepare_python() {
  cmake -S . -B build-nollvm -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-nollvm --target gop_shared >/dev/null
  cmake -S . -B build-python -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-python --target gop_shared >/dev/null
  mkdir -p "$out/python"
  strip -o "$out/python/libgop.so" build-nollvm/libgop.so
  cp -L "$(ldd build-nollvm/libgop.so | awk '/libsqlite3/ {print $3}')" "$out/python/"
  GOP_LIBRARY=build-python/libgop.so GOP_CUDA_LIBRARY=/nonexistent/libcuda.so \
    GOP_CACHE_DIR="$out/python/kernels" PYTHONPATH=python \
    python3 tests/gpu/python_check.py --prepare
  # bench/train.py (tests/gpu/train.sh): every kernel its gradcheck and its
  # training call, forward and derived backward, the training's at the
  # schedule gop_choose_schedule picks for each call's graph and width
  # (gop.plan: the calls gop.nn's layers make) and at the default mapping;
  # no tuning database, as on the GPU machine
  env -u GOP_TUNE_DB GOP_LIBRARY=build-python/libgop.so \
    GOP_CUDA_LIBRARY=/nonexistent/libcuda.so GOP_CACHE_DIR="$out/python/kernels" \
    PYTHONPATH=python python3 bench/train.py --prepare --datasets ../shared/datasets \
    --graphs "${GOP_TRAIN_GRAPHS:-pubmed ogbn-arxiv}"
}
if [ "${GOP_PREPARE_ONLY:-}" = python ]; then
  [ ${#graphs[@]} -gt 0 ] || graphs=(cora pubmed ogbn-arxiv)
  rm -rf "$out" && mkdir -p "$out/datasets"
  prepare_python
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"; done
  du -sh "$out"
  exit 0
fi
if [ "${GOP_PREPARE_ONLY:-}" = models ]; then
  [ ${#graphs[@]} -gt 0 ] || graphs=(cora pubmed ogbn-arxiv molhiv)
  rm -rf "$out" && mkdir -p "$out/datasets"
  cmake -S . -B build-static -G Ninja -DGOP_STATIC=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-static --target gopc >/dev/null
  strip -o "$out/gopc" build-static/gopc
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"; done
  du -sh "$out"
  exit 0
fi
[ ${#graphs[@]} -gt 0 ] || graphs=(cora citeseer pubmed wiki-Vote ca-HepPh musae-facebook
  deezer-HU blogcatalog proteins delaunay_n16 soc-Slashdot0902 ogbn-arxiv cnr-2000 molhiv)
rm -rf "$out" && mkdir -p "$out/datasets"

cmake -S . -B build-static -G Ninja -DGOP_STATIC=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-static --target gopc gop_repl gop_gpu_suite gop_bench >/dev/null
cmake -S . -B build-nollvm -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-nollvm --target gop_gpu_suite gop_bench gop_gpu_faults >/dev/null
strip -o "$out/gopc" build-static/gopc
strip -o "$out/gop" build-static/gop
strip -o "$out/suite" build-nollvm/tests/gop_gpu_suite
strip -o "$out/gop_bench" build-nollvm/bench/gop_bench
# the GPU fault tests (tests/gpu/faults.sh): their runner and a pack to break
strip -o "$out/faults" build-nollvm/tests/gop_gpu_faults
build-static/gopc pack stdlib:copy_u_sum --schedule 'thread_edge(1, 1)' \
  -o "$out/faults.pack" >/dev/null
if [ "${GOP_PREPARE_SUITE:-1}" != 0 ]; then
  build-static/tests/gop_gpu_suite prepare "$out/packs"
  build-static/tests/gop_gpu_suite prepare "$out/packs-all" --all
  tar -C "$out" -cJf "$out/packs-all.tar.xz" packs-all && rm -rf "$out/packs-all"
fi
prepare_python
for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"; done
# The largest graphs first: if the GPU run's budget runs out, it runs out
# on the small graphs, whose cases take least time to redo.
order=()
for g in cnr-2000 molhiv ogbn-arxiv; do [[ " ${graphs[*]} " == *" $g "* ]] && order+=("$g"); done
for g in "${graphs[@]}"; do [[ " ${order[*]} " == *" $g "* ]] || order+=("$g"); done
build-static/bench/gop_bench plan "$out/bench" "$out/datasets" --graphs "${order[*]}" \
  --top "${GOP_BENCH_TOP:-3}" --grid "u_mul_e_sum:blogcatalog:64" \
  ${GOP_BENCH_OPS:+--ops "$GOP_BENCH_OPS"} | tail -1
# Many graphs leave no room for 60 MB of static binaries: compress them
# (bench/run-all.sh and tests/gpu/run.sh unpack them on the GPU machine).
if [ "$(du -sm "$out/datasets" | cut -f1)" -gt 16 ]; then xz -6 -T0 "$out/gopc" "$out/gop"; fi
du -sh "$out"
