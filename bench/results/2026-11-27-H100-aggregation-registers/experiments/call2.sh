#!/bin/bash
# The registers run (2026-11-27), call 2 (same three builds as call1.sh). Part 1: the rest of
# new against nr (next-registers.patch), new/nr/new/nr; part 2: bf16
# schedule variants on the two graphs where bf16 gains least over f32;
# part 3: a run split into its kernels by Nsight Compute.
cd "$(dirname "$0")/../../../.."
c=.carry/exp
[ -x $c/b/gopc_new ] || python3 - <<'PY'
import lzma, shutil, glob, tarfile
tarfile.open(fileobj=lzma.open('.carry/exp/bins.tar.xz')).extractall('.carry/exp')
for f in glob.glob('.carry/exp/d/*.mtx.xz'):
    with lzma.open(f) as i, open(f[:-3], 'wb') as o: shutil.copyfileobj(i, o)
PY
B=$c/b; D=$c/d
o=$OUT/call2.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
late() { [ $SECONDS -gt ${BUDGET:-500} ]; }
t() { # bin op graph F dtype schedule [more args]
  local b=$1 op=$2 g=$3 F=$4 dt=$5 s=$6; shift 6
  $B/gopc_$b run stdlib:$op --graph $g --F $F --dtype $dt --schedule "$s" "$@" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1
}
ab() { # op graph F dtype schedule [more args]
  late && return
  local a=$(t new "$@") n=$(t nr "$@") a2=$(t new "$@") n2=$(t nr "$@")
  echo "$(basename $2 .mtx) $1 F=$3 $4 [$5]: new $a nr $n new $a2 nr $n2" | tee -a $o
}
x=(--reorder none)
ab u_mul_e_sum $D/ogbn-arxiv.mtx 32 f32 "spmm_teams(32, 8)" "${x[@]}"
ab u_mul_e_sum $D/soc-Slashdot0902.mtx 128 f32 "spmm_groups(64, 4)" "${x[@]}"
ab u_mul_e_sum $D/soc-Slashdot0902.mtx 32 f32 "spmm_teams(32, 8)" "${x[@]}"
ab u_mul_e_sum $D/deezer-HU.mtx 32 f32 "spmm_teams(32, 8)" "${x[@]}"
ab u_mul_e_sum $D/musae-facebook.mtx 128 f32 "spmm_groups(32, 4)" "${x[@]}"
ab u_mul_e_sum $D/molhiv.mtx 64 f32 "spmm_rows_full(2, 4)" "${x[@]}"
ab copy_u_sum $D/cnr-2000.mtx 128 f32 "spmm_groups(64, 4)"
ab copy_u_sum $D/ogbn-arxiv.mtx 128 f32 "spmm_teams8(64, 16)"
ab copy_u_sum $D/ogbn-arxiv.mtx 32 f32 "spmm_teams(32, 8)"
ab copy_u_sum $D/soc-Slashdot0902.mtx 128 f32 "spmm_groups(64, 4)"
ab copy_u_sum $D/deezer-HU.mtx 32 f32 "spmm_teams(32, 8)"
ab copy_u_sum $D/molhiv.mtx 64 f32 "spmm_rows_full(2, 4)"
ab copy_u_sum $D/ogbn-arxiv.mtx 128 bf16 "spmm_groups_full(64, 4)"
ab copy_u_sum $D/cnr-2000.mtx 128 bf16 "spmm_groups_full(64, 4)"
ab copy_u_mean $D/ogbn-arxiv.mtx 128 f32 "spmm_teams8(64, 16)"
echo "t=$SECONDS" | tee -a $o
# part 2: bf16 variants (nr)
gf() { echo "optional(f); group(e, $1) -> (eo, ei); split(f, 128) -> (fo, fr); split(fr, 4) -> (fl, fv); reorder(eo, fo, fl, fv, ei); unroll(ei, $2); $3 bind(eo, warp); bind(fl, lane); vectorize(fv, 4); occupancy(eo, 2048)"; }
tf() { echo "optional(f); group(e, $1) -> (eo, ei); split(f, $((8 * $2))) -> (fo, fr); split(fr, 8) -> (fl, fv); reorder(eo, fo, fl, fv, ei); unroll(ei, $3); bind(eo, warp); team(eo, $2); bind(fl, lane); vectorize(fv, 8); occupancy(eo, 2048)"; }
for g in ogbn-arxiv cnr-2000; do for F in 128 256; do
  late && break 2
  T=$((F / 8)); [ $T -gt 32 ] && T=32
  line="$g F=$F bf16:"
  for cfg in "64 4" "32 4" "128 4" "128 8" "64 8" "64 2"; do set -- $cfg; line="$line gf($1,$2)=$(t nr copy_u_sum $D/$g.mtx $F bf16 "$(gf $1 $2)")"; done
  line="$line gfp(64,4)=$(t nr copy_u_sum $D/$g.mtx $F bf16 "$(gf 64 4 'prefetch(ei);')")"
  for cfg in "64 $T 4" "64 $((T / 2)) 4" "128 $T 4" "32 $T 4"; do set -- $cfg; line="$line tf($1,$2,$3)=$(t nr copy_u_sum $D/$g.mtx $F bf16 "$(tf $1 $2 $3)")"; done
  echo "$line" | tee -a $o
done; done
echo "t=$SECONDS" | tee -a $o
# part 3: kernels of one run (Nsight Compute)
if command -v ncu >/dev/null; then
  for g in ogbn-arxiv cnr-2000; do for dt in f32 bf16; do
    s="spmm_groups(64, 4)"; [ $dt = bf16 ] && s="spmm_groups_full(64, 4)"
    echo "== ncu copy_u_sum $dt $g F=128 [$s]" | tee -a $o
    timeout 100 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,lts__t_sector_hit_rate.pct --csv $B/gopc_nr run stdlib:copy_u_sum --graph $D/$g.mtx --F 128 --dtype $dt --schedule "$s" --gpu --warmup 0 --reps 1 2>/dev/null | grep -E 'gpu__time|dram__bytes|hit_rate' | awk -F'","' '{print $5, $(NF-2), $(NF-1), $NF}' | tail -12 | tee -a $o
  done; done
fi
echo "t=$SECONDS" | tee -a $o
