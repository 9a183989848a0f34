#!/usr/bin/env bash
# tests/repl/run.sh SUITE_DIR GOPC: transcript tests of `gop`, the REPL.
#
# Each NAME.in is a session script; NAME.out is the exact stdout and
# stderr (together, in order) of `gop < NAME.in`, then `[exit N]`. A
# NAME.cmd instead holds gop's arguments, shell-quoted on one line (for
# `gop -e '...'` and `gop --help`), run with no input. Each test runs in a
# fresh scratch folder holding a copy of the suite's .gop fixtures, so that
# `save` can write files without touching the tree; `../data` there is
# tests/data. gop is found as $GOP_REPL (set by ctest), else next to gopc.
#
# UPDATE=1 rewrites every NAME.out from gop's output instead of comparing;
# read each rewritten file before committing it.
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 SUITE_DIR GOPC" >&2
  exit 2
fi
suite=$(cd "$1" && pwd) || exit 2
gopc=$2
case $gopc in
  */*) gopc="$(cd "$(dirname "$gopc")" && pwd)/$(basename "$gopc")" ;;
esac
gop=${GOP_REPL:-$(dirname "$gopc")/gop}
if [ ! -x "$gop" ]; then
  echo "gop not found at $gop" >&2
  exit 2
fi

scratch=$(mktemp -d)
out=$(mktemp)
trap 'rm -rf "$scratch" "$out"' EXIT

pass=0
fail=0
for in in "$suite"/*.in "$suite"/*.cmd; do
  [ -f "$in" ] || continue
  name=$(basename "$in"); name=${name%.*}
  work="$scratch/$name/run"
  mkdir -p "$work"
  cp "$suite"/*.gop "$work"/ 2>/dev/null
  ln -s "$suite/../data" "$scratch/$name/data"
  # No history file, no terminal: output only.
  if [ "${in%.cmd}" != "$in" ]; then
    eval "set -- $(cat "$in")"
    (cd "$work" && GOP_HISTORY=/dev/null "$gop" "$@" </dev/null >"$out" 2>&1)
  else
    (cd "$work" && GOP_HISTORY=/dev/null "$gop" <"$in" >"$out" 2>&1)
  fi
  echo "[exit $?]" >>"$out"
  if [ "${UPDATE:-}" = 1 ]; then
    cp "$out" "$suite/$name.out"
    echo "updated $name.out"
    continue
  fi
  if [ ! -f "$suite/$name.out" ]; then
    echo "FAIL $name: $name.out is missing (make it with UPDATE=1)"
    fail=$((fail + 1))
  elif ! cmp -s "$suite/$name.out" "$out"; then
    echo "FAIL $name: output differs from $name.out"
    diff -u "$suite/$name.out" "$out" | sed 's/^/  /'
    fail=$((fail + 1))
  else
    pass=$((pass + 1))
  fi
done

[ "${UPDATE:-}" = 1 ] && exit 0
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
