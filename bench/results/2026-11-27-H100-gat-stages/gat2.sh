#!/bin/bash
# GAT with one head: the joint backward under gat_grad_groups(32, T) against the default
bash tools/gpu-unpack.sh .carry/g2
g=.carry/g2/gopc
L=examples/models/layers.gop
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $OUT/gat2.txt
run() { # graph H C grad|fwd schedule [check]
  local extra=(); [ "$4" = grad ] && extra+=(--grad Z,As,Ad); [ -n "$6" ] && extra+=(--check)
  out=$($g run $L --op gat_attention --graph .carry/g2/datasets/$1.mtx.gz --H $2 --C $3 "${extra[@]}" ${5:+--schedule "$5"} --gpu --warmup 5 --reps 30 2>&1)
  echo "$1 H=$2 C=$3 $4 [${5:-default}]: $(echo "$out" | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1) $(echo "$out" | grep -E "check:|error" | head -1)" | tee -a $OUT/gat2.txt
}
run pubmed 1 8 grad "gat_grad_groups(32, 1)" 1
for gr in ogbn-arxiv pubmed; do
  run $gr 1 8 grad ""
  run $gr 1 8 grad "gat_grad_groups(32, 1)"
  run $gr 1 8 grad "gat_grad_groups(32, 2)"
  run $gr 2 8 grad ""
  run $gr 2 8 grad "gat_grad_groups(32, 2)"
done
