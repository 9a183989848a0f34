#!/bin/bash
# A/B: the groups loop loading its next table row ahead (new) against not (old)
cd "$(dirname "$0")/../.."
c=.carry/ab
for b in old new; do
  [ -x $c/gopc-$b ] || python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' $c/gopc-$b.xz $c/gopc-$b
  chmod +x $c/gopc-$b
done
o=$OUT/ab.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
# correctness of the new kernels against the interpreter
for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do for dt in f32 bf16; do
  for s in "spmm_groups(16, 4)" "spmm_teams(16, 8)" "spmm_teams8(32, 16)"; do
    r=$($c/gopc-new run stdlib:$op --graph $c/datasets/cora.mtx.gz --F 64 --dtype $dt --schedule "$s" --gpu --check 2>&1 | grep -E "check|error" | head -1)
    echo "check $op $dt [$s]: $r" | tee -a $o
  done; done; done
echo "t=$SECONDS" | tee -a $o
t() { $c/gopc-$1 run stdlib:$2 --graph $3 --F $4 --dtype $5 --schedule "$6" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1; }
for g in $c/datasets/ogbn-arxiv.mtx.gz rmat:18:16; do
  for F in 32 128 256; do
    for op in copy_u_sum u_mul_e_sum; do
      for dt in f32 bf16; do
        case $F in 32) ss=("spmm_teams(16, 8)" "spmm_groups(16, 4)");; *) ss=("spmm_groups(16, 4)" "spmm_groups_full(32, 4)" "spmm_teams8(32, 16)");; esac
        for s in "${ss[@]}"; do
          a=$(t old $op $g $F $dt "$s"); n=$(t new $op $g $F $dt "$s"); a2=$(t old $op $g $F $dt "$s")
          echo "$(basename $g) $op F=$F $dt [$s]: old $a new $n old2 $a2" | tee -a $o
        done
      done
    done
    [ $SECONDS -gt 330 ] && { echo "stopped at t=$SECONDS" | tee -a $o; exit 0; }
  done
done
echo "t=$SECONDS" | tee -a $o
