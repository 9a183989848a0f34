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
# A pack compiled for edge ids in CSR order (gopc pack --csr-edges,
# docs/gpu-ir.md) records it, and a run of it on a graph whose edge ids are
# in another order is refused before anything runs, naming the fix
# (--reorder none numbers a graph's edges in CSR order).
if "$gopc" pack stdlib:u_mul_e_sum --schedule 'spmm_groups(16, 4)' --csr-edges \
     -o "$work/csr.pack" >/dev/null 2>&1 && grep -qx 'edges csr' "$work/csr.pack"; then
  "$gopc" run --pack "$work/csr.pack" --graph rmat:8:8 --F 8 >/dev/null 2>"$work/raw"
  status=$?
  { echo "exit $status"; sed "/^\$/,\$d; s|$work/||" "$work/raw"; } >"$work/err"
  golden_check csr_pack_on_file_order.err "$work/err" "csr_pack_on_file_order"
else
  golden_failed "gopc pack --csr-edges" "no pack, or no 'edges csr' line in it"
fi
golden_summary
