#!/usr/bin/env bash
# bench/gat_attention.sh: GAT's attention (examples/models/layers.gop
# gat_attention) against PyTorch Geometric's, in one GPU call
# (bench/gat_attention.py says what is timed and how; issue 37: GAT
# attention >= 5x PyG).
#
#   bash bench/gat_attention.sh prepare [GRAPH...]   here: .carry/gat
#   bash bench/gat_attention.sh run CARRY OUT        on the GPU machine
#
# prepare builds gopc with LLVM's NVPTX backend linked in statically
# (build-static; the GPU machine has no LLVM: gopc compiles there) and
# copies the graphs (default: the shared ones but cnr-2000, so that the
# carry stays under the device tool's 64 MiB). GOP_GAT_ARGS passes more
# options to the script (--H, --C, --schedules).
source "$(dirname "$0")/../tools/gpu-common.sh"

case ${1:-} in
prepare)
  shift
  graphs=("$@")
  [ ${#graphs[@]} -gt 0 ] || graphs=(molhiv ogbn-arxiv cora citeseer pubmed wiki-Vote ca-HepPh
    musae-facebook deezer-HU blogcatalog proteins delaunay_n16 soc-Slashdot0902)
  out=.carry/gat
  set -e
  gpu_gopc_carry "$out" "${graphs[@]}"
  du -sh "$out"
  ;;
run)
  [ $# -eq 3 ] || { echo "usage: $0 run CARRY OUT" >&2; exit 2; }
  carry=$2 out=$3
  bash tools/gpu-unpack.sh "$carry" || exit 1
  # shellcheck disable=SC2086 # GOP_GAT_ARGS is a list of options
  python3 bench/gat_attention.py "$carry/gopc" "$carry/datasets" "$out" ${GOP_GAT_ARGS:-}
  ;;
*)
  sed -n '2,14p' "$0" >&2
  exit 2
  ;;
esac
