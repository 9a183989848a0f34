#!/usr/bin/env bash
# bench/softmax.sh: edge softmax against PyTorch Geometric's softmax on the
# shared graphs, in one GPU call of a few minutes (issue 37: edge softmax
# >= 5x PyG).
#
#   bash bench/softmax.sh prepare [GRAPH...]     here (LLVM): .carry/softmax
#   bash bench/softmax.sh run CARRY OUT          on the GPU machine
#
# prepare builds gop_bench without LLVM (GOP_BUILD_NOLLVM, default
# build-nollvm) and plans edge_softmax with a gop_bench that has it
# (GOP_BUILD_LLVM, default build-dev): per graph the default schedule, the
# cost model's best points (GOP_BENCH_TOP, default 3), each strategy's best
# and the untuned choice, with their kernel packs and the graphs, in
# .carry/softmax. run times PyG's softmax (bench/peers/pyg_bench.py at one
# width: softmax has none), then gop's rows (gop_bench run, both timed by
# CUDA-graph replay), and writes OUT/report/report.md with bench/report.py.
source "$(dirname "$0")/../tools/gpu-common.sh"

case ${1:-} in
prepare)
  shift
  graphs=("$@")
  [ ${#graphs[@]} -gt 0 ] || graphs=(cnr-2000 molhiv ogbn-arxiv cora citeseer pubmed wiki-Vote
    ca-HepPh musae-facebook deezer-HU blogcatalog proteins delaunay_n16 soc-Slashdot0902)
  out=.carry/softmax
  llvm=${GOP_BUILD_LLVM:-build-dev}
  set -e
  gpu_bench_carry "$out" "$llvm" "${graphs[@]}"
  GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan "$out/bench" \
    "$out/datasets" --graphs "${graphs[*]}" --ops edge_softmax --F 16 \
    --top "${GOP_BENCH_TOP:-3}" | tail -1
  du -sh "$out"
  ;;
run)
  [ $# -eq 3 ] || { echo "usage: $0 run CARRY OUT" >&2; exit 2; }
  carry=$2 out=$3
  mkdir -p "$out/peers" "$out/gop" "$out/report"
  csv=$out/peers/peers.csv
  names=$(cd "$carry/datasets" && ls -- *.mtx.gz | sed 's/\.mtx\.gz$//' | tr '\n' ' ')
  # shellcheck disable=SC2086 # the graph names, one word each
  python3 bench/peers/pyg_bench.py --datasets "$carry/datasets" --graphs $names --F 16 \
    --header >"$csv" 2>"$out/peers/peers.log" || { tail "$out/peers/peers.log"; exit 1; }
  "$carry/gop_bench" run "$carry/bench" "$carry/datasets" --csv "$out/gop/gop_bench.csv" \
    --reps 10 --budget-s "${GOP_BENCH_BUDGET_S:-240}" >"$out/gop/gop_bench.log" 2>&1
  rc=$?
  grep -E '^(FAIL|#)' "$out/gop/gop_bench.log" | tail -20
  python3 bench/report.py "$out/gop/gop_bench.csv" "$csv" "$out/report" || rc=1
  grep -B2 -A30 -i "softmax" "$out/report/report.md" | head -60
  echo "done in $SECONDS s"
  exit $rc
  ;;
*)
  sed -n '2,16p' "$0" >&2
  exit 2
  ;;
esac
