#!/bin/bash
# Here (LLVM): the carry of the second experiment (run.sh CARRY OUT "before
# rows nodeg"): gop_bench plans the same rows three times with the code
# generator switched by the environment (a build made for it): GOP_NOPRO=1
# the row loaded where used (before), neither: the row and the degree at
# the group's top (rows, as kept), GOP_NODEG=1: the row at the top, the
# degree where used (nodeg). Rows kept: the default, the choices, and
# seven groups schedules.
#   bash bench/results/2026-11-30-H200-group-row-loads/prepare-nodeg.sh CARRY LLVM_BUILD GRAPHS OPS FS
set -eu
c=$1 llvm=$2 graphs=$3 ops=$4 fs=$5
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $(for g in $graphs; do [[ $g == *:* ]] || echo "$g"; done)
keep='^(default|spmm_groups\(64, 4\)|spmm_groups\(128, 8\)|spmm_teams8\(128, 16\)|spmm_tiles\(64, 8\)|spmm_tiles\(32, 16\)|gnnadvisor\(32, 32\)|spmm_teams\(64, 8\))$'
for v in before rows nodeg; do
  env=()
  [ $v = before ] && env=(GOP_NOPRO=1)
  [ $v = nodeg ] && env=(GOP_NODEG=1)
  env "${env[@]}" GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan \
    "$c/$v" "$c/datasets" --graphs "$graphs" --ops "$ops" --F "$fs" --top 3 | tail -1
  awk -F'\t' -v k="$keep" '/^#/ || $7 ~ k || $4 ~ /^chosen/' "$c/$v/plan.txt" >"$c/$v/plan.cut"
  mv "$c/$v/plan.cut" "$c/$v/plan.txt"
  used=$(awk -F'\t' '!/^#/ {print $8}' "$c/$v/plan.txt" | sort -u)
  for f in "$c/$v"/*.pack; do echo "$used" | grep -qxF "$(basename "$f")" || rm -f "$f"; done
done
for v in rows nodeg; do
  cmp <(cut -f1-7 "$c/before/plan.txt") <(cut -f1-7 "$c/$v/plan.txt") >/dev/null ||
    { echo "plans differ: before, $v" >&2; exit 1; }
done
echo "$(grep -vc '^#' "$c/before/plan.txt") rows a plan"
du -sh "$c"
