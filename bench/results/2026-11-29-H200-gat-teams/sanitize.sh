#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) over the lane-bound
# group kernels: edge softmax under softmax_teams and softmax_groups, GAT's
# attention under gat_teams, on cora (edges in CSR order), each also checked
# against the interpreter
c=$(dirname "$0"); xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc; G=/tmp/gopc
rc=0
run() {
  for tool in memcheck racecheck synccheck; do
    out=$(compute-sanitizer --tool $tool --error-exitcode 9 "$G" run "$@" --warmup 0 --reps 1 2>&1)
    r=$?
    echo "$tool rc=$r $* :: $(echo "$out" | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|check:" | tr '\n' ' ')"
    [ $r -eq 0 ] || rc=1
  done
}
for s in "softmax_teams(32, 4)" "softmax_teams(128, 32)" "softmax_teams(16, 2)" "softmax_groups(8)"; do
  run stdlib:edge_softmax --graph "$c/cora.mtx.gz" --reorder none --schedule "$s" --check
done
for hc in "1 40" "8 8"; do set -- $hc
  run examples/models/layers.gop --op gat_attention --graph "$c/cora.mtx.gz" --dim H=$1 --dim C=$2 --schedule "gat_teams(32, 4, 16)" --check
done
exit $rc
