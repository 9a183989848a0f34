#!/bin/bash
# Experiment (the bf16-rows run (2026-11-27), issue 19): bf16 aggregation against f32.
#   - vectorize(fv, 16) for 16-bit tensors (two 16-byte loads a lane): a
#     team of 8 lanes covers 128 bf16 features, so a warp walks 4 groups at
#     once, as f32 at F = 64 does (v16 below: teams of T lanes, G, U);
#   - the wide twin of a bf16 output filled and read on its heavy rows only
#     (empty rows written 0 directly); GOP_EXP_WIDE=0 gives the old form
#     (twin filled and read on empty rows too).
# Part 1 checks the new kernels against the interpreter; part 2 times
# (gopc run --gpu --warmup 10 --reps 50, median ms); part 3 splits a run into
# its kernels with Nsight Compute.
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
o=$OUT/bf16.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
late() { [ $SECONDS -gt ${BUDGET:-500} ]; }
v16() { # T G U: teams of T lanes, 16 values a lane
  echo "optional(f); group(e, $2) -> (eo, ei); split(f, $((16 * $1))) -> (fo, fr); split(fr, 16) -> (fl, fv); reorder(eo, fo, fl, fv, ei); unroll(ei, $3); bind(eo, warp); team(eo, $1); bind(fl, lane); vectorize(fv, 16)"
}
r16() { # R U: R rows a warp (vertex-parallel), 16 values a lane
  echo "optional(f); group(v, $1) -> (vo, vi); split(f, $((512 / $1))) -> (fo, fr); split(fr, 16) -> (fl, fv); reorder(vo, fo, vi, fl, fv, e); fuse(vi, fl) -> (ln); unroll(e, $2); bind(vo, warp); bind(ln, lane); vectorize(fv, 16)"
}
# part 1: checks (F = 128: the vector path; F = 136: its scalar tail)
for op in copy_u_sum u_mul_e_sum copy_u_mean copy_u_max; do for dt in bf16 f16; do for F in 128 136; do
  for s in "$(v16 8 64 4)" "$(v16 16 32 4)" "$(r16 4 4)" "spmm_teams8(64, 16)" "spmm_groups(32, 4)"; do
    r=$($G run stdlib:$op --graph $D/cora.mtx --F $F --dtype $dt --schedule "$s" --gpu --check 2>&1 | grep -E "check|error" | head -1)
    echo "check $op $dt F=$F [${s:0:60}]: $r" | tee -a $o
  done; done; done; done
r=$($G run stdlib:copy_u_sum --graph $D/cora.mtx --F 128 --dtype f32 --schedule "$(v16 8 64 4)" --gpu 2>&1 | grep -E "error" | head -1)
echo "refusal f32 vec16: $r" | tee -a $o
echo "t=$SECONDS" | tee -a $o
t() { # dt graph F schedule [env]
  env ${5:-X=1} $G run stdlib:copy_u_sum --graph $2 --F $3 --dtype $1 --schedule "$4" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}
# part 2
for g in ogbn-arxiv cnr-2000 molhiv rmat:19:16; do for F in 128 256; do
  late && break 2
  gg=$D/$g.mtx; case $g in rmat:*) gg=$g;; esac
  T=$((F / 8)); [ $T -gt 32 ] && T=32
  line="$g F=$F:"
  if [ $g = molhiv ]; then
    for s in "spmm_rows_full(2, 4)" "spmm_vec4_full(4)"; do line="$line f32[$s]=$(t f32 $gg $F "$s")"; done
    for s in "spmm_rows_full(2, 4)" "spmm_vec4_full(4)"; do line="$line bf16[$s]=$(t bf16 $gg $F "$s")"; done
    for R in 2 4; do line="$line bf16[r16($R,4)]=$(t bf16 $gg $F "$(r16 $R 4)")"; done
  else
    for s in "spmm_groups(64, 4)" "spmm_teams8(64, $T)" "spmm_teams8(64, $((T / 2)))"; do line="$line f32[$s]=$(t f32 $gg $F "$s")"; done
    line="$line bf16[teams8(64,$T)]=$(t bf16 $gg $F "spmm_teams8(64, $T)")"
    line="$line bf16-oldwide[teams8(64,$T)]=$(t bf16 $gg $F "spmm_teams8(64, $T)" GOP_EXP_WIDE=0)"
    line="$line bf16[groups_full(64,4)]=$(t bf16 $gg $F "spmm_groups_full(64, 4)")"
    for cfg in "$((F / 16)) 64 4" "$((F / 16)) 32 4" "$((F / 16)) 64 2" "$((F / 32)) 64 4"; do
      set -- $cfg
      line="$line bf16[v16(T=$1,G=$2,U=$3)]=$(t bf16 $gg $F "$(v16 $1 $2 $3)")"
    done
    line="$line bf16-oldwide[v16(T=$((F / 16)),G=64,U=4)]=$(t bf16 $gg $F "$(v16 $((F / 16)) 64 4)" GOP_EXP_WIDE=0)"
  fi
  echo "$line" | tee -a $o
done; done
echo "t=$SECONDS" | tee -a $o
# part 3: kernels of one run (Nsight Compute, duration only)
if command -v ncu >/dev/null; then
  for cfg in "f32 spmm_teams8(64,_16)" "bf16 spmm_teams8(64,_16)" "bf16 v16"; do
    set -- $cfg; s=${2//_/ }; [ "$s" = v16 ] && s="$(v16 8 64 4)"
    for w in 1 0; do
      echo "== ncu copy_u_sum $1 ogbn-arxiv F=128 [${s:0:40}] GOP_EXP_WIDE=$w" | tee -a $o
      GOP_EXP_WIDE=$w timeout 120 ncu --metrics gpu__time_duration.sum --csv $G run stdlib:copy_u_sum --graph $D/ogbn-arxiv.mtx --F 128 --dtype $1 --schedule "$s" --gpu --warmup 0 --reps 1 2>/dev/null | grep gpu__time_duration | awk -F'","' '{print $5, $NF}' | tail -4 | tee -a $o
      [ $1 = f32 ] && break
    done
  done
fi
echo "t=$SECONDS" | tee -a $o
