#!/bin/bash
# Experiment (run 12 (2026-11-27), call 4): the grid of a groups stage in waves.
# gopc was built with an experiment-only switch in runtime/exec.c
# (GOP_FILL_WAVES = M: min(the table's rows / warps per block, M waves of
# 8 blocks an SM); 0: the one wave of 8 blocks an SM of commit c061b96).
# The change that landed (4d0b343) is M = 8 with no switch.
cd "$(dirname "$0")/../.."
c=.carry/m
o=$OUT/waves.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
for m in 4 64; do
  r=$(GOP_FILL_WAVES=$m $c/gopc-new run stdlib:u_mul_e_sum --graph $c/datasets/cora.mtx.gz --F 72 --schedule "spmm_groups(16, 4)" --gpu --check 2>&1 | grep -E "check|error" | head -1)
  echo "check M=$m: $r" | tee -a $o
done
t() { GOP_FILL_WAVES=$1 $c/gopc-new run stdlib:$2 --graph $3 --F $4 --dtype $5 --schedule "$6" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1; }
ab() { l=""; for m in 0 2 4 8 64 0; do l="$l $m:$(t $m "$@")"; done; echo "$(basename $2) $1 F=$3 $4 [$5]:$l" | tee -a $o; }
A=$c/datasets/ogbn-arxiv.mtx.gz; C=$c/datasets/cnr-2000.mtx.gz
for op in copy_u_sum u_mul_e_sum; do
  ab $op $A 16 f32 "spmm_teams(32, 4)"
  ab $op $A 64 f32 "spmm_teams8(64, 8)"
  ab $op $A 128 f32 "spmm_groups(32, 4)"
  ab $op $A 256 f32 "spmm_groups(64, 4)"
  ab $op $A 256 bf16 "spmm_teams8(64, 32)"
  ab $op $C 32 f32 "spmm_teams8(64, 4)"
  ab $op $C 128 f32 "spmm_groups(64, 4)"
  ab $op $C 256 f32 "spmm_groups(128, 8)"
  ab $op $C 256 bf16 "spmm_groups(128, 8)"
  echo "t=$SECONDS" | tee -a $o
  [ $SECONDS -gt 300 ] && break
done
