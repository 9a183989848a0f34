#!/usr/bin/env bash
# The untuned choice of the retrained built-in predictor (36 graphs,
# bench/results/2026-11-29-H200-choice-large-graphs) on three generated
# graphs of 24-50M edges it was not trained on (other seeds, sizes and
# densities of the R-MAT, power-law and community families), f32
# copy_u_sum and u_mul_e_sum at F = 64 and 128: every candidate of
# gop_bench's plan checked and timed.
#
# Prepared here (with LLVM):
#   build-static/bench/gop_bench plan .carry/large3/bench .carry/large3/datasets \
#     --graphs "rmat:21:24:17 powerlaw:2000000:12:31 community:2000000:16:8000:12" \
#     --F "64 128" --ops "copy_u_sum u_mul_e_sum" --top 3
#   strip -o .carry/large3/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine (carry .carry/large3):
#   mkdir -p .carry/large3/datasets
#   BUDGET_S=360 bash bench/results/2026-11-29-H200-choice-held-out-large/run.sh .carry/large3 $OUT
exec bash "$(dirname "$0")/../2026-11-28-H200-choice-builtin-predictor/run.sh" "$@"
