#!/bin/bash
# the chooser's pick (no database) for f32 and bf16, and the best named points measured before
bash tools/gpu-unpack.sh .carry/gpu
g=.carry/gpu/gopc
for gr in ogbn-arxiv cnr-2000 molhiv rmat:19:16; do
  case $gr in rmat:*) graph=$gr ;; *) graph=.carry/gpu/datasets/$gr.mtx.gz ;; esac
  for op in copy_u_sum u_mul_e_sum; do for F in 128 256; do for dt in f32 bf16; do
    out=$($g run stdlib:$op --graph $graph --F $F --dtype $dt --gpu --warmup 5 --reps 30 2>&1)
    t=$(sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' <<<"$out" | head -1)
    s=$(grep -o "schedule [^:]*" <<<"$out" | head -1)
    echo "$gr $op F=$F $dt: $t ms [$s]"
  done; done; done
done
