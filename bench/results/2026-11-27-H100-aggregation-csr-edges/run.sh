#!/bin/bash
# The CSR-order run (2026-11-27)'s benchmark call (weighted sum with edge ids in CSR order):
#   gop_bench's u_mul_e_sum plan compiled for graphs whose edge ids are
#   their CSR positions (plan --edges dst: an in-edge's id is its position,
#   no in_eid load), run on the graphs numbered by destination; the same
#   operator's plan of general kernels on the graphs in the file's order;
#   and the peers (cuSPARSE from C, PyG) on the same graphs, in one call.
# Carry (made here): .carry/gpu with gop_bench (no LLVM), bench/ and
# bench-dst/ (the two plans and their packs) and datasets-xz/ (the graphs
# recompressed with xz to fit the carry; turned back into .mtx.gz first).
set -u
c=.carry/gpu
o=$OUT
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o/run.log
SECONDS=0
mkdir -p /tmp/ds
python3 - <<'PY'
import glob, gzip, lzma, os, shutil
for f in glob.glob(".carry/gpu/datasets-xz/*.mtx.xz"):
    n = os.path.basename(f)[:-3]
    with lzma.open(f) as i, gzip.open(f"/tmp/ds/{n}.gz", "wb", compresslevel=1) as w:
        shutil.copyfileobj(i, w)
PY
echo "datasets ready t=$SECONDS" | tee -a $o/run.log
G="cora citeseer pubmed wiki-Vote ca-HepPh musae-facebook deezer-HU blogcatalog proteins delaunay_n16 soc-Slashdot0902 ogbn-arxiv cnr-2000"
timeout 200 $c/gop_bench run $c/bench-dst /tmp/ds --csv $o/gop-dst.csv --reps 10 --budget-s 170 > $o/gop-dst.log 2>&1
echo "gop dst rc=$? t=$SECONDS; $(tail -1 $o/gop-dst.log)" | tee -a $o/run.log
timeout 200 $c/gop_bench run $c/bench /tmp/ds --csv $o/gop-input.csv --reps 10 --budget-s 170 > $o/gop-input.log 2>&1
echo "gop input rc=$? t=$SECONDS; $(tail -1 $o/gop-input.log)" | tee -a $o/run.log
timeout $((570 - SECONDS)) bash bench/peers/run_peers.sh /tmp/ds $o/peers $G > $o/peers.log 2>&1
echo "peers rc=$? t=$SECONDS" | tee -a $o/run.log
grep -E "^FAIL" $o/gop-dst.log $o/gop-input.log | head -20
cd $o && tar czf out.tgz *.csv *.log peers && ls -la
