#!/bin/bash
# gop_bench over prepare.sh's plan (every row checked against the
# interpreter or the default schedule first, graph replay); with PEERS=1
# then bench/peers/run_peers.sh (every cuSPARSE SpMM algorithm, PyG) on
# the same graphs, the reordered ones included.
#   BUDGET=200 [PEERS=1] bash bench/results/2026-12-01-H200-community-order/run.sh CARRY OUT
set -u
c=$1 o=$2
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
SECONDS=0
timeout 40 "$c/gop_bench" run "$c/bench" "$c/datasets" --csv /tmp/warm.csv --reps 10 --budget-s 12 \
  --edges dst >/tmp/warm.log 2>&1
echo "warm-up done t=$SECONDS" | tee -a "$o/run.log"
timeout $((${BUDGET:-200} + 60)) "$c/gop_bench" run "$c/bench" "$c/datasets" --csv "$o/gop_bench.csv" \
  --reps 10 --budget-s "${BUDGET:-200}" --edges dst >"$o/gop_bench.log" 2>&1
echo "gop rc=$? t=$SECONDS; $(tail -1 "$o/gop_bench.log")" | tee -a "$o/run.log"
if [ "${PEERS:-0}" = 1 ]; then
  timeout "${PEERS_S:-200}" bash bench/peers/run_peers.sh "$c/datasets" "$o/peers" \
    $(cat "$c/graphs.txt") --F "$(cat "$c/widths.txt")" >"$o/peers.log" 2>&1
  echo "peers rc=$? t=$SECONDS" | tee -a "$o/run.log"
fi
