#!/usr/bin/env bash
# tests/errors/run.sh SUITE_DIR GOPC: the front end's error golden tests.
#
# Each NAME.gop holds one mistake (a few hold several, to show that one run
# reports them all); NAME.err is the exact stderr of `gopc check NAME.gop`
# run from this folder. A test passes when gopc exits with status 1 and its
# stderr matches NAME.err byte for byte.
#
# UPDATE=1 rewrites every NAME.err from gopc's output instead of comparing;
# read each rewritten file before committing it.
set -u
source "$(dirname "$0")/../golden.sh"
golden_setup "$@"

for src in *.gop; do
  name=${src%.gop}
  "$gopc" check "$src" >/dev/null 2>"$work/err"
  status=$?
  if [ "${UPDATE:-}" != 1 ] && [ $status -ne 1 ]; then
    golden_failed "$name" "exit status $status, expected 1"
    continue
  fi
  golden_check "$name.err" "$work/err" "$name" "exit status $status"
  if [ "${UPDATE:-}" = 1 ] && [ $status -ne 1 ]; then
    echo "  warning: $src exits with $status, not 1"
  fi
done
golden_summary
