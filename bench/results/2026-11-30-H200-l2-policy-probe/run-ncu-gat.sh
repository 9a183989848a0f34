#!/usr/bin/env bash
# Nsight Compute on gat_attention's stages (examples/models/layers.gop, gop.nn's
# schedules at H x C = 8 x 8 and 1 x 40) and on copy_u_sum at F = 64 and 40
# under spmm_teams(64, 16), ogbn-arxiv: the instructions, registers and
# occupancy of GAT's weighted sum against a plain sum of its width.
# Carry CARRY/gopc.xz, CARRY/layers.gop, CARRY/datasets/ogbn-arxiv.mtx.gz. There:
#   bash bench/results/2026-11-30-H200-l2-policy-probe/run-ncu-gat.sh CARRY
c=${1:?usage: run-ncu-gat.sh CARRY}
xz -dc $c/gopc.xz > /tmp/gopc && chmod +x /tmp/gopc
ncu=$(command -v ncu)
g=$c/datasets/ogbn-arxiv.mtx.gz
for hc in "8 8 gat_groups(32, 8, 16)" "1 40 gat_teams(32, 4, 16)"; do
  set -- $hc; H=$1 C=$2; s=${hc#* * }
  echo "=== gat_attention H=$H C=$C $s"
  $ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats -k regex:'gat_attention_s[0-9]' --launch-skip 0 --launch-count 7 \
    /tmp/gopc run $c/layers.gop --op gat_attention --graph $g --reorder none --H $H --C $C --schedule "$s" --gpu --reps 1 --warmup 0 2>&1 | grep -vE "^==PROF==|^\s*$"
done
for F in 64 40; do
echo "=== copy_u_sum F=$F spmm_teams(64, 16)"
$ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats -k regex:'copy_u_sum_s1' --launch-count 1 \
  /tmp/gopc run stdlib:copy_u_sum --graph $g --reorder none --F $F --schedule 'spmm_teams(64, 16)' --gpu --reps 1 --warmup 0 2>&1 | grep -vE "^==PROF==|^\s*$"
done
