#!/usr/bin/env bash
# tests/gpu/python_longrun.sh CARRY OUT: the Python package over long runs
# and from 8 threads on the GPU machine (tests/gpu/python_longrun.py):
#   train      10,000 full-batch steps of a 2-layer gop.nn GCN on ogbn-arxiv
#              (else pubmed), PyTorch's caching allocator beside gop;
#   minibatch  10,000 steps, each on a new gop.Graph freed by Python's GC;
#   threads    8 Python threads, a torch.cuda.Stream each, 500 iterations of
#              copy_u_sum, u_mul_e_sum and a GCNConv forward + backward on a
#              shared and a per-thread graph, against single-threaded results;
# host RSS under 1 MiB of growth, device memory flat, nothing compiled.
# CARRY is what `GOP_PREPARE_ONLY=pylong tools/gpu-prepare.sh` made
# (.carry/pylong): python/libgop.so (no LLVM: the GPU machine has none),
# python/kernels/ (every kernel the run launches, as packs) and datasets/.
# Writes OUT/summary.md, OUT/python_longrun.json and OUT/python_longrun.log.
# GOP_PYLONG_ARGS passes more options (e.g. '--parts threads --iters 100').
# About 2-3 minutes on an H200.
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/python_longrun.sh CARRY OUT" 2 "$@"
gpu_python "$1" # GOP_LIBRARY, PYTHONPATH, a writable copy of the carried packs
gpu_out -a "$2"
# the schedules chosen here (schedule="auto" in the threads part) must be
# the ones prepared there: the cost model's, from no tuning database
unset GOP_TUNE_DB
{
  echo "== $(gpu_name), $(date -u +%Y-%m-%dT%H:%MZ)"
  eval "timeout 540 python3 tests/gpu/python_longrun.py --datasets \"\$carry/datasets\" \
    --out \"\$out\" ${GOP_PYLONG_ARGS:-}"
  rc=$?
  echo "python_longrun rc=$rc"
  exit "$rc"
} 2>&1 | tee "$out/python_longrun.log"
exit "${PIPESTATUS[0]}"
