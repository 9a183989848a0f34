#!/usr/bin/env bash
# tests/ptxas/run.sh SUITE_DIR GOPC: the CI check of code generation.
#
# Every stdlib operator x every named schedule of stdlib/schedules*.gop x a
# few parameter settings (and the default schedule) is compiled to PTX with
# `gopc emit --stage ptx` for sm_80 and sm_90; and a few operators in bf16,
# f16 and f64 (gopc emit --dtype) x every schedule for sm_90, where code
# generation may refuse on purpose (an atomic into a 16-bit tensor, a
# transcendental in f64: counted as refused); and the representative
# operators x every schedule (its first setting) compiled for 64-bit
# indices (--index64, docs/index64.md), alternately for sm_80 and sm_90
# (an operator's schedules alternate, so each target sees each), schedules
# over neighbour groups included (int64 tables); and the operators that read
# an edge tensor through in-edge ids x every schedule compiled for edge
# ids in CSR order (--csr-edges, docs/gpu-ir.md). Each PTX is assembled by
# the CUDA toolkit's ptxas -v. A combination the scheduler refuses (the
# schedule does not fit the operator) is listed and skipped; anything else
# must compile, assemble, and not spill, unless its schedule asked for an
# occupancy (occupancy(loop, N), passes/occupancy.c: fewer registers a
# thread on purpose; its spills are listed as `asked`). A kernel that
# spills at the occupancy floor gop chose is assembled again with half the
# floor, up to three times, as the runtime loads it (runtime/module.c;
# listed with `floor/2`, `floor/4` ...), and must then not spill. Registers, spills and shared memory
# of every kernel are printed as a table, with gopc's compile times.
#
# ptxas is $GOP_PTXAS, else /usr/local/cuda/bin/ptxas, else the one on PATH.
# CI has the toolkit, so a missing ptxas fails the test, unless
# GOP_SKIP_PTXAS=1 says this machine has none on purpose.
set -uo pipefail

suite_dir=$(cd "$1" && pwd)
gopc=$2
src=${GOP_SOURCE_DIR:-$(cd "$suite_dir/../.." && pwd)}
targets=(sm_80 sm_90)

source "$suite_dir/../golden.sh"
golden_find_ptxas
case $? in
  1) exit 0 ;;
  2) exit 1 ;;
esac
echo "ptxas: $ptxas ($("$ptxas" --version | tail -1))"

work=$(mktemp -d /tmp/gop-ptxas.XXXXXX)
trap 'rm -rf "$work"' EXIT

# ---- the matrix ----
# The representative operators (every edge_op, gather, placement and
# broadcast form of the generated table, and every hand-written one):
# the whole table's 86 operators x schedules would take CI's two cores
# many minutes for no new kind of kernel.
mapfile -t ops < <("$gopc" ops --representative | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p')
if [[ ${#ops[@]} -eq 0 ]]; then
  echo "FAIL: \`gopc ops\` listed no operator" >&2
  exit 1
fi
# `schedule NAME(P1, P2)` -> NAME and its parameter count
schedules=("")  # "": the default schedule
# The row-based SDDMM schedules (issue 37) at one setting, all 4s: their
# parameters change only a team's and a group's size, constants of one
# kernel shape (tests/unit/test_sddmm compiles two settings of each), and
# CI's time is short. (At 2 lanes a row, copy_e_sum's 64-bit kernel
# spills 16 bytes at sm_90: LLVM unrolls its edge loop; the tuner
# measures such points, and sddmm_rows is not an aggregation's schedule.)
one_setting=" sddmm_rows sddmm_rows_reg sddmm_groups sddmm_groups_reg "
while read -r name params; do
  n=0
  [[ -n $params ]] && n=$(awk -F, '{print NF}' <<<"$params")
  if [[ $n -gt 0 && $one_setting == *" $name "* ]]; then
    args=4
    for ((i = 1; i < n; i++)); do args+=", 4"; done
    schedules+=("$name($args)")
    continue
  fi
  case $n in
  0) schedules+=("$name()") ;;
  *)
    # all 1s, all 2s, first 4 and the rest 1, first 1 and the rest 4
    for set in 1 2 4:1 1:4; do
      first=${set%%:*} rest=${set##*:}
      args=$first
      for ((i = 1; i < n; i++)); do args+=", $rest"; done
      # one-parameter schedules would get (1) twice
      [[ " ${schedules[*]} " == *" $name($args) "* ]] || schedules+=("$name($args)")
    done
    ;;
  esac
done < <(sed -n 's/^schedule \([A-Za-z_][A-Za-z0-9_]*\)(\([^)]*\)).*/\1 \2/p' \
           "$src"/stdlib/schedules*.gop)
# deterministic() over neighbour groups lowers to a segmented reduction:
# a temporary on the group table's rows and a group_rows stage
# (passes/segment.c), kernels no named schedule makes; and interleaving in
# more than two classes (passes/interleave.c), which no named schedule uses
schedules+=("deterministic(); gnnadvisor(4, 32)" "deterministic(); gnnadvisor_mgg(3, 40, 2)"
            "gnnadvisor(4, 32); interleave(eo, 4, 2)")

# One combination: writes $work/N.status (ok, refused, FAIL) and N.rows.
run_one() {
  local n=$1 op=$2 sched=$3 target=$4 dtype=${5:-} wide=${6:-} csr=${7:-}
  local base=$work/$n
  local label="$op ${sched:-default} $target${dtype:+ $dtype}${wide:+ i64}${csr:+ csr}"
  local sargs=()
  [[ -n $sched ]] && sargs=(--schedule "$sched")
  [[ -n $dtype ]] && sargs+=(--dtype "$dtype")
  [[ -n $wide ]] && sargs+=(--index64)
  [[ -n $csr ]] && sargs+=(--csr-edges)
  # The lowered IR (one more gopc run) is asked for only where its answer
  # matters: whether a combination that did not compile was refused by
  # the scheduler, and whether a kernel that spills asked for its
  # occupancy (asking it of every combination cost 6% of the matrix).
  lowered_ir() {
    "$gopc" emit "stdlib:$op" --stage lowered "${sargs[@]}" --target "$target" \
      >"$base.ir" 2>"$base.irerr"
  }
  if ! "$gopc" emit "stdlib:$op" --stage ptx "${sargs[@]}" --target "$target" --time \
       >"$base.ptx" 2>"$base.err"; then
    if ! lowered_ir; then
      echo refused >"$base.status"
      echo "refused  $label: $(grep -m1 'error:' "$base.irerr" | sed 's/.*error: //')" >"$base.rows"
      return
    fi
    if [[ -n $dtype ]] && grep -q "a 16-bit atomic would round\|is f32 only\|accumulate in f32 shared memory" "$base.err"; then
      echo refused >"$base.status"
      echo "refused  $label: $(grep -m1 'error:' "$base.err" | sed 's/.*error: //')" >"$base.rows"
      return
    fi
    echo FAIL >"$base.status"
    { echo "FAIL     $label: gopc could not compile it"; sed 's/^/    /' "$base.err"; } >"$base.rows"
    return
  fi
  local times
  times=$(sed -n 's/^compile times (ms): //p' "$base.err")
  if ! "$ptxas" -v -arch="$target" -o /dev/null "$base.ptx" >"$base.log" 2>&1; then
    echo FAIL >"$base.status"
    { echo "FAIL     $label: ptxas refused the PTX"; sed 's/^/    /' "$base.log"; } >"$base.rows"
    return
  fi
  # ptxas -v: "Compiling entry function 'K' for 'sm_90'", then
  # "N bytes stack frame, N bytes spill stores, N bytes spill loads" and
  # "Used N registers, [N bytes smem, ]N bytes cmem[0]"
  local asked=0 lowered=0 spilt
  # a kernel that spills at gop's occupancy floor is loaded with half the
  # floor, up to three times (runtime/module.c, jit_unspilled): do the same,
  # unless its schedule asked for an occupancy
  while [[ $lowered -lt 3 ]]; do
    spilt=$(awk '/Compiling entry function/ { k = $0; sub(/.*function .\047?/, "", k); sub(/\047.*/, "", k) }
                 /bytes stack frame/ { if ($1 + $5 + $9 > 0) printf " %s ", k }' "$base.log")
    [[ -z $spilt ]] && break
    if [[ $lowered -eq 0 ]]; then
      lowered_ir || { echo FAIL >"$base.status"; echo "FAIL     $label: compiled, yet its lowered IR failed" >"$base.rows"; return; }
      grep -q "@occupancy(" "$base.ir" && { asked=1; break; }
    fi
    awk -v ks="$spilt" '
      /\.entry / { k = $0; sub(/.*\.entry /, "", k); sub(/\(.*/, "", k); cur = index(ks, " " k " ") > 0 }
      cur && /^\.minnctapersm/ { if ($2 > 1) $0 = ".minnctapersm " int($2 / 2); cur = 0 }
      { print }' "$base.ptx" >"$base.ptx2" && mv "$base.ptx2" "$base.ptx"
    "$ptxas" -v -arch="$target" -o /dev/null "$base.ptx" >"$base.log" 2>&1 || break
    lowered=$((lowered + 1))
  done
  [[ $lowered -gt 0 ]] && label="$label floor/$((1 << lowered))"
  awk -v label="$label" -v times="$times" -v asked="$asked" '
    /Compiling entry function/ { k = $0; sub(/.*function .\047?/, "", k); sub(/\047.*/, "", k) }
    /bytes stack frame/ { stack = $1; spst = $5; spld = $9 }
    /Used [0-9]+ registers/ {
      regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
      smem = 0
      if (match($0, /[0-9]+ bytes smem/)) { smem = substr($0, RSTART, RLENGTH); sub(/ .*/, "", smem) }
      spilt = (stack + spst + spld > 0)
      bad = spilt && !asked
      printf "%s %-44s %-22s %3d regs  stack %d  spill %d/%d  smem %d\n",
             bad ? "FAIL    " : spilt ? "asked   " : "ok      ", label, k, regs, stack,
             spst, spld, smem
      if (bad) failed = 1
      n++
    }
    END {
      if (n == 0) { printf "FAIL     %s: no kernel in the ptxas output\n", label; failed = 1 }
      printf "time     %s: %s\n", label, times
      exit failed
    }' "$base.log" >"$base.rows"
  if [[ $? -eq 0 ]]; then echo ok >"$base.status"; else echo FAIL >"$base.status"; fi
}

jobs=$(nproc 2>/dev/null || echo 4)
n=0
for op in "${ops[@]}"; do
  for sched in "${schedules[@]}"; do
    for target in "${targets[@]}"; do
      n=$((n + 1))
      run_one "$n" "$op" "$sched" "$target" &
      while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
    done
  done
done
# the dtypes (issue 19): a weighted sum, a mean, a max (atomics) and a
# multi-stage softmax (exp: refused in f64)
# one setting of each schedule (its first), to keep CI's time
dschedules=()
for sched in "${schedules[@]}"; do
  [[ " ${dschedules[*]} " == *" ${sched%%(*}("* ]] || dschedules+=("$sched")
done
for dtype in bf16 f16 f64; do
  for op in u_mul_e_sum copy_u_mean copy_u_max edge_softmax; do
    for sched in "${dschedules[@]}"; do
      n=$((n + 1))
      run_one "$n" "$op" "$sched" sm_90 "$dtype" &
      while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
    done
  done
done
# 64-bit indices (docs/index64.md): every representative operator x the
# first setting of each schedule, once each, for sm_80 and sm_90 in turn
# (both targets see every schedule across the operators; CI's time)
nwide=0
for op in "${ops[@]}"; do
  for sched in "" "${dschedules[@]}"; do
    n=$((n + 1))
    nwide=$((nwide + 1))
    run_one "$n" "$op" "$sched" "${targets[nwide % 2]}" "" i64 &
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
  done
done
# Edge ids in CSR order (--csr-edges, docs/gpu-ir.md): the operators that
# read an edge tensor through in-edge ids x the first setting of each
# schedule, sm_80 and sm_90 in turn
ncsr=0
for op in u_mul_e_sum u_mul_e_min_full u_div_e_mean_heads; do
  for sched in "" "${dschedules[@]}"; do
    n=$((n + 1))
    ncsr=$((ncsr + 1))
    run_one "$n" "$op" "$sched" "${targets[ncsr % 2]}" "" "" csr &
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
  done
done
wait

# ---- the report ----
ok=0 refused=0 failed=0
for ((i = 1; i <= n; i++)); do
  grep -v '^time ' "$work/$i.rows"
  case $(cat "$work/$i.status") in
  ok) ok=$((ok + 1)) ;;
  refused) refused=$((refused + 1)) ;;
  *) failed=$((failed + 1)) ;;
  esac
done
# compile time per step, mean over the programs compiled
# "schedule 0.10, lower 0.01, LLVM IR 1.36, O3 5.95, PTX 5.55"
cat "$work"/*.rows | sed -n 's/^time [^:]*: //p' | awk '
  NF {
    k = split($0, parts, ", ")
    for (i = 1; i <= k; i++) {
      w = split(parts[i], word, " ")
      name = word[1]; for (j = 2; j < w; j++) name = name " " word[j]
      if (!(name in sum)) order[++m] = name
      sum[name] += word[w]
    }
    c++
  }
  END {
    if (!c) exit
    printf "compile time, mean of %d programs (ms):", c
    for (j = 1; j <= m; j++) { printf " %s %.2f", order[j], sum[order[j]] / c; total += sum[order[j]] / c }
    printf "; total %.2f\n", total
  }'
echo "ptxas matrix: $n combinations (${#ops[@]} operators x ${#schedules[@]} schedules x ${#targets[@]} targets, 4 operators x ${#dschedules[@]} schedules x 3 dtypes on sm_90, $nwide of 64-bit indices and $ncsr for edge ids in CSR order): $ok assembled, $refused refused, $failed failed"
if ((ok == 0)); then
  echo "FAIL: nothing was assembled" >&2
  exit 1
fi
((failed == 0))
