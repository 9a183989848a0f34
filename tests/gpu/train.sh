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
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/train.sh CARRY OUT" 2 "$@"
gpu_python "$1"
gpu_out -a "$2"
python3 bench/train.py --datasets "$carry/datasets" --out "$out" \
  ${GOP_TRAIN_ARGS:-} 2>&1 | tee "$out/train.log"
exit "${PIPESTATUS[0]}"
