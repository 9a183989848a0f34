#!/usr/bin/env bash
# tests/gpu/train.sh CARRY OUT: training with gop's autograd on the GPU
# machine (bench/train.py), in one call that compiles nothing:
#   gradcheck  every stdlib and layers.gop operator's torch.autograd
#              gradient against torch's on CUDA (cora);
#   packs      every kernel the training plan needs is in the carried packs
#              (checked before anything is timed);
#   train      full-batch GCN, GAT, GraphSAGE and GIN on pubmed and
#              ogbn-arxiv against PyG: loss per step for 50 steps, step-0
#              gradients, accuracies, epoch time, peak memory; gop trains
#              with schedule="auto" (the chooser's pick for every forward and
#              derived operator) and is timed under the default mapping too;
#   ops        each gop call of the training, forward and backward, default
#              mapping against the chosen schedule.
# CARRY is what `GOP_PREPARE_ONLY=python tools/gpu-prepare.sh cora pubmed
# ogbn-arxiv` made (.carry/gpu): python/libgop.so (no LLVM: the GPU machine
# has none), python/libsqlite3.so.0 beside it, python/kernels/ (every
# forward and gradient kernel the run needs, as packs: bench/train.py
# --prepare, from gop.plan) and datasets/. Writes OUT/train.log, OUT/train.md
# and OUT/train-files.tar.gz (train.{csv,json,md}, train_summary.csv,
# gradcheck.csv, ops.csv, loss_<graph>.svg: one archive, since the device
# tool brings back a few files only). GOP_TRAIN_ARGS passes more options
# (e.g. '--skip gradcheck', '--models "gcn gat"').
set -uo pipefail
cd "$(dirname "$0")/../.."
carry=$(cd "${1:?usage: tests/gpu/train.sh CARRY OUT}" && pwd)
out=${2:?usage: tests/gpu/train.sh CARRY OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -e "$carry/python/libgop.so" ] || {
  echo "no $carry/python/libgop.so: run tools/gpu-prepare.sh (or GOP_PREPARE_ONLY=python)"; exit 1; }
export GOP_LIBRARY=$carry/python/libgop.so
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
# a writable copy of the carried packs (forward and derived backward kernels)
export GOP_CACHE_DIR=$(mktemp -d)
trap 'rm -rf "$GOP_CACHE_DIR"' EXIT
cp "$carry"/python/kernels/*.gopk "$GOP_CACHE_DIR"/
# the schedules chosen here must be the ones prepared there: the cost
# model's, from no tuning database on either side
unset GOP_TUNE_DB
mkdir -p "$out/files"
eval "python3 bench/train.py --datasets \"\$carry/datasets\" --out \"\$out/files\" \
  ${GOP_TRAIN_ARGS:-}" 2>&1 | tee "$out/train.log"
rc=${PIPESTATUS[0]}
cp "$out/files/train.md" "$out/" 2>/dev/null
tar -C "$out/files" -czf "$out/train-files.tar.gz" . && rm -rf "$out/files"
echo "train rc=$rc"
exit "$rc"
