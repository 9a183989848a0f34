#!/usr/bin/env bash
# The untuned choice of message creation (u_dot_v, u_add_v at F = 32 and
# 128) on four generated graphs no model here was trained on, after the
# lane model learned to read sddmm_vec4 and the predictor was retrained
# (bench/results/2026-11-29-H100-H200-choice-flat-edges/): the new model's
# pick (role chosen:...), the model before it (role prior:..., planned by
# the commit before the change and appended to the plan) and the tuned
# best, every candidate checked.
#
# Prepared here (with LLVM), in .carry/sddmm:
#   build-static/bench/gop_bench plan .carry/sddmm/bench .carry/sddmm/datasets \
#     --graphs "rmat:19:12:27 powerlaw:700000:10:27:9 community:900000:14:4000:15:3 \
#               grid:800x600" --F "32 128" --ops "u_dot_v u_add_v" --top 3
#   the previous commit's gop_bench plan of the same, its chosen rows
#   appended with role prior:built-in_predictor (packs it alone made
#   copied as old__NAME)
#   strip -o .carry/sddmm/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine: BUDGET_S=170 bash bench/results/2026-11-28-H200-choice-builtin-predictor/run.sh .carry/sddmm $OUT
