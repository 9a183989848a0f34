#!/usr/bin/env bash
# The sums above 1M edges at F >= 128, where the tuned best stays under 40%
# of the fewest-bytes bound on the graphs with hubs (cnr-2000: in-degree up
# to 18,234; ogbn-arxiv: 13,155), while the same sums on the reversed
# graphs (in-degree at most 2,715 / 436) reached 46.7% / 48.2%
# (../2026-11-30-H200-gradient-reversed-graph). A hub's row is the target of
# ceil(deg / G) atomic row additions. Timed here: the tuned best of
# 2026-11-29 against (a) the same schedules under deterministic() (a hub's
# partial rows written apart and summed by a second pass, passes/segment.c:
# no atomics) and (b) larger groups (fewer partials a hub). The
# deterministic() forms are checked against the interpreter on ogbn-arxiv
# at F = 128 (copy_u_sum; the interpreter takes ~20 s a run there); the
# rest are timed (--check everywhere with CHECK=1).
# Carry: CARRY/gopc.xz (strip + xz of build-static/gopc) and the graphs.
#   bash bench/results/2026-11-30-H200-hub-partials/run.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { /tmp/gopc run stdlib:$1 --graph "$c/$2.mtx.gz" --reorder none --F $3 --reps 20 "${@:4}" 2>&1 |
      grep -E "^  time|schedule:|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
for g in ogbn-arxiv cnr-2000; do
  for F in 128 256; do
    for op in copy_u_sum u_mul_e_sum; do
      echo "== $g F=$F $op"
      for s in "spmm_groups(64, 4)" "spmm_groups(64, 8)" "spmm_groups(128, 8)" "spmm_teams(64, 16)" \
               "spmm_tiles(64, 8)" "spmm_groups(256, 8)" "spmm_teams8(256, 16)" \
               "deterministic(); spmm_groups(64, 4)" "deterministic(); spmm_groups(64, 8)" \
               "deterministic(); spmm_teams(64, 16)" "deterministic(); spmm_teams(64, 8)" \
               "deterministic(); spmm_groups(32, 8)" "deterministic(); spmm_teams8(64, 16)"; do
        chk=""
        case "$g $F $op $s" in "ogbn-arxiv 128 copy_u_sum deterministic"*) chk=--check ;; esac
        [ "${CHECK:-0}" = 1 ] && chk=--check
        echo "$s: $(t $op $g $F --schedule "$s" $chk)"
      done
    done
  done
done
