#!/usr/bin/env bash
# Call 3: training data from the new generator families (power law,
# communities) and the families call 2 did worst on (a small mesh, a small
# dense R-MAT), measured under the model of call 2.
#
# Prepared here (with LLVM):
#   build-static/bench/gop_bench plan .carry/choice/bench .carry/choice/datasets \
#     --graphs "powerlaw:200000:8:21 powerlaw:500000:4:25 powerlaw:100000:16:30 \
#               community:300000:10:300:10 community:50000:20:50:30 grid:200x200 \
#               rmat:13:32:6 community:1000000:4:10000:5" --F "32 128" \
#     --ops "copy_u_sum u_mul_e_sum u_dot_v u_add_v" --top 3
#   strip -o .carry/choice/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine (carry .carry/choice):
#   bash bench/results/2026-11-28-H200-choice-builtin-predictor/run3.sh .carry/choice $OUT
exec bash "$(dirname "$0")/run.sh" "$@"
