#!/bin/bash
# The registers run (2026-11-27), call 3: the team size of the row stages that visit only the
# rows neighbour groups do not own (fill, mean/max finishing, a bf16
# output's twin; passes/lower_mean.c pass_row_stage). Today a team of 8
# lanes per row, 4 rows a warp: on cnr-2000 (325,557 rows, 3,381 of them
# heavy) such a stage takes 10-15 us, mostly testing degrees. An experiment
# build (HEAD + next-registers + GOP_EXP_ROWTEAM=T) sets T. Part 1 checks
# T = 1, 2, 4 against the interpreter; part 2 times T = 8, 4, 2, 1 twice;
# part 3 splits runs into kernels (Nsight Compute).
cd "$(dirname "$0")/../../../.."
c=.carry/exp
python3 - <<'PY'
import lzma, shutil, glob, os
shutil.copyfileobj(lzma.open('.carry/exp/gopc.xz'), open('.carry/exp/gopc', 'wb'))
os.chmod('.carry/exp/gopc', 0o755)
for f in glob.glob('.carry/exp/d/*.mtx.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
PY
G=$c/gopc; D=$c/d
o=$OUT/call3.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
late() { [ $SECONDS -gt ${BUDGET:-480} ]; }
for T in 1 2 4; do for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do for dt in f32 bf16; do
  for s in "spmm_groups(16, 4)" "spmm_groups_full(16, 4)" "spmm_teams8(32, 16)"; do
    r=$(GOP_EXP_ROWTEAM=$T $G run stdlib:$op --graph $D/wiki-Vote.mtx --F 72 --dtype $dt --schedule "$s" --gpu --check 2>&1 | grep -E "check:|error" | head -1)
    echo "check T=$T $op $dt [$s]: $r" | tee -a $o
  done; done; done; done
echo "t=$SECONDS" | tee -a $o
t() { # T op graph F dtype schedule [more args]
  local T=$1 op=$2 g=$3 F=$4 dt=$5 s=$6; shift 6
  GOP_EXP_ROWTEAM=$T $G run stdlib:$op --graph $g --F $F --dtype $dt --schedule "$s" "$@" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}
ab() { # op graph F dtype schedule [more args]
  late && return
  local line="$(basename $2 .mtx) $1 F=$3 $4 [$5]:"
  for r in 1 2; do for T in 8 4 2 1; do line="$line T$T=$(t $T "$@")"; done; done
  echo "$line" | tee -a $o
}
for g in $D/ogbn-arxiv.mtx $D/cnr-2000.mtx rmat:19:16; do for F in 128 256; do
  [ $g = rmat:19:16 ] && [ $F = 256 ] && continue
  ab copy_u_sum $g $F f32 "spmm_groups(64, 4)"
  ab copy_u_sum $g $F bf16 "spmm_groups_full(64, 4)"
done; done
ab copy_u_sum $D/cnr-2000.mtx 128 bf16 "spmm_groups_full(128, 4)"
ab copy_u_sum $D/ogbn-arxiv.mtx 128 f32 "spmm_teams8(64, 16)"
ab copy_u_mean $D/ogbn-arxiv.mtx 128 f32 "spmm_teams8(64, 16)"
ab u_mul_e_sum $D/cnr-2000.mtx 128 f32 "spmm_groups(64, 4)" --reorder none
ab u_mul_e_sum $D/cnr-2000.mtx 32 f32 "spmm_teams8(64, 4)" --reorder none
ab u_mul_e_sum $D/soc-Slashdot0902.mtx 128 f32 "spmm_groups(64, 4)" --reorder none
ab copy_u_sum $D/ogbn-arxiv.mtx 32 f32 "spmm_teams(32, 8)"
echo "t=$SECONDS" | tee -a $o
if command -v ncu >/dev/null; then
  for T in 8 2; do for cfg in "cnr-2000 bf16" "cnr-2000 f32" "ogbn-arxiv bf16"; do
    set -- $cfg; s="spmm_groups(64, 4)"; [ $2 = bf16 ] && s="spmm_groups_full(64, 4)"
    echo "== ncu T=$T copy_u_sum $2 $1 F=128 [$s]" | tee -a $o
    GOP_EXP_ROWTEAM=$T timeout 100 ncu --metrics gpu__time_duration.sum --csv $G run stdlib:copy_u_sum --graph $D/$1.mtx --F 128 --dtype $2 --schedule "$s" --gpu --warmup 0 --reps 1 2>/dev/null | grep -E 'gpu__time' | awk -F'","' '{print $5, $NF}' | tail -3 | tee -a $o
  done; done
fi
echo "t=$SECONDS" | tee -a $o
