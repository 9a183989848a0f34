#!/bin/bash
# The registers run (2026-11-27)'s benchmark call (an H100), as the bf16-rows run (2026-11-27)'s run.sh after the codegen change a59ab2e: u_mul_e_sum with edge ids in CSR
# order (gop_bench plan --edges dst, 14 graphs x F in 16..256, the group
# stages' 128-thread blocks and this session's row stages), and the peers
# (cuSPARSE from C, PyG) on the same 14 graphs, in one call: the same-run
# comparison that the CSR-order run (2026-11-27)'s third call lacked.
# Carry (made here): .carry/gpu with gop_bench (no LLVM), bench-dst/ (the
# plan and its packs) and datasets-xz/ (the graphs in xz, turned back into
# .mtx.gz first).
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
G="cora citeseer pubmed wiki-Vote ca-HepPh musae-facebook deezer-HU blogcatalog proteins delaunay_n16 soc-Slashdot0902 ogbn-arxiv cnr-2000 molhiv"
# warm-up: 20 s of the same plan (the first graphs: cora, citeseer, ...),
# thrown away, so that the GPU's clocks and caches are in their running
# state before the first timed case (call 1 ran cold: every cora case,
# whatever its schedule, took 3 us more than in the bf16-rows run (2026-11-27)'s warm call)
[ "${WARM:-1}" = 1 ] && timeout 40 $c/gop_bench run $c/bench-dst /tmp/ds --csv /tmp/warm.csv --reps 10 --budget-s 20 > /tmp/warm.log 2>&1
echo "warm-up done t=$SECONDS" | tee -a $o/run.log
timeout 215 $c/gop_bench run $c/bench-dst /tmp/ds --csv $o/gop-dst.csv --reps 10 --budget-s 195 > $o/gop-dst.log 2>&1
echo "gop dst rc=$? t=$SECONDS; $(tail -1 $o/gop-dst.log)" | tee -a $o/run.log
timeout $((460 - SECONDS)) bash bench/peers/run_peers.sh /tmp/ds $o/peers $G > $o/peers.log 2>&1
echo "peers rc=$? t=$SECONDS" | tee -a $o/run.log
grep -E "^FAIL" $o/gop-dst.log | head -20
xz -9 $o/gop-dst.log
cd $o && tar czf out.tgz *.csv *.log* peers && ls -la
