# tools/gpu-common.sh: what the scripts run on the GPU machine share
# (tests/gpu/*.sh, bench/run-all.sh, bench/models.sh, bench/reorder.sh):
# the arguments, the carry folder tools/gpu-prepare.sh made, the output
# folder, the carried Python package, the GPU's name and gopc run's time.
# Sourced, not run. It needs bash, coreutils and python3 only: the GPU
# machine has no LLVM (and maybe no xz: tools/gpu-unpack.sh).
#
#   source "$(dirname "$0")/../../tools/gpu-common.sh"  # set -uo pipefail,
#                                                      # cd to the repository
#   gpu_usage "tests/gpu/x.sh CARRY OUT" 2 "$@"  # fewer than 2 arguments:
#                                                # the usage, exit 1
#   gpu_carry [-a] "$1"     # $carry ($1; -a: absolute) unpacked, $gopc
#   gpu_out [-a] "$2" [SUB...]  # $out and $out/SUB made ($2; -a: absolute)
#   gpu_python "$1"         # the carried Python package (below)
#   gpu_name                # "NVIDIA H100 80GB HBM3, 550.54.15", or "no GPU"
#   ... | gpu_ms            # the median time `gopc run` printed, in ms
#   gpu_bench_carry OUT BUILD GRAPH...  # here: a gop_bench benchmark's carry
#   gpu_gopc_carry OUT GRAPH...         # here: the static gopc and graphs
#
# Paths given relative stay relative (to the repository, where the
# scripts run), so that what the scripts print is what they printed before.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

# gpu_usage USAGE MIN ARGS...: exits 1 after the usage line when one of
# the first MIN of ARGS is missing or empty.
gpu_usage() {
  local usage=$1 min=$2 i
  shift 2
  for ((i = 1; i <= min; i++)); do
    [ -n "${!i:-}" ] || { echo "usage: $usage" >&2; exit 1; }
  done
}

# gpu_carry [-a] CARRY: $carry, $gopc; what tools/gpu-prepare.sh
# compressed is unpacked (tools/gpu-unpack.sh).
gpu_carry() {
  local abs=0
  [ "$1" = -a ] && { abs=1; shift; }
  carry=$1
  [ -d "$carry" ] || { echo "no folder $carry: prepare it with tools/gpu-prepare.sh" >&2; exit 1; }
  [ $abs = 1 ] && carry=$(cd "$carry" && pwd)
  gopc=$carry/gopc
  bash tools/gpu-unpack.sh "$carry" || exit 1
}

# gpu_out [-a] OUT [SUB...]: $out, made with its subfolders SUB.
gpu_out() {
  local abs=0 s
  [ "$1" = -a ] && { abs=1; shift; }
  out=$1
  shift
  mkdir -p "$out" || exit 1
  for s in "$@"; do mkdir -p "$out/$s" || exit 1; done
  [ $abs = 1 ] && out=$(cd "$out" && pwd)
  return 0
}

# gpu_python CARRY: the Python package of the checkout on the carried
# libgop.so (built without LLVM: the GPU machine has none), with a
# writable kernel cache holding a copy of the carried packs (the checks
# count its hits), removed on exit. Sets $carry (absolute).
gpu_python() {
  [ -d "$1" ] || { echo "no folder $1: prepare it with tools/gpu-prepare.sh" >&2; exit 1; }
  carry=$(cd "$1" && pwd)
  [ -e "$carry/python/libgop.so" ] || {
    echo "no $carry/python/libgop.so: run tools/gpu-prepare.sh (or GOP_PREPARE_ONLY=python)"; exit 1; }
  export GOP_LIBRARY=$carry/python/libgop.so
  export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
  GOP_CACHE_DIR=$(mktemp -d)
  export GOP_CACHE_DIR
  trap 'rm -rf "$GOP_CACHE_DIR"' EXIT
  cp "$carry"/python/kernels/*.gopk "$GOP_CACHE_DIR"/
}

# gpu_name: the GPU's name and driver version, or "no GPU".
gpu_name() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU"
}

# gpu_ms: reads `gopc run`'s output, prints its median time in ms (nothing
# when it printed none: a failed or interpreted run).
gpu_ms() {
  sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}

# gpu_bench_carry OUT LLVM_BUILD GRAPH...: here, where there is LLVM, the
# carry of a benchmark that gop_bench plans (bench/sddmm.sh,
# bench/softmax.sh): OUT made afresh with gop_bench built without LLVM (in
# $GOP_BUILD_NOLLVM, default build-nollvm: what runs on the GPU machine)
# and the graphs GRAPH... from ../shared/datasets, and gop_bench built in
# LLVM_BUILD, which plans (its packs compile here).
# gpu_gopc_carry OUT GRAPH...: here, a carry of the static gopc (LLVM's
# NVPTX backend linked in, build-static; stripped and xz'd, gpu_carry
# unpacks it) and the named shared graphs, OUT made afresh.
gpu_gopc_carry() {
  local out=$1 g
  shift
  rm -rf "$out" && mkdir -p "$out/datasets" || return 1
  cmake -S . -B build-static -G Ninja -DGOP_STATIC=ON -DCMAKE_BUILD_TYPE=Release >/dev/null ||
    return 1
  cmake --build build-static --target gopc >/dev/null || return 1
  strip -o "$out/gopc" build-static/gopc && xz -6 -T0 "$out/gopc" || return 1
  for g in "$@"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/" || return 1; done
}

gpu_bench_carry() {
  local out=$1 llvm=$2 nollvm=${GOP_BUILD_NOLLVM:-build-nollvm} g
  shift 2
  rm -rf "$out" && mkdir -p "$out/datasets" || return 1
  cmake --build "$llvm" --target gop_bench >/dev/null || return 1
  cmake -S . -B "$nollvm" -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null || return 1
  cmake --build "$nollvm" --target gop_bench >/dev/null || return 1
  strip -o "$out/gop_bench" "$nollvm/bench/gop_bench" || return 1
  for g in "$@"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/" || return 1; done
}
