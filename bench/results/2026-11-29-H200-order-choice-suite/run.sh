#!/usr/bin/env bash
# One device call: the vertex order chosen by measurement (bench/orders.sh),
# the GPU suite's prelude and representative tier (gopc run under
# graph-replay timing among the prelude's checks) and gop.BatchGraph's
# captured mini-batch training (tests/gpu/graph_build.sh, phase capture:
# GCN's normalisation now made on first use).
#
# Prepared here (with LLVM):
#   .carry/val: gopc (static, xz'ed), the suite's runner built without LLVM,
#     `build-static/tests/gop_gpu_suite prepare .carry/val/packs` as
#     packs.tar.xz, datasets cora pubmed ogbn-arxiv cnr-2000 ca-HepPh
#   .carry/gbuild: `tests/gpu/graph_build.sh --prepare` (datasets: ogbn-arxiv)
# On the GPU machine:
#   bash bench/results/2026-11-29-H200-order-choice-suite/run.sh $OUT "orders suite"
#   bash bench/results/2026-11-29-H200-order-choice-suite/run.sh $OUT capture
set -u
out=$1 parts=${2:-orders suite capture}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u +%Y-%m-%dT%H:%MZ
git log -1 --format=%h 2>/dev/null
has() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
if has orders; then
echo "=== orders"
GOP_ORDERS_GRAPHS="${ORDERS_GRAPHS:-cnr-2000 ogbn-arxiv ca-HepPh}" GOP_ORDERS_BUDGET=12 \
  GOP_ORDERS_STOP=${ORDERS_STOP:-250} timeout 300 bash bench/orders.sh .carry/val "$out/orders"
echo "orders rc=$?"
xz "$out/orders/orders.log"
fi
if has suite; then
echo "=== suite"
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .carry/val/packs.tar.xz .carry/val
GOP_SUITE_TIERS=rep GOP_SUITE_GRAPHS="cora pubmed rmat:14:8" GOP_SUITE_BUDGET_S=220 \
  timeout 285 bash tests/gpu/run.sh .carry/val "$out/suite" --reps 0 2>&1 | tail -15
echo "suite rc=${PIPESTATUS[0]}"
for f in "$out"/suite/*.log "$out"/suite/*.csv; do [ -f "$f" ] && xz "$f"; done
fi
if has capture; then
echo "=== capture"
GOP_GBUILD_ARGS="--phases capture" timeout "${CAPTURE_S:-150}" \
  bash tests/gpu/graph_build.sh .carry/gbuild "$out/gbuild" > "$out/capture.log" 2>&1
echo "capture rc=$?"
grep -E "median of steps|PROBLEM|rc=|Error|error" "$out/capture.log" | tail -12
fi
