#!/bin/bash
# Experiment (the bf16-rows run (2026-11-27)): row stages (fill, mean/max finishing, a 16-bit
# output's wide twin) with each lane on 16 bytes of a row (@vec(V),
# passes/lower_mean.c row_nest) and a bf16 output's empty rows written 0
# directly, against HEAD before the change (gopc-old, commit fab746f), both
# built here. Part 1 checks the new kernels against the interpreter; part 2
# times old, new, old, new (gopc run --gpu --warmup 10 --reps 50, median
# ms); part 3 bf16 against f32 copy_u_sum (new), with vectorize(fv, 16)
# (v16) beside the named schedules; part 4 splits runs into kernels (ncu).
cd "$(dirname "$0")/../../../.."
c=.carry/exp
python3 - <<'PY'
import lzma, tarfile, shutil, glob, os
with lzma.open('.carry/exp/gopc.tar.xz') as f: tarfile.open(fileobj=f).extractall('.carry/exp')
for f in glob.glob('.carry/exp/d/*.mtx.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
PY
N=$c/gopc-new; O=$c/gopc-old; D=$c/d
o=$OUT/rows.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
late() { [ $SECONDS -gt ${BUDGET:-300} ]; }
v16() { echo "optional(f); group(e, $2) -> (eo, ei); split(f, $((16 * $1))) -> (fo, fr); split(fr, 16) -> (fl, fv); reorder(eo, fo, fl, fv, ei); unroll(ei, $3); bind(eo, warp); team(eo, $1); bind(fl, lane); vectorize(fv, 16)"; }
# part 1: checks, wiki-Vote (directed: empty rows; heavy rows above G)
pass=0; fail=0
for op in copy_u_sum copy_u_mean copy_u_max u_mul_e_sum; do for dt in f32 bf16 f16; do for F in 64 72; do
  for s in "spmm_groups(32, 4)" "spmm_teams8(64, 8)" "warp_edge(1, 1)" "gnnadvisor(16, 32)" "spmm_vec4(4)" "$(v16 4 64 4)"; do
    [ $dt = f32 ] && [ "${s:0:8}" = optional ] && continue
    r=$($N run stdlib:$op --graph $D/wiki-Vote.mtx --F $F --dtype $dt --schedule "$s" --gpu --check 2>&1 | grep -E "check:|error" | head -1)
    case $r in *agrees*) pass=$((pass + 1));; *"cannot"*|*"refuse"*|*"16-bit atomic"*) echo "n/a $op $dt F=$F [${s:0:50}]: $r" >> $o;; *) fail=$((fail + 1)); echo "FAIL $op $dt F=$F [${s:0:50}]: $r" | tee -a $o;; esac
  done; done; done; done
echo "checks: $pass passed, $fail failed, t=$SECONDS" | tee -a $o
t() { # bin op graph F dt schedule [args]
  local b=$1 op=$2 g=$3 F=$4 dt=$5 s=$6; shift 6
  $b run stdlib:$op --graph $g --F $F --dtype $dt --schedule "$s" "$@" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}
ab() { late && return; local a=$(t $O "$@") n=$(t $N "$@") a2=$(t $O "$@") n2=$(t $N "$@"); echo "$(basename $2 .mtx) $1 F=$3 $4 [$5]: old $a new $n old $a2 new $n2" | tee -a $o; }
# part 2
A=$D/ogbn-arxiv.mtx; C=$D/cnr-2000.mtx; W=$D/wiki-Vote.mtx
ab u_mul_e_sum $A 128 f32 "spmm_teams8(64, 16)" --reorder none
ab u_mul_e_sum $A 256 f32 "spmm_groups(64, 4)" --reorder none
ab u_mul_e_sum $A 32 f32 "spmm_teams(32, 8)" --reorder none
ab copy_u_sum $A 128 f32 "spmm_teams8(64, 16)"
ab copy_u_mean $A 128 f32 "spmm_teams8(64, 16)"
ab copy_u_mean $A 128 f32 "warp_edge(1, 1)"
ab u_mul_e_sum $C 128 f32 "spmm_groups(64, 4)" --reorder none
ab u_mul_e_sum $W 128 f32 "spmm_groups(32, 4)" --reorder none
ab copy_u_sum $A 128 bf16 "spmm_teams8(64, 16)"
ab copy_u_sum $A 256 bf16 "spmm_groups_full(64, 4)"
ab copy_u_sum rmat:19:16 128 bf16 "spmm_groups_full(64, 4)"
echo "t=$SECONDS" | tee -a $o
# part 3: bf16 against f32 (new)
for g in ogbn-arxiv cnr-2000 rmat:19:16; do for F in 128 256; do
  late && break 2
  gg=$D/$g.mtx; case $g in rmat:*) gg=$g;; esac
  T=$((F / 8)); [ $T -gt 32 ] && T=32
  line="$g F=$F:"
  for s in "spmm_groups(64, 4)" "spmm_teams8(64, $T)" "spmm_teams8(64, $((T / 2)))"; do line="$line f32[$s]=$(t $N copy_u_sum $gg $F f32 "$s")"; done
  for s in "spmm_teams8(64, $T)" "spmm_groups_full(64, 4)" "spmm_groups(64, 4)"; do line="$line bf16[$s]=$(t $N copy_u_sum $gg $F bf16 "$s")"; done
  for cfg in "$((F / 16)) 64 4" "$((F / 16)) 64 2" "$((F / 32)) 64 4"; do set -- $cfg; line="$line bf16[v16($1,$2,$3)]=$(t $N copy_u_sum $gg $F bf16 "$(v16 $1 $2 $3)")"; done
  echo "$line" | tee -a $o
done; done
echo "t=$SECONDS" | tee -a $o
# part 4: kernels (Nsight Compute, durations in ns)
k() { # bin dt schedule
  echo "== ncu $(basename $1) copy_u_sum $2 ogbn-arxiv F=128 [${3:0:40}]" | tee -a $o
  timeout 100 ncu --metrics gpu__time_duration.sum --csv $1 run stdlib:copy_u_sum --graph $A --F 128 --dtype $2 --schedule "$3" --gpu --warmup 0 --reps 1 2>/dev/null | grep gpu__time_duration | awk -F'","' '{print $5, $NF}' | tail -3 | tee -a $o
}
if command -v ncu >/dev/null; then
  k $O f32 "spmm_teams8(64, 16)"; k $N f32 "spmm_teams8(64, 16)"
  k $O bf16 "spmm_teams8(64, 16)"; k $N bf16 "spmm_teams8(64, 16)"; k $N bf16 "$(v16 8 64 4)"; k $N bf16 "spmm_groups_full(64, 4)"
fi
echo "t=$SECONDS" | tee -a $o
