#!/bin/bash
# The groups-of-64 run (2026-11-27), call 5 (an H100): issue 13's unweighted sum (copy_u_sum) with
# the same binaries as calls 3 and 4: its own plan (bench-cus, made by
# 3aeea6e), the peers in the same call. Last measured in run 12 (2026-11-27) (run
# 12: 1.56x the best cuSPARSE SpMM, every case >= 1.04x), before the
# group-kernel and tuning-space changes of the CSR-order to groups-of-64 runs.
# Expected: 1.56-1.65x, min >= 1.0x.
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/s16 || exit 1
mkdir -p .carry/gpu && cp -r .carry/s16/gop_bench .carry/s16/bench-dst .carry/s16/bench-cus .carry/gpu/ || exit 1
mkdir -p $OUT/run
PLAN=bench-cus BUDGET=215 OUT=$OUT/run timeout 500 bash bench/results/2026-11-27-H100-aggregation-groups64/run.sh
