#!/usr/bin/env bash
# The untuned choice on graphs no model here was trained on: the built-in
# predictor's pick, the cost model's pick and the default mapping against
# the tuned best (the fastest checked candidate of gop_bench's plan), on
# generated graphs (R-MAT of four sizes and skews, two meshes, two rings)
# x copy_u_sum, u_mul_e_sum, u_dot_v, u_add_v x F = 32, 128.
#
# Prepared here (with LLVM):
#   build-static/bench/gop_bench plan .carry/choice/bench .carry/choice/datasets \
#     --graphs "rmat:20:4:11 grid:1024x1024 ring:500000:16 rmat:18:8:7 rmat:16:32:3 \
#               ring:20000:40 rmat:14:8:5 grid:120x100" --F "32 128" \
#     --ops "copy_u_sum u_mul_e_sum u_dot_v u_add_v" --top 3
#   strip -o .carry/choice/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine (carry .carry/choice):
#   bash bench/results/2026-11-28-H200-choice-builtin-predictor/run.sh .carry/choice $OUT
set -u
carry=$1 out=$2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u +%Y-%m-%dT%H:%MZ
"$carry/gop_bench" run "$carry/bench" "$carry/datasets" --csv "$out/gop_bench.csv" --reps 10 \
  --budget-s "${BUDGET_S:-420}" --timing graph > "$out/gop_bench.log" 2>&1
rc=$?
grep -E '^(FAIL|#)' "$out/gop_bench.log" | grep -v '^# note' | tail -8
tail -1 "$out/gop_bench.log"
python3 bench/choice.py "$out/gop_bench.csv"
python3 bench/choice.py "$out/gop_bench.csv" --by op | sed -n 1,6p
xz -k "$out/gop_bench.log"; rm "$out/gop_bench.log"
exit $rc
