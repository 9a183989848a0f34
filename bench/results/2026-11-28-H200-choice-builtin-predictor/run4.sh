#!/usr/bin/env bash
# Call 4: the built-in predictor retrained with call 3's graphs (30 graphs
# of five families), measured on eight graphs of all five families with
# parameters none of the training graphs has.
#
# Prepared here (with LLVM):
#   build-static/bench/gop_bench plan .carry/choice/bench .carry/choice/datasets \
#     --graphs "powerlaw:300000:12:23:5 powerlaw:80000:6:40:3 \
#               community:200000:16:2000:20:4 community:600000:6:60:50:2 rmat:17:12:31 \
#               grid:400x150 ring:100000:24 rmat:14:48:8" --F "32 128" \
#     --ops "copy_u_sum u_mul_e_sum u_dot_v u_add_v" --top 3
#   strip -o .carry/choice/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine (carry .carry/choice):
#   bash bench/results/2026-11-28-H200-choice-builtin-predictor/run4.sh .carry/choice $OUT
exec bash "$(dirname "$0")/run.sh" "$@"
