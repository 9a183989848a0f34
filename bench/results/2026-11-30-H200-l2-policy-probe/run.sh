#!/usr/bin/env bash
# Cache-policy experiment (bench/l2_probe.cu) and gop's copy_u_sum on the
# same files and widths in one GPU call. Carry: CARRY/gopc.xz and
# CARRY/datasets/*.mtx.gz (tools/gpu-common.sh gpu_gopc_carry). There:
#   bash bench/results/2026-11-30-H200-l2-policy-probe/run.sh CARRY OUT
source "$(dirname "$0")/../../../tools/gpu-common.sh"
gpu_usage "run.sh CARRY OUT" 2 "$@"
gpu_carry "$1"
gpu_out "$2"
gpu_name; date -u
probe=$(mktemp -d)/l2_probe
nvcc -O3 -arch=sm_90 -std=c++17 -o "$probe" bench/l2_probe.cu || exit 1
files=("$carry"/datasets/*.mtx.gz)
"$probe" --F 128,256 --reps 20 "${files[@]}" | tee "$out/l2.csv" || exit 1
echo "graph,F,schedule,ms" >"$out/gop.csv"
for f in "${files[@]}"; do
  name=$(basename "$f" .mtx.gz)
  for F in 128 256; do
    for s in model 'spmm_groups(64, 4)' 'spmm_teams8(128, 16)'; do
      sarg=(--schedule "$s")
      [ "$s" = model ] && sarg=()
      t=$("$gopc" run stdlib:copy_u_sum --graph "$f" --reorder none --F "$F" "${sarg[@]}" \
        --gpu --reps 20 2>>"$out/gop.log" | tee -a "$out/gop.log" | gpu_ms)
      echo "$name,$F,\"$s\",${t:-nan}" | tee -a "$out/gop.csv"
    done
  done
done
echo "done in $SECONDS s"
