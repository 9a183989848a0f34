#!/bin/bash
# The groups-of-64 run (2026-11-27), call 4 (an H100): call 3's part 1 again, unchanged (the same
# binaries, plan and carry), to see the spread of a repeat: call 3 gave
# 1.517x where call 1 (the plan before 15571bf/3aeea6e) gave 1.494x, with
# the peers 0.85% slower in call 3 than in call 1.
# Expected: 1.50-1.52x.
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/s16 || exit 1
mkdir -p .carry/gpu && cp -r .carry/s16/gop_bench .carry/s16/bench-dst .carry/gpu/ || exit 1
mkdir -p $OUT/run
BUDGET=215 OUT=$OUT/run timeout 500 bash bench/results/2026-11-27-H100-aggregation-groups64/run.sh
