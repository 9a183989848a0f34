#!/usr/bin/env bash
# tests/gpu/index64.sh CARRY_DIR OUT_DIR: 64-bit indices on the GPU machine
# (issue 19, docs/index64.md). Fits one 10-minute call.
#
# 1. Small stand-ins, every kernel of 64-bit indices: with GOP_INDEX64=1,
#    every representative operator x named schedule (a setting of 2s) and
#    the default schedule, packed with --index64, runs on cora (F = 16,
#    H = 2) and is checked against the interpreter (gopc run --check).
# 2. The refusals: a 64-bit pack without GOP_INDEX64=1, and a 32-bit pack
#    with it, are refused with a message naming the width (exit 1, no run).
# 3. The ring past 2^31 edges: ring:67108864:33 (|E| = 2,214,592,512) is
#    generated once and copy_u_sum (thread_vertex F=1, warp_vertex F=2,
#    thread_edge F=1: COO and atomics) and u_mul_e_sum (thread_vertex F=1;
#    spmm_vec4p F=4: the @prefetch shuffles of 64-bit edge ids) run on it;
#    every output is compared exactly with the closed form
#    (tests/gpu/index64.c).
# 4. |V| x F past 2^31 with 32-bit indices: copy_u_sum at F = 33 on
#    ring:67108864:2 (X and Y of 2.2 billion floats each), exact too.
# INDEX64_RUNNER=suite runs part 1 in one process instead of a gopc run
# per pack: the GPU suite's runner (CARRY_DIR/suite, the packs listed in
# index64/small/suite/list.txt) on INDEX64_GRAPHS (default cora; a name
# with a colon is a generated graph), at F = 16, each output checked
# against the interpreter (tests/gpu/reliability.sh does so).
# INDEX64_PART=1 (parts 1 and 2), 3 or 4 runs one part; INDEX64_RING
# overrides part 3's ring (e.g. ring:1000000:40 for a quick try),
# INDEX64_DEVICE=--interp is a dry run of parts 1 and 2 on a machine with
# no GPU (part 3 and 4's runner takes --interp with a small
# INDEX64_RING / INDEX64_WIDE_RING).
# Prepare CARRY_DIR with GOP_PREPARE_ONLY=index64 tools/gpu-prepare.sh.
# Writes OUT_DIR/index64.log; prints a summary; exits 1 if a check failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
carry=${1:?usage: tests/gpu/index64.sh CARRY_DIR OUT_DIR}
out=${2:?usage: tests/gpu/index64.sh CARRY_DIR OUT_DIR}
mkdir -p "$out"
carry=$(cd "$carry" && pwd)
gopc=$carry/gopc
runner=$carry/index64/index64
log=$out/index64.log
: >"$log"
part=${INDEX64_PART:-all}
dev=${INDEX64_DEVICE:---gpu}
ring=${INDEX64_RING:-ring:67108864:33}
wide_ring=${INDEX64_WIDE_RING:-ring:67108864:2}
interp=()
[ "$dev" = --interp ] && interp=(--interp)
pass=0
fail=0
failed=()

if [ "$part" = all ] || [ "$part" = 1 ]; then
  small=$carry/index64/small
  if [ "${INDEX64_RUNNER:-gopc}" = suite ]; then
    gs=()
    for g in ${INDEX64_GRAPHS:-cora}; do
      if [[ $g == *:* ]]; then gs+=("$g"); else gs+=("$carry/datasets/$g.mtx.gz"); fi
    done
    echo "== 1. 64-bit kernels (GOP_INDEX64=1) on ${INDEX64_GRAPHS:-cora}, one suite run, checked against the interpreter"
    GOP_INDEX64=1 "$carry/suite" run "$small/suite" "${gs[@]}" --F 16 --reps 0 \
      --csv "$out/index64-suite.csv" >"$log.one" 2>&1
    rc=$?
    cat "$log.one" >>"$log"
    grep -E '^(FAIL|#)' "$log.one" | head -40
    tail -1 "$log.one"
    n_ok=$(awk -F, 'NR > 1 && $(NF - 4) == 1' "$out/index64-suite.csv" 2>/dev/null | wc -l)
    n_bad=$(awk -F, 'NR > 1 && $(NF - 4) != 1' "$out/index64-suite.csv" 2>/dev/null | wc -l)
    pass=$((pass + n_ok))
    if [ "$rc" -ne 0 ] || [ "$n_bad" -ne 0 ] || [ "$n_ok" -eq 0 ]; then
      fail=$((fail + 1))
      failed+=("64-bit suite run (exit $rc, $n_bad cases wrong)")
    fi
  else
  echo "== 1. 64-bit kernels on cora (GOP_INDEX64=1), checked against the interpreter"
  while IFS='|' read -r pack op sched ext; do
    read -r -a extra <<<"$ext" # the operator's extents: --F 16 [--H 2]
    echo "### $op $sched ($pack)" >>"$log"
    if [ "$dev" = --interp ]; then
      # a dry run: no pack runs without a GPU; the operator as written
      cmd=("$gopc" run "stdlib:$op" --interp)
      [ "$sched" != default ] && cmd+=(--schedule "$sched")
    else
      cmd=("$gopc" run --pack "$small/$pack" --gpu --reps 3)
    fi
    if GOP_INDEX64=1 "${cmd[@]}" --graph "$carry/datasets/cora.mtx.gz" "${extra[@]}" \
         --check >"$log.one" 2>&1; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      failed+=("$op $sched")
      echo "FAIL $op $sched"
      sed 's/^/    /' "$log.one" | head -8
    fi
    cat "$log.one" >>"$log"
  done <"$small/list.txt"
  echo "  $pass passed, $fail failed"
  fi
  echo "  refused by the compiler: $(wc -l <"$small/refused.txt")"
  sed 's/^/    /' "$small/refused.txt" | head -3

  echo "== 2. refusals of a pack of the other width"
  refuse() { # EXPECTED-TEXT ENV... -- GOPC-ARGS...
    local want=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    if env "${envs[@]}" "$gopc" run "$@" >"$log.one" 2>&1; then
      echo "FAIL: ran, should have been refused: ${envs[*]} gopc run $*"
      fail=$((fail + 1))
      failed+=("refusal $want")
    elif grep -q "$want" "$log.one"; then
      echo "  refused as it should: $(grep -m1 error: "$log.one" | cut -c1-150)"
      pass=$((pass + 1))
    else
      echo "FAIL: refused without saying '$want':"
      sed 's/^/    /' "$log.one" | head -5
      fail=$((fail + 1))
      failed+=("refusal $want")
    fi
    cat "$log.one" >>"$log"
  }
  first=$(head -1 "$small/list.txt" | cut -d'|' -f1)
  refuse "compiled for 64-bit indices" GOP_INDEX64=0 -- --pack "$small/$first" \
    --graph "$carry/datasets/cora.mtx.gz" --F 16
  refuse "compiled for 32-bit indices" GOP_INDEX64=1 -- --pack "$carry/index64/narrow.pack" \
    --graph "$carry/datasets/cora.mtx.gz" --F 16
fi

big=$carry/index64/big
if [ "$part" = all ] || [ "$part" = 3 ]; then
  echo "== 3. $ring: past 2^31 edges, 64-bit kernels, checked against the closed form"
  mapfile -t packs < <(sed "s|^|$big/|" "$big/list.txt")
  # the ring needs 64-bit indices by its size; a small INDEX64_RING needs
  # GOP_INDEX64=1 to take these packs
  GOP_INDEX64=1 "$runner" "${interp[@]}" "$ring" "${packs[@]}" 2>&1 | tee "$log.one"
  rc=${PIPESTATUS[0]}
  cat "$log.one" >>"$log"
  n_ok=$(grep -c '^PASS' "$log.one")
  pass=$((pass + n_ok))
  if [ "$rc" -ne 0 ] || [ "$n_ok" -ne "${#packs[@]}" ]; then
    fail=$((fail + 1))
    failed+=("$ring (rc $rc)")
  fi
fi

if [ "$part" = all ] || [ "$part" = 4 ]; then
  echo "== 4. $wide_ring at F = 33: |V| x F past 2^31 with 32-bit indices"
  GOP_INDEX64=0 "$runner" "${interp[@]}" "$wide_ring" "$big/wide_rows-thread_vertex.pack:33" \
    "$big/wide_rows-warp_vertex.pack:33" 2>&1 | tee "$log.one"
  rc=${PIPESTATUS[0]}
  cat "$log.one" >>"$log"
  n_ok=$(grep -c '^PASS' "$log.one")
  pass=$((pass + n_ok))
  if [ "$rc" -ne 0 ] || [ "$n_ok" -ne 2 ]; then
    fail=$((fail + 1))
    failed+=("$wide_ring F=33 (rc $rc)")
  fi
fi

rm -f "$log.one"
echo "index64: $pass checks passed, $fail failed"
for f in "${failed[@]}"; do echo "  failed: $f"; done
[ "$fail" -eq 0 ]
