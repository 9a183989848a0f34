#!/usr/bin/env bash
# tests/gpu/reliability.sh CARRY OUT: gop's reliability checks on one GPU,
# in one device call of about five minutes (docs/reliability.md), in this
# order:
#
#   suite     the GPU suite's representative tier (tests/gpu/run.sh): every
#             representative operator x named schedule x setting on
#             REL_SUITE_GRAPHS (default: cora pubmed rmat:14:8) at the
#             widths REL_SUITE_F (default "16 32 128"), each output checked
#             against the interpreter; cases not started within
#             REL_SUITE_BUDGET_S (default 180: on a fresh machine the
#             driver JIT-compiles the 1,332 packs first, 84 s of cora's
#             cases on an H200) are counted as not run
#   index64   the kernels of 64-bit indices, neighbour-group schedules
#             included, on cora and rmat:12:8 with GOP_INDEX64=1, checked
#             against the interpreter, and the refusals of a pack of the
#             other width (tests/gpu/index64.sh, parts 1 and 2)
#   longrun   100,000 cached calls, 10,000 steps of a graph each (graphs
#             and runs freed), and the module cache's bound, host RSS and
#             device memory measured (tests/gpu/longrun.c;
#             REL_LONGRUN_CALLS, REL_LONGRUN_STEPS)
#   threads   8 threads, a stream each, REL_THREADS_ITERS launches per
#             thread (default 2000), then memcheck over
#             REL_THREADS_MEMCHECK_ITERS per thread (default 10)
#             (tests/gpu/threads.sh)
#   sanitize  compute-sanitizer over the suite's runner on cora: memcheck
#             on a representative set (u_mul_e_sum under every schedule
#             family, every operator's default mapping), racecheck and
#             synccheck on the shared-memory schedule (gnnadvisor_shared:
#             promote(eo, shared) and a leader warp's flush), the
#             deterministic segmented reductions and edge softmax's
#             neighbour groups (softmax_teams, softmax_groups), and all
#             three over GAT's attention (gat_groups, gat_teams)
#   initcheck compute-sanitizer's initcheck over the suite's runner with
#             --no-poison on cora: what the kernels write whole (outputs of
#             plain stores, tensors the op fills itself) is left unwritten
#             before the one launch of each pack, so that a read of an
#             element no stage wrote is a finding; outputs still checked
#             against the interpreter. The packs: initcheck/list.txt
#             (tools/gpu-prepare.sh says how they were chosen)
#
# Prepare here:  GOP_PREPARE_ONLY=reliability tools/gpu-prepare.sh
#                (.carry/rel, about 30 MB; carry it)
# There:         bash tests/gpu/reliability.sh .carry/rel "$OUT"
# REL_PARTS chooses the parts and their order (default "suite index64
# longrun threads sanitize initcheck": the hardest to predict last). The parts share
# a deadline of REL_DEADLINE_S seconds (default 540, under the device
# call's 600): a part gets at most what is left, and one that would start
# with less than 20 s is not run (and counts as failed). REL_DRY=1 prints
# what would run and runs nothing. Writes OUT/summary.md (a row a part:
# exit status, seconds, its result line) and each part's logs under
# OUT/PART/; exits 0 when every part passed. REL_MEMCHECK=all runs memcheck
# over every pack of the representative tier (1,179) instead of its subset,
# with the sanitize part's limit REL_SANITIZE_S (default 150; give it ~400
# and the call to that part alone: REL_PARTS=sanitize).
# shellcheck source=tools/gpu-common.sh
source "$(dirname "$0")/../../tools/gpu-common.sh"
# --sanitize, --initcheck: that part alone, the script calling itself
# under timeout
only=""
case ${1:-} in --sanitize | --initcheck) only=${1#--}; shift ;; esac
gpu_usage "tests/gpu/reliability.sh CARRY OUT" 2 "$@"
gpu_out -a "$2"
[ -d "$1" ] || { echo "no folder $1: prepare it with GOP_PREPARE_ONLY=reliability tools/gpu-prepare.sh" >&2; exit 1; }
carry=$(cd "$1" && pwd)
for f in gopc suite threads longrun packs/list.txt initcheck/list.txt index64/small/suite/list.txt \
         threads-kernels longrun-kernels datasets/cora.mtx.gz; do
  [ -e "$carry/$f" ] || { echo "$carry has no $f: prepare it with GOP_PREPARE_ONLY=reliability tools/gpu-prepare.sh" >&2; exit 1; }
done
dry=${REL_DRY:-0}
parts=${REL_PARTS:-suite index64 longrun threads sanitize initcheck}
deadline=$((SECONDS + ${REL_DEADLINE_S:-540}))
# compute-sanitizer comes with the CUDA toolkit, not always on PATH
if ! command -v compute-sanitizer >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin; do
    [ -x "$d/compute-sanitizer" ] && { PATH=$PATH:$d; break; }
  done
fi
sanitizer=$(command -v compute-sanitizer || true)

# part NAME LIMIT RESULT-PATTERN -- COMMAND...: runs COMMAND with at most
# LIMIT seconds (less when the deadline is nearer), its output in
# OUT/NAME/NAME.log (and on the screen); a summary row with the last line
# matching RESULT-PATTERN.
part() {
  local name=$1 limit=$2 pat=$3 left rc t0 result
  shift 4
  mkdir -p "$out/$name"
  left=$((deadline - SECONDS))
  [ "$limit" -le "$left" ] || limit=$left
  echo "== $name (at most ${limit} s): $*"
  if [ "$dry" = 1 ]; then
    echo "| $name | - | - | dry run |" >>"$summary"
    return 0
  fi
  if [ "$limit" -lt 20 ]; then
    echo "   not run: the deadline is near"
    echo "| $name | - | - | not run: the deadline was near |" >>"$summary"
    status=1
    return 0
  fi
  t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$out/$name/$name.log"
  rc=${PIPESTATUS[0]}
  result=$(grep -E "$pat" "$out/$name/$name.log" | tail -1 | tr '|' '/' | cut -c1-160)
  [ "$rc" -eq 124 ] && result="timed out after $limit s; $result"
  echo "| $name | $rc | $((SECONDS - t0)) | ${result:-no result line} |" >>"$summary"
  [ "$rc" -eq 0 ] || status=1
}

# pick NAME AWK-CONDITION: a folder OUT/sanitize/NAME of the suite's packs
# whose list.txt line (op, schedule, file) meets the condition, linked.
pick() {
  local dir=$out/sanitize/$1
  rm -rf "$dir" && mkdir -p "$dir"
  awk -F'\t' "\$3 != \"REFUSED\" && ($2)" "$carry/packs/list.txt" >"$dir/list.txt"
  while IFS=$'\t' read -r _ _ file; do ln -s "$carry/packs/$file" "$dir/$file"; done <"$dir/list.txt"
  echo "$dir"
}

# sanitize TOOL PACKDIR [NAME]: the suite's runner under compute-sanitizer
# TOOL on cora, one checked run a pack (its CSV OUT/sanitize/NAME.csv,
# NAME default TOOL).
sanitize() {
  local tool=$1 dir=$2 name=${3:-$1}
  echo "-- compute-sanitizer --tool $tool: $(wc -l <"$dir/list.txt") packs on cora"
  compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 30 \
    "$carry/suite" run "$dir" "$carry/datasets/cora.mtx.gz" --F 32 --reps 0 \
    --csv "$out/sanitize/$name.csv"
  local rc=$?
  echo "-- $tool: exit $rc"
  return $rc
}

# shellcheck disable=SC2016 # awk's fields, not the shell's
sanitize_all() {
  if [ -z "$sanitizer" ]; then
    echo "sanitize: compute-sanitizer not found: FAILED"
    return 1
  fi
  local rc=0 mem shared
  # every schedule family on u_mul_e_sum (its first setting), the default
  # mapping of every operator, and the shared-memory schedule
  if [ "${REL_MEMCHECK:-subset}" = all ]; then
    mem=$(pick memcheck '1')
  else
    mem=$(pick memcheck '($1 == "u_mul_e_sum" && $3 ~ /_0\.pack$/) || $2 == "default" || $2 ~ /^gnnadvisor_shared\(4, 32, 4\)/')
  fi
  # shared memory (the leader flush of gnnadvisor_shared), the
  # deterministic segmented reductions, whose warps meet at barriers, and
  # edge softmax's neighbour groups (softmax_teams: a group's in-edges on a
  # team's lanes, shuffled together and stored by one lane, plain or
  # atomic; softmax_groups: a thread a group)
  shared=$(pick shared '$2 ~ /^gnnadvisor_shared\((4, 32, 4|16, 5, 2)\)/ ||
    ($2 ~ /^deterministic/ && $3 ~ /_3\.pack$/ && ($1 == "u_mul_e_sum" || $1 == "copy_u_sum")) ||
    ($1 == "edge_softmax" && $2 ~ /^softmax_(teams|groups)\(/)')
  sanitize memcheck "$mem" || rc=1
  sanitize racecheck "$shared" || rc=1
  sanitize synccheck "$shared" || rc=1
  # GAT's fused attention (three stages, temporaries between them; teams
  # that shuffle within a warp), prepared beside the suite's packs
  if [ -f "$carry/gat/list.txt" ]; then
    for t in memcheck racecheck synccheck; do sanitize "$t" "$carry/gat" "gat-$t" || rc=1; done
  else
    echo "sanitize: no $carry/gat (prepared before GAT's packs were added): FAILED"
    rc=1
  fi
  echo "sanitize: $([ $rc -eq 0 ] && echo "no finding" || echo "FAILED: see the reports above")"
  return $rc
}

# initcheck over the runner with --no-poison: nothing but the kernels
# writes what they write whole (reduction targets get their identity from
# the runtime's cuMemsetD32, which initcheck counts as a write); exit 9 is
# a finding, 1 an output unlike the interpreter's
initcheck_all() {
  if [ -z "$sanitizer" ]; then
    echo "initcheck: compute-sanitizer not found: FAILED"
    return 1
  fi
  local dir=$carry/initcheck rc
  mkdir -p "$out/initcheck"
  echo "-- compute-sanitizer --tool initcheck: $(wc -l <"$dir/list.txt") packs on cora, --no-poison"
  compute-sanitizer --tool initcheck --error-exitcode 9 --print-limit 30 \
    "$carry/suite" run "$dir" "$carry/datasets/cora.mtx.gz" --F 32 --no-poison \
    --csv "$out/initcheck/initcheck.csv"
  rc=$?
  echo "-- initcheck: exit $rc"
  if [ -f "$carry/gat/list.txt" ] && { [ $rc -eq 0 ] || [ $rc -eq 1 ]; }; then
    # GAT's temporaries (M, D) are filled by its kernels: read before written?
    compute-sanitizer --tool initcheck --error-exitcode 9 --print-limit 30 \
      "$carry/suite" run "$carry/gat" "$carry/datasets/cora.mtx.gz" --F 32 --no-poison \
      --csv "$out/initcheck/initcheck-gat.csv"
    local g=$?
    echo "-- initcheck (GAT): exit $g"
    [ $g -eq 0 ] || rc=$g
  fi
  case $rc in
    0) echo "initcheck: no finding; $(($(wc -l <"$out/initcheck/initcheck.csv") - 1)) packs as the interpreter" ;;
    9) echo "initcheck: FAILED: uninitialised reads, see the reports above" ;;
    *) echo "initcheck: FAILED (exit $rc): see the FAIL lines above" ;;
  esac
  return $rc
}

case $only in
  sanitize) sanitize_all; exit $? ;;
  initcheck) initcheck_all; exit $? ;;
esac
summary=$out/summary.md
status=0
{
  echo "# gop reliability: $(gpu_name), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "compute-sanitizer: ${sanitizer:-not found}"
  echo
  echo "| part | exit | seconds | result |"
  echo "|---|---:|---:|---|"
} >"$summary"
echo "== $(gpu_name), $(date -u +%Y-%m-%dT%H:%MZ); parts: $parts"
for p in $parts; do
  case $p in
    suite)
      # every pack stays loaded: the suite loads the same 1,332 modules
      # once per graph, which a bound below that would JIT again
      part suite 150 '^# [0-9]+ (passed|cases)|passed|wrong' -- \
        env GOP_SUITE_PRELUDE=0 GOP_SUITE_TIERS=rep GOP_CACHE_MAX_MODULES=4096 \
        GOP_SUITE_GRAPHS="${REL_SUITE_GRAPHS:-cora pubmed rmat:14:8}" \
        GOP_SUITE_BUDGET_S="${REL_SUITE_BUDGET_S:-180}" \
        bash tests/gpu/run.sh "$carry" "$out/suite" --F "${REL_SUITE_F:-16 32 128}" --reps 2 ;;
    index64)
      part index64 90 '^index64:' -- \
        env INDEX64_PART=1 INDEX64_RUNNER=suite INDEX64_GRAPHS="cora rmat:12:8" \
        GOP_CACHE_MAX_MODULES=4096 \
        bash tests/gpu/index64.sh "$carry" "$out/index64" ;;
    threads)
      part threads 120 '^== (passed|FAILED)|^\(exit' -- \
        env THREADS_MEMCHECK_ITERS="${REL_THREADS_MEMCHECK_ITERS:-10}" THREADS_MEMCHECK_TIMEOUT=100 \
        bash tests/gpu/threads.sh "$carry" "${REL_THREADS_ITERS:-2000}" "$out/threads" ;;
    sanitize)
      part sanitize "${REL_SANITIZE_S:-150}" '^sanitize:|^-- [a-z]+: exit' -- bash "$0" --sanitize "$carry" "$out" ;;
    initcheck)
      part initcheck 60 '^initcheck:|^-- initcheck: exit' -- bash "$0" --initcheck "$carry" "$out" ;;
    longrun)
      part longrun 150 '^== longrun|^[0-9]\. ' -- \
        "$carry/longrun" "$carry/longrun-kernels" "${REL_LONGRUN_CALLS:-100000}" \
        "${REL_LONGRUN_STEPS:-10000}" ;;
    *) echo "unknown part $p (suite index64 threads sanitize initcheck longrun)" >&2; status=1 ;;
  esac
done
echo
cat "$summary"
echo
echo "== reliability: $([ $status -eq 0 ] && echo "every part passed" || echo "SOME PARTS FAILED") in $SECONDS s"
exit $status
