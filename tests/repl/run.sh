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
source "$(dirname "$0")/../golden.sh"
golden_setup "$@"
suite=$PWD
gop=${GOP_REPL:-$(dirname "$gopc")/gop}
if [ ! -x "$gop" ]; then
  echo "gop not found at $gop" >&2
  exit 2
fi

for in in *.in *.cmd; do
  [ -f "$in" ] || continue
  name=${in%.*}
  run="$work/$name/run"
  mkdir -p "$run"
  cp ./*.gop "$run"/ 2>/dev/null
  ln -s "$suite/../data" "$work/$name/data"
  # No history file, no terminal: output only.
  if [ "${in%.cmd}" != "$in" ]; then
    eval "set -- $(cat "$in")"
    (cd "$run" && GOP_HISTORY=/dev/null "$gop" "$@" </dev/null >"$work/out" 2>&1)
  else
    (cd "$run" && GOP_HISTORY=/dev/null "$gop" <"$suite/$in" >"$work/out" 2>&1)
  fi
  echo "[exit $?]" >>"$work/out"
  golden_check "$name.out" "$work/out" "$name"
done
golden_summary
