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
#              mapping against the chosen schedule;
#   captured   (in train) each model with its whole step captured as a CUDA
#              graph (gop.train.capture_step) and replayed, checked against
#              PyG like the eager run; PyG captured where it can be;
#   unit       python/tests/test_train.py on CUDA: capture_step's refusals,
#              and a captured GCN's losses over 5 replays against eager
#              steps (default-mapping kernels of u_mul_e_sum, carried).
# CARRY is what `GOP_PREPARE_ONLY=python tools/gpu-prepare.sh cora pubmed
# ogbn-arxiv` made (.carry/gpu): python/libgop.so (no LLVM: the GPU machine
# has none; SQLite linked in), python/kernels/ (every
# forward and gradient kernel the run needs, as packs: bench/train.py
# --prepare, from gop.plan) and datasets/. Writes OUT/train.log, OUT/train.md
# and OUT/train-files.tar.gz (train.{csv,json,md}, train_summary.csv,
# gradcheck.csv, ops.csv, loss_<graph>.svg: one archive, since the device
# tool brings back a few files only). GOP_TRAIN_ARGS passes more options
# (e.g. '--skip gradcheck', '--models "gcn gat"').
set -uo pipefail
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/train.sh CARRY OUT" 2 "$@"
gpu_python "$1" # GOP_LIBRARY, PYTHONPATH, a writable copy of the carried packs
gpu_out -a "$2"
# the schedules chosen here must be the ones prepared there: the cost
# model's, from no tuning database on either side
unset GOP_TUNE_DB
mkdir -p "$out/files"
eval "python3 bench/train.py --datasets \"\$carry/datasets\" --out \"\$out/files\" \
  ${GOP_TRAIN_ARGS:-}" 2>&1 | tee "$out/train.log"
rc=${PIPESTATUS[0]}
python3 -m unittest discover -s python/tests -p test_train.py -v 2>&1 | tee -a "$out/train.log"
urc=${PIPESTATUS[0]}
echo "unit (python/tests/test_train.py) rc=$urc"
[ "$rc" = 0 ] && rc=$urc
cp "$out/files/train.md" "$out/" 2>/dev/null
tar -C "$out/files" -czf "$out/train-files.tar.gz" . && rm -rf "$out/files"
echo "train rc=$rc"
exit "$rc"
