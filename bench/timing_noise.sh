#!/usr/bin/env bash
# bench/timing_noise.sh: how much a time moves between identical calls,
# timed with events and by CUDA graph replay (bench/README.md, Timing), for
# gop, cuSPARSE and PyTorch Geometric on small graphs, on the GPU machine.
#
#   bash bench/timing_noise.sh CARRY OUT
#
# CARRY is the folder tools/gpu-prepare.sh makes (GOP_PREPARE_ONLY=noise
# makes just what this needs: gop_bench, its plan in noise/, and cora,
# citeseer and pubmed). Each driver runs NOISE_REPS times (default 3) with
# --timing events and as often with --timing graph, the two interleaved,
# each a process of its own, on the carried graphs at F = 16 and 64
# (NOISE_F); then bench/timing_noise.py prints, per driver and method, the
# spread of each row's time over the identical calls (max / min - 1) and
# the ratio of the two methods' medians. Raw CSVs and logs go to OUT.
# About 2 minutes on an H100.
source "$(dirname "$0")/../tools/gpu-common.sh"
gpu_usage "bench/timing_noise.sh CARRY OUT" 2 "$@"
gpu_out -a "$2"
gpu_carry -a "$1"
reps=${NOISE_REPS:-3}
widths=${NOISE_F:-16 64}
graphs=()
for f in "$carry"/datasets/*.mtx.gz; do graphs+=("$(basename "$f" .mtx.gz)"); done
T0=$(date +%s)
say() { echo "[noise $(($(date +%s) - T0))s] $*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gop_noise.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "building cusparse_bench"
nvcc -O3 -arch=sm_90 -std=c++17 -Xcompiler -Wall,-fopenmp -o "$work/cusparse_bench" \
  bench/peers/cusparse_bench.cu -lcusparse -lgomp >"$out/build.log" 2>&1 ||
  { echo "cusparse_bench did not build:"; tail -20 "$out/build.log"; exit 1; }
for g in "${graphs[@]}"; do gunzip -c "$carry/datasets/$g.mtx.gz" >"$work/$g.mtx"; done
ceiling=$("$work/cusparse_bench" --ceiling-only | sed -n 's/^# copy_ceiling_gbps=\([0-9.]*\).*/\1/p')
say "graphs ${graphs[*]}, F = $widths, $reps calls per method, copy ceiling $ceiling GB/s"

status=0
for r in $(seq 1 "$reps"); do
  for m in events graph; do
    say "call $r, $m"
    "$carry/gop_bench" run "$carry/noise" "$carry/datasets" --csv "$out/gop-$m-$r.csv" \
      --reps 10 --timing "$m" >"$out/gop-$m-$r.log" 2>&1 || status=1
    for g in "${graphs[@]}"; do
      "$work/cusparse_bench" --ceiling "$ceiling" --F "${widths// /,}" --timing "$m" --name "$g" \
        "$work/$g.mtx" 2>>"$out/cusparse-$m-$r.log" | grep -v '^#' >>"$out/cusparse-$m-$r.csv" ||
        status=1
    done
    python3 bench/peers/pyg_bench.py --datasets "$carry/datasets" --graphs "${graphs[@]}" \
      --F "$widths" --ceiling "$ceiling" --timing "$m" >"$out/pyg-$m-$r.csv" \
      2>"$out/pyg-$m-$r.log" || status=1
  done
done
say "done"
python3 bench/timing_noise.py "$out" | tee "$out/summary.txt"
exit $status
