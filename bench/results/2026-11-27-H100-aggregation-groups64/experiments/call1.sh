#!/bin/bash
# The groups-of-64 run (2026-11-27), call 1 (an H100). Run first: part 3, then parts 1 and 2 in
# what time is left (each step skipped past 570 s). Part 1 (issue 19): the registers run (2026-11-27)'s halves.cu
# stand-in on ogbn-arxiv, cnr-2000 and molhiv at F = 128; part 2 (issue
# 19): bf16 row schedules with 16-byte lanes on molhiv (r16 below) against
# the stdlib's 8-byte-lane ones, with GPU checks of r16 on small graphs;
# part 3 (issue 13): ../run.sh, the benchmark with 4c06852 in.
# Carry: .carry/gpu/datasets-xz and .carry/s16 (gopc, static and stripped,
# gop_bench without LLVM, and the plan bench-dst, all from 83203e6).
# Expected: halves 10-25% under warp8 on cnr-2000 and ogbn-arxiv if the
# group kernel is bound by loads per edge, equal if by rows in flight;
# r16(2, 4) 5-15% under spmm_vec4_full(4) on molhiv bf16 (half the warps,
# each lane two edges' 16-byte loads in flight); run.sh 1.49x -> 1.50x.
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/s16 || exit 1
# gop_bench and the plan travel compressed in .carry/s16 (the carry's 64 MiB)
mkdir -p .carry/gpu && cp -r .carry/s16/gop_bench .carry/s16/bench-dst .carry/gpu/ || exit 1
o=$OUT/call1.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
mkdir -p /tmp/ds /tmp/d
python3 - <<'PY'
import glob, gzip, lzma, os, shutil
for f in glob.glob(".carry/gpu/datasets-xz/*.mtx.xz"):
    n = os.path.basename(f)[:-3]
    with lzma.open(f) as i, gzip.open(f"/tmp/ds/{n}.gz", "wb", compresslevel=1) as w:
        shutil.copyfileobj(i, w)
    if n.split(".")[0] in ("ogbn-arxiv", "cnr-2000", "molhiv"):
        with lzma.open(f) as i, open(f"/tmp/d/{n}", "wb") as w:
            shutil.copyfileobj(i, w)
PY
echo "datasets t=$SECONDS" | tee -a $o
# part 3
mkdir -p $OUT/run
OUT=$OUT/run timeout 470 bash bench/results/2026-11-27-H100-aggregation-groups64/run.sh
echo "part 3 t=$SECONDS" | tee -a $o
# part 1
e=bench/results/2026-11-27-H100-aggregation-registers/experiments
nvcc -O3 -arch=sm_90 -o /tmp/halves $e/halves.cu && for g in ogbn-arxiv cnr-2000 molhiv; do
  [ $SECONDS -lt 540 ] && timeout 30 /tmp/halves /tmp/d/$g.mtx 128 2>&1 | tee -a $o
done
echo "part 1 t=$SECONDS" | tee -a $o
# part 2
B=.carry/s16/gopc
t() { # op graph F dtype schedule
  [ $SECONDS -gt 570 ] && return
  timeout 30 $B run stdlib:$1 --graph $2 --F $3 --dtype $4 --schedule "$5" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}
r16() { echo "optional(f); group(v, $1) -> (vo, vi); split(f, $((256 / $1))) -> (fo, fr); split(fr, 8) -> (fl, fv); reorder(vo, fo, vi, fl, fv, e); fuse(vi, fl) -> (ln); unroll(e, $2); bind(vo, warp); bind(ln, lane); vectorize(fv, 8); occupancy(vo, 2048)"; }
for g in wiki-Vote; do for F in 72 128 256; do for s in "2 4" "4 2" "1 4"; do
  [ $SECONDS -gt 500 ] && break 3
  r=$(timeout 20 $B run stdlib:copy_u_sum --graph /tmp/ds/$g.mtx.gz --F $F --dtype bf16 --schedule "$(r16 $s)" --gpu --check 2>&1 | grep -iE "check|error|mismatch" | head -2 | tr '\n' ' ')
  echo "check $g F=$F r16($s): $r" | tee -a $o
done; done; done
M=/tmp/ds/molhiv.mtx.gz
for F in 128 256; do
  line="molhiv F=$F: f32 vec4_full(4)=$(t copy_u_sum $M $F f32 'spmm_vec4_full(4)') f32 rows_full(2,4)=$(t copy_u_sum $M $F f32 'spmm_rows_full(2, 4)')"
  line="$line bf16 vec4_full(4)=$(t copy_u_sum $M $F bf16 'spmm_vec4_full(4)') bf16 rows_full(2,4)=$(t copy_u_sum $M $F bf16 'spmm_rows_full(2, 4)')"
  for s in "1 4" "2 2" "2 4" "4 2" "4 4" "8 2"; do
    line="$line r16($s)=$(t copy_u_sum $M $F bf16 "$(r16 $s)")"
  done
  echo "$line" | tee -a $o
done
echo "part 2 t=$SECONDS" | tee -a $o
