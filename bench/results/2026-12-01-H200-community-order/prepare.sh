#!/bin/bash
# Here (LLVM): the carry of run.sh. Shared graphs as they are and
# renumbered by the community order (gopc graph --reorder community: what
# `gopc tune --orders` and `--reorder auto` can pick), both sums, edge ids
# in CSR order: gop_bench's whole plan (every family, panels included).
#   GRAPHS="ogbn-arxiv cnr-2000" FS="128 256" \
#     bash bench/results/2026-12-01-H200-community-order/prepare.sh CARRY LLVM_BUILD
# call1: the two graphs above 1M edges under 40% of the bound (the
# defaults); call2: GRAPHS="deezer-HU soc-Slashdot0902" FS="16 32", the
# floor cases against cuSPARSE.
set -eu
c=$1 llvm=$2
G="${GRAPHS:-ogbn-arxiv cnr-2000}"
source tools/gpu-common.sh
gpu_bench_carry "$c" "$llvm" $G
all=""
for g in $G; do
  "$llvm/gopc" graph "$c/datasets/$g.mtx.gz" --reorder community -o "$c/datasets/$g-community.mtx" |
    grep locality
  gzip -f "$c/datasets/$g-community.mtx"
  all="$all $g $g-community"
done
echo "$all" >"$c/graphs.txt"
GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan "$c/bench" "$c/datasets" \
  --graphs "$all" --ops "u_mul_e_sum copy_u_sum" --F "${FS:-128 256}" --top 3 --edges dst | tail -1
echo "${FS:-128 256}" >"$c/widths.txt"
wc -l <"$c/bench/plan.txt"
du -sh "$c"
