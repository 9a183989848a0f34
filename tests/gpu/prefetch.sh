#!/usr/bin/env bash
# tests/gpu/prefetch.sh CARRY: prefetch(e) on the GPU (issue 13). Each
# prefetching schedule, and the schedule it extends, runs u_mul_e_sum,
# copy_u_sum and copy_u_mean with `gopc run --gpu --check` (outputs against
# the reference interpreter: f32 sums within 1e-5 relative L2) on a skewed
# R-MAT graph (in-degrees far above 32, isolated vertices), a grid (degrees
# 2..4) and the carried skewed graphs, at F = 40 (a feature tail: ten
# lanes of the warp take the edge loop) and F = 128; prints each median
# time next to the baseline's. Exits 1 when any check fails.
# Prepare CARRY here with tools/gpu-prepare.sh; on the GPU machine:
#   bash tests/gpu/prefetch.sh .carry/gpu
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/prefetch.sh CARRY_DIR" 1 "$@"
gpu_carry "$1"
# PREFETCH_GRAPHS, PREFETCH_OPS and PREFETCH_F narrow the matrix (each
# `gopc run` reads its graph and, with --check, interprets the operator:
# on the large graphs that is seconds per run).
graphs=(${PREFETCH_GRAPHS:-rmat:16:16 grid:300x300 cnr-2000 soc-Slashdot0902 ogbn-arxiv})
for i in "${!graphs[@]}"; do
  [ -f "$carry/datasets/${graphs[$i]}.mtx.gz" ] && graphs[$i]=$carry/datasets/${graphs[$i]}.mtx.gz
done
# prefetching schedule = baseline
pairs=("spmm_vec4p(4)=spmm_vec4(4)" "spmm_vec4p(8)=spmm_vec4(8)"
       "spmm_groupsp(32, 4)=spmm_groups(32, 4)" "spmm_groupsp(7, 2)=spmm_groups(7, 2)"
       "gnnadvisorp(16, 32)=gnnadvisor(16, 32)" "gnnadvisorp(5, 3)=gnnadvisor(5, 3)")
fail=0
printf '%-18s %-12s %-4s %-22s %10s %10s\n' graph op F schedule ms base_ms
for g in "${graphs[@]}"; do
  for op in ${PREFETCH_OPS:-u_mul_e_sum copy_u_sum copy_u_mean}; do
    for F in ${PREFETCH_F:-40 128}; do
      for pair in "${pairs[@]}"; do
        s=${pair%%=*} base=${pair#*=}
        out=$("$gopc" run "stdlib:$op" --graph "$g" --F "$F" --schedule "$s" --gpu --check 2>&1)
        rc=$?
        if [ $rc -ne 0 ]; then
          echo "FAIL $(basename "$g") $op F=$F $s:"; echo "$out" | tail -5 | sed 's/^/    /'
          fail=1
          continue
        fi
        t=$(echo "$out" | gpu_ms)
        tb=$("$gopc" run "stdlib:$op" --graph "$g" --F "$F" --schedule "$base" --gpu 2>&1 | gpu_ms)
        printf '%-18s %-12s %-4s %-22s %10s %10s\n' "$(basename "$g" .mtx.gz)" "$op" "$F" "$s" "$t" "$tb"
      done
    done
  done
done
[ $fail -eq 0 ] && echo "prefetch: every check passed" || echo "prefetch: FAILURES above"
exit $fail
