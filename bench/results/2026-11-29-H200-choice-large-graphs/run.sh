#!/usr/bin/env bash
# The untuned choice on generated graphs of 24-33M edges, whose feature
# rows do not fit in L2 (R-MAT, power-law and community), f32 copy_u_sum
# at F = 64 and 128: every candidate of gop_bench's plan checked and timed.
#
# Prepared here (with LLVM):
#   build-static/bench/gop_bench plan .carry/large/bench .carry/large/datasets \
#     --graphs "rmat:21:16:13 powerlaw:1500000:16:22 community:1500000:16:15000:10" \
#     --F "64 128" --ops "copy_u_sum" --top 3
#   strip -o .carry/large/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine (carry .carry/large):
#   BUDGET_S=500 bash bench/results/2026-11-29-H200-choice-large-graphs/run.sh .carry/large $OUT
exec bash "$(dirname "$0")/../2026-11-28-H200-choice-builtin-predictor/run.sh" "$@"
