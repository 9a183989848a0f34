#!/bin/bash
# Experiment (the bf16-rows run (2026-11-27)): sequential edge loops unrolled by hand with the
# n mod U leftover edges as one block of straight-line copies (codegen/loop.c
# unrolled_loop; GOP_TAIL_UNROLL=1, "new") against LLVM's unrolling, whose
# remainder loop runs the leftover edges one at a time (GOP_TAIL_UNROLL=0,
# "old"). One gopc (built here, static), both forms. Part 1 checks the new
# kernels against the interpreter; part 2 times old, new, old, new
# (gopc run --gpu --warmup 10 --reps 50, median ms); part 3 bf16 against
# f32 copy_u_sum under the new form, with U = 8 where 16-bit rows leave the
# registers for it (issue 19).
cd "$(dirname "$0")/../../../.."
c=.carry/exp
python3 - <<'PY'
import lzma, gzip, shutil, glob, os
shutil.copyfileobj(lzma.open('.carry/exp/gopc.xz'), open('.carry/exp/gopc', 'wb'))
os.chmod('.carry/exp/gopc', 0o755)
for f in glob.glob('.carry/exp/d/*.mtx.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
PY
G=$c/gopc; D=$c/d
o=$OUT/tail.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
late() { [ $SECONDS -gt ${BUDGET:-540} ]; }
# part 1: checks of the new form (cora, F = 72: the vector path and its scalar tail)
for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do for dt in f32 bf16; do
  for s in "spmm_groups(16, 4)" "spmm_teams(16, 8)" "spmm_teams8(32, 16)" "spmm_vec4(4)" "spmm_rows(4, 4)" "spmm_rows_full(2, 4)" "spmm_groups(128, 8)" "warp_vertex(1, 2)"; do
    r=$(GOP_TAIL_UNROLL=1 $G run stdlib:$op --graph $D/cora.mtx --F 72 --dtype $dt --schedule "$s" --gpu --check 2>&1 | grep -E "check|error" | head -1)
    echo "check $op $dt [$s]: $r" | tee -a $o
  done; done; done
for s in "spmm_groups(32, 4)" "spmm_teams8(64, 8)" "spmm_rows(2, 4)" "spmm_vec4(8)"; do
  r=$(GOP_TAIL_UNROLL=1 $G run stdlib:u_mul_e_sum --graph rmat:14:16 --reorder none --F 40 --schedule "$s" --gpu --check 2>&1 | grep -E "check|error" | head -1)
  echo "check rmat:14:16 reorder none u_mul_e_sum [$s]: $r" | tee -a $o
done
echo "t=$SECONDS" | tee -a $o
# part 2: old against new
t() { # mode op graph F dtype schedule [more args]
  local m=$1 op=$2 g=$3 F=$4 dt=$5 s=$6; shift 6
  GOP_TAIL_UNROLL=$m $G run stdlib:$op --graph $g --F $F --dtype $dt --schedule "$s" "$@" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}
ab() { # op graph F dtype schedule [more args]
  late && return
  local a=$(t 0 "$@") n=$(t 1 "$@") a2=$(t 0 "$@") n2=$(t 1 "$@")
  echo "$(basename $2 .mtx) $1 F=$3 $4 [$5]: old $a new $n old $a2 new $n2" | tee -a $o
}
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
  ab $op grid:300x300 64 f32 "spmm_rows_full(2, 4)" "${x[@]}"
done
echo "t=$SECONDS" | tee -a $o
# part 3: bf16 against f32, copy_u_sum, new form; U = 8 through directives
t8() { # T U: teams of T lanes, 8 values a lane, U edges unrolled, groups of 64
  echo "optional(f); group(e, 64) -> (eo, ei); split(f, $((8 * $1))) -> (fo, fr); split(fr, 8) -> (fl, fv); reorder(eo, fo, fl, fv, ei); unroll(ei, $2); bind(eo, warp); team(eo, $1); bind(fl, lane); vectorize(fv, 8)"
}
for g in ogbn-arxiv cnr-2000; do for F in 128 256; do
  late && break 2
  T=$((F / 8)); [ $T -gt 32 ] && T=32
  line="$g F=$F:"
  for s in "spmm_groups(64, 4)" "spmm_teams8(64, $T)" "spmm_groups_full(64, 4)"; do line="$line f32[$s]=$(t 1 copy_u_sum $D/$g.mtx $F f32 "$s")"; done
  for s in "spmm_groups(64, 4)" "spmm_teams8(64, $T)" "spmm_groups_full(64, 4)" "spmm_groups_full(64, 8)" "$(t8 $T 8)" "$(t8 $((T / 2)) 8)"; do
    n=$s; case $s in optional*) n="t8($(sed -n 's/.*team(eo, \([0-9]*\)).*/\1/p' <<<"$s"),U=$(sed -n 's/.*unroll(ei, \([0-9]*\)).*/\1/p' <<<"$s"))";; esac
    line="$line bf16[$n]=$(t 1 copy_u_sum $D/$g.mtx $F bf16 "$s")"
  done
  line="$line bf16-old[teams8]=$(t 0 copy_u_sum $D/$g.mtx $F bf16 "spmm_teams8(64, $T)")"
  echo "$line" | tee -a $o
done; done
echo "t=$SECONDS" | tee -a $o
