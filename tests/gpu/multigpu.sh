#!/usr/bin/env bash
# tests/gpu/multigpu.sh CARRY OUT [GRAPH...]: gop on every GPU of the host, in
# one device call (docs/multigpu.md). CARRY is what tools/gpu-prepare.sh
# multigpu made (libgop.so without LLVM, the kernel cache, the graphs); OUT
# gets the logs and CSVs. Phases, one process per GPU under torchrun:
#   check   every stdlib aggregation and three gradients on the sharded
#           graph against the whole graph (P GPUs), on cora, ogbn-arxiv and
#           rmat:16:16 (GOP_MGPU_CHECK_GRAPHS names others)
#   train   GCN and GraphSAGE, 20 steps, on 1 and P GPUs: the losses must
#           agree step for step (relative 1e-4); GOP_MGPU_TRAIN names the
#           graphs (default ogbn-arxiv)
#   bench   sum and mean aggregation on 1 and P GPUs, with the all-gather
#           baseline (bench/multigpu.py), on the GRAPHs (default rmat:22:16);
#           and the copy-engine and push transports; GOP_MGPU_PEER=1 adds
#           the peer transport, GOP_MGPU_BREAKDOWN=1 each step of the
#           overlapped sum timed alone
#   (GOP_SYMMETRIC_HEAP=nvshmem: those transports' buffers on NVSHMEM's
#   symmetric heap instead of torch's CUDA one; check covers them too)
#   big     a vertex tensor too wide for one GPU's memory, on P GPUs by
#           column chunks, checked against one GPU on 256 of its columns
#           (GOP_MGPU_BIG names the graph, default rmat:21:16)
set -uo pipefail
carry=$(cd "$1" && pwd)
out=$2
shift 2
mkdir -p "$out"
graphs=("$@")
[ ${#graphs[@]} -gt 0 ] || graphs=(rmat:22:16)
cd "$(dirname "$0")/../.."
# the package and the script as the kernels were prepared with, when carried
py=$PWD/python script=bench/multigpu.py
[ -d "$carry/python" ] && py=$carry/python
[ -f "$carry/multigpu.py" ] && script=$carry/multigpu.py
export GOP_LIBRARY=$carry/libgop.so GOP_CACHE_DIR=$carry/kernels PYTHONPATH=$py
export PYTHONUNBUFFERED=1
# NVLink multicast stays off on shared hosts (the device tool's KINDS.md)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# GOP_SYMMETRIC_HEAP=nvshmem: the peer, copy-engine and push transports take
# their buffers from NVSHMEM's symmetric heap, sized for R-MAT 22 at F = 256
# (NVSHMEM's default is 1 GiB)
if [ "${GOP_SYMMETRIC_HEAP:-cuda}" = nvshmem ]; then
  export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-24G}
fi
P=$(nvidia-smi -L | wc -l)
echo "== $(nvidia-smi -L | head -1 | sed 's/ (UUID.*//') x $P, $(date -u +%Y-%m-%dT%H:%MZ)," \
  "symmetric heap ${GOP_SYMMETRIC_HEAP:-cuda}"
nvidia-smi topo -m 2>/dev/null | head -4
status=0
run() { # nprocs, then the bench/multigpu.py arguments
  local n=$1
  shift
  timeout "${GOP_MGPU_TIMEOUT:-560}" torchrun --standalone --nproc_per_node "$n" "$script" "$@" --out "$out" ||
    { echo "FAILED: torchrun -n $n $*"; status=1; }
}
small=("$carry/datasets/cora.mtx.gz" "$carry/datasets/ogbn-arxiv.mtx.gz" rmat:16:16)
# GOP_MGPU_CHECK_GRAPHS: the check phase's graphs instead (carried names or specs)
if [ -n "${GOP_MGPU_CHECK_GRAPHS:-}" ]; then
  small=()
  for g in $GOP_MGPU_CHECK_GRAPHS; do
    if [ -f "$carry/datasets/$g.mtx.gz" ]; then small+=("$carry/datasets/$g.mtx.gz"); else small+=("$g"); fi
  done
fi
[ "${GOP_MGPU_PHASES:-check train bench}" ] || true
for phase in ${GOP_MGPU_PHASES:-check train bench}; do
  t=$(date +%s)
  echo "== $phase"
  case $phase in
  check) run "$P" check --graphs "${small[@]}" ;;
  train)
    tg=${GOP_MGPU_TRAIN:-$carry/datasets/ogbn-arxiv.mtx.gz}
    run 1 train --graphs $tg
    run "$P" train --graphs $tg
    python3 - "$out/train-1.json" "$out/train-$P.json" <<'PY' || status=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
worst = 0.0
for k in a:
    for s, (x, y) in enumerate(zip(a[k]["losses"], b[k]["losses"])):
        worst = max(worst, abs(x - y) / max(abs(x), 1e-12))
    print(f"{k}: epoch {a[k]['epoch_ms']:.2f} ms on 1 GPU, {b[k]['epoch_ms']:.2f} ms on "
          f"{sys.argv[2].split('-')[-1][:-5]}: {a[k]['epoch_ms'] / b[k]['epoch_ms']:.2f}x")
print(f"losses, worst relative difference over every step: {worst:.2e}",
      "ok" if worst < 1e-4 else "FAILED")
sys.exit(0 if worst < 1e-4 else 1)
PY
    ;;
  bench)
    run 1 bench --graphs "${graphs[@]}" --widths ${GOP_MGPU_WIDTHS:-64 128 256}
    peer=(--ce --push)
    [ "${GOP_MGPU_BREAKDOWN:-0}" = 1 ] && peer+=(--breakdown)
    [ "${GOP_MGPU_PEER:-0}" = 1 ] && peer+=(--peer)
    run "$P" bench --graphs "${graphs[@]}" --widths ${GOP_MGPU_WIDTHS:-64 128 256} "${peer[@]}"
    python3 - "$out/bench-1.csv" "$out/bench-$P.csv" <<'PY' | tee "$out/summary.txt"
import csv, sys
one = {(r["graph"], r["F"], r["op"]): r for r in csv.DictReader(open(sys.argv[1]))}
many = list(csv.DictReader(open(sys.argv[2])))
P = many[0]["gpus"] if many else "?"
print(f"{'graph':14s} {'F':>4s} {'op':12s} {'1 GPU':>8s} {'overlap':>8s} {'rounds':>8s} {'halo':>8s}"
      f" {'allgath':>8s} {'peer':>8s} {'ce':>8s} {'push':>8s} {'best':>6s} {'vs AG':>6s}   ms;"
      f" best = the fastest halo mode (overlap, rounds, halo, ce, push) over 1 GPU, vs AG = over the"
      f" all-gather")
by = {}
for r in many:
    by.setdefault((r["graph"], r["F"], r["op"]), {})[r["mode"]] = r
for k, m in by.items():
    if k not in one or "halo" not in m:
        continue
    t = {mode: float(m[mode]["ms"]) for mode in m}
    t1 = float(one[k]["ms"])
    best = min(t["halo"], t.get("halo_overlap", 1e30), t.get("halo_rounds", 1e30),
               t.get("ce", 1e30), t.get("push", 1e30))
    peer = f"{t['peer']:8.3f}" if "peer" in t else f"{'-':>8s}"
    ce = f"{t['ce']:8.3f}" if "ce" in t else f"{'-':>8s}"
    push = f"{t['push']:8.3f}" if "push" in t else f"{'-':>8s}"
    print(f"{k[0][-14:]:14s} {k[1]:>4s} {k[2]:12s} {t1:8.3f} {t.get('halo_overlap', 0):8.3f}"
          f" {t.get('halo_rounds', 0):8.3f}"
          f" {t['halo']:8.3f} {t['allgather']:8.3f} {peer} {ce} {push} {t1 / best:5.2f}x"
          f" {t['allgather'] / best:5.2f}x")
PY
    ;;
  big) run "$P" big --graphs "${GOP_MGPU_BIG:-rmat:21:16}" --reps 3 ;;
  *) echo "unknown phase $phase (check, train, bench, big)"; status=1 ;;
  esac
  echo "== $phase: $(( $(date +%s) - t )) s"
done
exit $status
