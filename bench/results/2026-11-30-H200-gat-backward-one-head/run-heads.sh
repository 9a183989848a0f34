#!/usr/bin/env bash
# gat_grad_teams against gat_grad_groups (gop.nn's rule for two heads and
# more) at H = 2, 4, 8 heads of 8 channels, same call.
# Carry as run.sh. There:
#   bash bench/results/2026-11-30-H200-gat-backward-one-head/run-heads.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { local g=$1; shift
      /tmp/gopc run "$c/layers.gop" --op gat_attention --grad Z,As,Ad --graph "$g" --reorder none \
        --reps 20 "$@" 2>&1 | grep -E "^  time|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
lanes() { local t=1; while [ $t -lt $1 ] && [ $t -lt $2 ]; do t=$((t * 2)); done; echo $t; }
for g in "$c"/datasets/*.mtx.gz; do
  n=$(basename "$g" .mtx.gz)
  for H in 2 4 8; do
    C=8 T1=$(lanes $H 8) TF=$(lanes $((H * 2)) 32)
    echo "== $n H=$H C=$C"
    echo "gat_grad_groups(32, $T1, $TF): $(t "$g" --H $H --C $C --schedule "gat_grad_groups(32, $T1, $TF)")"
    for T in 4 8; do
      echo "gat_grad_teams(32, $T, $TF): $(t "$g" --H $H --C $C --schedule "gat_grad_teams(32, $T, $TF)")"
    done
  done
done
echo "done in $SECONDS s"
