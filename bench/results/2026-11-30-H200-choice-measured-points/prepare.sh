#!/bin/bash
# Here (LLVM): the carry of run.sh. The untuned choice of the built-in
# predictor (its point table and three knob features, 2026-11-30) on six
# generated graphs it was not trained on (other seeds, sizes and densities
# of the R-MAT, power-law, community and mesh families): gop_bench's plan
# for copy_u_sum and u_mul_e_sum at F = 32 and 128, --top 3; of the named
# rows the plan's first two of each family per case, beside the default,
# the cost model's top 3 and the chosen row.
#   bash bench/results/2026-11-30-H200-choice-measured-points/prepare.sh CARRY LLVM_BUILD
set -eu
c=$1 llvm=$2
G="rmat:17:12:913 rmat:15:20:55 powerlaw:250000:10:26:77 community:300000:10:600:15:5 community:50000:20:100:30:9 grid:600x600"
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm"
GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan "$c/bench" "$c/datasets" \
  --graphs "$G" --ops "u_mul_e_sum copy_u_sum" --F "32 128" --top 3 | tail -1
awk -F'\t' 'BEGIN{OFS="\t"} /^#/{print;next} $4!="named"{print;next}
  {split($7,a,"("); k=$1 FS $2 FS $3 FS a[1]; if (++n[k]<=2) print}' \
  "$c/bench/plan.txt" >"$c/bench/plan.f" && mv "$c/bench/plan.f" "$c/bench/plan.txt"
wc -l <"$c/bench/plan.txt"
du -sh "$c"
