#!/bin/bash
# The groups-of-64 run (2026-11-27), call 2 (an H100), gopc from 2b57efb (spmm_rows8_full, the
# model's tie-break). Part A (issue 19): the table, best bf16 over best
# f32 copy_u_sum on the graphs above 1M edges at F = 128 and 256, every
# time from this one call and binary, the untuned choice ("chosen") among
# the candidates. Part B (issue 13): neighbour groups of 64 and 128 edges
# with U = 4 and 8 for the weighted sum in CSR edge order, where
# spmm_groups(64, 4) is the tuned best at F >= 128 (the benchmark plan
# has neither (64, 8) nor (128, 4)). Part C: f32 spmm_rows8_full (which
# spills 4 bytes) against spmm_rows_full, which the model now ranks ahead.
# Part D: GPU checks of the new choices.
# Carry: .carry/gpu/datasets-xz, .carry/s16 (gopc).
# Expected: A: molhiv bf16 about 1.79x / 1.91x (call 1), the others as in
# the registers run (2026-11-27) (1.56-1.78x at F = 128), geomean about 1.73x; B: (64, 8) or
# (128, 4) within +-3% of (64, 4); C: rows8_full slower in f32.
cd "$(dirname "$0")/../../../.."
python3 bench/results/2026-11-27-H100-aggregation-groups64/experiments/unpack_carry.py .carry/s16 || exit 1
o=$OUT/call2.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
mkdir -p /tmp/ds
python3 - <<'PY'
import glob, gzip, lzma, os, shutil
for f in glob.glob(".carry/gpu/datasets-xz/*.mtx.xz"):
    n = os.path.basename(f)[:-3]
    with lzma.open(f) as i, gzip.open(f"/tmp/ds/{n}.gz", "wb", compresslevel=1) as w:
        shutil.copyfileobj(i, w)
PY
echo "datasets t=$SECONDS" | tee -a $o
B=.carry/s16/gopc
late() { [ $SECONDS -gt ${BUDGET:-560} ]; }
t() { # op graph F dtype schedule [more args]; schedule "" = the untuned choice
  late && return
  local op=$1 g=$2 F=$3 dt=$4 s=$5; shift 5
  local sa=(); [ -n "$s" ] && sa=(--schedule "$s")
  timeout 60 $B run stdlib:$op --graph $g --F $F --dtype $dt "${sa[@]}" "$@" --gpu --warmup 10 --reps 50 > /tmp/t.log 2>&1
  local ms=$(sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' /tmp/t.log | head -1)
  [ -z "$s" ] && s="chosen=$(sed -n 's/^  schedule: \(.*\) (from.*/\1/p' /tmp/t.log | head -1)"
  echo -n " [$s]=${ms:-FAIL}"
}
gpath() { case $1 in rmat*) echo $1 ;; *) echo /tmp/ds/$1.mtx.gz ;; esac; }
# warm-up (thrown away)
t copy_u_sum /tmp/ds/cnr-2000.mtx.gz 128 f32 "spmm_groups(64, 4)" > /dev/null
# part A
for g in molhiv ogbn-arxiv cnr-2000 rmat:19:16; do for F in 128 256; do
  late && break 2
  G=$(gpath $g)
  if [ $g = molhiv ]; then
    line="A $g F=$F f32:$(t copy_u_sum $G $F f32 'spmm_vec4_full(4)')$(t copy_u_sum $G $F f32 'spmm_rows_full(2, 4)')$(t copy_u_sum $G $F f32 '')"
    line="$line | bf16:$(t copy_u_sum $G $F bf16 'spmm_rows8_full(2, 4)')$(t copy_u_sum $G $F bf16 'spmm_rows8_full(2, 2)')$(t copy_u_sum $G $F bf16 'spmm_vec4_full(4)')$(t copy_u_sum $G $F bf16 '')"
  else
    line="A $g F=$F f32:$(t copy_u_sum $G $F f32 'spmm_groups(64, 4)')$(t copy_u_sum $G $F f32 "spmm_teams8(64, $((F / 8)))")$(t copy_u_sum $G $F f32 'spmm_groups(128, 4)')$(t copy_u_sum $G $F f32 'spmm_groups(64, 8)')$(t copy_u_sum $G $F f32 '')"
    line="$line | bf16:$(t copy_u_sum $G $F bf16 'spmm_groups_full(64, 4)')$(t copy_u_sum $G $F bf16 'spmm_groups_full(64, 8)')$(t copy_u_sum $G $F bf16 'spmm_groups_full(128, 4)')$(t copy_u_sum $G $F bf16 'spmm_groups_full(128, 8)')$(t copy_u_sum $G $F bf16 '')"
  fi
  echo "$line" | tee -a $o
done; done
echo "part A t=$SECONDS" | tee -a $o
# part B
for g in cnr-2000 ogbn-arxiv soc-Slashdot0902 blogcatalog; do for F in 128 256; do
  late && break 2
  G=$(gpath $g)
  echo "B $g F=$F u_mul_e_sum f32:$(for s in 'spmm_groups(64, 4)' 'spmm_groups(64, 8)' 'spmm_groups(128, 4)' 'spmm_groups(128, 8)' 'spmm_groups(64, 4)'; do t u_mul_e_sum $G $F f32 "$s" --reorder none; done)" | tee -a $o
done; done
echo "part B t=$SECONDS" | tee -a $o
# part C
for g in proteins molhiv; do for F in 64 128; do
  G=$(gpath $g)
  echo "C $g F=$F copy_u_sum f32:$(t copy_u_sum $G $F f32 'spmm_rows_full(2, 4)')$(t copy_u_sum $G $F f32 'spmm_rows8_full(2, 4)')$(t copy_u_sum $G $F f32 'spmm_rows_full(4, 4)')$(t copy_u_sum $G $F f32 'spmm_rows8_full(4, 4)')" | tee -a $o
done; done
echo "part C t=$SECONDS" | tee -a $o
# part D
for g in proteins delaunay_n16 wiki-Vote; do for F in 64 128 200; do for dt in bf16 f16 f32; do
  late && break 3
  r=$(timeout 30 $B run stdlib:copy_u_sum --graph /tmp/ds/$g.mtx.gz --F $F --dtype $dt --gpu --check 2>&1 | grep -E "schedule:|check:|error" | tr '\n' ' ')
  echo "D $g F=$F $dt: $r" | tee -a $o
done; done; done
echo "part D t=$SECONDS" | tee -a $o
