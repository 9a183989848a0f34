#!/bin/bash
# On the GPU machine: bench/panel_probe.cu built by nvcc and run on the six
# graphs (GRAPHS=... for others) at F = 128 and 256 (P = 1, 2, 4, 8, 16), then gop's own kernels for
# the same cases (gop_bench over prepare.sh's plan, every row checked, graph
# replay), so that the probe's P = 1 baseline is set beside gop's best.
#   bash bench/results/2026-11-30-H200-panel-probe/run.sh CARRY OUT
set -u
c=$1 o=$2
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
SECONDS=0
nvcc -std=c++17 -O3 -arch=sm_90 bench/panel_probe.cu -o /tmp/panel_probe || exit 1
d=$c/datasets
G=${GRAPHS:-"blogcatalog wiki-Vote cnr-2000 soc-Slashdot0902 ogbn-arxiv deezer-HU"}
timeout 300 /tmp/panel_probe --F 128,256 --reps 20 $(for g in $G; do echo $d/$g.mtx.gz; done) \
  >"$o/probe.csv" 2>"$o/probe.err"
echo "probe rc=$? t=$SECONDS" | tee -a "$o/run.log"
timeout $((${BUDGET:-150} + 30)) "$c/gop_bench" run "$c/bench" "$d" --csv "$o/gop_bench.csv" \
  --reps 10 --budget-s "${BUDGET:-150}" --edges dst >"$o/gop_bench.log" 2>&1
echo "gop rc=$? t=$SECONDS; $(tail -1 "$o/gop_bench.log")" | tee -a "$o/run.log"
