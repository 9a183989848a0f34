#!/usr/bin/env bash
# gop's kernels with and without the gathered rows' L2 evict_last hint
# (codegen/cache.c), one GPU call: CARRY/gopc-before.xz (the compiler
# before the rule), CARRY/gopc.xz (with it), CARRY/datasets/*.mtx.gz.
#   bash bench/results/2026-11-30-H200-l2-policy-probe/run-gop.sh CARRY OUT [OPS] [FS]
# GOP_AB_SCHEDULES: the schedules, separated by |, model for the untuned choice.
source "$(dirname "$0")/../../../tools/gpu-common.sh"
gpu_usage "run-gop.sh CARRY OUT" 2 "$@"
gpu_carry "$1"
gpu_out "$2"
ops=${3:-copy_u_sum}
Fs=${4:-128 256}
xz -dc "$carry/gopc-before.xz" > /tmp/gopc-before && chmod +x /tmp/gopc-before
gpu_name; date -u
echo "graph,F,op,schedule,before_ms,after_ms" >"$out/ab.csv"
for f in "$carry"/datasets/*.mtx.gz; do
  name=$(basename "$f" .mtx.gz)
  for op in $ops; do
    for F in $Fs; do
      IFS='|' read -ra scheds <<<"${GOP_AB_SCHEDULES:-model|spmm_groups(64, 4)|spmm_teams8(128, 16)}"
      for s in "${scheds[@]}"; do
        sarg=(--schedule "$s")
        [ "$s" = model ] && sarg=()
        r=()
        for g in /tmp/gopc-before "$gopc"; do
          r+=("$("$g" run stdlib:$op --graph "$f" --reorder none --F "$F" "${sarg[@]}" \
            --gpu --reps 20 2>>"$out/ab.log" | tee -a "$out/ab.log" | gpu_ms)")
        done
        echo "$name,$F,$op,\"$s\",${r[0]:-nan},${r[1]:-nan}" | tee -a "$out/ab.csv"
      done
    done
  done
done
echo "done in $SECONDS s"
