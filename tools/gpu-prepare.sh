#!/usr/bin/env bash
# Prepares what the GPU machine needs for tests/gpu/run.sh, in .carry/gpu/
# (git-ignored; name `.carry` in the device tool's carry list):
#   gopc        a gopc with LLVM's NVPTX backend linked in statically
#   suite       the GPU suite runner, built without LLVM
#   packs/      every stdlib op x named schedule x setting as kernel packs
#   datasets/   the graphs the suite runs on, from ../shared/datasets
# Usage: tools/gpu-prepare.sh [GRAPH...]   (default: the suite's six graphs)
set -euo pipefail
cd "$(dirname "$0")/.."
out=.carry/gpu
graphs=("$@")
[ ${#graphs[@]} -gt 0 ] || graphs=(cora citeseer pubmed blogcatalog molhiv cnr-2000)
rm -rf "$out" && mkdir -p "$out/datasets"

cmake -S . -B build-static -G Ninja -DGOP_STATIC=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-static --target gopc gop_gpu_suite >/dev/null
cmake -S . -B build-nollvm -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-nollvm --target gop_gpu_suite >/dev/null
strip -o "$out/gopc" build-static/gopc
strip -o "$out/suite" build-nollvm/tests/gop_gpu_suite
build-static/tests/gop_gpu_suite prepare "$out/packs"
for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"; done
du -sh "$out"
