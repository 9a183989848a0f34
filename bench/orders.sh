#!/usr/bin/env bash
# bench/orders.sh CARRY OUT: the vertex order chosen by measurement
# (`gopc tune --orders`, docs/reordering.md) on the GPU machine, f32
# copy_u_sum and u_mul_e_sum.
#
# CARRY holds the static gopc (gopc.xz or gopc, as gpu_gopc_carry makes
# it: `gpu_gopc_carry .carry/orders ogbn-arxiv pubmed cnr-2000 ca-HepPh`
# here) and datasets/. Per graph (GOP_ORDERS_GRAPHS, default ogbn-arxiv
# pubmed cnr-2000 ca-HepPh) and F (GOP_ORDERS_F, default 32 128):
#   1. gopc tune --orders none,degree,rcm,community (GOP_ORDERS_LIST),
#      GOP_ORDERS_BUDGET seconds each (default 24, shared by the orders),
#      into OUT/orders.db;
#   2. gopc run with no --reorder (the untuned choice in the file's order)
#      and gopc run --reorder auto --db OUT/orders.db --check (the order and
#      schedule the tune found, its outputs checked against the
#      interpreter in the file's numbering).
# One line per case: each order's best (ms), the order auto took, the two
# runs' medians and the check (BAD when it failed). OUT/orders.log holds
# every gopc output. Stops starting cases after GOP_ORDERS_STOP seconds
# (default 500) and says so.
source "$(dirname "$0")/../tools/gpu-common.sh"
gpu_usage "bench/orders.sh CARRY OUT" 2 "$@"
gpu_carry "$1"
gpu_out "$2"
gpu_name
graphs=${GOP_ORDERS_GRAPHS:-ogbn-arxiv pubmed cnr-2000 ca-HepPh}
widths=${GOP_ORDERS_F:-32 128}
orders=${GOP_ORDERS_LIST:-none,degree,rcm,community}
budget=${GOP_ORDERS_BUDGET:-24}
stop=${GOP_ORDERS_STOP:-500}
db=$out/orders.db
log=$out/orders.log
for g in $graphs; do
  path=$carry/datasets/$g.mtx.gz
  [ -f "$path" ] || { echo "no $path"; continue; }
  for F in $widths; do
    for op in copy_u_sum u_mul_e_sum; do
      if ((SECONDS > stop)); then echo "STOPPED: the ${stop}s budget is spent"; break 3; fi
      t=$("$gopc" tune "stdlib:$op" --graph "$path" --F "$F" --orders "$orders" \
        --budget-s "$budget" --db "$db" 2>&1)
      printf '### tune %s %s %s\n%s\n' "$g" "$op" "$F" "$t" >>"$log"
      # "  rcm            0.9120 ms  spmm_groups(64, 4)  (1.32x ...)"
      best=$(echo "$t" | sed -n '/^vertex orders, fastest first:/,$ s/^  \([a-z0-9:]*\) *\([0-9.]*\) ms.*/\1=\2/p' |
        tr '\n' ' ')
      plain=$("$gopc" run "stdlib:$op" --graph "$path" --F "$F" --gpu --reps 20 2>&1)
      auto=$("$gopc" run "stdlib:$op" --graph "$path" --F "$F" --gpu --reps 20 --reorder auto \
        --db "$db" --check 2>&1)
      printf '### run %s %s %s\n%s\n### run --reorder auto %s %s %s\n%s\n' "$g" "$op" "$F" \
        "$plain" "$g" "$op" "$F" "$auto" >>"$log"
      took=$(echo "$auto" | sed -n 's/^vertex order: \([^,]*\),.*/\1/p')
      ok=BAD
      echo "$auto" | grep -q "check:.*agree" && ok=checked
      echo "$g $op F=$F: ${best:-no order verified}| auto took ${took:-the AES rule}:" \
        "untuned $(echo "$plain" | gpu_ms) ms, auto $(echo "$auto" | gpu_ms) ms, $ok"
    done
  done
done
echo "done in $SECONDS s"
