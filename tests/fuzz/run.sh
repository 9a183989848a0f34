#!/usr/bin/env bash
# tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]: runs each libFuzzer
# harness (default: every one built in BUILD_DIR/tests/fuzz) for SECONDS,
# one after another, starting from its committed corpus
# (tests/fuzz/corpus/NAME, which is read, never written: new inputs go to a
# scratch folder) and the language's dictionary. Prints one summary line per
# harness (executions, coverage, features) and fails on the first finding:
# a crash, a sanitizer report, a leak, a timeout or running out of memory.
# The input that found it is left in $GOP_FUZZ_ARTIFACTS (default
# ./fuzz-artifacts): add it to the harness's corpus once fixed.
#
#   FUZZ_NICE=19 FUZZ_JOBS=1 ... : extra options (see docs/fuzzing.md)
#   FUZZ_CPU=1: SECONDS counts the harness's CPU time, not wall time
#   FUZZ_TIMEOUT=S: an input running longer than S seconds is a finding
#     (default 20; 300 with FUZZ_NICE above 0: libFuzzer times inputs by the
#     wall clock, and a harness at nice 19 beside busy processes gets about
#     1.5% of a core, so a 1-second input can take a minute)
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS [HARNESS...]" >&2
  exit 2
fi
build=$1
secs=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/tests/fuzz
if [ $# -gt 0 ]; then
  names=("$@")
else
  names=()
  for f in "$bin"/fuzz_*; do [ -x "$f" ] && names+=("$(basename "$f")"); done
fi
if [ ${#names[@]} -eq 0 ]; then
  echo "no harnesses in $bin (configure with -DGOP_FUZZ=ON and build the 'fuzz' target)" >&2
  exit 2
fi
artifacts=${GOP_FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}
mkdir -p "$artifacts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
for name in "${names[@]}"; do
  short=${name#fuzz_}
  corpus=$here/corpus/$short
  new=$scratch/new-$short
  mkdir -p "$new"
  maxlen=4096
  case $short in graph|pack|tunedb|npy|predictor) maxlen=65536 ;; esac
  log=$scratch/$short.log
  wall=$secs
  [ -n "${FUZZ_CPU:-}" ] && wall=$((secs * 100))
  timeout=${FUZZ_TIMEOUT:-20}
  [ -z "${FUZZ_TIMEOUT:-}" ] && [ "${FUZZ_NICE:-0}" -gt 0 ] && timeout=300
  nice -n "${FUZZ_NICE:-0}" "$bin/$name" -max_total_time="$wall" -timeout="$timeout" \
    -rss_limit_mb=2048 -max_len=$maxlen -dict="$here/gop.dict" -close_fd_mask=3 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$short-" "$new" "$corpus" >"$log" 2>&1 </dev/null &
  pid=$!
  used=$secs
  if [ -n "${FUZZ_CPU:-}" ]; then
    # SECONDS of CPU time, not wall time: on a shared machine a harness at
    # low priority gets a fraction of a core. libFuzzer's interrupt (SIGINT)
    # prints the final statistics and exits with 72.
    tick=$(getconf CLK_TCK)
    while kill -0 "$pid" 2>/dev/null; do
      sleep 10
      { read -r -a st <"/proc/$pid/stat"; } 2>/dev/null || break
      used=$(( (st[13] + st[14]) / tick ))
      if [ "$used" -ge "$secs" ]; then kill -INT "$pid"; break; fi
    done
  fi
  wait "$pid"
  rc=$?
  [ -n "${FUZZ_CPU:-}" ] && [ $rc -eq 72 ] && rc=0
  # libFuzzer's last status line: #N DONE cov: C ft: F corp: ...
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
  corp=$(echo "$last" | sed -n 's/.*corp: \([0-9]*\).*/\1/p')
  if [ $rc -eq 0 ]; then
    printf '%-10s ok       %8s execs in %ss%s, cov %s, ft %s, corpus %s\n' "$short" "$execs" \
      "$used" "${FUZZ_CPU:+ of CPU}" "$cov" "$ft" "$corp"
  else
    printf '%-10s FINDING  (exit %d) after %s execs; artifact in %s\n' "$short" "$rc" \
      "${execs:-?}" "$artifacts"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written|==[0-9]+==' "$log" | head -20 | \
      sed 's/^/    /'
    status=1
  fi
done
exit $status
