#!/bin/bash
# Here (LLVM): the carry of run.sh. gop_bench's plan for both sums on the
# graphs whose neighbouring destinations share sources (cnr-2000, the
# mesh delaunay_n16, the molecules of proteins) and two that share little
# (deezer-HU, ogbn-arxiv), F = 32, 128, 256, edge ids in CSR order; of the
# named rows, every panel point (spmm_panels, spmm_panel_teams) and the
# plan's first two of the families that were the tuned best before.
#   bash bench/results/2026-11-30-H200-panels/prepare.sh CARRY LLVM_BUILD
set -eu
c=$1 llvm=$2
G="${GRAPHS:-cnr-2000 delaunay_n16 proteins deezer-HU ogbn-arxiv}"
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $G
GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan "$c/bench" "$c/datasets" \
  --graphs "$G" --ops "u_mul_e_sum copy_u_sum" --F "${FS:-32 128 256}" --top 3 --edges dst | tail -1
awk -F'\t' 'BEGIN{OFS="\t"} /^#/{print;next} $4!="named"{print;next}
  {split($7,a,"("); k=$1 FS $2 FS $3 FS a[1]
   if (a[1]~/^(spmm_panels|spmm_panel_teams)$/) {print; next}
   if (a[1]~/^(spmm_groups|spmm_teams|spmm_teams8|spmm_tiles|spmm_rows_full|spmm_vec4)$/ && ++n[k]<=2) print}' \
  "$c/bench/plan.txt" >"$c/bench/plan.f" && mv "$c/bench/plan.f" "$c/bench/plan.txt"
wc -l <"$c/bench/plan.txt"
grep -c panel "$c/bench/plan.txt" || true
du -sh "$c"
