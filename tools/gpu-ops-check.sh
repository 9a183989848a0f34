#!/usr/bin/env bash
# tools/gpu-ops-check.sh GOPC LOG [GRAPH...]: the operator space
# (docs/operators.md) on a GPU, each run checked against the interpreter.
#
# Every stdlib operator runs under the default schedule; the representative
# subset (`gopc ops --representative`) also under every named schedule of
# stdlib/schedules.gop with parameters 1 (GOP_OPS_ALL=1: every operator
# under every schedule). Each combination is `gopc run --gpu --check` at
# F = 32 (H = 4 where the operator has heads) on each GRAPH (default: cora
# from ../shared/datasets). A schedule the scheduler refuses for an
# operator is listed and skipped; anything else must run and agree. One
# line per run goes to LOG and stdout, then a summary; exit 1 on any
# failure. GOP_OPS_DEVICE=--interp runs the same on the interpreter (to
# try the script on a machine without a GPU). Run from the repository
# root, e.g. on the GPU machine:
#
#   bash tools/gpu-ops-check.sh .carry/gpu/gopc $OUT/ops-check.log .carry/gpu/datasets/cora.mtx.gz
set -uo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 GOPC LOG [GRAPH...]" >&2
  exit 2
fi
gopc=$1
log=$2
shift 2
graphs=("$@")
[[ ${#graphs[@]} -eq 0 ]] && graphs=(../shared/datasets/cora.mtx.gz)
src=$(cd "$(dirname "$0")/.." && pwd)

mapfile -t all < <("$gopc" ops | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p')
mapfile -t rep < <("$gopc" ops --representative | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p')
if [[ ${#all[@]} -eq 0 ]]; then
  echo "FAIL: \`$gopc ops\` listed no operator" >&2
  exit 1
fi
# `schedule NAME(P1, P2)` -> NAME(1, 1)
named=()
while read -r name params; do
  args=""
  if [[ -n $params ]]; then
    n=$(awk -F, '{print NF}' <<<"$params")
    args=1
    for ((i = 1; i < n; i++)); do args+=", 1"; done
  fi
  named+=("$name($args)")
done < <(sed -n 's/^schedule \([A-Za-z_][A-Za-z0-9_]*\)(\([^)]*\)).*/\1 \2/p' \
           "$src/stdlib/schedules.gop")

: >"$log"
ok=0 refused=0 failed=0
one() { # op schedule graph
  local op=$1 sched=$2 graph=$3 dims=() sargs=() sig
  sig=$("$gopc" ops "$op" | head -1)
  grep -q 'F\]' <<<"$sig" && dims+=(--F 32)
  grep -q 'H, F\]' <<<"$sig" && dims+=(--H 4)
  [[ $sched != default ]] && sargs=(--schedule "$sched")
  local line
  if ! line=$("$gopc" emit "stdlib:$op" --stage lowered "${sargs[@]}" 2>&1 >/dev/null); then
    refused=$((refused + 1))
    echo "refused $op $sched: $(grep -m1 'error:' <<<"$line" | sed 's/.*error: //')" | tee -a "$log"
    return
  fi
  local out
  out=$("$gopc" run "stdlib:$op" --graph "$graph" "${dims[@]}" "${sargs[@]}" \
        "${GOP_OPS_DEVICE:---gpu}" --check --warmup 1 --reps 5 2>&1)
  local rc=$?
  local time
  time=$(sed -n 's/^  time \([0-9.]* ms\).*/\1/p' <<<"$out")
  if [[ $rc -eq 0 ]] && grep -q 'check: every output agrees' <<<"$out"; then
    ok=$((ok + 1))
    echo "ok      $op $sched $(basename "$graph") ${time:-?}" | tee -a "$log"
  else
    failed=$((failed + 1))
    { echo "FAIL    $op $sched $(basename "$graph") (exit $rc)"; sed 's/^/    /' <<<"$out"; } |
      tee -a "$log"
  fi
}

for graph in "${graphs[@]}"; do
  for op in "${all[@]}"; do
    one "$op" default "$graph"
    wide=${GOP_OPS_ALL:-}
    for r in "${rep[@]}"; do [[ $r == "$op" ]] && wide=1; done
    [[ -n $wide ]] || continue
    for sched in "${named[@]}"; do one "$op" "$sched" "$graph"; done
  done
done
echo "ops check: $ok ran and agreed, $refused refused by the scheduler, $failed failed" |
  tee -a "$log"
((failed == 0 && ok > 0))
