#!/bin/bash
# The aggregation benchmark on an H200 (2026-11-29): gop's candidates for
# the weighted and the unweighted sum (u_mul_e_sum, copy_u_sum; gop_bench
# plan --top 3 over the 14 shared graphs x F = 16..256, every candidate
# checked against the interpreter before it is timed) in call 1, the peers
# (cuSPARSE from C, PyG) on the same graphs and widths in call 2
# (PHASE=peers), both timed by CUDA-graph replay. Call 3 (PHASE=gop
# PLAN=.carry/aggw/bench CSV=gop_bench_dst) the weighted sum again with
# edge ids in CSR order (plan --edges dst), as cuSPARSE reads its values
# and as the earlier runs compared.
# Carry (made here): .carry/agg with gop_bench (no LLVM), bench/ (the plan
# and its packs: build-static/bench/gop_bench plan .carry/agg/bench
# .carry/agg/datasets --graphs "..." --top 3 --ops "u_mul_e_sum copy_u_sum")
# and datasets/.
set -u
c=.carry/agg
o=$OUT
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o/run.log
SECONDS=0
G="cora citeseer pubmed wiki-Vote ca-HepPh musae-facebook deezer-HU blogcatalog proteins delaunay_n16 soc-Slashdot0902 ogbn-arxiv cnr-2000 molhiv"
if [ "${PHASE:-gop}" = gop ]; then
  # warm-up, thrown away: clocks and caches in their running state first
  timeout 40 $c/gop_bench run ${PLAN:-$c/bench} $c/datasets --csv /tmp/warm.csv --reps 10 --budget-s 15 > /tmp/warm.log 2>&1
  echo "warm-up done t=$SECONDS" | tee -a $o/run.log
  B=${BUDGET:-450}
  n=${CSV:-gop_bench}
  timeout $((B + 30)) $c/gop_bench run ${PLAN:-$c/bench} $c/datasets --csv $o/$n.csv --reps 10 --budget-s $B > $o/$n.log 2>&1
  echo "gop rc=$? t=$SECONDS; $(tail -1 $o/$n.log)" | tee -a $o/run.log
  grep -E "^FAIL" $o/$n.log | head -20
  xz -9 $o/$n.log $o/$n.csv
else
  timeout ${PEERS_S:-300} bash bench/peers/run_peers.sh $c/datasets $o/peers $G > $o/peers.log 2>&1
  echo "peers rc=$? t=$SECONDS" | tee -a $o/run.log
  tail -3 $o/peers.log
fi
