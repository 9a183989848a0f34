#!/usr/bin/env bash
# tests/reorder/run.sh SUITE_DIR GOPC: golden tests of gopc's reordering
# options (gopc graph --reorder, gopc run --reorder), their bad inputs above
# all.
#
# Each NAME.args holds the arguments of one gopc command (one line, split
# into words at spaces, no quoting; $TMP is a scratch directory); NAME.err
# holds `exit N` on its first line and then stderr up to its first blank
# line (a usage error's usage text is left out). A test passes when both
# match.
# UPDATE=1 rewrites every NAME.err from gopc's output instead of comparing;
# read each rewritten file before committing it.
set -u
source "$(dirname "$0")/../golden.sh"
golden_setup "$@"
TMP=$work/scratch
mkdir -p "$TMP"
for case_file in *.args; do
  name=${case_file%.args}
  args=$(sed "s|\$TMP|$TMP|g" "$case_file")
  # shellcheck disable=SC2086 # the arguments are words
  "$gopc" $args >/dev/null 2>"$work/raw"
  status=$?
  # the usage text after a usage error is gopc's own (tested elsewhere):
  # keep stderr up to its first blank line
  { echo "exit $status"; sed '/^$/,$d' "$work/raw"; } >"$work/err"
  golden_check "$name.err" "$work/err" "$name" "exit status $status"
done
golden_summary
