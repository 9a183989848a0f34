#!/usr/bin/env bash
# tests/gpu/dtypes.sh CARRY_DIR OUT_DIR: f16, bf16 and f64 tensors (issue 19,
# docs/language.md "Types") on the GPU machine.
#
# 1. copy_u_sum, u_mul_e_sum and copy_u_mean instantiated in bf16, f16 and
#    f64 (gopc run --dtype), compiled under several vertex-parallel
#    schedules and two over neighbour groups (whose heavy rows add into an
#    f32 twin of a 16-bit output: a 16-bit atomic would round every
#    addition, docs/language.md), run on the GPU and checked against the f64 oracle of the same rounded
#    inputs (gopc run --check: relative L2 under 1.5e-2 for bf16, 2e-3 for
#    f16, 1e-12 for f64) on cora (F = 32), pubmed (F = 128) and rmat:14:8
#    (F = 64), under six named schedules, vec8 (16-bit only) and the cost
#    model's choice.
#    Then gopc tune on the bf16 instance of copy_u_sum (pubmed, F = 128).
# 2. Timing: copy_u_sum in bf16 against f32 on the graphs above 1M edges
#    (ogbn-arxiv, molhiv, cnr-2000, rmat:19:16) at F = 128 and 256: the
#    median of each schedule, the best of each dtype, and the ratio (the
#    target of issue 19 is >= 1.7x).
# 3. cuSPARSE's bf16 SpMM (CUDA_R_16BF, f32 compute) and f32 SpMM on the
#    same graphs (bench/peers/cusparse_bf16.cu, built with nvcc).
# DTYPES_PART=1, 2 or 3 runs one part only (each fits a 10-minute call); a
# part stops starting runs after DTYPES_BUDGET seconds (default 540) and
# says so.
# Prepare CARRY_DIR with tools/gpu-prepare.sh (cora pubmed ogbn-arxiv
# molhiv cnr-2000). Writes OUT_DIR/dtypes.log (every gopc output) and prints
# a summary; exits 1 if a check failed.
source "$(dirname "$0")/../../tools/gpu-common.sh"
gpu_usage "tests/gpu/dtypes.sh CARRY_DIR OUT_DIR" 2 "$@"
gpu_carry "$1"
gpu_out "$2"
log=$out/dtypes.log
: >"$log"
status=0
pass=0
fail=0
part=${DTYPES_PART:-all}
dev=${DTYPES_DEVICE:---gpu} # --interp: a dry run of the script on a machine with no GPU
budget=${DTYPES_BUDGET:-540}
late() { # true (and says so once) when the budget is spent
  if ((SECONDS > budget)); then
    [ -n "${said:-}" ] || echo "STOPPED: the ${budget}s budget is spent; the rest was not run"
    said=1
    return 0
  fi
  return 1
}

graph_of() { # NAME: a dataset file of the carry, or a generator spec as is
  case $1 in rmat:*) echo "$1" ;; *) echo "$carry/datasets/$1.mtx.gz" ;; esac
}

# the schedules: four vertex-parallel (plain reductions), two over neighbour
# groups (f32 atomics into the twin of heavy rows); vec8: 8 features
# of 16 bits per lane in one 16-byte load (vectorize(fv, 8), 16-bit only)
vec8='optional(f); split(f, 256) -> (fo, fr); split(fr, 8) -> (fl, fv); reorder(v, fo, fl, fv, e); promote(e, register); unroll(e, 2); bind(v, warp); bind(fl, lane); vectorize(fv, 8)'
scheds=('warp_vertex(1, 1)' 'spmm_vec4(2)' 'spmm_rows(2, 2)' 'thread_vertex(1, 1)'
        'spmm_groups(16, 4)' 'spmm_teams8(64, 32)')

if [ "$part" = all ] || [ "$part" = 1 ]; then
echo "== 1. bf16 / f16 / f64 operators on the GPU, checked against the f64 oracle"
for gF in cora:32 pubmed:128 rmat:14:8:64; do
  g=${gF%:*}
  F=${gF##*:}
  graph=$(graph_of "$g")
  case $g in rmat:*) ;; *) [ -f "$graph" ] || { echo "no $graph"; continue; } ;; esac
  for op in copy_u_sum u_mul_e_sum copy_u_mean; do
    for dt in bf16 f16 f64; do
      extra=()
      [ "$dt" != f64 ] && extra=("$vec8")
      for s in "${scheds[@]}" "${extra[@]}" model; do
        late && break 3
        name=${s%%;*}
        [ "$s" = "$vec8" ] && name=vec8
        echo "### $op $dt $g F=$F $name" >>"$log"
        sarg=(--schedule "$s")
        [ "$s" = model ] && sarg=() # the cost model's choice
        if "$gopc" run "stdlib:$op" --graph "$graph" --F "$F" --dtype "$dt" \
             "${sarg[@]}" "$dev" --check --reps 3 >"$log.one" 2>&1; then
          pass=$((pass + 1))
        elif grep -q "no named schedule applies\|cannot apply\|does not apply\|takes tensors of at most" "$log.one"; then
          : # a schedule that does not fit this operator: not a failure
        else
          fail=$((fail + 1))
          status=1
          echo "FAIL: $op $dt on $g, F=$F, schedule $name: $(grep -m1 'error' "$log.one")"
        fi
        cat "$log.one" >>"$log"
      done
    done
  done
done
# declared types (tests/gpu/dtypes_acc.gop): bf16 with an f64 accumulator,
# f16 inputs into an f32 output with an explicit conversion
if [ -f "$carry/datasets/pubmed.mtx.gz" ]; then
  for op in bf16_sum_acc64 f16_weighted_to_f32; do
    for s in 'spmm_vec4(2)' 'warp_vertex(1, 1)'; do
      late && break 2
      echo "### $op pubmed F=128 $s" >>"$log"
      if "$gopc" run tests/gpu/dtypes_acc.gop --op "$op" --graph "$carry/datasets/pubmed.mtx.gz" \
           --F 128 --schedule "$s" "$dev" --check --reps 3 >"$log.one" 2>&1; then
        pass=$((pass + 1))
      else
        fail=$((fail + 1))
        status=1
        echo "FAIL: $op on pubmed, schedule $s: $(grep -m1 'error' "$log.one")"
      fi
      cat "$log.one" >>"$log"
    done
  done
fi
echo "checked: $pass passed, $fail failed"
# the tuner on a bf16 instance: candidates checked against the interpreter
# within bf16's limit, stored under dtype bf16
if ! late && [ "$dev" = --gpu ] && [ -f "$carry/datasets/pubmed.mtx.gz" ]; then
  echo "== gopc tune copy_u_sum --dtype bf16 on pubmed, F = 128"
  if "$gopc" tune stdlib:copy_u_sum --dtype bf16 --graph "$carry/datasets/pubmed.mtx.gz" \
       --F 128 --max 12 --budget-s 40 --db "$out/tune-bf16.db" >"$log.one" 2>&1; then
    tail -8 "$log.one"
  else
    status=1
    echo "FAIL: gopc tune --dtype bf16: $(grep -m1 error "$log.one")"
  fi
  cat "$log.one" >>"$log"
fi
fi
[ "$part" = 1 ] && exit $status
SECONDS=0
said=
if [ "$part" = all ] || [ "$part" = 2 ]; then

echo "== 2. copy_u_sum: bf16 against f32 (best median over the schedules)"
time_of() { # DT GRAPH F SCHEDULE ("model": the cost model's choice)
  local sarg=(--schedule "$4")
  [ "$4" = model ] && sarg=()
  echo "### time copy_u_sum $1 $2 F=$3 $4" >>"$log"
  "$gopc" run stdlib:copy_u_sum --graph "$2" --F "$3" --dtype "$1" "${sarg[@]}" \
    "$dev" --reps 20 2>>"$log" | tee -a "$log" | gpu_ms
}
best() { sort -g | head -1; }
for g in ogbn-arxiv molhiv cnr-2000 rmat:19:16; do
  graph=$(graph_of "$g")
  case $g in rmat:*) ;; *) [ -f "$graph" ] || { echo "no $graph"; continue; } ;; esac
  for F in 128 256; do
    late && break 2
    row32="" row16=""
    for s in 'spmm_vec4(4)' 'spmm_groups(16, 4)' 'spmm_groups(32, 4)' 'spmm_teams8(64, 32)' 'gnnadvisor(1, 32)' model; do
      t=$(time_of f32 "$graph" "$F" "$s")
      row32+=" ${s%%;*}=${t:-?}"
    done
    for s in 'spmm_vec4(4)' 'spmm_groups(16, 4)' 'spmm_groups(32, 4)' 'spmm_teams8(64, 32)' "$vec8" model; do
      t=$(time_of bf16 "$graph" "$F" "$s")
      name=${s%%;*}
      [ "$s" = "$vec8" ] && name=vec8
      row16+=" $name=${t:-?}"
    done
    t32=$(tr ' ' '\n' <<<"$row32" | sed -n 's/.*=\([0-9.]*\)$/\1/p' | best)
    t16=$(tr ' ' '\n' <<<"$row16" | sed -n 's/.*=\([0-9.]*\)$/\1/p' | best)
    ratio=$(awk -v a="$t32" -v b="$t16" 'BEGIN { if (a == "" || b == "" || b == 0) print "?"; else printf "%.2f", a / b }')
    echo "  $g F=$F: best f32 ${t32:-?} ms, best bf16 ${t16:-?} ms, f32/bf16 ${ratio}x"
    echo "    f32 (ms):$row32"
    echo "    bf16 (ms):$row16"
  done
done

fi

# 3. cuSPARSE's SpMM on the same graphs, bf16 (CUDA_R_16BF, f32 compute) and
#    f32 (bench/peers/cusparse_bf16.cu; its own random inputs)
if { [ "$part" = all ] || [ "$part" = 3 ]; } && ! late; then
  echo "== 3. cuSPARSE SpMM, bf16 with f32 compute and f32 (best algorithm of each)"
  work=$(mktemp -d /tmp/gop-dtypes.XXXXXX)
  if nvcc -O3 -arch=sm_90 -std=c++17 -o "$work/cusparse_bf16" bench/peers/cusparse_bf16.cu \
       -lcusparse >>"$log" 2>&1; then
    for g in ogbn-arxiv molhiv cnr-2000 rmat:19:16; do
      late && break
      case $g in
      rmat:*) "$gopc" graph "$g" -o "$work/g.mtx" >/dev/null 2>>"$log" || continue ;;
      *) [ -f "$carry/datasets/$g.mtx.gz" ] || continue
         gunzip -c "$carry/datasets/$g.mtx.gz" >"$work/g.mtx" ;;
      esac
      "$work/cusparse_bf16" --F 128,256 --name "$g" "$work/g.mtx" >"$work/cs.csv" 2>>"$log"
      cat "$work/cs.csv" >>"$log"
      for F in 128 256; do
        for dt in f32 bf16; do
          t=$(awk -F, -v F="$F" -v dt="$dt" '$1 == "cusparse" && $6 == F && $7 == dt && $10 == "ok" { print $9 }' \
              "$work/cs.csv" | sort -g | head -1)
          wrong=$(awk -F, -v F="$F" -v dt="$dt" '$6 == F && $7 == dt && $10 == "WRONG"' "$work/cs.csv" | wc -l)
          note=""
          ((wrong > 0)) && note=", $wrong algorithm(s) WRONG"
          echo "  $g F=$F cuSPARSE $dt: ${t:-?} ms (best algorithm)$note"
        done
      done
    done
  else
    echo "nvcc could not build bench/peers/cusparse_bf16.cu (see $log)"
  fi
  rm -rf "$work"
fi
exit $status
