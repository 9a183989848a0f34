#!/bin/bash
# The groups-of-64 run (2026-11-27), call 6 (an H100): issue 13's weighted benchmark with the plan
# of 459dc3e (teams with G = 64 and teams8 with G = 128 among
# the named candidates, 3,115 candidates), BUDGET=240 s, peers in the same
# call. Calls 3 and 4 (the same plan without them) gave 1.517x and 1.492x:
# the four launch-scale graphs (cora, citeseer, pubmed, wiki-Vote; 6-10 us)
# move by up to 15% between identical calls, the other ten gave 1.531x and
# 1.526x.
# Expected: 1.50-1.53x; F = 16-64 cases of the mid and large skewed graphs
# (deezer-HU, soc-Slashdot0902, musae-facebook) 0-15% faster.
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/s16b || exit 1
mkdir -p .carry/gpu && cp -r .carry/s16b/gop_bench .carry/s16b/bench-dst .carry/gpu/ || exit 1
mkdir -p $OUT/run
BUDGET=240 OUT=$OUT/run timeout 560 bash bench/results/2026-11-27-H100-aggregation-groups64/run.sh
