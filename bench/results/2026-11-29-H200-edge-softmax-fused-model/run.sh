#!/usr/bin/env bash
# The fused-stage model's requests term (tune/model.c tune_model_fused_us)
# on nine generated graphs none of its constants were fitted on, in CSR
# edge order and in the generators' (random) edge order: every candidate
# of gop_bench's plan for edge_softmax (the default mapping, softmax_rows(T)
# for T = 1 .. 32, softmax_groups, softmax_teams, the named schedules'
# best) checked against the interpreter and timed, the untuned choice
# among them.
#
# Prepared here (with LLVM), G="ring:300000:16 ring:150000:8
#   community:250000:16:600:20:7 community:600000:8:1500:15:2 grid:800x400
#   powerlaw:500000:10:24:9 powerlaw:250000:14:22:17 rmat:17:20:19
#   rmat:19:8:23":
#   build-dev/bench/gop_bench plan .carry/smv/csr/bench .carry/smv/csr/datasets \
#     --graphs "$G" --ops edge_softmax --F 16 --top 1 --edges dst
#   build-dev/bench/gop_bench plan .carry/smv/file/bench .carry/smv/file/datasets \
#     --graphs "$G" --ops edge_softmax --F 16 --top 1
#   strip -o .carry/smv/gop_bench build-nollvm/bench/gop_bench
# On the GPU machine (carry .carry/smv):
#   bash bench/results/2026-11-29-H200-edge-softmax-fused-model/run.sh .carry/smv $OUT
set -u
carry=$1 out=$2
r=bench/results/2026-11-28-H200-choice-builtin-predictor/run.sh
rc=0
for order in csr file; do
  mkdir -p "$out/$order"
  cp "$carry/gop_bench" "$carry/$order/gop_bench"
  echo "== edge ids: $order"
  BUDGET_S=${BUDGET_S:-150} bash "$r" "$carry/$order" "$out/$order" || rc=1
done
exit $rc
