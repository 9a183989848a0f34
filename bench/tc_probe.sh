#!/usr/bin/env bash
# bench/tc_probe.sh: the tensor-core SpMM experiment (bench/tc_probe.cu)
# against gop's CUDA-core bf16 copy_u_sum, on the same graph files in one
# GPU call (issue 37: bf16 sum with tensor cores >= 1.4x gop's CUDA-core
# bf16 on half the graphs).
#
#   bash bench/tc_probe.sh prepare [GRAPH...]   here (LLVM): .carry/tc
#   bash bench/tc_probe.sh run CARRY OUT        on the GPU machine
#
# prepare builds the static gopc (build-static) and copies the graphs, and
# the community order (gopc graph --reorder community) of those where a
# window of 16 destinations shares sources once renumbered (ca-HepPh,
# musae-facebook, ogbn-arxiv, blogcatalog), as NAME-community.mtx.gz. run
# builds the probe with nvcc, runs it at F = 64 and 128 (GOP_TC_F), then
# times gop's bf16 copy_u_sum on each file at each width: the untuned
# choice and four schedules for 16-bit rows, by `gopc run --gpu` (median
# of 20); writes OUT/tc.csv, OUT/gop.csv and OUT/tc.md (the probe over
# gop's best per row).
source "$(dirname "$0")/../tools/gpu-common.sh"

case ${1:-} in
prepare)
  shift
  graphs=("$@")
  [ ${#graphs[@]} -gt 0 ] || graphs=(cnr-2000 molhiv ogbn-arxiv delaunay_n16 proteins ca-HepPh
    blogcatalog musae-facebook pubmed)
  out=.carry/tc
  set -e
  gpu_gopc_carry "$out" "${graphs[@]}"
  for g in ca-HepPh musae-facebook ogbn-arxiv blogcatalog; do
    [ -f "$out/datasets/$g.mtx.gz" ] || continue
    build-static/gopc graph "$out/datasets/$g.mtx.gz" --reorder community \
      -o "$out/datasets/$g-community.mtx" >/dev/null
    gzip "$out/datasets/$g-community.mtx"
  done
  du -sh "$out"
  ;;
run)
  [ $# -eq 3 ] || { echo "usage: $0 run CARRY OUT" >&2; exit 2; }
  gpu_carry "$2"
  gpu_out "$3"
  Fs=${GOP_TC_F:-64,128}
  probe=$(mktemp -d)/tc_probe
  nvcc -O3 -arch=sm_90 -std=c++17 -o "$probe" bench/tc_probe.cu || exit 1
  files=("$carry"/datasets/*.mtx.gz)
  "$probe" --F "$Fs" "${files[@]}" | tee "$out/tc.csv" || exit 1
  scheds=(model 'spmm_groups_full(32, 4)' 'spmm_groups_full(64, 4)' 'spmm_rows8_full(1, 2)'
    'spmm_teams8(64, 32)')
  echo "graph,F,schedule,ms" >"$out/gop.csv"
  for f in "${files[@]}"; do
    name=$(basename "$f" .mtx.gz)
    for F in ${Fs//,/ }; do
      for s in "${scheds[@]}"; do
        sarg=(--schedule "$s")
        [ "$s" = model ] && sarg=()
        t=$("$gopc" run stdlib:copy_u_sum --graph "$f" --F "$F" --dtype bf16 "${sarg[@]}" \
          --gpu --reps 20 2>>"$out/gop.log" | tee -a "$out/gop.log" | gpu_ms)
        echo "$name,$F,\"$s\",${t:-nan}" >>"$out/gop.csv"
      done
    done
  done
  python3 - "$out" <<'EOF'
import csv, math, sys
out = sys.argv[1]
tc = [r for r in csv.DictReader(l for l in open(f"{out}/tc.csv") if not l.startswith("#"))]
name = open(f"{out}/tc.csv").readline().strip("# \n")
gop = {}
for r in csv.DictReader(open(f"{out}/gop.csv")):
    t = float(r["ms"])
    if not math.isnan(t):
        gop.setdefault((r["graph"], r["F"]), []).append((t, r["schedule"]))
lines = [f"tensor-core probe against gop's CUDA-core bf16 copy_u_sum on {name}, ms\n",
         "| graph | F | reuse | density | probe | gop best | gop schedule | gop untuned | probe speedup |",
         "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
ratios = []
for r in tc:
    k = (r["graph"], r["F"])
    if k not in gop:
        continue
    best = min(gop[k])
    unt = [t for t, s in gop[k] if s == "model"]
    sp = best[0] / float(r["tc_ms"])
    ratios.append(sp)
    lines.append(f"| {r['graph']} | {r['F']} | {r['reuse']} | {r['density']} | {float(r['tc_ms']):.4f} | "
                 f"{best[0]:.4f} | {best[1]} | {unt[0] if unt else float('nan'):.4f} | {sp:.2f}x |")
if ratios:
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
    lines.append(f"\nthe probe's speedup (gop best ms / probe ms), geometric mean: {gm:.2f}x "
                 f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x, "
                 f"{sum(x >= 1.4 for x in ratios)} of {len(ratios)} rows >= 1.4x)")
open(f"{out}/tc.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
  echo "done in $SECONDS s"
  ;;
*)
  sed -n '2,18p' "$0" >&2
  exit 2
  ;;
esac
