#!/bin/bash
# spmm_panels against gop's other schedules and the peers in one call: gop_bench over
# prepare.sh's plan (every row checked against the interpreter or the
# default schedule first, graph replay), then bench/peers/run_peers.sh (every
# cuSPARSE SpMM algorithm, PyG) on the same graphs.
#   bash bench/results/2026-11-30-H200-panels/run.sh CARRY OUT
set -u
c=$1 o=$2
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
SECONDS=0
timeout 40 "$c/gop_bench" run "$c/bench" "$c/datasets" --csv /tmp/warm.csv --reps 10 --budget-s 12 \
  --edges dst >/tmp/warm.log 2>&1
echo "warm-up done t=$SECONDS" | tee -a "$o/run.log"
timeout $((${BUDGET:-240} + 60)) "$c/gop_bench" run "$c/bench" "$c/datasets" --csv "$o/gop_bench.csv" \
  --reps 10 --budget-s "${BUDGET:-240}" --edges dst >"$o/gop_bench.log" 2>&1
echo "gop rc=$? t=$SECONDS; $(tail -1 "$o/gop_bench.log")" | tee -a "$o/run.log"
timeout "${PEERS_S:-200}" bash bench/peers/run_peers.sh "$c/datasets" "$o/peers" ${GRAPHS:-cnr-2000 \
  delaunay_n16 proteins deezer-HU ogbn-arxiv} --F "${FS:-32 128 256}" >"$o/peers.log" 2>&1
echo "peers rc=$? t=$SECONDS" | tee -a "$o/run.log"
