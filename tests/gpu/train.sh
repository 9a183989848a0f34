#!/usr/bin/env bash
# tests/gpu/train.sh CARRY OUT: training with gop's autograd on the GPU
# machine (bench/train.py): every stdlib operator's torch.autograd gradient
# against torch's on CUDA, then full-batch GCN, GAT and GraphSAGE training
# on pubmed and ogbn-arxiv against PyG (loss per step for 50 steps, step-0
# gradients, accuracies, epoch time, peak memory). CARRY is what
# tools/gpu-prepare.sh made (.carry/gpu; GOP_PREPARE_ONLY=python is enough):
# python/libgop.so (no LLVM: the GPU machine has none), python/libsqlite3.so.0
# beside it, python/kernels/ (every forward and gradient kernel the run
# needs, as packs) and datasets/. Writes OUT/train.{csv,md,json,log},
# OUT/train_summary.csv, OUT/gradcheck.csv and OUT/loss_<graph>.svg.
# GOP_TRAIN_ARGS passes more options (e.g. '--skip gradcheck').
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
python3 bench/train.py --datasets "$carry/datasets" --out "$out" \
  ${GOP_TRAIN_ARGS:-} 2>&1 | tee "$out/train.log"
exit "${PIPESTATUS[0]}"
