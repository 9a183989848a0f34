#!/usr/bin/env bash
# The GPU suite, run on the GPU machine (it has gcc and the CUDA driver, no
# LLVM): the driver layer's own checks, gopc compiling and running on the
# GPU, then every stdlib op x named schedule x setting x width on every
# carried graph, each output checked against the reference interpreter,
# and timed. Prepare its inputs here first with tools/gpu-prepare.sh.
# Usage: tests/gpu/run.sh CARRY_DIR OUT_DIR [--F "16 32 64 128 256"] [--reps N]
# The suite stops starting cases after GOP_SUITE_BUDGET_S seconds (420 by
# default, to end inside one 10-minute device call) and counts the rest;
# it runs on the carried graphs among GOP_SUITE_GRAPHS (default: cora
# citeseer pubmed blogcatalog molhiv cnr-2000).
set -uo pipefail
cd "$(dirname "$0")/../.."
carry=${1:?usage: tests/gpu/run.sh CARRY_DIR OUT_DIR}
out=${2:?usage: tests/gpu/run.sh CARRY_DIR OUT_DIR}
shift 2
widths="16 32 64 128 256"
reps=10
while [ $# -gt 0 ]; do
  case "$1" in
    --F) widths=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
bash tools/gpu-unpack.sh "$carry" # tools/gpu-prepare.sh may have compressed gopc
status=0
echo "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(date -u +%Y-%m-%dT%H:%MZ)"

echo "== the CUDA driver layer (tests/gpu/test_driver)"
bash tests/gpu/build_driver_test.sh /tmp/gop-driver --run > "$out/driver.log" 2>&1 || status=1
tail -3 "$out/driver.log"

echo "== gopc on the GPU"
"$carry/gopc" run stdlib:u_mul_e_sum --graph "$carry/datasets/cnr-2000.mtx.gz" --F 64 --check \
  || status=1
"$carry/gopc" run stdlib:copy_u_max --graph rmat:18:16 --F 128 --schedule 'gar()' --check \
  || status=1
"$carry/gopc" pack stdlib:edge_softmax -o /tmp/softmax.pack && \
  "$carry/gopc" run --pack /tmp/softmax.pack --graph grid:512x512 --check || status=1

echo "== every op x schedule x width, checked against the interpreter"
graphs=()
for g in ${GOP_SUITE_GRAPHS:-cora citeseer pubmed blogcatalog molhiv cnr-2000}; do
  [ -f "$carry/datasets/$g.mtx.gz" ] && graphs+=("$carry/datasets/$g.mtx.gz")
done
"$carry/suite" run "$carry/packs" "${graphs[@]}" --F "$widths" --reps "$reps" \
  --csv "$out/suite.csv" --budget-s "${GOP_SUITE_BUDGET_S:-420}" > "$out/suite.log" 2>&1 || status=1
grep -E '^(FAIL|#)' "$out/suite.log" | head -40
tail -1 "$out/suite.log"
exit $status
