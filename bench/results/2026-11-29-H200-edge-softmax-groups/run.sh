#!/usr/bin/env bash
# The six GPU calls of this folder (one H200), in order.
#
# 1. input-order/: the 14 shared graphs in the file's edge order, PyG's
#    softmax in the same call; prepared here with
#      bash bench/softmax.sh prepare        (.carry/softmax)
#    run there with
#      bash bench/softmax.sh run .carry/softmax $OUT/sm
# 2. input-order-generated/, 3. csr-order/ and 4. csr-order-held-out/
#    (with --edges dst: rmat:19:12:77 rmat:17:32:5 powerlaw:600000:10:23:11
#    powerlaw:200000:16:22:3 community:300000:20:500:30:9 grid:1000x500
#    ring:400000:6 rmat:12:16:1 powerlaw:1000000:6:27:2), 5. teams/ (with
#    --edges dst: cnr-2000 molhiv ogbn-arxiv cora pubmed wiki-Vote deezer-HU
#    blogcatalog proteins soc-Slashdot0902 rmat:18:16:31 rmat:20:8:13
#    powerlaw:400000:12:21:5 powerlaw:300000:8:25:7 rmat:19:12:77
#    powerlaw:200000:16:22:3 community:300000:20:500:30:9 rmat:14:16:9) and
#    6. teams-held-out/ (with --edges dst: rmat:18:24:101 rmat:21:6:5
#    powerlaw:800000:8:22:13 powerlaw:150000:20:24:7
#    community:400000:12:800:40:5 rmat:16:8:44 grid:600x600 ring:200000:20
#    powerlaw:2000000:4:26:3): prepared here with
#      build-dev/bench/gop_bench plan .carry/smh/bench .carry/smh/datasets \
#        --graphs "rmat:18:16:31 rmat:20:8:13 powerlaw:400000:12:21:5 \
#                  powerlaw:300000:8:25:7 community:500000:10:2000:10:3 \
#                  grid:700x700 rmat:14:16:9 ring:100000:12" \
#        --ops edge_softmax --F 16 --top 1
#    and, for 3., the 14 shared graphs and the same eight with --edges dst
#    into .carry/smd (the datasets copied from .carry/softmax); each with
#      strip -o CARRY/gop_bench build-nollvm/bench/gop_bench
#    run there with
#      BUDGET_S=400 bash bench/results/2026-11-28-H200-choice-builtin-predictor/run.sh CARRY $OUT
set -eu
echo "see the comments: three calls, each prepared here first" >&2
exit 2
