#!/usr/bin/env bash
# tests/gpu/models.sh: the models' device-resident forward (models/models.c,
# issue 14) on the GPU machine.
#
#   1. check: each model (gcn, gin, gat, gat with --gat-separate, sage-sum,
#      sage-mean, sage-max) on each CHECK graph, `gopc model --gpu --check
#      --reps 20`: the forward with every tensor on the device must agree
#      with the reference interpreter (relative L2 < 1e-4) and print its
#      time (median of 20 whole forwards between CUDA events);
#   2. PyG: bench/models.sh on the PYG graphs: the same weights and inputs
#      in PyTorch Geometric, outputs compared (relative L2 < 1e-4), both
#      times tabled (both now whole forwards between CUDA events).
#
# Here (no GPU needed):  GOP_PREPARE_ONLY=models tools/gpu-prepare.sh
#   (a static gopc and the graphs in .carry/gpu, a few tens of MB)
# There:                 bash tests/gpu/models.sh .carry/gpu OUT [CHECK [PYG]]
#   CHECK default cora,pubmed (the interpreter's half takes minutes on
#   ogbn-arxiv); PYG default cora,pubmed,ogbn-arxiv; "-" skips a part.
# Writes OUT/models_check.md (the table), OUT/check/*.log (each gopc run),
# OUT/pyg/ (bench/models.sh's log and work) and prints the table. Exit
# status 0 when every case ran on the GPU and agreed.
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/models.sh CARRY OUT [CHECK_GRAPHS [PYG_GRAPHS]]" 2 "$@"
check_graphs=${3:-cora,pubmed}
pyg_graphs=${4:-cora,pubmed,ogbn-arxiv}
gpu_out -a "$2" check
gpu_carry -a "$1"
status=0
table=$out/models_check.md
{
  echo "# gopc model --gpu --check --reps 20"
  echo
  echo "$(gpu_name), $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo "| graph | model | result | time (ms) | min (ms) | steps | wall (s) |"
  echo "|---|---|---|---:|---:|---:|---:|"
} >"$table"
if [ "$check_graphs" != - ]; then
  for g in ${check_graphs//,/ }; do
    graph=$carry/datasets/$g.mtx.gz
    for m in gcn gin gat gat-sep sage-sum sage-mean sage-max; do
      args=(model "${m%-sep}" --graph "$graph" --gpu --check --reps 20)
      [ "$m" = gat-sep ] && args+=(--gat-separate)
      log=$out/check/$g-$m.log
      timeout 300 "$carry/gopc" "${args[@]}" >"$log" 2>&1
      rc=$?
      t=$(sed -n 's/^  time \([0-9.]*\) ms (median of \([0-9]*\) whole forwards.*: \([0-9]*\) steps, no host copies; min \([0-9.]*\) ms)$/\1 | \4 | \3/p' "$log")
      wall=$(sed -n 's/^  wall \([0-9.]*\) s.*/\1/p' "$log")
      if [ $rc -eq 0 ] && grep -q "check: agrees with the interpreter (relative" "$log" && [ -n "$t" ]; then
        result="agrees ($(sed -n 's/.*(relative L2 \([^,)]*\).*/L2 \1/p' "$log"))"
      else
        result="FAILED (exit $rc)"
        status=1
        echo "== $g $m failed: gopc ${args[*]}" >&2
        tail -15 "$log" >&2
      fi
      echo "| $g | $m | $result | ${t:-- | - | -} | ${wall:--} |" >>"$table"
    done
  done
fi
cat "$table"
if [ "$pyg_graphs" != - ]; then
  echo "== against PyG: bench/models.sh on $pyg_graphs"
  bash bench/models.sh "$carry" "$out/pyg" "$pyg_graphs" || status=1
fi
echo "== tests/gpu/models.sh: $([ $status -eq 0 ] && echo ok || echo FAILED)"
exit $status
