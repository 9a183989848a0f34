#!/usr/bin/env bash
# The GPU suite, run on the GPU machine (it has gcc and the CUDA driver, no
# LLVM): the driver layer's own checks, gopc compiling and running on the
# GPU, then two tiers of cases, each output checked against the reference
# interpreter and timed:
#   rep  the representative operators (docs/operators.md) x every named
#        schedule x 3 settings x every width on the larger graphs
#        (GOP_SUITE_GRAPHS, default: cora citeseer pubmed blogcatalog
#        molhiv cnr-2000; a name with a colon is a generated graph,
#        rmat:14:8)
#   all  every stdlib operator x every named schedule x 3 settings x every
#        width on the small graphs (GOP_SUITE_ALL_GRAPHS, default: cora
#        citeseer pubmed)
# GOP_SUITE_TIERS chooses the tiers (default "rep all"), so that the
# matrix can be split over device calls. Each tier stops starting cases
# after GOP_SUITE_BUDGET_S seconds (540 by default) and counts the rest as
# not run; GOP_SUITE_SKIP lists CSVs of earlier calls whose passed cases
# are skipped (a matrix larger than one call, run over several);
# GOP_SUITE_PRELUDE=0 skips the driver and gopc checks before
# them. Prepare the inputs here first with tools/gpu-prepare.sh.
# Usage: tests/gpu/run.sh CARRY_DIR OUT_DIR [--F "16 32 64 128 256"] [--reps N]
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/run.sh CARRY_DIR OUT_DIR" 2 "$@"
carry=$1
out=$2
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
gpu_out "$out"
gpu_carry "$carry"
status=0
echo "== $(gpu_name), $(date -u +%Y-%m-%dT%H:%MZ)"

if [ "${GOP_SUITE_PRELUDE:-1}" = 1 ]; then # 0: only the tiers (a second call)
echo "== the CUDA driver layer (tests/gpu/test_driver)"
# a kernel that spills at its occupancy floor, where the carry has one
[ -f "$carry/spill.ptx" ] && export GOP_SPILL_PTX=$carry/spill.ptx:copy_e_sum_s1
bash tests/gpu/build_driver_test.sh /tmp/gop-driver --run > "$out/driver.log" 2>&1 || status=1
tail -3 "$out/driver.log"

echo "== gopc on the GPU"
"$carry/gopc" run stdlib:u_mul_e_sum --graph "$carry/datasets/cnr-2000.mtx.gz" --F 64 --check \
  || status=1
"$carry/gopc" run stdlib:copy_u_max --graph rmat:18:16 --F 128 --schedule 'gar()' --check \
  || status=1
"$carry/gopc" pack stdlib:edge_softmax -o /tmp/softmax.pack && \
  "$carry/gopc" run --pack /tmp/softmax.pack --graph grid:512x512 --check || status=1
fi

suite() { # tier packs graph-names...
  local tier=$1 packs=$2 graphs=()
  shift 2
  for g in "$@"; do
    if [[ $g == *:* ]]; then
      graphs+=("$g") # a generated graph (rmat:14:8, grid:256x256)
    elif [ -f "$carry/datasets/$g.mtx.gz" ]; then
      graphs+=("$carry/datasets/$g.mtx.gz")
    fi
  done
  echo "== tier $tier: $(grep -vc REFUSED "$packs/list.txt") kernel packs x width on ${graphs[*]##*/}"
  local skip=()
  for f in ${GOP_SUITE_SKIP:-}; do skip+=(--skip-passed "$f"); done
  "$carry/suite" run "$packs" "${graphs[@]}" --F "$widths" --reps "$reps" "${skip[@]}" \
    --csv "$out/suite-$tier.csv" --budget-s "${GOP_SUITE_BUDGET_S:-540}" > "$out/suite-$tier.log" 2>&1 \
    || status=1
  grep -E '^(FAIL|#)' "$out/suite-$tier.log" | head -60
  tail -1 "$out/suite-$tier.log"
}
for tier in ${GOP_SUITE_TIERS:-rep all}; do
  case $tier in
    rep) suite rep "$carry/packs" ${GOP_SUITE_GRAPHS:-cora citeseer pubmed blogcatalog molhiv cnr-2000} ;;
    all) suite all "$carry/packs-all" ${GOP_SUITE_ALL_GRAPHS:-cora citeseer pubmed} ;;
    *) echo "unknown tier $tier (rep, all)" >&2; status=1 ;;
  esac
done
exit $status
