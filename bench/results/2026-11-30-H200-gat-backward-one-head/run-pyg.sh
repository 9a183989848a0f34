#!/usr/bin/env bash
# gop.nn's GAT with the one-head backward on gat_grad_teams (python/gop/
# auto.py): PyG's checks and timings (tests/gpu/pyg_accelerate.sh --models
# gat) and the kernels of a training step (bench/profile_train.py gat).
# Carry PYG (tests/gpu/pyg_accelerate.sh --prepare PYG). There:
#   bash bench/results/2026-11-30-H200-gat-backward-one-head/run-pyg.sh PYG OUT
pyg=$1 out=$2
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
GOP_PYG_ARGS='--models gat --gop-compiled --deadline 150' bash tests/gpu/pyg_accelerate.sh "$pyg" "$out/pyg-gat" > "$out/pyg-gat.txt" 2>&1
echo "pyg_accelerate status $?"; grep -E "passed|failed" "$out/pyg-gat/pyg_accelerate.md" | head -2
export GOP_LIBRARY=$PWD/$pyg/python/libgop.so GOP_CACHE_DIR=$(mktemp -d)
cp "$pyg"/python/kernels/*.gopk "$GOP_CACHE_DIR/"
PYTHONPATH=python:tests/gpu timeout 200 python3 bench/profile_train.py "$pyg/datasets" gat > "$out/profile_train_gat.txt" 2>&1
echo "profile status $?"; grep -A12 "== gat gop" "$out/profile_train_gat.txt"; grep "== gat pyg" "$out/profile_train_gat.txt"
