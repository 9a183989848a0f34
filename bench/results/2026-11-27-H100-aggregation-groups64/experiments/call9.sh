#!/bin/bash
# NOT RUN in the groups-of-64 run (2026-11-27): no device time was left to start a machine. For
# the next session.
# The groups-of-64 run (2026-11-27), call 9 (an H100): call 7 again with the device group-table
# cache fixed (least recently used first; call 8 found call 7's two
# failures pass in a process of their own). The GPU suite's representative tier
# (tests/gpu/suite.c: every representative stdlib operator x every named
# schedule x 3 settings, kernel packs made here by 746b724's
# gop_gpu_suite prepare; 1,075 packs, 425 combinations refused) on cora,
# pubmed, wiki-Vote (skewed) and proteins (balanced) at F = 20 and 128,
# every output checked against the interpreter. It has not run since
# the CSR-order run (2026-11-27); the bf16-rows, registers and groups-of-64 runs changed code generation (unrolled edge loops,
# unsigned widening, the vector fallback's early exit), the row stages
# (unowned(G)) and added spmm_rows8_full.
# Carry: .carry/s16c (suite without LLVM, packs.tar.xz, the four graphs).
# Expected: every case agrees (the suite stops starting cases after 150 s).
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/s16c || exit 1
c=.carry/s16c
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $OUT/call9.txt
timeout 200 $c/suite run $c/packs $c/d/cora.mtx $c/d/pubmed.mtx $c/d/wiki-Vote.mtx $c/d/proteins.mtx \
  --F "20 128" --reps 2 --budget-s 150 --csv $OUT/suite.csv > $OUT/suite.log 2>&1
echo "suite rc=$?" | tee -a $OUT/call9.txt
grep -iE "fail|wrong|mismatch" $OUT/suite.log | head -20 | tee -a $OUT/call9.txt
tail -5 $OUT/suite.log | tee -a $OUT/call9.txt
xz -9 $OUT/suite.log
