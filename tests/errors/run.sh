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

if [ $# -ne 2 ]; then
  echo "usage: $0 SUITE_DIR GOPC" >&2
  exit 2
fi
suite=$1
gopc=$2
# gopc may be given relative to where we were started
case $gopc in
  */*) gopc="$(cd "$(dirname "$gopc")" && pwd)/$(basename "$gopc")" ;;
esac
cd "$suite" || exit 2

out=$(mktemp)
trap 'rm -f "$out"' EXIT

pass=0
fail=0
for src in *.gop; do
  name=${src%.gop}
  "$gopc" check "$src" >/dev/null 2>"$out"
  status=$?
  if [ "${UPDATE:-}" = 1 ]; then
    cp "$out" "$name.err"
    echo "updated $name.err (exit status $status)"
    [ $status -eq 1 ] || echo "  warning: $src exits with $status, not 1"
    continue
  fi
  ok=1
  if [ $status -ne 1 ]; then
    echo "FAIL $name: exit status $status, expected 1"
    ok=0
  fi
  if [ ! -f "$name.err" ]; then
    echo "FAIL $name: $name.err is missing (make it with UPDATE=1)"
    ok=0
  elif ! cmp -s "$name.err" "$out"; then
    echo "FAIL $name: stderr differs from $name.err"
    diff -u "$name.err" "$out" | sed 's/^/  /'
    ok=0
  fi
  if [ $ok -eq 1 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
  fi
done

[ "${UPDATE:-}" = 1 ] && exit 0
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
