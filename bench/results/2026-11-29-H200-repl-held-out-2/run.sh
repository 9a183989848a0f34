#!/usr/bin/env bash
# One device call: the REPL on a GPU (its run, check, compare and tune
# timing by CUDA-graph replay), and the built-in predictor (39 graphs) on
# two more generated graphs it was not trained on.
#
# Prepared here (with LLVM), in .carry/fin:
#   gop (the REPL, static, stripped, xz'ed), datasets/pubmed.mtx.gz,
#   build-static/bench/gop_bench plan .carry/fin/bench .carry/fin/datasets \
#     --graphs "community:1500000:20:6000:33 powerlaw:1200000:20:41" \
#     --F "64 128" --ops "copy_u_sum u_mul_e_sum" --top 3
#   strip -o .carry/fin/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine: bash bench/results/2026-11-29-H200-repl-held-out-2/run.sh $OUT
set -u
out=$1 here=$(dirname "$0")
mkdir -p "$out/bench"
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
  .carry/fin/gop.xz .carry/fin/gop && chmod +x .carry/fin/gop
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u +%Y-%m-%dT%H:%MZ
timeout 120 .carry/fin/gop < "$here/repl-commands.txt" > "$out/repl-session.txt" 2>&1
echo "repl rc=$?"
cat "$out/repl-session.txt" | cut -c1-160 | tail -40
BUDGET_S=${BUDGET_S:-160} bash "$here/../2026-11-28-H200-choice-builtin-predictor/run.sh" \
  .carry/fin "$out/bench"
