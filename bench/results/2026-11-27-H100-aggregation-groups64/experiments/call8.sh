#!/bin/bash
# The groups-of-64 run (2026-11-27), call 8 (an H100): call 7's two real failures, each in its own
# process (call 7's second one corrupted the context and every later case
# of that process failed with it): which feature they need. gopc from
# 15571bf (code generation as at HEAD). --check compares with the interpreter.
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/s16d || exit 1
B=.carry/s16d/gopc; G=.carry/s16d/cora.mtx
o=$OUT/call8.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
c() { # label op F schedule [env...]
  local l=$1 op=$2 F=$3 s=$4; shift 4
  r=$(env "$@" timeout 30 $B run stdlib:$op --graph $G --F $F --schedule "$s" --gpu --check --reps 1 --warmup 0 2>&1 | grep -E "check:|error|got" | head -2 | tr '\n' ' ')
  echo "$l | $op F=$F [$s] $*: $r" | tee -a $o
}
I="interleave(eo, 4, 2)"
for k in 1 2 3; do c rep$k copy_u_max 20 "gnnadvisor(16, 5); $I"; done
for F in 24 32 128; do c width copy_u_max $F "gnnadvisor(16, 5); $I"; done
c plain copy_u_max 20 "gnnadvisor(16, 5)"
c min copy_u_min 20 "gnnadvisor(16, 5); $I"
c mean copy_u_mean 20 "gnnadvisor(16, 5); $I"
c det copy_u_max 20 "deterministic(); gnnadvisor(16, 5); $I"
c G3 copy_u_max 20 "gnnadvisor(3, 16); $I"
for k in 1 2; do c rep$k u_sub_e_max 20 "gnnadvisor(3, 16); $I"; done
c plain u_sub_e_max 20 "gnnadvisor(3, 16)"
c inorder u_sub_e_max 20 "gnnadvisor(3, 16); $I" GOP_CSR_EDGES=0
c F128 u_sub_e_max 128 "gnnadvisor(3, 16); $I"
c sum u_mul_e_sum 20 "gnnadvisor(3, 16); $I"
if command -v compute-sanitizer >/dev/null; then
  timeout 120 compute-sanitizer --tool memcheck --print-limit 5 $B run stdlib:u_sub_e_max --graph $G --F 20 --schedule "gnnadvisor(3, 16); $I" --gpu --reps 1 --warmup 0 2>&1 | head -40 | tee -a $o
  timeout 120 compute-sanitizer --tool memcheck --print-limit 5 $B run stdlib:copy_u_max --graph $G --F 20 --schedule "gnnadvisor(16, 5); $I" --gpu --check --reps 1 --warmup 0 2>&1 | head -30 | tee -a $o
fi
