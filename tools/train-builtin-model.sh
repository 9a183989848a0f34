#!/usr/bin/env bash
# tools/train-builtin-model.sh: remakes tune/builtin.model, the learned
# predictor built into gop (the untuned schedule choice), from the
# benchmark measurements recorded under bench/results/.
#
#   bash tools/train-builtin-model.sh GOPC [DATASETS]
#
# GOPC: a gopc built with libxgboost loadable (tools/setup.sh installs
# it); DATASETS: ../shared/datasets by default (each graph is read for its
# signature). Training is deterministic (one thread, seed 0): the same
# measurements give the same file. Add a run by adding its CSV below.
set -euo pipefail
gopc=$1
datasets=${2:-$(dirname "$0")/../../shared/datasets}
root=$(cd "$(dirname "$0")/.." && pwd)
results=$root/bench/results
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# CSV, GPU name, compute capability
runs=(
  "2026-11-27-H100-aggregation-groups64/raw-call5/gop-dst.csv.xz|NVIDIA H100 80GB HBM3|90"
  "2026-11-27-H100-aggregation-groups64/raw-call6/gop-dst.csv.xz|NVIDIA H100 80GB HBM3|90"
  "2026-11-28-H200-sddmm-rows/gop_bench.csv|NVIDIA H200|90"
  # generated graphs: R-MAT of four sizes and skews, two meshes, two rings
  "2026-11-28-H200-choice-builtin-predictor/call1/gop_bench.csv.xz|NVIDIA H200|90"
  # power-law and community graphs, a small mesh, a small dense R-MAT
  "2026-11-28-H200-choice-builtin-predictor/call3/gop_bench.csv.xz|NVIDIA H200|90"
  # graphs of 12-65M edges whose feature rows do not fit in L2 (R-MAT,
  # power-law, community, a mesh), at F = 64 and 128
  "2026-11-29-H200-choice-large-graphs/call1/gop_bench.csv.xz|NVIDIA H200|90"
  "2026-11-29-H200-choice-large-graphs/call2/gop_bench.csv.xz|NVIDIA H200|90"
  # three more of those families (R-MAT 21/24, power-law, community), first
  # measured held out: bench/results/2026-11-29-H200-choice-held-out-large
  "2026-11-29-H200-choice-held-out-large/call1/gop_bench.csv.xz|NVIDIA H200|90"
)
i=0
for r in "${runs[@]}"; do
  IFS='|' read -r csv gpu cc <<<"$r"
  i=$((i + 1))
  case $csv in
    *.xz) xz -dc "$results/$csv" >"$tmp/$i.csv" ;;
    *) cp "$results/$csv" "$tmp/$i.csv" ;;
  esac
  "$gopc" tune --import-csv "$tmp/$i.csv" --gpu "$gpu" --cc "$cc" --datasets "$datasets" \
    --db "$tmp/all.db" | sed "s|$tmp/$i.csv|$csv|"
done
"$gopc" tune --train --db "$tmp/all.db"
cp "$tmp/all.db.xgb" "$root/tune/builtin.model"
echo "wrote tune/builtin.model ($(wc -c <"$root/tune/builtin.model") bytes)"
