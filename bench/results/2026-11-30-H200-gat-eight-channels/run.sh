#!/usr/bin/env bash
# GAT's weighted sum (gat_attention's stage 3) with 8 channels a lane
# (split(f, 8), vectorize(fv, 8)) instead of 4: a lane computes its head's
# attention weight for twice the channels, so half as many lanes repeat
# it. gop.nn's schedules against the same with stage 3 at 8 channels, in
# one call, every variant checked once against the interpreter.
# Carry CARRY/gopc.xz, CARRY/layers.gop, CARRY/datasets/*.mtx.gz. There:
#   bash bench/results/2026-11-30-H200-gat-eight-channels/run.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { local g=$1; shift
      /tmp/gopc run "$c/layers.gop" --op gat_attention --graph "$g" --reorder none --reps 20 "$@" 2>&1 |
      grep -E "^  time|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
st3() { # T3 V: stage 3 at V channels a lane on teams of T3
  echo "stages(3); group(e, 32) -> (eo, ei); reorder(eo, h, f, ei); split(f, $2) -> (fo, fv); fuse(h, fo) -> (hf); split(hf, $1) -> (ho, hl); reorder(eo, ho, hl, fv, ei); unroll(ei, 4); bind(eo, warp); team(eo, $1); bind(hl, lane); vectorize(fv, $2)"
}
s12_groups='stages(1, 2); group(e, 32) -> (eo, ei); split(f, 8) -> (fo, fl); reorder(eo, fo, fl, ei); unroll(ei, 4); bind(eo, warp); team(eo, 8); bind(fl, lane)'
s12_teams='stages(1, 2); group(e, 32) -> (eo, ei); reorder(eo, f, ei); bind(eo, warp); team(eo, 4); bind(ei, lane); unroll(ei, 4)'
first=1
for g in "$c"/datasets/*.mtx.gz; do
  chk=(); [ $first = 1 ] && chk=(--check)
  first=0
  n=$(basename "$g" .mtx.gz)
  echo "== $n H=8 C=8"
  echo "gat_groups(32, 8, 16): $(t "$g" --H 8 --C 8 --schedule 'gat_groups(32, 8, 16)')"
  echo "stage 3 T3=8 V=8: $(t "$g" --H 8 --C 8 --schedule "$s12_groups; $(st3 8 8)" "${chk[@]}")"
  echo "stage 3 T3=16 V=8: $(t "$g" --H 8 --C 8 --schedule "$s12_groups; $(st3 16 8)")"
  echo "== $n H=1 C=40"
  echo "gat_teams(32, 4, 16): $(t "$g" --H 1 --C 40 --schedule 'gat_teams(32, 4, 16)')"
  echo "stage 3 T3=8 V=8: $(t "$g" --H 1 --C 40 --schedule "$s12_teams; $(st3 8 8)" "${chk[@]}")"
  echo "stage 3 T3=4 V=8 (5 of 8 lanes as 4+1): $(t "$g" --H 1 --C 40 --schedule "$s12_teams; $(st3 4 8)")"
done
echo "done in $SECONDS s"
