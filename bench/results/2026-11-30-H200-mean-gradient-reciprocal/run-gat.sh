#!/usr/bin/env bash
# GAT's attention after the reciprocal pass learnt the endpoint an edge
# loop fixes: its weighted sum over a neighbour group divides by the
# group's destination's D, now one reciprocal per group before the edge
# loop. gat_attention (examples/models/layers.gop) under gop.nn's
# schedules, by the compiler before (gopc-before.xz: the pass's earlier
# form, which left it a division per edge) and after (gopc.xz), the
# latter checked against the interpreter; then gop.nn's GAT training
# (tests/gpu/pyg_accelerate.sh --models gat) and its kernel profile.
# Carry CARRY (gopc.xz, gopc-before.xz, layers.gop, datasets/) and PYG
# (tests/gpu/pyg_accelerate.sh --prepare). There:
#   bash bench/results/2026-11-30-H200-mean-gradient-reciprocal/run-gat.sh CARRY PYG OUT
c=$1 pyg=$2 out=$3
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
xz -dc "$c/gopc-before.xz" > /tmp/gopc-before && chmod +x /tmp/gopc-before
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { local bin=$1 g=$2; shift 2
      $bin run "$c/layers.gop" --op gat_attention --graph "$g" --reorder none --reps 20 "$@" 2>&1 |
      grep -E "^  time|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
for g in "$pyg/datasets/ogbn-arxiv.mtx.gz" "$c/datasets/soc-Slashdot0902.mtx.gz"; do
  for hc in "8 8 gat_groups(32, 8, 16)" "1 40 gat_teams(32, 4, 16)" "1 40 gat_groups(32, 1, 8)"; do
    set -- $hc; H=$1 C=$2; s=${hc#* * }
    echo "== $(basename $g .mtx.gz) H=$H C=$C $s"
    echo "before: $(t /tmp/gopc-before $g --H $H --C $C --schedule "$s")"
    echo "after: $(t /tmp/gopc $g --H $H --C $C --schedule "$s" --check)"
  done
done
GOP_PYG_ARGS='--models gat --gop-compiled --deadline 150' bash tests/gpu/pyg_accelerate.sh "$pyg" "$out/pyg-gat" > "$out/pyg-gat.txt" 2>&1
echo "pyg_accelerate status $?"; grep -E "passed|failed" "$out/pyg-gat/pyg_accelerate.md" | head -2
export GOP_LIBRARY=$PWD/$pyg/python/libgop.so GOP_CACHE_DIR=$(mktemp -d)
cp "$pyg"/python/kernels/*.gopk "$GOP_CACHE_DIR/"
PYTHONPATH=python:tests/gpu timeout 200 python3 bench/profile_train.py "$pyg/datasets" > "$out/profile_train_gat.txt" 2>&1
echo "profile status $?"; grep -A6 "== gat gop" "$out/profile_train_gat.txt"
