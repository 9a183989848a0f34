# tests/golden.sh: what the golden runners share (sourced by
# tests/errors/run.sh, tests/grad/run.sh, tests/reorder/run.sh,
# tests/bench/run.sh, tests/repl/run.sh, tests/gpusuite/run.sh,
# tests/benchtiming/run.sh, and by
# tests/ptxas/run.sh for golden_find_ptxas).
#
#   source "$(dirname "$0")/../golden.sh"
#   golden_setup "$@"              # SUITE_DIR GOPC: $gopc absolute, cd
#                                  # SUITE_DIR, a scratch folder $work
#   ... for each case: write its output to a file, then
#   golden_check NAME.expected "$work/out" "what failed" [NOTE]
#   (or golden_args PROG: NAME.args -> NAME.err, PROG's exit status and
#   stderr)
#   golden_summary "label: "       # "N passed, M failed"; status 1 on a failure
#
# golden_check compares byte for byte and counts; with UPDATE=1 it
# rewrites the expected file instead (read each one before committing it)
# and counts nothing.

golden_pass=0
golden_fail=0

golden_setup() {
  if [ $# -ne 2 ]; then
    echo "usage: $0 SUITE_DIR GOPC" >&2
    exit 2
  fi
  gopc=$2
  # gopc may be given relative to where we were started
  case $gopc in
    */*) gopc="$(cd "$(dirname "$gopc")" && pwd)/$(basename "$gopc")" ;;
  esac
  cd "$1" || exit 2
  work=$(mktemp -d "${TMPDIR:-/tmp}/gop-golden.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

# golden_check EXPECTED GOT WHAT [NOTE]: 0 when GOT matches EXPECTED.
golden_check() {
  local want=$1 got=$2 what=$3 note=${4:-}
  if [ "${UPDATE:-}" = 1 ]; then
    cp "$got" "$want"
    echo "updated $want${note:+ ($note)}"
    return 0
  fi
  if [ ! -f "$want" ]; then
    echo "FAIL $what: $want is missing (make it with UPDATE=1)"
  elif cmp -s "$want" "$got"; then
    golden_pass=$((golden_pass + 1))
    return 0
  else
    echo "FAIL $what: the output differs from $want"
    diff -u "$want" "$got" | head -60 | sed 's/^/  /'
  fi
  golden_fail=$((golden_fail + 1))
  return 1
}

# golden_args PROG: the argument cases of this folder. Each NAME.args holds
# PROG's arguments (one line, split into words at spaces, no quoting; $TMP
# is a scratch folder); NAME.err holds `exit N` on its first line and then
# PROG's stderr up to its first blank line (a usage error's usage text is
# left out). Each case is a golden_check.
golden_args() {
  local prog=$1 case_file name args status
  local tmp=$work/scratch
  mkdir -p "$tmp"
  for case_file in *.args; do
    name=${case_file%.args}
    args=$(sed "s|\$TMP|$tmp|g" "$case_file")
    # shellcheck disable=SC2086 # the arguments are words
    "$prog" $args >/dev/null 2>"$work/raw"
    status=$?
    { echo "exit $status"; sed '/^$/,$d' "$work/raw"; } >"$work/err"
    golden_check "$name.err" "$work/err" "$name" "exit status $status"
  done
}

# golden_failed WHAT REASON: a case that failed before its comparison.
golden_failed() {
  echo "FAIL $1: $2"
  golden_fail=$((golden_fail + 1))
}

# golden_ok / golden_bad WHY: count a pass / a failure saying WHY, for
# checks that are not a comparison with an expected file.
golden_ok() { golden_pass=$((golden_pass + 1)); }
golden_bad() {
  echo "FAIL: $*"
  golden_fail=$((golden_fail + 1))
}

# golden_program VAR PATH NAME: after golden_setup, the program NAME a
# suite runs: $VAR when set (ctest sets it), else PATH under gopc's build
# folder; sets $runner to it, absolute. Exits 1 saying what is missing
# when it is not there.
golden_program() {
  runner=${!1:-$(dirname "$gopc")/$2}
  case $runner in */*) runner="$(cd "$(dirname "$runner")" && pwd)/$(basename "$runner")" ;; esac
  if [ ! -x "$runner" ]; then
    echo "FAIL: needs $3 ($runner)"
    exit 1
  fi
}

# golden_stand_in VAR PATH NAME: golden_program for a check that runs on
# the stand-in driver (tests/unit/fake_cuda.c); also exits 1 when
# GOP_FAKE_CUDA is not set (tests/gpusuite, tests/benchtiming).
golden_stand_in() {
  golden_program "$@"
  if [ -z "${GOP_FAKE_CUDA:-}" ]; then
    echo "FAIL: needs GOP_FAKE_CUDA for $3 (run through ctest)"
    exit 1
  fi
}

# golden_summary [LABEL]: the counts; status 1 when a case failed.
golden_summary() {
  [ "${UPDATE:-}" = 1 ] && return 0
  echo "${1:-}$golden_pass passed, $golden_fail failed"
  [ $golden_fail -eq 0 ]
}

# golden_find_ptxas: sets $ptxas to $GOP_PTXAS, else
# /usr/local/cuda/bin/ptxas, else the one on PATH. 0 when found; 1 after
# saying so when there is none and GOP_SKIP_PTXAS=1 allows that (a machine
# without the toolkit on purpose); 2 after saying what is missing (CI has
# the toolkit, so there it is a failure).
golden_find_ptxas() {
  ptxas=${GOP_PTXAS:-}
  if [[ -z $ptxas ]]; then
    if [[ -x /usr/local/cuda/bin/ptxas ]]; then
      ptxas=/usr/local/cuda/bin/ptxas
    else
      ptxas=$(command -v ptxas || true)
    fi
  fi
  [[ -n $ptxas && -x $ptxas ]] && return 0
  if [[ ${GOP_SKIP_PTXAS:-} == 1 ]]; then
    echo "ptxas: not found; skipped because GOP_SKIP_PTXAS=1"
    return 1
  fi
  echo "FAIL: ptxas not found (\$GOP_PTXAS, /usr/local/cuda/bin/ptxas, PATH): the CUDA" >&2
  echo "toolkit is needed to check the PTX; set GOP_SKIP_PTXAS=1 to skip this on a" >&2
  echo "machine that has none." >&2
  return 2
}
