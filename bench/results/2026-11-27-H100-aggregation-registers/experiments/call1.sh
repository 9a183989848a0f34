#!/bin/bash
# The registers run (2026-11-27), call 1. Three gopc builds (static, made on the CPU machine):
#   old = 8af71cc (before CgTensorInfo.filled: the bf16 twin cleared each run)
#   new = b13a8e3 (HEAD)
#   nr  = HEAD + the bf16-rows run (2026-11-27)'s next-registers.patch (zext addresses, tail
#         unroll, idle lanes skip a vector loop's scalar fallback)
# Part 1: GPU checks of new (filled tensors start as NaN before a checked run)
#         and of nr; part 2: bf16 against f32, old and new; part 3: new against
#         nr, new/nr/new/nr (gopc run --gpu --warmup 10 --reps 50, median ms).
cd "$(dirname "$0")/../../../.."
c=.carry/exp
python3 - <<'PY'
import lzma, shutil, glob, tarfile
tarfile.open(fileobj=lzma.open('.carry/exp/bins.tar.xz')).extractall('.carry/exp')
for f in glob.glob('.carry/exp/d/*.mtx.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
PY
B=$c/b; D=$c/d
o=$OUT/call1.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; md5sum $B/*; } | tee $o
SECONDS=0
late() { [ $SECONDS -gt ${BUDGET:-470} ]; }
# part 1: checks
for bin in new nr; do
 for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do for dt in f32 bf16; do
  for s in "spmm_groups(16, 4)" "spmm_groups_full(16, 4)" "spmm_teams8(32, 16)" "spmm_vec4(4)" "spmm_rows(4, 4)" "spmm_teams(16, 8)"; do
    r=$($B/gopc_$bin run stdlib:$op --graph $D/wiki-Vote.mtx --F 72 --dtype $dt --schedule "$s" --gpu --check 2>&1 | grep -E "check:|error" | head -1)
    echo "check $bin $op $dt [$s]: $r" | tee -a $o
  done; done; done
 for s in "sddmm_vec4(4)" "sddmm_vec4(8)"; do for F in 64 72; do
    r=$($B/gopc_$bin run stdlib:u_dot_v --graph $D/cora.mtx --F $F --schedule "$s" --gpu --check 2>&1 | grep -E "check:|error" | head -1)
    echo "check $bin u_dot_v F=$F [$s]: $r" | tee -a $o
 done; done
done
echo "t=$SECONDS" | tee -a $o
t() { # bin op graph F dtype schedule [more args]
  local b=$1 op=$2 g=$3 F=$4 dt=$5 s=$6; shift 6
  $B/gopc_$b run stdlib:$op --graph $g --F $F --dtype $dt --schedule "$s" "$@" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}
# part 2: bf16 against f32 (copy_u_sum), old and new
for g in ogbn-arxiv cnr-2000 rmat:19:16 molhiv; do for F in 128 256; do
  late && break 2
  gg=$D/$g.mtx; case $g in rmat:*) gg=$g;; esac
  T=$((F / 8)); [ $T -gt 32 ] && T=32
  if [ $g = molhiv ]; then ss=("spmm_rows_full(2, 4)" "spmm_vec4_full(4)"); else ss=("spmm_groups(64, 4)" "spmm_teams8(64, $T)" "spmm_groups_full(64, 4)"); fi
  line="$g F=$F:"
  for s in "${ss[@]}"; do line="$line f32[$s]=$(t new copy_u_sum $gg $F f32 "$s")"; done
  for b in old new; do for s in "${ss[@]}"; do line="$line bf16-$b[$s]=$(t $b copy_u_sum $gg $F bf16 "$s")"; done; done
  echo "$line" | tee -a $o
done; done
echo "t=$SECONDS" | tee -a $o
# part 3: new against nr
ab() { # op graph F dtype schedule [more args]
  late && return
  local a=$(t new "$@") n=$(t nr "$@") a2=$(t new "$@") n2=$(t nr "$@")
  echo "$(basename $2 .mtx) $1 F=$3 $4 [$5]: new $a nr $n new $a2 nr $n2" | tee -a $o
}
ab u_dot_v $D/ogbn-arxiv.mtx 64 f32 "sddmm_vec4(4)"
ab u_dot_v $D/ogbn-arxiv.mtx 32 f32 "sddmm_vec4(4)"
ab u_dot_v $D/cnr-2000.mtx 128 f32 "sddmm_vec4(4)"
for op in u_mul_e_sum copy_u_sum; do
  x=(); [ $op = u_mul_e_sum ] && x=(--reorder none)
  ab $op $D/cnr-2000.mtx 128 f32 "spmm_groups(64, 4)" "${x[@]}"
  ab $op $D/cnr-2000.mtx 32 f32 "spmm_teams8(64, 4)" "${x[@]}"
  ab $op $D/ogbn-arxiv.mtx 128 f32 "spmm_teams8(64, 16)" "${x[@]}"
  ab $op $D/ogbn-arxiv.mtx 256 f32 "spmm_groups(64, 4)" "${x[@]}"
  ab $op $D/ogbn-arxiv.mtx 32 f32 "spmm_teams(32, 8)" "${x[@]}"
  ab $op $D/soc-Slashdot0902.mtx 128 f32 "spmm_groups(64, 4)" "${x[@]}"
  ab $op $D/soc-Slashdot0902.mtx 32 f32 "spmm_teams(32, 8)" "${x[@]}"
  ab $op $D/blogcatalog.mtx 256 f32 "spmm_groups(64, 4)" "${x[@]}"
  ab $op $D/deezer-HU.mtx 32 f32 "spmm_teams(32, 8)" "${x[@]}"
  ab $op $D/musae-facebook.mtx 128 f32 "spmm_groups(32, 4)" "${x[@]}"
  ab $op $D/pubmed.mtx 128 f32 "spmm_groups(32, 4)" "${x[@]}"
  ab $op $D/molhiv.mtx 64 f32 "spmm_rows_full(2, 4)" "${x[@]}"
done
echo "t=$SECONDS" | tee -a $o
