#!/usr/bin/env bash
# bench/sddmm.sh: message creation (u_dot_v, u_add_v) against cusparseSDDMM
# on the shared graphs, F in {16, 32, 64, 128, 256}, in one GPU call of
# under 5 minutes (issue 37: the row-based SDDMM schedules of
# docs/scheduling.md beside the edge-parallel ones and the untuned choice).
#
#   bash bench/sddmm.sh prepare [GRAPH...]     here (LLVM): .carry/sddmm
#   bash bench/sddmm.sh run CARRY OUT          on the GPU machine
#
# prepare builds gop_bench without LLVM (GOP_BUILD_NOLLVM, default
# build-nollvm) and plans with a gop_bench that has it (GOP_BUILD_LLVM,
# default build-sddmm): per graph, op and width, the default schedule, the
# cost model's best point, the untuned choice (gop_choose_schedule), the
# edge-parallel sddmm_vec4(4), GNNAdvisor's gnnadvisor(16, 32) and the
# row-based schedules (sddmm_rows, sddmm_rows_reg, sddmm_groups,
# sddmm_groups_reg with a team of F / 4 lanes); the kernel packs of those
# rows only, and the graphs, go to .carry/sddmm. run builds and runs
# cusparse_bench (cusparseSDDMM, and its SpMM algorithms, which the report
# ignores here) on every carried graph, times gop's rows (gop_bench run,
# GOP_BENCH_BUDGET_S, default 150 s), and writes OUT/report/report.md with
# bench/report.py.
source "$(dirname "$0")/../tools/gpu-common.sh"

case ${1:-} in
prepare)
  shift
  graphs=("$@")
  [ ${#graphs[@]} -gt 0 ] || graphs=(cnr-2000 molhiv ogbn-arxiv cora citeseer pubmed wiki-Vote
    ca-HepPh musae-facebook deezer-HU blogcatalog proteins delaunay_n16 soc-Slashdot0902)
  out=.carry/sddmm
  llvm=${GOP_BUILD_LLVM:-build-sddmm}
  set -e
  gpu_bench_carry "$out" "$llvm" "${graphs[@]}"
  GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$llvm/bench/gop_bench" plan "$out/all" \
    "$out/datasets" --graphs "${graphs[*]}" --ops "u_dot_v u_add_v" --top 1 | tail -1
  # keep the rows named above, and their packs
  mkdir -p "$out/bench"
  awk -F'\t' '/^#/ || $4 == "default" || $4 ~ /^chosen/ || ($4 == "model" && $5 == 1) ||
              $7 ~ /^sddmm_/ || $7 == "gnnadvisor(16, 32)"' "$out/all/plan.txt" \
    >"$out/bench/plan.txt"
  for f in $(awk -F'\t' '!/^#/ {print $8}' "$out/bench/plan.txt" | sort -u); do
    mkdir -p "$out/bench/$(dirname "$f")"
    cp "$out/all/$f" "$out/bench/$f"
  done
  rm -rf "$out/all"
  echo "$(grep -vc '^#' "$out/bench/plan.txt") rows, $(find "$out/bench" -name '*.pack' | wc -l) packs"
  du -sh "$out"
  ;;
run)
  [ $# -eq 3 ] || { echo "usage: $0 run CARRY OUT" >&2; exit 2; }
  carry=$2 out=$3
  mkdir -p "$out/peers" "$out/gop" "$out/report"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  nvcc -O3 -arch=sm_90 -std=c++17 -Xcompiler -Wall,-fopenmp -o "$work/cusparse_bench" \
    bench/peers/cusparse_bench.cu -lcusparse -lgomp || exit 1
  ceil=$("$work/cusparse_bench" --ceiling-only) || exit 1
  c=$(echo "$ceil" | sed -n 's/^# copy_ceiling_gbps=\([0-9.]*\).*/\1/p')
  csv=$out/peers/peers.csv
  { echo "$ceil"; echo "# widths=16 32 64 128 256 date=$(date -u +%Y-%m-%dT%H:%MZ)"
    echo "peer,op,graph,V,E,F,time_ms,gbps,frac_of_bound,ok,timing,graph_calls"; } >"$csv"
  for f in "$carry"/datasets/*.mtx.gz; do
    g=$(basename "$f" .mtx.gz)
    gunzip -c "$f" >"$work/$g.mtx"
    # timed as gop_bench times gop's rows (graph replay), so that the two
    # sides of a case compare the same way
    "$work/cusparse_bench" --ceiling "$c" --F "16 32 64 128 256" --name "$g" \
      --timing "${GOP_TIMING:-graph}" "$work/$g.mtx" \
      2>>"$out/peers/peers.log" | grep -v '^#' >>"$csv"
    rm -f "$work/$g.mtx"
    echo "cusparse $g done ($SECONDS s)"
  done
  "$carry/gop_bench" run "$carry/bench" "$carry/datasets" --csv "$out/gop/gop_bench.csv" \
    --reps 10 --budget-s "${GOP_BENCH_BUDGET_S:-150}" >"$out/gop/gop_bench.log" 2>&1
  rc=$?
  grep -E '^(FAIL|#)' "$out/gop/gop_bench.log" | tail -20
  python3 bench/report.py "$out/gop/gop_bench.csv" "$csv" "$out/report" || rc=1
  grep -A40 -i "u_dot_v" "$out/report/report.md" | head -60
  echo "done in $SECONDS s"
  exit $rc
  ;;
*)
  sed -n '2,21p' "$0" >&2
  exit 2
  ;;
esac
