#!/bin/bash
# Prepared in the registers run (2026-11-27) for the next session's first call (issue 19): the
# hand-written stand-in halves.cu (what it compares: its header), built
# with nvcc on the device machine and run on the graphs where bf16 gains
# least over f32. Carry: .carry/exp/d/*.mtx.xz (ogbn-arxiv, cnr-2000,
# molhiv). Prediction: halves 10-25% faster than warp8 on cnr-2000 and
# ogbn-arxiv if the group kernel is bound by its loads per edge (half as
# many), no faster if it is bound by the rows in flight; teams slower than
# warp8, as spmm_teams8(64, 16) measured (call 2).
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/exp || exit 1
e=bench/results/2026-11-27-H100-aggregation-registers/experiments
nvcc -O3 -arch=sm_90 -o /tmp/halves $e/halves.cu || exit 1
for g in ogbn-arxiv cnr-2000 molhiv; do
  [ -f .carry/exp/d/$g.mtx ] && /tmp/halves .carry/exp/d/$g.mtx 128 | tee -a $OUT/halves.txt
done
