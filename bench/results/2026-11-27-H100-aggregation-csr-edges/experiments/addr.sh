#!/bin/bash
# Experiment (the CSR-order run (2026-11-27)): how tensor addresses are formed.
#   GOP_EXP_ADDR=0  signed: off = sext(i) * sext(F) + sext(f), one GEP (before)
#   GOP_EXP_ADDR=1  unsigned: the same with zext (mad.wide.u32 + lea)
#   GOP_EXP_ADDR=2  row form: (base + f) + zext(i) * (F * 4) (one mad.wide.u32)
cd "$(dirname "$0")/../.."
c=.carry/o
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' $c/gopc.xz $c/gopc; chmod +x $c/gopc
o=$OUT/addr.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
for m in 0 1 2; do for s in "spmm_groups(32, 4)" "spmm_teams8(64, 4)" "spmm_rows_full(2, 4)" "spmm_vec4(4)" "warp_vertex(1, 1)"; do
  r=$(GOP_EXP_ADDR=$m $c/gopc run stdlib:u_mul_e_sum --graph rmat:12:8 --F 72 --schedule "$s" --gpu --check 2>&1 | grep -E "check|error" | head -1); echo "check $m [$s]: $r" | tee -a $o
done; done
t() { GOP_EXP_ADDR=$5 $c/gopc run stdlib:$1 --graph $2 --F $3 --schedule "$4" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1; }
ab() { # op graph F schedule
  local n=$(basename $2 .mtx.gz) l=""
  for m in 0 1 2 0 1 2; do l="$l $m:$(t $1 $2 $3 "$4" $m)"; done
  echo "$n $1 F=$3 [$4]:$l" | tee -a $o
}
A=$c/datasets/ogbn-arxiv.mtx.gz; C=$c/datasets/cnr-2000.mtx.gz; S=$c/datasets/soc-Slashdot0902.mtx.gz
for op in u_mul_e_sum copy_u_sum; do
  ab $op $C 128 "spmm_groups(64, 4)"
  ab $op $C 32 "spmm_teams8(64, 4)"
  ab $op $A 128 "spmm_teams8(64, 16)"
  ab $op $A 256 "spmm_groups(64, 4)"
  ab $op $S 32 "spmm_teams8(64, 4)"
  ab $op $S 128 "spmm_groups(64, 4)"
  ab $op grid:300x300 64 "spmm_rows_full(2, 4)"
  ab $op grid:300x300 256 "spmm_vec4_full(4)"
done
ab copy_u_mean $A 128 "spmm_teams8(64, 16)"
ab u_dot_v $A 64 "sddmm_vec4(4)"
echo "t=$SECONDS" | tee -a $o
