#!/usr/bin/env bash
# After the reciprocal pass's final form: tests/gpu/grad.sh (every derived
# gradient checked against the interpreter) and the operators whose forward
# or default mapping the pass rewrites, each run on the GPU and checked.
# Carry as run.sh's. There:
#   bash bench/results/2026-11-30-H200-mean-gradient-reciprocal/run-check.sh CARRY OUT
c=$1 out=$2
xz -dc "$c/gopc.xz" > /tmp/gopc && chmod +x /tmp/gopc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for g in ogbn-arxiv soc-Slashdot0902; do
  for op in "u_div_e_sum" "u_div_e_mean" "u_div_e_max --grad X" "copy_u_mean --grad X --schedule ''" \
            "u_mul_e_mean --grad X --schedule 'sddmm_vec4(4)'" "u_div_e_sum --grad W"; do
    echo "$g $op: $(eval /tmp/gopc run stdlib:$op --graph "$c/datasets/$g.mtx.gz" --reorder none --F 40 --reps 5 --check 2>&1 |
      grep -E "^  time|schedule:|check:|error" | tr '\n' ' ' | sed 's/  */ /g')"
  done
done
mkdir -p "$c/gs/datasets" && cp "$c/gopc.xz" "$c/gs/" && cp "$c"/datasets/{cora,pubmed,ogbn-arxiv}.mtx.gz "$c/gs/datasets/"
bash tests/gpu/grad.sh "$c/gs" "$out/grad-sh" > "$out/grad-sh.txt" 2>&1
echo "grad.sh status $?"; tail -5 "$out/grad-sh.txt"
