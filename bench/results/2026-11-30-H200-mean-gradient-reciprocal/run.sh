#!/usr/bin/env bash
# The mean's derived gradients before and after the reciprocal lowering pass
# (passes/reciprocal.c), in one call on one GPU: the untuned choice of
# copy_u_mean's and u_mul_e_mean's dX by the compiler before the pass
# (gopc-before.xz) and after it (gopc.xz), each checked against the
# interpreter; the sum's gradient beside them as the floor the mean's
# could reach. Then tests/gpu/grad.sh with the new compiler.
# Carry CARRY/gopc.xz, CARRY/gopc-before.xz and
# CARRY/datasets/{cora,pubmed,ogbn-arxiv,soc-Slashdot0902,cnr-2000}.mtx.gz. There:
#   bash bench/results/2026-11-30-H200-mean-gradient-reciprocal/run.sh CARRY OUT
c=$1 out=$2
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
xz -dc "$c/gopc-before.xz" > /tmp/gopc-before && chmod +x /tmp/gopc-before
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
t() { local bin=$1; shift
      $bin run stdlib:$1 --graph "$c/datasets/$2.mtx.gz" --reorder none --F $3 --reps 20 "${@:4}" 2>&1 |
      grep -E "^  time|schedule:|check:|error" | tr '\n' ' ' | sed 's/  */ /g'; echo; }
for g in ogbn-arxiv soc-Slashdot0902 cnr-2000; do
  for F in 8 40 128 256; do
    echo "== $g F=$F"
    for op in copy_u_mean u_mul_e_mean; do
      echo "$op grad before: $(t /tmp/gopc-before $op $g $F --grad X --check)"
      echo "$op grad after: $(t /tmp/gopc $op $g $F --grad X --check)"
    done
    echo "copy_u_sum grad: $(t /tmp/gopc copy_u_sum $g $F --grad X)"
  done
done
mkdir -p "$c/gs/datasets" && cp "$c/gopc.xz" "$c/gs/" && cp "$c"/datasets/{cora,pubmed,ogbn-arxiv}.mtx.gz "$c/gs/datasets/"
bash tests/gpu/grad.sh "$c/gs" "$out/grad-sh" > "$out/grad-sh.txt" 2>&1
echo "grad.sh status $?"; tail -5 "$out/grad-sh.txt"
