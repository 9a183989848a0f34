#!/usr/bin/env bash
# bench/models.sh: GCN, GIN, GAT (fused and separate) and GraphSAGE
# (sum, mean, max) in gop and in PyTorch Geometric on cora, pubmed,
# ogbn-arxiv and molhiv, on the GPU machine: same weights and inputs,
# outputs compared (relative L2 < 1e-4), both times tabled
# (bench/models_pyg.py). CARRY is tools/gpu-prepare.sh's folder (a static
# gopc and datasets/); bench/run-all.sh calls this as its `models` phase.
#
#   bash bench/models.sh CARRY OUT [GRAPHS]     # GRAPHS: cora,pubmed,...
#
# Writes OUT/models.log (the table last) and OUT/work/ (weights, inputs,
# both outputs). Exits non-zero when any case fails or disagrees.
# GOP_MODELS_ARGS adds options, e.g. "--check-gop" (each gop forward also
# checked against gop's interpreter: minutes more on the large graphs) or
# "--models gcn,gat --reps 50".
source "$(dirname "$0")/../tools/gpu-common.sh"
gpu_usage "bench/models.sh CARRY OUT [GRAPHS]" 2 "$@"
graphs=${3:-cora,pubmed,ogbn-arxiv,molhiv}
gpu_out "$2"
gpu_carry "$1"
for g in ${graphs//,/ }; do
  [ -f "$carry/datasets/$g.mtx.gz" ] || { echo "no $carry/datasets/$g.mtx.gz" >&2; exit 1; }
done
python3 bench/models_pyg.py --gopc "$gopc" --datasets "$carry/datasets" \
  --out "$out/work" --graphs "$graphs" ${GOP_MODELS_ARGS:-} 2>&1 |
  tee "$out/models.log"
exit "${PIPESTATUS[0]}"
