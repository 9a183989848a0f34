#!/bin/bash
# Here (LLVM): the carry of run.sh. gop_bench's plan for copy_u_sum on the
# probe's six graphs (GRAPHS=... for others) x F = 128, 256, edge ids in CSR order, --top 3; of the
# named rows, the families that were the tuned best on these graphs on
# 2026-11-29, the plan's first two of each per case.
#   bash bench/results/2026-11-30-H200-panel-probe/prepare.sh CARRY LLVM_BUILD
set -eu
c=$1 llvm=$2
G=${GRAPHS:-"blogcatalog cnr-2000 wiki-Vote soc-Slashdot0902 ogbn-arxiv deezer-HU"}
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $G
GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan "$c/bench" "$c/datasets" \
  --graphs "$G" --ops "copy_u_sum" --F "128 256" --top 3 --edges dst | tail -1
awk -F'\t' 'BEGIN{OFS="\t"} /^#/{print;next} $4!="named"{print;next}
  {split($7,a,"("); k=$1 FS $2 FS $3 FS a[1]
   if (a[1]~/^(spmm_groups|spmm_teams|spmm_teams8|sddmm_groups|spmm_tiles)$/ && ++n[k]<=2) print}' \
  "$c/bench/plan.txt" >"$c/bench/plan.f" && mv "$c/bench/plan.f" "$c/bench/plan.txt"
wc -l <"$c/bench/plan.txt"
du -sh "$c"
