#!/bin/bash
# Here (LLVM): the carry of run.sh. The same rows planned twice by
# gop_bench: before/ by a build of the compiler before the late wait
# (BEFORE_BUILD: every stage after the first waits at its start), late/ by
# the tree's (AFTER_BUILD: a neighbour-group stage reading nothing an
# earlier stage writes waits only before its writes and its return); the
# rows cut as 2026-11-30-H200-pdl-stages/filter.sh does. The carry's
# gop_bench (no LLVM) is built from the tree with the experiment's
# runtime switch GOP_EXP_FILL_WAVE=X (the fill's grid capped at X of a
# wave; not committed).
#   bash bench/results/2026-12-01-H200-late-wait-fill/prepare.sh CARRY BEFORE_BUILD AFTER_BUILD GRAPHS OPS FS
set -eu
c=$1 before=$2 after=$3 graphs=$4 ops=$5 fs=$6
source tools/gpu-common.sh
gpu_bench_carry "$c" "$after" $graphs
for v in before late; do
  b=$after
  [ $v = before ] && b=$before
  GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$b/bench/gop_bench" plan \
    "$c/$v" "$c/datasets" --graphs "$graphs" --ops "$ops" --F "$fs" --top 2 | tail -1
done
bash bench/results/2026-11-30-H200-pdl-stages/filter.sh "$c" before late
cmp <(cut -f1-7 "$c/before/plan.txt") <(cut -f1-7 "$c/late/plan.txt") >/dev/null ||
  { echo "plans differ: before, late" >&2; exit 1; }
du -sh "$c"
