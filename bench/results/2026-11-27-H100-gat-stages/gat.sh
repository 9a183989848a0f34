#!/bin/bash
# GAT attention forward and joint backward: schedules per stage (stages())
bash tools/gpu-unpack.sh .carry/g2
g=.carry/g2/gopc
L=examples/models/layers.gop
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
s12() { echo "stages(1, 2); group(e, $1) -> (eo, ei); split(f, $2) -> (fo, fl); reorder(eo, fo, fl, ei); unroll(ei, 4); bind(eo, warp); team(eo, $2); bind(fl, lane)"; }
s3f() { echo "stages(3); fuse(h, f) -> (f); group(e, $1) -> (eo, ei); split(f, $2) -> (fo, fl); reorder(eo, fo, fl, ei); unroll(ei, 4); bind(eo, warp); team(eo, $2); bind(fl, lane)"; }
s3b() { echo "stages(3); group(e, $1) -> (eo, ei); reorder(eo, h, ei); bind(eo, warp); team(eo, $2); bind(h, lane)"; }
s4b() { echo "stages(4); reorder(v, h, e); bind(v, warp); team(v, $1); bind(h, lane)"; }
run() { # graph H C grad|- schedule [check]
  local gr=$1 H=$2 C=$3 gd=$4 s=$5 extra=()
  [ "$gd" = grad ] && extra+=(--grad Z,As,Ad)
  [ -n "$6" ] && extra+=(--check)
  out=$($g run $L --op gat_attention --graph .carry/g2/datasets/$gr.mtx.gz --H $H --C $C "${extra[@]}" ${s:+--schedule "$s"} --gpu --warmup 5 --reps 30 2>&1)
  t=$(echo "$out" | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1)
  ck=$(echo "$out" | grep -E "check:|error" | head -2 | tr '\n' ' ')
  echo "$gr H=$H C=$C $gd [${s:-default}]: $t $ck" | tee -a $OUT/gat.txt
}
fw() { run $1 $2 $3 fwd "$(s12 $4 $5); $(s3f $4 $6)" $7; }
bw() { run $1 $2 $3 grad "$(s12 $4 $5); $(s3b $4 $5); $(s4b $5)" $6; }
SECONDS=0
# correctness on pubmed (against the interpreter), the full schedules
fw pubmed 8 8 32 8 32 1; bw pubmed 8 8 32 8 1
fw pubmed 1 8 32 1 8 1; bw pubmed 1 8 32 1 1
echo "t=$SECONDS s"
gr=ogbn-arxiv
run $gr 8 8 fwd ""; echo "t=$SECONDS s"
fw $gr 8 8 32 8 32; fw $gr 8 8 64 8 32; fw $gr 8 8 32 8 16; fw $gr 8 8 16 8 32
run $gr 8 8 grad ""
bw $gr 8 8 32 8; bw $gr 8 8 64 8
run $gr 8 8 grad "$(s12 32 8)"
run $gr 8 8 grad "$(s12 32 8); $(s4b 8)"
echo "t=$SECONDS s"
run $gr 1 8 fwd ""; fw $gr 1 8 32 1 8; fw $gr 1 8 64 1 8
run $gr 1 8 grad ""; bw $gr 1 8 32 1; bw $gr 1 8 64 1
echo "t=$SECONDS s"
