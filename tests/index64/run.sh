#!/usr/bin/env bash
# tests/index64/run.sh SUITE_DIR GOPC: 64-bit indices without a GPU
# (docs/index64.md). Kernel packs of both widths are made with gopc and run
# by tests/gpu/index64.c's runner on the reference interpreter on small
# rings, checked exactly against the ring's closed form; a pack of the
# other width is refused with its message; code generation reads 64-bit
# offsets and edge ids, and picks neighbour groups in 64-bit as in 32-bit.
set -uo pipefail
gopc=$2
runner=$(dirname "$gopc")/tests/gop_gpu_index64
work=$(mktemp -d /tmp/gop-index64.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
check() { # DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  if "$@" >"$work/out" 2>&1; then
    echo "ok      $what"
  else
    echo "FAIL    $what"
    sed 's/^/    /' "$work/out"
    fail=1
  fi
}
expect() { # DESCRIPTION TEXT COMMAND...: the command must fail, saying TEXT
  local what=$1 want=$2
  shift 2
  if "$@" >"$work/out" 2>&1; then
    echo "FAIL    $what: succeeded"
    fail=1
  elif grep -qF -- "$want" "$work/out"; then
    echo "ok      $what"
  else
    echo "FAIL    $what: expected '$want'"
    sed 's/^/    /' "$work/out"
    fail=1
  fi
}

check "pack copy_u_sum thread_vertex 64-bit" \
  "$gopc" pack stdlib:copy_u_sum --schedule 'thread_vertex(1, 1)' --index64 -o "$work/c64.pack"
check "pack u_mul_e_sum thread_edge 64-bit" \
  "$gopc" pack stdlib:u_mul_e_sum --schedule 'thread_edge(1, 1)' --index64 -o "$work/w64.pack"
check "pack u_mul_e_sum spmm_vec4p 64-bit (GOP_INDEX64=1)" \
  env GOP_INDEX64=1 "$gopc" pack stdlib:u_mul_e_sum --schedule 'spmm_vec4p(1)' -o "$work/p64.pack"
check "pack copy_u_sum warp_vertex 32-bit" \
  "$gopc" pack stdlib:copy_u_sum --schedule 'warp_vertex(1, 1)' -o "$work/c32.pack"
check "a 64-bit pack says so" grep -qx "index 64" "$work/c64.pack"
check "so does one of GOP_INDEX64=1" grep -qx "index 64" "$work/p64.pack"
check "a 32-bit pack says nothing" bash -c "! grep -q '^index' '$work/c32.pack'"
check "64-bit packs on ring:3000:33 equal the closed form (interpreter)" \
  env GOP_INDEX64=1 "$runner" --interp ring:3000:33 "$work/c64.pack:2" "$work/w64.pack:1" \
  "$work/p64.pack:4"
check "32-bit pack on ring:3000:2 at F = 5 equals the closed form" \
  "$runner" --interp ring:3000:2 "$work/c32.pack:5"
expect "a 64-bit pack on a small graph without GOP_INDEX64=1" \
  "copy_u_sum was compiled for 64-bit indices, but ring:100:3 (300 edges) runs with 32-bit ones" \
  env GOP_INDEX64=0 "$runner" --interp ring:100:3 "$work/c64.pack:1"
expect "a 32-bit pack with GOP_INDEX64=1" \
  "copy_u_sum was compiled for 32-bit indices, but GOP_INDEX64=1 asks for kernels of 64-bit" \
  env GOP_INDEX64=1 "$runner" --interp ring:100:3 "$work/c32.pack:1"
check "64-bit PTX reads offsets and edge ids as u64" \
  bash -c "'$gopc' emit stdlib:u_mul_e_sum --stage ptx --schedule 'warp_vertex(1, 1)' --index64 | grep -q 'ld.global.nc.u64'"
# neighbour groups at 64 bits: the tables' CSR positions and row numbers
# are int64, the row count a .u64 parameter
check "64-bit neighbour groups read u64 CSR positions (32-bit ones do not)" \
  bash -c "'$gopc' emit stdlib:copy_u_sum --stage ptx --schedule 'spmm_groups(2, 2)' --index64 | grep -q 'ld.global.nc.u64' && ! '$gopc' emit stdlib:copy_u_sum --stage ptx --schedule 'spmm_groups(2, 2)' | grep -q 'ld.global.nc.u64'"
check "pack copy_u_sum spmm_groups, u_mul_e_sum gnnadvisor (@shared), copy_u_sum spmm_teams 64-bit" \
  bash -c "'$gopc' pack stdlib:copy_u_sum --schedule 'spmm_groups(2, 2)' --index64 -o '$work/g64.pack' && '$gopc' pack stdlib:u_mul_e_sum --schedule 'gnnadvisor(16, 2)' --index64 -o '$work/a64.pack' && '$gopc' pack stdlib:copy_u_sum --schedule 'spmm_teams(4, 2)' --index64 -o '$work/t64.pack'"
check "64-bit group packs on ring:3000:33 equal the closed form (interpreter)" \
  env GOP_INDEX64=1 "$runner" --interp ring:3000:33 "$work/g64.pack:2" "$work/a64.pack:3" \
  "$work/t64.pack:1"
# the schedule chooser takes neighbour groups at 64 bits too (at the 32-bit
# kernels' occupancy they run within 1.04x of them): the same pick as 32-bit
# (u_dot_v's is sddmm_groups on this ring under the cost model: the
# built-in predictor, which picks without groups there, is off)
pick() {
  GOP_PREDICTOR=off GOP_INDEX64=$1 "$gopc" run "stdlib:$2" --interp --graph ring:100:5 --F "$3" | grep "schedule:"
}
wide=$(pick 1 u_dot_v 16) narrow=$(pick '' u_dot_v 16)
check "the schedule chooser with 64-bit indices picks as with 32-bit, groups too (u_dot_v: $wide)" \
  bash -c "[ '$wide' = '$narrow' ] && grep -q group <<<'$wide'"
wide=$(pick 1 copy_u_sum 64) narrow=$(pick '' copy_u_sum 64)
check "... and for copy_u_sum at F = 64 ($wide)" test "$wide" = "$narrow"
check "gopc graph ring:10:3" bash -c "'$gopc' graph ring:10:3 | grep -q 'graph ring:10:3: |V| 10, |E| 30, degree mean 3.00 std 0.00 max in 3 out 3'"
expect "a bad ring" "D = 4 must be below N = 4" "$gopc" graph ring:4:4
exit $fail
