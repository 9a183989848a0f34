#!/bin/bash
# Here (LLVM): the carry of run.sh. gop_bench plans the same rows three
# times, its code generator switched by the environment (a build made for
# this experiment): GOP_NOPRO=1 the rows loaded where used (before),
# neither: loaded at the top of the group (rows), GOP_PIPE=1: and the next
# row's entries an iteration ahead (ahead).
#   bash bench/results/2026-11-30-H200-group-row-loads/prepare.sh CARRY LLVM_BUILD GRAPHS OPS FS
set -eu
c=$1 llvm=$2 graphs=$3 ops=$4 fs=$5
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $(for g in $graphs; do [[ $g == *:* ]] || echo "$g"; done)
for v in before rows ahead; do
  env=()
  [ $v = before ] && env=(GOP_NOPRO=1)
  [ $v = ahead ] && env=(GOP_PIPE=1)
  env "${env[@]}" GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan \
    "$c/$v" "$c/datasets" --graphs "$graphs" --ops "$ops" --F "$fs" --top 3 | tail -1
done
for v in rows ahead; do
  cmp <(cut -f1-7 "$c/before/plan.txt") <(cut -f1-7 "$c/$v/plan.txt") >/dev/null ||
    { echo "plans differ: before, $v" >&2; exit 1; }
done
du -sh "$c"
