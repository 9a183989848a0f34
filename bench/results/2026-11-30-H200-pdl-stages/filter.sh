#!/bin/bash
# Keeps a plan's default, model, untuned and chosen rows, and of the named
# rows the families a stage boundary could matter to (neighbour groups and
# teams, whose fill stage goes first; edge softmax's stages) and spmm_rows
# (one stage: the control), two rows each per case.
#   bash bench/results/2026-11-30-H200-pdl-stages/filter.sh CARRY VARIANT...
c=$1
shift
for v in "$@"; do
  awk -F'\t' 'BEGIN{OFS="\t"} /^#/{print;next} $4!="named"{print;next}
    {split($7,a,"("); f=a[1]
     if (f!~/^(spmm_groups|spmm_teams|spmm_rows|softmax_teams|softmax_groups|softmax_rows)$/) next
     k=$1 FS $2 FS $3 FS f; if (++n[k]<=2) print}' "$c/$v/plan.txt" >"$c/$v/plan.f" &&
    mv "$c/$v/plan.f" "$c/$v/plan.txt"
done
