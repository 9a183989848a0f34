#!/usr/bin/env bash
# gat_attention under gat_groups and gat_teams on the GPU (gopc run, checked).
# Carry: .carry/gat with gopc.xz (strip + xz of build-static/gopc) and
# ogbn-arxiv, pubmed, blogcatalog .mtx.gz; run there: bash .carry/gat/run.sh
c=$(dirname "$0"); xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc; G=/tmp/gopc
for g in ogbn-arxiv pubmed blogcatalog; do
  for hc in "1 40" "8 8"; do
    set -- $hc
    T3=$([ $1 = 1 ] && echo 16 || echo 16)
    T1=$([ $1 = 1 ] && echo 1 || echo 8)
    for s in "gat_groups(32, $T1, $T3)" "gat_teams(32, 4, $T3)" "gat_teams(64, 8, $T3)" "gat_teams(16, 4, $T3)" "gat_teams(32, 8, $T3)"; do
      t=$("$G" run examples/models/layers.gop --op gat_attention --graph "$c/$g.mtx.gz" --dim H=$1 --dim C=$2 --schedule "$s" --check --reps 20 2>&1 | grep -E "median|check|error" | tr '\n' ' ')
      echo "$g H=$1 C=$2 $s: $t"
    done
  done
done
