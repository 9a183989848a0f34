#!/bin/bash
# The registers run (2026-11-27), call 6: the row stages over the destinations no group owns
# (unowned(G), a list built with the group table) instead of every
# destination. old = a59ab2e (HEAD before), new = the change. Part 1: GPU
# checks of new against the interpreter; part 2: old/new/old/new
# (gopc run --gpu --warmup 10 --reps 50, median ms); part 3: Nsight Compute.
cd "$(dirname "$0")/../../../.."
c=.carry/exp
python3 - <<'PY'
import lzma, shutil, glob, tarfile
tarfile.open(fileobj=lzma.open('.carry/exp/bins.tar.xz')).extractall('.carry/exp')
for f in glob.glob('.carry/exp/d/*.mtx.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
PY
B=$c/b; D=$c/d
o=$OUT/call6.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
late() { [ $SECONDS -gt ${BUDGET:-430} ]; }
# warm-up (call 4 ran cold): 15 s of runs, thrown away
for i in $(seq 8); do $B/gopc_new run stdlib:copy_u_sum --graph $D/cnr-2000.mtx --F 128 --gpu --warmup 10 --reps 200 >/dev/null 2>&1; done
echo "warm t=$SECONDS" | tee -a $o
for g in wiki-Vote cnr-2000; do for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do for dt in f32 bf16; do
  for s in "spmm_groups(16, 4)" "spmm_groups_full(64, 4)" "spmm_teams8(32, 16)" "spmm_teams(32, 4)"; do
    r=$($B/gopc_new run stdlib:$op --graph $D/$g.mtx --F 72 --dtype $dt --schedule "$s" --gpu --check 2>&1 | grep -E "check:|error" | head -1)
    echo "check $g $op $dt [$s]: $r" | tee -a $o
  done; done; done; done
echo "t=$SECONDS" | tee -a $o
t() { # bin op graph F dtype schedule [more args]
  local b=$1 op=$2 g=$3 F=$4 dt=$5 s=$6; shift 6
  $B/gopc_$b run stdlib:$op --graph $g --F $F --dtype $dt --schedule "$s" "$@" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}
ab() { # op graph F dtype schedule [more args]
  late && return
  local a=$(t old "$@") n=$(t new "$@") a2=$(t old "$@") n2=$(t new "$@")
  echo "$(basename $2 .mtx) $1 F=$3 $4 [$5]: old $a new $n old $a2 new $n2" | tee -a $o
}
x=(--reorder none)
ab copy_u_sum $D/cnr-2000.mtx 128 bf16 "spmm_groups_full(128, 4)"
ab copy_u_sum $D/cnr-2000.mtx 256 bf16 "spmm_groups_full(128, 4)"
ab copy_u_sum $D/ogbn-arxiv.mtx 128 bf16 "spmm_groups_full(64, 8)"
ab copy_u_sum $D/ogbn-arxiv.mtx 256 bf16 "spmm_groups_full(64, 4)"
ab copy_u_sum rmat:19:16 128 bf16 "spmm_groups_full(64, 4)"
ab copy_u_sum $D/cnr-2000.mtx 128 f32 "spmm_groups(64, 4)"
ab copy_u_sum $D/ogbn-arxiv.mtx 128 f32 "spmm_teams8(64, 16)"
ab copy_u_sum $D/ogbn-arxiv.mtx 256 f32 "spmm_groups(64, 4)"
ab copy_u_sum rmat:19:16 128 f32 "spmm_groups(64, 4)"
ab u_mul_e_sum $D/cnr-2000.mtx 16 f32 "spmm_teams(32, 4)" "${x[@]}"
ab u_mul_e_sum $D/cnr-2000.mtx 32 f32 "spmm_teams8(64, 4)" "${x[@]}"
ab u_mul_e_sum $D/cnr-2000.mtx 128 f32 "spmm_groups(64, 4)" "${x[@]}"
ab u_mul_e_sum $D/ogbn-arxiv.mtx 16 f32 "spmm_teams(32, 4)" "${x[@]}"
ab u_mul_e_sum $D/soc-Slashdot0902.mtx 32 f32 "spmm_teams(32, 8)" "${x[@]}"
ab u_mul_e_sum $D/deezer-HU.mtx 32 f32 "spmm_teams(32, 8)" "${x[@]}"
ab copy_u_mean $D/ogbn-arxiv.mtx 128 f32 "spmm_teams8(64, 16)"
ab copy_u_mean $D/cnr-2000.mtx 128 f32 "spmm_groups(64, 4)"
echo "t=$SECONDS" | tee -a $o
if command -v ncu >/dev/null; then
  for b in old new; do for cfg in "cnr-2000 bf16" "ogbn-arxiv bf16"; do
    set -- $cfg; s="spmm_groups_full(64, 4)"
    echo "== ncu $b copy_u_sum $2 $1 F=128 [$s]" | tee -a $o
    timeout 60 ncu --metrics gpu__time_duration.sum --csv $B/gopc_$b run stdlib:copy_u_sum --graph $D/$1.mtx --F 128 --dtype $2 --schedule "$s" --gpu --warmup 0 --reps 1 2>/dev/null | grep -E 'gpu__time' | awk -F'","' '{print $5, $NF}' | tail -3 | tee -a $o
  done; done
fi
echo "t=$SECONDS" | tee -a $o
