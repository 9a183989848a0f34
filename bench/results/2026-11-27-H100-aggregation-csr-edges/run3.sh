#!/bin/bash
# The CSR-order run (2026-11-27)'s third benchmark call (an H100): u_mul_e_sum with edge ids in
# CSR order on all 14 graphs, with the group stages' default block of 128
# threads (GROUPS_THREADS, codegen/kernel.c). gop only: the peers are the
# first two calls' (combined-peers.csv), on other H100s 30-50 minutes
# before, and the README says so.
# Carry: .carry/gpu with gop_bench (no LLVM), bench-dst/ (gop_bench plan
# --edges dst --ops u_mul_e_sum, 14 graphs) and datasets-xz/.
set -u
c=.carry/gpu
o=$OUT
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o/run3.log
SECONDS=0
mkdir -p /tmp/ds
python3 - <<'PY'
import glob, gzip, lzma, os, shutil
for f in glob.glob(".carry/gpu/datasets-xz/*.mtx.xz"):
    n = os.path.basename(f)[:-3]
    with lzma.open(f) as i, gzip.open(f"/tmp/ds/{n}.gz", "wb", compresslevel=1) as w:
        shutil.copyfileobj(i, w)
PY
timeout 260 $c/gop_bench run $c/bench-dst /tmp/ds --csv $o/gop-dst-128.csv --reps 10 --budget-s 240 > $o/gop-dst-128.log 2>&1
echo "gop dst rc=$? t=$SECONDS; $(tail -1 $o/gop-dst-128.log)" | tee -a $o/run3.log
grep -E "^FAIL" $o/gop-dst-128.log | head
xz -9 $o/gop-dst-128.log
