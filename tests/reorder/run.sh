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
golden_args "$gopc"
golden_summary
