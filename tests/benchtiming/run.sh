#!/usr/bin/env bash
# tests/benchtiming/run.sh SUITE_DIR GOPC: bench/gop_bench's timing by CUDA
# graph replay, end to end on the stand-in driver (tests/unit/fake_cuda.c,
# $GOP_FAKE_CUDA): a plan of one operator at one width on a 24-vertex ring
# (written here as a .mtx.gz), run three ways:
#   - by default every row is timed by graph replay (`timing` graph, its
#     `graph_calls` given by --graph-reps), the header says so;
#   - --timing events: every row events, graph_calls 0;
#   - a capture the driver refuses (GOP_CUDA_FAIL injects the failure of
#     the first cuStreamBeginCapture_v2): a `# note` line names the row and
#     the driver's error, that row is timed with events, the others still
#     by replay.
# The stand-in runs no kernel, so every candidate fails its check (exit
# status 1): this checks the timing path and the CSV, not the numbers.
# gop_bench is $GOP_BENCH (set by ctest), else bench/gop_bench beside GOPC.
set -u
source "$(dirname "$0")/../golden.sh"
golden_setup "$@"
golden_stand_in GOP_BENCH bench/gop_bench gop_bench
bench=$runner

mkdir -p "$work/data"
{
  echo "%%MatrixMarket matrix coordinate pattern general"
  echo "24 24 48"
  for i in $(seq 1 24); do
    echo "$i $((i % 24 + 1))"
    echo "$((i % 24 + 1)) $i"
  done
} | gzip >"$work/data/ring.mtx.gz"
GOP_CUDA_LIBRARY=/nonexistent/libcuda.so "$bench" plan "$work/plan" "$work/data" \
  --graphs ring --ops copy_u_sum --F 8 --top 1 >"$work/plan.log" 2>&1 ||
  golden_bad "plan: $(tail -3 "$work/plan.log")"
rows=$(grep -vc '^#' "$work/plan/plan.txt")

# run_csv NAME [ENV...] -- ARGS...: runs gop_bench run into $work/NAME.csv
run_csv() {
  local name=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env GOP_CUDA_LIBRARY="$GOP_FAKE_CUDA" "${envs[@]}" "$bench" run "$work/plan" "$work/data" \
    --csv "$work/$name.csv" --reps 3 "$@" >"$work/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 1 ] || golden_bad "$name: exit status $rc, not 1 (the stand-in's outputs fail the check): $(tail -3 "$work/$name.log")"
}
# The schedule holds commas inside quotes: count the timing columns from
# the end of the line, where they are the last two.
last2() { grep -v '^#' "$1" | tail -n +2 | awk -F, '{ print $(NF - 1) "," $NF }'; }

run_csv graph -- --graph-reps 5
grep -q '^# timing=graph graph_reps=5 reps=3' "$work/graph.csv" && golden_ok || golden_bad "graph: no '# timing=graph' header line"
head -3 "$work/graph.csv" | grep -q ',sets,timing,graph_calls$' && golden_ok || golden_bad "graph: header lacks timing,graph_calls"
n=$(last2 "$work/graph.csv" | grep -c '^graph,5$')
[ "$n" -eq "$rows" ] && golden_ok || golden_bad "graph: $n of $rows rows timed by replay of 5 calls: $(last2 "$work/graph.csv" | sort | uniq -c)"
grep -q 'timed by replaying a captured CUDA graph' "$work/graph.log" && golden_ok || golden_bad "graph: the log does not say how it times"

run_csv events -- --timing events
n=$(last2 "$work/events.csv" | grep -c '^events,0$')
[ "$n" -eq "$rows" ] && golden_ok || golden_bad "events: $n of $rows rows timed with events"

run_csv refused GOP_CUDA_FAIL=cuStreamBeginCapture_v2:900 --
grep -q '^# note: ring copy_u_sum F=8 .*graph capture failed (CUDA error in cuStreamBeginCapture_v2: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.*); timed with events' \
  "$work/refused.log" && golden_ok || golden_bad "refused: no note naming the call: $(grep '#' "$work/refused.log" | head -3)"
grep -q '^# note: ring copy_u_sum F=8 .*graph capture failed; timed with events' "$work/refused.csv" &&
  golden_ok || golden_bad "refused: the CSV has no note"
n_ev=$(last2 "$work/refused.csv" | grep -c '^events,0$')
n_gr=$(last2 "$work/refused.csv" | grep -c '^graph,')
[ "$n_ev" -eq 1 ] && [ "$n_gr" -eq $((rows - 1)) ] && golden_ok ||
  golden_bad "refused: $n_ev rows by events (want 1), $n_gr by replay (want $((rows - 1)))"

golden_summary "benchtiming: "
