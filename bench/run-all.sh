#!/usr/bin/env bash
# bench/run-all.sh: everything the GPU machine checks and times, in one
# device call (under its 10-minute limit with the default budgets).
# Prepare the carry folder here first: tools/gpu-prepare.sh (it builds the
# static gopc and REPL, the no-LLVM runners, the suite's and the
# benchmark's kernel packs, and copies the graphs).
#
#   bash bench/run-all.sh CARRY OUT [PHASE...]
#
# Phases, in order (default: all):
#   suite   tests/gpu/run.sh: the driver layer's tests, gopc on the GPU, and
#           every stdlib op x named schedule checked against the interpreter
#           at F = 18 and 128 (GOP_SUITE_F; GOP_SUITE_BUDGET_S, default 120 s)
#   ops     every operator of the table under the default schedule, the
#           representative ones under every named schedule, on cora
#           (tools/gpu-ops-check.sh)
#   peers   cuSPARSE, PyTorch Geometric and torch on every carried graph
#           (bench/peers/run_peers.sh)
#           (both timed by CUDA graph replay unless GOP_TIMING=events;
#           bench/README.md, Timing)
#   gop     gop's candidates on the same graphs and widths (bench/gop_bench.c;
#           GOP_BENCH_BUDGET_S, default 280 s: the two sums on all 14 graphs take
#           about 250 s with rotated inputs, run 11), then bench/report.py
#   models  GCN, GIN, GAT, GraphSAGE in gop and in PyG (bench/models.sh),
#           when present
#   python  the Python package on torch CUDA tensors: every stdlib operator,
#           streams, errors, the kernel cache, per-call overhead, GCN/GAT/
#           SAGE/GIN forward vs PyG on pubmed and ogbn-arxiv
#           (tests/gpu/python_check.sh; not in the default list: name it)
#   train   training with gop's autograd: every operator's gradient vs torch
#           autograd, GCN/GAT/SAGE training vs PyG on pubmed and ogbn-arxiv
#           (tests/gpu/train.sh, bench/train.py; not in the default list)
#   tune    gopc tune on one case (GOP_TUNE_BUDGET_S, default 30 s)
#   repl    a REPL session with run, compare and tune, kept as a transcript
#   noise   (optional, not in the default list) the spread of times between
#           identical calls of gop, cuSPARSE and PyG on cora, citeseer and
#           pubmed, with events and by graph replay (bench/timing_noise.sh,
#           about 2 minutes)
#   reorder (optional, not in the default list) vertex reorderings x
#           aggregation schedules on the carried graphs (bench/reorder.sh;
#           GOP_REORDER_BUDGET_S, default 300 s)
# Writes OUT/<phase>/..., OUT/report/ and prints a short summary last.
source "$(dirname "$0")/../tools/gpu-common.sh"
gpu_usage "bench/run-all.sh CARRY OUT [PHASE...]" 2 "$@"
gpu_out -a "$2"
gpu_carry -a "$1"
shift 2
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(suite ops peers gop models tune repl)
T0=$(date +%s)
status=0
summary=()
gpu=$(gpu_name)
echo "== $gpu, $(date -u +%Y-%m-%dT%H:%MZ), phases: ${phases[*]}"

phase() { # name, then the command; records its status and seconds
  local name=$1 t=$(date +%s) rc
  shift
  echo "== $name ($(( t - T0 )) s in)"
  "$@"
  rc=$?
  summary+=("$(printf '%-7s %s in %d s' "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAILED ($rc)")" $(( $(date +%s) - t )))")
  [ $rc -eq 0 ] || status=1
}

graph_names() {
  for f in "$carry"/datasets/*.mtx.gz; do basename "$f" .mtx.gz; done
}

run_suite() {
  # F = 18 takes the scalar tails of 16-byte schedules, 128 their vector path
  GOP_SUITE_BUDGET_S=${GOP_SUITE_BUDGET_S:-120} bash tests/gpu/run.sh "$carry" "$out/suite" \
    --reps 3 --F "${GOP_SUITE_F:-18 128}"
}

run_peers() {
  bash bench/peers/run_peers.sh "$carry/datasets" "$out/peers" $(graph_names) \
    --timing "${GOP_TIMING:-graph}" 2>&1 | tail -25
  return "${PIPESTATUS[0]}"
}

run_gop() {
  "$carry/gop_bench" run "$carry/bench" "$carry/datasets" --csv "$out/gop/gop_bench.csv" \
    --reps 10 --budget-s "${GOP_BENCH_BUDGET_S:-280}" --timing "${GOP_TIMING:-graph}" \
    > "$out/gop/gop_bench.log" 2>&1
  local rc=$?
  grep -E '^(FAIL|#)' "$out/gop/gop_bench.log" | grep -v '^# note' | tail -20
  grep -c '^# note' "$out/gop/gop_bench.log" | sed 's/$/ rows fell back from graph replay to events/'

  tail -1 "$out/gop/gop_bench.log"
  if [ -f "$out/peers/peers.csv" ]; then
    python3 bench/report.py "$out/gop/gop_bench.csv" "$out/peers/peers.csv" "$out/report" || rc=1
  else
    echo "no peers.csv (run the peers phase too): no report"
  fi
  return $rc
}

run_ops() {
  bash tools/gpu-ops-check.sh "$carry/gopc" "$out/ops/ops-check.log" \
    "$carry/datasets/cora.mtx.gz" > /dev/null
  local rc=$?
  grep -E '^FAIL' "$out/ops/ops-check.log" | head -20
  tail -2 "$out/ops/ops-check.log"
  return $rc
}

run_models() {
  if [ ! -f bench/models.sh ]; then
    echo "bench/models.sh is not there yet: skipped"
    return 0
  fi
  bash bench/models.sh "$carry" "$out/models"
}

run_python() {
  bash tests/gpu/python_check.sh "$carry" "$out/python" | grep -E '^(FAIL|==)|geometric'
  return "${PIPESTATUS[0]}"
}

run_train() {
  bash tests/gpu/train.sh "$carry" "$out/train" | grep -E '^(FAIL|==)|speedup|epoch'
  return "${PIPESTATUS[0]}"
}

run_tune() {
  "$carry/gopc" tune stdlib:u_mul_e_sum --graph "$carry/datasets/ogbn-arxiv.mtx.gz" --F 128 \
    --budget-s "${GOP_TUNE_BUDGET_S:-30}" --db "$out/tune/tune.db" 2>&1 | tee "$out/tune/tune.log"
  local rc=${PIPESTATUS[0]}
  [ $rc -eq 0 ] || return $rc
  # What gopc run picks now: the database's best.
  "$carry/gopc" run stdlib:u_mul_e_sum --graph "$carry/datasets/ogbn-arxiv.mtx.gz" --F 128 \
    --db "$out/tune/tune.db" --check 2>&1 | tee -a "$out/tune/tune.log"
  return "${PIPESTATUS[0]}"
}

run_noise() {
  bash bench/timing_noise.sh "$carry" "$out/noise" | tail -20
  return "${PIPESTATUS[0]}"
}

run_reorder() {
  bash bench/reorder.sh "$carry" "$out/reorder"
}

run_repl() {
  "$carry/gop" -e "set timing on; use u_mul_e_sum; graph $carry/datasets/blogcatalog.mtx.gz; set F 64; \
schedule warp_edge(1, 1); run; check; compare; tune 15; history" 2>&1 | tee "$out/repl/session.txt"
  return "${PIPESTATUS[0]}"
}

for p in "${phases[@]}"; do
  mkdir -p "$out/$p"
  case $p in
    suite | ops | peers | gop | models | python | train | tune | repl | reorder | noise) phase "$p" "run_$p" ;;
    *) echo "unknown phase $p (suite ops peers gop models python train tune repl reorder noise)" >&2; exit 2 ;;
  esac
done

echo "== summary ($(( $(date +%s) - T0 )) s, $gpu)"
printf '%s\n' "${summary[@]}"
[ -f "$out/report/report.md" ] && sed -n '/^## Targets/,/^## Per case/p' "$out/report/report.md" |
  grep '^|'
exit $status
