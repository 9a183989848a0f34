#!/bin/bash
# An op's stages launched with programmatic dependent launch (each stage
# after the first may start while the one before it finishes, and waits in
# griddepcontrol.wait at its start, or, late, before it first touches an
# output or temporary) against plain launches, in one GPU call. Carry:
# prepare.sh's (gop_bench without LLVM, before/, pdl/ and late/ plans of the same
# rows, datasets/). The runtime launches with the attribute when
# GOP_EXP_PDL is set (the experiment's build).
#   bash bench/results/2026-11-30-H200-pdl-stages/run.sh CARRY OUT [VARIANTS]
set -u
c=$1
o=$2
variants=${3:-before pdl late}
mkdir -p "$o"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee "$o/run.log"
SECONDS=0
timeout 40 "$c/gop_bench" run "$c/before" "$c/datasets" --csv /tmp/warm.csv --reps 5 \
  --budget-s 15 >/tmp/warm.log 2>&1
echo "warm-up done t=$SECONDS" | tee -a "$o/run.log"
n=0
for v in $variants; do
  n=$((n + 1))
  env=()
  [ $v = pdl ] && env=(GOP_EXP_PDL=1)
  [ $v = late ] && env=(GOP_EXP_PDL=late)
  env "${env[@]}" timeout $((${BUDGET:-100} + 30)) "$c/gop_bench" run "$c/$v" "$c/datasets" \
    --csv "$o/$n-$v.csv" --reps 10 --budget-s "${BUDGET:-100}" >"$o/$n-$v.log" 2>&1
  echo "$v rc=$? t=$SECONDS; $(tail -1 "$o/$n-$v.log")" | tee -a "$o/run.log"
  grep -E "^FAIL" "$o/$n-$v.log" | head -5
done
