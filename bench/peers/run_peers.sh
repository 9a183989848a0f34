#!/usr/bin/env bash
# bench/peers/run_peers.sh: build and run gop's peers (cuSPARSE from C,
# PyTorch Geometric and torch from Python) on every graph of a datasets
# folder, on the GPU machine, in one call.
#
#   bash bench/peers/run_peers.sh DATASETS_DIR OUT_DIR [GRAPH...] [--F "16 32 64 128 256"]
#        [--timing graph|events] [--graph-reps N]
#
# DATASETS_DIR holds NAME.mtx.gz (all 14 graphs of MANIFEST.md by default).
# Writes OUT_DIR/peers.csv (`#` lines for the GPU and the copy ceiling, then
# peer,op,graph,V,E,F,time_ms,gbps,frac_of_bound,ok,timing,graph_calls) and
# OUT_DIR/peers.log, and prints a summary table last. --timing and
# --graph-reps go to both drivers (default: graph replay, about 1 ms a
# replay), as gop_bench takes them. bench/README.md says what is measured.
set -uo pipefail
export PYTHONUNBUFFERED=1

usage() {
    echo "usage: $0 DATASETS_DIR OUT_DIR [GRAPH...] [--F \"16 32 64 128 256\"]" \
         "[--timing graph|events] [--graph-reps N]" >&2
    exit 2
}

[ $# -ge 2 ] || usage
DATASETS_DIR=$1
OUT_DIR=$2
shift 2
WIDTHS="16 32 64 128 256"
TIMING=(--timing graph)
GRAPHS=()
while [ $# -gt 0 ]; do
    case $1 in
        --F) [ $# -ge 2 ] || usage; WIDTHS=$2; shift 2 ;;
        --F=*) WIDTHS=${1#--F=}; shift ;;
        --timing|--graph-reps) [ $# -ge 2 ] || usage; TIMING+=("$1" "$2"); shift 2 ;;
        -h|--help) usage ;;
        *) GRAPHS+=("$1"); shift ;;
    esac
done
if [ ${#GRAPHS[@]} -eq 0 ]; then
    # MANIFEST order, smallest first, so that a cut-off run still has most graphs
    GRAPHS=(cora citeseer pubmed wiki-Vote ca-HepPh musae-facebook deezer-HU blogcatalog
            proteins delaunay_n16 soc-Slashdot0902 ogbn-arxiv cnr-2000 molhiv)
fi
[ -d "$DATASETS_DIR" ] || { echo "no folder $DATASETS_DIR" >&2; exit 2; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
CSV=$OUT_DIR/peers.csv
LOG=$OUT_DIR/peers.log
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gop_peers.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
: >"$LOG"
T0=$(date +%s)

say() { echo "[run_peers $(($(date +%s) - T0))s] $*" | tee -a "$LOG" >&2; }

# ---- build ------------------------------------------------------------------
say "building cusparse_bench (nvcc -O3 -arch=sm_90)"
if ! nvcc -O3 -arch=sm_90 -std=c++17 -Xcompiler -Wall,-fopenmp \
        -o "$WORK/cusparse_bench" "$HERE/cusparse_bench.cu" -lcusparse -lgomp >>"$LOG" 2>&1; then
    say "BUILD FAILED; the compiler said:"
    tail -n 30 "$LOG" >&2
    exit 1
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv,noheader >>"$LOG" 2>&1 || true

# ---- the copy ceiling, once, shared by both peers ----------------------------
CEIL_OUT=$("$WORK/cusparse_bench" --ceiling-only 2>>"$LOG") || {
    say "cusparse_bench --ceiling-only failed"; tail -n 5 "$LOG" >&2; exit 1; }
echo "$CEIL_OUT" >>"$LOG"
CEILING=$(echo "$CEIL_OUT" | sed -n 's/^# copy_ceiling_gbps=\([0-9.]*\).*/\1/p')
[ -n "$CEILING" ] || { say "could not read the copy ceiling"; exit 1; }
say "$(echo "$CEIL_OUT" | head -n 1 | sed 's/^# //'); copy ceiling $CEILING GB/s"
{
    echo "$CEIL_OUT"
    echo "# widths=$WIDTHS date=$(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# timing: ${TIMING[*]}"
    echo "peer,op,graph,V,E,F,time_ms,gbps,frac_of_bound,ok,timing,graph_calls"
} >"$CSV"

# ---- cuSPARSE, one process per graph (a failure costs one graph) -------------
FAILED=0
for g in "${GRAPHS[@]}"; do
    src=$DATASETS_DIR/$g.mtx.gz
    if [ ! -f "$src" ]; then
        say "skip $g: no $src"
        FAILED=1
        continue
    fi
    gunzip -c "$src" >"$WORK/$g.mtx"
    say "cusparse $g"
    if ! "$WORK/cusparse_bench" --ceiling "$CEILING" --F "$WIDTHS" "${TIMING[@]}" --name "$g" "$WORK/$g.mtx" \
            >"$WORK/$g.out" 2>>"$LOG"; then
        say "cusparse_bench FAILED on $g (see $LOG)"
        tail -n 3 "$LOG" >&2
        FAILED=1
    fi
    cat "$WORK/$g.out" >>"$LOG"
    grep -v '^#' "$WORK/$g.out" >>"$CSV"
    grep -E '^# (WRONG|skip|note)' "$WORK/$g.out" | tee -a "$CSV" >&2
    rm -f "$WORK/$g.mtx"
done

# ---- PyTorch Geometric and torch, one process for all graphs ------------------
say "pyg_bench on ${#GRAPHS[@]} graphs"
python3 "$HERE/pyg_bench.py" --datasets "$DATASETS_DIR" --graphs "${GRAPHS[@]}" \
    --F "$WIDTHS" --ceiling "$CEILING" "${TIMING[@]}" >"$WORK/pyg.out" 2> >(tee -a "$LOG" >&2)
PYRC=$?
cat "$WORK/pyg.out" >>"$LOG"
grep -v '^#' "$WORK/pyg.out" >>"$CSV"
grep -E '^# (WRONG|skip|note)' "$WORK/pyg.out" | tee -a "$CSV" >&2
[ $PYRC -eq 0 ] || { say "pyg_bench exited with $PYRC"; FAILED=1; }

say "done: $(grep -vc '^#' "$CSV") lines in $CSV"
python3 "$HERE/pyg_bench.py" --summary "$CSV"
exit $FAILED
