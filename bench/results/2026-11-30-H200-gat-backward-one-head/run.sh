#!/usr/bin/env bash
# GAT's joint backward with one head (the output layer): gop.nn maps only
# the pass by source (gat_grad_sources: dZ) and leaves the in-edge passes
# (the max and sum recomputed, dAd with dAs scattered) to the default
# mapping. Against it, the in-edge passes with a group's edges on the
# lanes of a team (gat_teams' forward shape: sums and max reduced across
# the team by shuffles, dAs atomic per edge). One call, the new mapping
# checked against the interpreter on the first graph.
# Carry CARRY/gopc.xz, CARRY/layers.gop, CARRY/datasets/*.mtx.gz. There:
#   bash bench/results/2026-11-30-H200-gat-backward-one-head/run.sh CARRY
c=$1
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { local g=$1; shift
      /tmp/gopc run "$c/layers.gop" --op gat_attention --grad Z,As,Ad --graph "$g" --reorder none \
        --reps 20 "$@" 2>&1 | grep -E "^  time|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
teams() { # T TF
  echo "stages(1, 2); group(e, 32) -> (eo, ei); reorder(eo, f, ei); bind(eo, warp); team(eo, $1); bind(ei, lane); unroll(ei, 4); stages(3); bind(v, warp); team(v, $1); bind(h, lane); stages(4); group(e, 32) -> (eo, ei); reorder(eo, h, ei); split(f, 4) -> (fo, fv); bind(eo, warp); team(eo, $1); bind(ei, lane); vectorize(fv, 4); gat_grad_sources($2)"
}
first=1
for g in "$c"/datasets/*.mtx.gz; do
  chk=(); [ $first = 1 ] && chk=(--check)
  first=0
  n=$(basename "$g" .mtx.gz)
  for C in 40 16; do
    TF=1; while [ $TF -lt $(( (C + 3) / 4 )) ] && [ $TF -lt 32 ]; do TF=$((TF * 2)); done
    echo "== $n H=1 C=$C"
    echo "gat_grad_sources($TF): $(t "$g" --H 1 --C $C --schedule "gat_grad_sources($TF)")"
    for T in 4 8 32; do
      echo "teams T=$T: $(t "$g" --H 1 --C $C --schedule "$(teams $T $TF)" "${chk[@]}")"
    done
  done
done
echo "done in $SECONDS s"
