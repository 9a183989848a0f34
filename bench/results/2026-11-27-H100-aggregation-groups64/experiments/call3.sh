#!/bin/bash
# The groups-of-64 run (2026-11-27), call 3 (an H100), binaries from 15571bf + the plan's two
# more named group points. Part 1 (issue 13): ../run.sh again with the
# plan made by this build (the tuning space's groups of 64 edges change
# the model's candidates and the untuned choice; spmm_groups(128, 4) and
# (64, 8) join the named candidates), BUDGET=215 s for the 140 more
# candidates. Part 2 (issues 13, 19): the untuned choice of copy_u_sum in
# f32 and bf16 on the graphs above 1M edges at F = 128 and 256 (the
# groups of 64 edges), against call 2's best.
# Carry: .carry/gpu/datasets-xz, .carry/s16 (gopc, gop_bench, bench-dst).
# Expected: part 1 weighted 1.49-1.50x (a few cases 1-3% faster),
# untuned/tuned 1.12 -> about 1.09x; part 2 the untuned bf16 choice within
# 7% of call 2's best on ogbn-arxiv and cnr-2000 (groups_full(64, 4)).
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/s16 || exit 1
mkdir -p .carry/gpu && cp -r .carry/s16/gop_bench .carry/s16/bench-dst .carry/gpu/ || exit 1
o=$OUT/call3.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
mkdir -p $OUT/run
BUDGET=215 OUT=$OUT/run timeout 500 bash bench/results/2026-11-27-H100-aggregation-groups64/run.sh
echo "part 1 t=$SECONDS" | tee -a $o
B=.carry/s16/gopc
for g in molhiv ogbn-arxiv cnr-2000 rmat:19:16; do for F in 128 256; do
  [ $SECONDS -gt 570 ] && break 2
  G=/tmp/ds/$g.mtx.gz; [ $g = rmat:19:16 ] && G=$g
  line="$g F=$F"
  for dt in f32 bf16; do
    timeout 40 $B run stdlib:copy_u_sum --graph $G --F $F --dtype $dt --gpu --warmup 10 --reps 50 > /tmp/t.log 2>&1
    line="$line $dt [$(sed -n 's/^  schedule: \(.*\) (from.*/\1/p' /tmp/t.log | head -1)]=$(sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' /tmp/t.log | head -1)"
  done
  echo "chosen $line" | tee -a $o
done; done
echo "part 2 t=$SECONDS" | tee -a $o
