#!/bin/bash
# Here (LLVM): the carry of run.sh. gop_bench's plan for the sums on the
# four graphs of issue 37's floor cases (deezer-HU, blogcatalog,
# soc-Slashdot0902, wiki-Vote) x F = 16..256, edge ids in CSR order (as
# cuSPARSE reads its values), --top 3 as on 2026-11-29; of the named rows,
# the seven families that were the tuned best on these graphs then, the
# plan's first two of each per case (a device call's budget).
#   bash bench/results/2026-11-30-H200-floor-cusparse/prepare.sh CARRY LLVM_BUILD
set -eu
c=$1 llvm=$2
G="deezer-HU blogcatalog soc-Slashdot0902 wiki-Vote"
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $G
GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan "$c/bench" "$c/datasets" \
  --graphs "$G" --ops "u_mul_e_sum copy_u_sum" --F "16 32 64 128 256" --top 3 --edges dst | tail -1
awk -F'\t' 'BEGIN{OFS="\t"} /^#/{print;next} $4!="named"{print;next}
  {split($7,a,"("); k=$1 FS $2 FS $3 FS a[1]
   if (a[1]~/^(spmm_groups|spmm_teams|spmm_teams8|sddmm_groups|gnnadvisor|gnnadvisor_mgg|spmm_tiles)$/ && ++n[k]<=2) print}' \
  "$c/bench/plan.txt" >"$c/bench/plan.f" && mv "$c/bench/plan.f" "$c/bench/plan.txt"
wc -l <"$c/bench/plan.txt"
du -sh "$c"
