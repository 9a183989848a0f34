#!/usr/bin/env bash
# bench/reorder.sh: what vertex reordering (docs/reordering.md) does to
# aggregation times on the GPU, with the carried static gopc.
#
#   bash bench/reorder.sh CARRY OUT
#
# CARRY is tools/gpu-prepare.sh's folder (gopc unpacked by
# tools/gpu-unpack.sh, graphs in CARRY/datasets); bench/run-all.sh runs this
# as its optional phase `reorder` (bash bench/run-all.sh CARRY OUT reorder).
# For each graph and each method, the graph is reordered once on the host
# (gopc graph --reorder M -o, timed) and then u_mul_e_sum and copy_u_sum run
# at F = 32 and 128 under spmm_vec4(4), spmm_groups(32, 4) and
# gnnadvisor(32, 32); `none` is the graph as read. First, on cora, every
# method's outputs through `gopc run --reorder M` (permuted in and back) are
# compared with the original order's on the GPU: the transparency check.
#
# Environment:
#   GOP_REORDER_GRAPHS    graphs, in order (default: those below that are
#                         carried: the ones whose AES says their order is
#                         poor first)
#   GOP_REORDER_METHODS   default "none degree rcm community auto metis"
#                         (metis is skipped with a note when gopc was built
#                         without METIS, as the static build is)
#   GOP_REORDER_BUDGET_S  stop starting graphs after this (default 300)
#   GOP_REORDER_INTERP=1  run on the interpreter, untimed: checks this
#                         script on a machine without a GPU
# Writes OUT/reorder.csv (graph, method, op, F, schedule, median ms, AES,
# locality, reorder seconds) and OUT/reorder.log; prints a table of times
# and speedups over `none`.
source "$(dirname "$0")/../tools/gpu-common.sh"
gpu_usage "bench/reorder.sh CARRY OUT" 2 "$@"
gpu_out -a "$2" graphs
gpu_carry -a "$1"
[ -x "$gopc" ] || { echo "no $gopc: prepare $carry with tools/gpu-prepare.sh" >&2; exit 2; }
budget=${GOP_REORDER_BUDGET_S:-300}
methods=(${GOP_REORDER_METHODS:-none degree rcm community auto metis})
if [ -n "${GOP_REORDER_GRAPHS:-}" ]; then
  graphs=(${GOP_REORDER_GRAPHS})
else
  graphs=()
  for g in ogbn-arxiv blogcatalog soc-Slashdot0902 deezer-HU musae-facebook pubmed ca-HepPh \
    cnr-2000 molhiv delaunay_n16 proteins wiki-Vote citeseer cora; do
    [ -f "$carry/datasets/$g.mtx.gz" ] && graphs+=("$g")
  done
fi
schedules=("spmm_vec4(4)" "spmm_groups(32, 4)" "gnnadvisor(32, 32)")
ops=(u_mul_e_sum copy_u_sum)
widths=(32 128)
if [ "${GOP_REORDER_INTERP:-0}" = 1 ]; then
  device=(--interp)
  widths=(4)
else
  device=(--gpu --warmup 5 --reps 20)
fi
csv=$out/reorder.csv
log=$out/reorder.log
echo "graph,method,op,F,schedule,median_ms,aes,locality,reorder_s" > "$csv"
: > "$log"
T0=$(date +%s)
status=0

# ---- transparency on the GPU: every method gives cora's outputs back ----
cora=$carry/datasets/cora.mtx.gz
if [ -f "$cora" ]; then
  for m in "${methods[@]}"; do
    extra=()
    [ "$m" = none ] || extra=(--reorder "$m")
    if ! "$gopc" run stdlib:u_mul_e_sum --graph "$cora" --F 32 --schedule "spmm_groups(32, 4)" \
      "${device[@]}" --out "Y=$out/cora-$m.npy" "${extra[@]}" >> "$log" 2>&1; then
      if grep -q "built without METIS" "$log"; then continue; fi
      echo "transparency: gopc run --reorder $m failed on cora (see $log)"
      tail -3 "$log"
      [ "$m" = none ] && exit 1 # no GPU or no gopc: nothing else will run
      status=1
    fi
  done
  python3 - "$out" "${methods[@]}" <<'EOF' || status=1
import sys, os
import numpy as np
out, methods = sys.argv[1], sys.argv[2:]
ref = np.load(os.path.join(out, "cora-none.npy"))
bad = 0
for m in methods[1:] if methods[0] == "none" else methods:
    p = os.path.join(out, f"cora-{m}.npy")
    if not os.path.exists(p):
        continue
    y = np.load(p)
    err = np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-30)
    ok = y.shape == ref.shape and err < 1e-5
    bad += not ok
    print(f"transparency on cora, {m}: relative L2 {err:.2e} {'ok' if ok else 'FAILED'}")
sys.exit(1 if bad else 0)
EOF
fi

# ---- timings ----
for g in "${graphs[@]}"; do
  if [ $(( $(date +%s) - T0 )) -gt "$budget" ]; then
    echo "budget of $budget s spent: stopped before $g"
    break
  fi
  src=$carry/datasets/$g.mtx.gz
  for m in "${methods[@]}"; do
    file=$src
    stats=$("$gopc" graph "$src" 2>&1)
    rs=""
    if [ "$m" != none ]; then
      file=$out/graphs/$g.$m.mtx
      if ! stats=$("$gopc" graph "$src" --reorder "$m" -o "$file" 2>&1); then
        echo "$stats" >> "$log"
        if grep -q "built without METIS" <<<"$stats"; then
          echo "$g: $m skipped (gopc was built without METIS)"
        else
          echo "$g: reordering by $m failed"; status=1
        fi
        continue
      fi
      rs=$(sed -n 's/^reordered by [^ ]* in \([0-9.]*\) s:.*/\1/p' <<<"$stats")
    fi
    aes=$(grep -o 'AES [0-9.]*' <<<"$stats" | tail -1 | cut -d' ' -f2)
    loc=$(grep -o 'locality [0-9.]*' <<<"$stats" | tail -1 | cut -d' ' -f2)
    for op in "${ops[@]}"; do
      for F in "${widths[@]}"; do
        for s in "${schedules[@]}"; do
          r=$("$gopc" run "stdlib:$op" --graph "$file" --F "$F" --schedule "$s" "${device[@]}" 2>&1)
          rc=$?
          echo "== $g $m $op F=$F $s (exit $rc)" >> "$log"
          echo "$r" >> "$log"
          ms=$(gpu_ms <<<"$r")
          [ $rc -eq 0 ] || { ms=FAIL; status=1; }
          echo "$g,$m,$op,$F,\"$s\",${ms:-},$aes,$loc,$rs" >> "$csv"
        done
      done
    done
    rm -f "$out/graphs/$g.$m.mtx" # 100+ MB for the large graphs
  done
done

# ---- the table: each case's time under each method, and the best ----
python3 - "$csv" <<'EOF'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
t = collections.defaultdict(dict)
info = {}
methods = []
for r in rows:
    if r["method"] not in methods:
        methods.append(r["method"])
    info[(r["graph"], r["method"])] = (r["aes"], r["locality"], r["reorder_s"])
    try:
        t[(r["graph"], r["op"], r["F"], r["schedule"])][r["method"]] = float(r["median_ms"])
    except ValueError:
        pass
print("graph statistics (AES, locality, reorder s):")
for (g, m), (a, l, s) in info.items():
    print(f"  {g:18s} {m:16s} AES {a:>10s} locality {l:>6s} {s and 'in ' + s + ' s' or ''}")
if not any(t.values()):
    print("no timings (interpreter run, or every run failed)")
    sys.exit(0)
print("median ms (speedup over none):")
print(f"{'graph':18s} {'op':12s} {'F':>4s} {'schedule':20s} " + " ".join(f"{m:>16s}" for m in methods))
gains = collections.defaultdict(list)
for (g, op, F, s), by in t.items():
    base = by.get("none")
    cells = []
    for m in methods:
        v = by.get(m)
        if v is None:
            cells.append(f"{'-':>16s}")
        else:
            sp = base / v if base and v else 0
            if base and v and m != "none":
                gains[(g, m)].append(sp)
            cells.append(f"{v:8.4f} ({sp:4.2f}x)" if base else f"{v:16.4f}")
    print(f"{g:18s} {op:12s} {F:>4s} {s:20s} " + " ".join(cells))
print("geometric mean speedup over none, per graph and method:")
import math
for (g, m), v in gains.items():
    print(f"  {g:18s} {m:16s} {math.exp(sum(map(math.log, v)) / len(v)):5.2f}x over {len(v)} cases")
EOF
echo "reorder: $(( $(date +%s) - T0 )) s, csv in $csv"
exit $status
