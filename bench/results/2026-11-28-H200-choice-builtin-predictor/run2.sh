#!/usr/bin/env bash
# Call 2: the built-in predictor retrained with call 1's generated graphs
# (tools/train-builtin-model.sh), measured on eight other generated graphs
# (other sizes, skews, mesh shapes and ring degrees) as call 1 was.
#
# Prepared here (with LLVM):
#   build-static/bench/gop_bench plan .carry/choice/bench .carry/choice/datasets \
#     --graphs "rmat:19:16:21 grid:2000x500 ring:1000000:8 rmat:17:4:9 rmat:15:16:2 \
#               ring:5000:100 grid:60x60 rmat:12:64:4" --F "32 128" \
#     --ops "copy_u_sum u_mul_e_sum u_dot_v u_add_v" --top 3
#   strip -o .carry/choice/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine (carry .carry/choice):
#   bash bench/results/2026-11-28-H200-choice-builtin-predictor/run.sh .carry/choice $OUT
exec bash "$(dirname "$0")/run.sh" "$@"
