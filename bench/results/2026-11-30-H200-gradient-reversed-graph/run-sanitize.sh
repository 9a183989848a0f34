#!/usr/bin/env bash
# compute-sanitizer's memcheck over programs on the reversed graph: the
# sums' and the mean's gradients under transposed schedules (groups,
# teams, rows, the untuned choice) on cora and pubmed, each also checked
# against the interpreter. Carry: CARRY/gopc.xz and the graphs.
#   bash bench/results/2026-11-30-H200-gradient-reversed-graph/run-sanitize.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "sanitizer: $cs"
n=0; bad=0
for g in cora pubmed; do
  for op in u_mul_e_sum copy_u_sum copy_u_mean; do
    for s in auto "transpose(); spmm_groups(8, 4)" "transpose(); spmm_teams(64, 8)" \
             "transpose(); spmm_rows(2, 4)" "transpose(); gnnadvisor_mgg(16, 8, 2)"; do
      sched=(--schedule "$s"); [ "$s" = auto ] && sched=()
      out=$("$cs" --tool memcheck --error-exitcode 9 /tmp/gopc run stdlib:$op --grad X \
            --graph "$c/$g.mtx.gz" --F 40 --reps 1 --warmup 0 "${sched[@]}" --check 2>&1)
      rc=$?; n=$((n + 1))
      sum=$(echo "$out" | grep -E "ERROR SUMMARY|check:|schedule:" | tr '\n' ' ' | sed 's/  */ /g')
      [ $rc = 0 ] && echo "$out" | grep -q "ERROR SUMMARY: 0 errors" && echo "$out" | grep -q "check: every" || bad=$((bad + 1))
      echo "$g $op [$s] rc=$rc: $sum"
    done
  done
done
echo "memcheck: $n runs, $bad with a finding or a failed check"
