#!/bin/bash
# Here (LLVM): the carry of run.sh (bench/results/2026-11-30-H200-group-row-loads/run.sh
# CARRY OUT "before after"): gop_bench plans the same rows twice, the code
# generator switched by the environment (a build made for this
# experiment): GOP_ROLLED=1 a prefetched edge loop's partial chunk rolled,
# one edge at a time (before), else unrolled as its @unroll(U) says
# (after). Rows: the default, the choices, the prefetching schedules
# (spmm_groupsp, spmm_vec4p) and spmm_groups(64, 4) beside them.
#   bash bench/results/2026-11-30-H200-prefetch-partial-chunks/prepare.sh CARRY LLVM_BUILD GRAPHS OPS FS
set -eu
c=$1 llvm=$2 graphs=$3 ops=$4 fs=$5
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $(for g in $graphs; do [[ $g == *:* ]] || echo "$g"; done)
keep='^(default|spmm_groups\(64, 4\)|spmm_groupsp\(.*\)|spmm_vec4p\(.*\))$'
for v in before after; do
  env=()
  [ $v = before ] && env=(GOP_ROLLED=1)
  env "${env[@]}" GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan \
    "$c/$v" "$c/datasets" --graphs "$graphs" --ops "$ops" --F "$fs" --top 3 | tail -1
  awk -F'\t' -v k="$keep" '/^#/ || $7 ~ k || $4 ~ /^chosen/' "$c/$v/plan.txt" >"$c/$v/plan.cut"
  mv "$c/$v/plan.cut" "$c/$v/plan.txt"
  used=$(awk -F'\t' '!/^#/ {print $8}' "$c/$v/plan.txt" | sort -u)
  for f in "$c/$v"/*.pack; do echo "$used" | grep -qxF "$(basename "$f")" || rm -f "$f"; done
done
cmp <(cut -f1-7 "$c/before/plan.txt") <(cut -f1-7 "$c/after/plan.txt") >/dev/null ||
  { echo "plans differ" >&2; exit 1; }
echo "$(grep -vc '^#' "$c/before/plan.txt") rows a plan"
du -sh "$c"
