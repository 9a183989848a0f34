#!/usr/bin/env bash
# The main job: install what gop needs, build it, and run an operator of the
# standard library on a generated graph (R-MAT, Graph500's skewed generator).
# Extra arguments are passed to `gopc run` (e.g. --graph grid:256x256).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
./build/gopc graph rmat:14:16
./build/gopc run stdlib:u_mul_e_sum --graph rmat:14:16 --F 64 "$@"
