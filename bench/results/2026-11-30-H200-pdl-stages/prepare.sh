#!/bin/bash
# Here (LLVM): the carry of run.sh. gop_bench plans the same rows three times,
# its code generator switched by the environment (a build made for this
# experiment): neither: the kernels as before; GOP_EXP_PDL=1: every sm_90
# kernel starts with griddepcontrol.wait and griddepcontrol.launch_dependents;
# GOP_EXP_PDL=late: the wait before each access to an output or temporary
# instead (inputs and the graph are read before it).
#   bash bench/results/2026-11-30-H200-pdl-stages/prepare.sh CARRY LLVM_BUILD GRAPHS OPS FS
set -eu
c=$1 llvm=$2 graphs=$3 ops=$4 fs=$5
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $(for g in $graphs; do [[ $g == *:* ]] || echo "$g"; done)
for v in before pdl late; do
  env=()
  [ $v = pdl ] && env=(GOP_EXP_PDL=1)
  [ $v = late ] && env=(GOP_EXP_PDL=late)
  env "${env[@]}" GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan \
    "$c/$v" "$c/datasets" --graphs "$graphs" --ops "$ops" --F "$fs" --top 2 | tail -1
done
for v in pdl late; do
  cmp <(cut -f1-7 "$c/before/plan.txt") <(cut -f1-7 "$c/$v/plan.txt") >/dev/null ||
    { echo "plans differ: before, $v" >&2; exit 1; }
done
du -sh "$c"
