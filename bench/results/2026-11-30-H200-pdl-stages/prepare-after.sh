#!/bin/bash
# Here (LLVM), after the change was built into gop: the carry's gop_bench
# rebuilt from the tree (its runtime launches a kernel that waits with
# programmatic stream serialization), and after/: the same rows as before/
# (prepare.sh's plan by the compiler before the change), compiled by gop's
# code generator as it now is, filtered as filter.sh does.
#   bash bench/results/2026-11-30-H200-pdl-stages/prepare-after.sh CARRY LLVM_BUILD GRAPHS OPS FS
set -eu
c=$1 llvm=$2 graphs=$3 ops=$4 fs=$5
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $(for g in $graphs; do [[ $g == *:* ]] || echo "$g"; done)
rm -rf "$c/after" "$c/pdl" "$c/late"
GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan \
  "$c/after" "$c/datasets" --graphs "$graphs" --ops "$ops" --F "$fs" --top 2 | tail -1
bash bench/results/2026-11-30-H200-pdl-stages/filter.sh "$c" after
cmp <(cut -f1-7 "$c/before/plan.txt") <(cut -f1-7 "$c/after/plan.txt") >/dev/null ||
  { echo "plans differ: before, after" >&2; exit 1; }
du -sh "$c"
