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
if [ $# -ne 2 ]; then
  echo "usage: $0 SUITE_DIR GOPC" >&2
  exit 2
fi
suite=$1
gopc=$2
case $gopc in
  */*) gopc="$(cd "$(dirname "$gopc")" && pwd)/$(basename "$gopc")" ;;
esac
cd "$suite" || exit 2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
out=$TMP/stderr
pass=0
fail=0
for case_file in *.args; do
  name=${case_file%.args}
  args=$(sed "s|\$TMP|$TMP|g" "$case_file")
  # shellcheck disable=SC2086 # the arguments are words
  "$gopc" $args >/dev/null 2>"$out.raw"
  status=$?
  # the usage text after a usage error is gopc's own (tested elsewhere):
  # keep stderr up to its first blank line
  { echo "exit $status"; sed '/^$/,$d' "$out.raw"; } >"$out"
  if [ "${UPDATE:-}" = 1 ]; then
    cp "$out" "$name.err"
    echo "updated $name.err (exit status $status)"
    continue
  fi
  if [ -f "$name.err" ] && cmp -s "$name.err" "$out"; then
    pass=$((pass + 1))
  else
    echo "FAIL $name"
    [ -f "$name.err" ] && diff -u "$name.err" "$out" | sed 's/^/  /'
    fail=$((fail + 1))
  fi
done
[ "${UPDATE:-}" = 1 ] && exit 0
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
