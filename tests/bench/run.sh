#!/usr/bin/env bash
# tests/bench/run.sh SUITE_DIR GOPC: bench/gop_bench's bad arguments, each
# refused with a message that names the option and the value (and the
# usage after a blank line), exit status 2; a good --edges goes on to read
# the plan.
#
# Each NAME.args holds gop_bench's arguments (one line, split into words at
# spaces, no quoting; $TMP is a scratch directory), run from this folder;
# NAME.err holds `exit N` and then stderr up to its first blank line.
# gop_bench is $GOP_BENCH (set by ctest), else bench/gop_bench beside GOPC.
# UPDATE=1 rewrites every NAME.err instead of comparing; read each one
# before committing it.
set -u
source "$(dirname "$0")/../golden.sh"
golden_setup "$@"
golden_program GOP_BENCH bench/gop_bench gop_bench
golden_args "$runner"
golden_summary
