#!/usr/bin/env bash
# gop.nn's GAT schedules (python/gop/auto.py: groups of 32 in-edges) at
# other group sizes and team shapes, forward and joint backward, H x C =
# 8 x 8 and 1 x 40, one call: is 32 edges a group the right size?
# Carry CARRY/gopc.xz, CARRY/layers.gop, CARRY/datasets/*.mtx.gz. There:
#   bash bench/results/2026-11-30-H200-gat-group-sizes/run.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { local g=$1; shift
      /tmp/gopc run "$c/layers.gop" --op gat_attention --graph "$g" --reorder none --reps 20 "$@" 2>&1 |
      sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1; }
echo "graph,pass,H,C,schedule,ms"
for g in "$c"/datasets/*.mtx.gz; do
  n=$(basename "$g" .mtx.gz)
  for G in 16 32 64; do
    echo "$n,forward,8,8,gat_groups($G 8 16),$(t "$g" --H 8 --C 8 --schedule "gat_groups($G, 8, 16)")"
    echo "$n,forward,1,40,gat_teams($G 4 16),$(t "$g" --H 1 --C 40 --schedule "gat_teams($G, 4, 16)")"
    echo "$n,backward,8,8,gat_grad_groups($G 8 16),$(t "$g" --H 8 --C 8 --grad Z,As,Ad --schedule "gat_grad_groups($G, 8, 16)")"
    echo "$n,backward,1,40,gat_grad_teams($G 4 16),$(t "$g" --H 1 --C 40 --grad Z,As,Ad --schedule "gat_grad_teams($G, 4, 16)")"
  done
  echo "$n,backward,8,8,gat_grad_groups(32 8 32),$(t "$g" --H 8 --C 8 --grad Z,As,Ad --schedule "gat_grad_groups(32, 8, 32)")"
  echo "$n,backward,8,8,gat_grad_groups(32 8 8),$(t "$g" --H 8 --C 8 --grad Z,As,Ad --schedule "gat_grad_groups(32, 8, 8)")"
  echo "$n,backward,1,40,gat_grad_teams(32 2 16),$(t "$g" --H 1 --C 40 --grad Z,As,Ad --schedule "gat_grad_teams(32, 2, 16)")"
  echo "$n,backward,1,40,gat_grad_teams(32 4 8),$(t "$g" --H 1 --C 40 --grad Z,As,Ad --schedule "gat_grad_teams(32, 4, 8)")"
done
echo "done in $SECONDS s"
