#!/bin/bash
# Experiment (the CSR-order run (2026-11-27)): the weighted gap's upper bound for weights in CSR order.
# Graphs rewritten with arcs sorted by destination (in_eid = identity);
# GOP_EXP_EIDPOS=1 compiles W[e] of an in-edge/group-edge loop as W[k] (no
# in_eid load; valid only on these graphs). GOP_EXP_ADDR as in addr.sh.
cd "$(dirname "$0")/../.."
c=.carry/o
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' $c/gopc.xz $c/gopc; chmod +x $c/gopc
o=$OUT/eid.txt
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o
SECONDS=0
mkdir -p /tmp/ds
python3 - <<'PY'
import gzip, numpy as np
for n in ["ogbn-arxiv", "cnr-2000", "soc-Slashdot0902"]:
    lines = gzip.open(f".carry/o/datasets/{n}.mtx.gz", "rt").read().split("\n")
    i = 0
    while lines[i].startswith("%"): i += 1
    a = np.array(" ".join(lines[i+1:]).split(), dtype=np.int64).reshape(-1, 2)
    a = a[np.lexsort((a[:, 0], a[:, 1]))]
    with open(f"/tmp/ds/{n}.mtx", "w") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n" + lines[i] + "\n")
        np.savetxt(f, a, fmt="%d")
PY
echo "sorted t=$SECONDS" | tee -a $o
r=$(GOP_EXP_EIDPOS=1 $c/gopc run stdlib:u_mul_e_sum --graph /tmp/ds/soc-Slashdot0902.mtx --F 32 --schedule "spmm_teams8(64, 4)" --gpu --check 2>&1 | grep -E "check|error" | head -1); echo "check eidpos: $r" | tee -a $o
t() { env $5 $c/gopc run stdlib:$1 --graph $2 --F $3 --schedule "$4" --gpu --warmup 10 --reps 50 2>&1 | sed -n 's/^  time \([0-9.]*\) ms.*/\1/p' | head -1; }
ab() { # op graph F schedule
  local l=""
  for m in GOP_EXP_ADDR=0 GOP_EXP_EIDPOS=1,GOP_EXP_ADDR=0 GOP_EXP_ADDR=1 GOP_EXP_EIDPOS=1,GOP_EXP_ADDR=1 GOP_EXP_ADDR=0 GOP_EXP_EIDPOS=1,GOP_EXP_ADDR=0; do l="$l ${m//GOP_EXP_/}:$(t $1 $2 $3 "$4" "${m//,/ }")"; done
  echo "$(basename $2) $1 F=$3 [$4]:$l" | tee -a $o
}
A=/tmp/ds/ogbn-arxiv.mtx; C=/tmp/ds/cnr-2000.mtx; S=/tmp/ds/soc-Slashdot0902.mtx
for op in u_mul_e_sum copy_u_sum; do
  ab $op $C 128 "spmm_groups(64, 4)"
  ab $op $C 32 "spmm_teams8(64, 4)"
  ab $op $A 128 "spmm_teams8(64, 16)"
  ab $op $A 256 "spmm_groups(64, 4)"
  ab $op $S 32 "spmm_teams8(64, 4)"
  ab $op $S 128 "spmm_groups(64, 4)"
done
for F in 32 64 128 256; do
  l=""; for m in 0 1 2 0 1 2; do l="$l $m:$(t u_dot_v $A $F "sddmm_vec4(4)" GOP_EXP_ADDR=$m)"; done; echo "arxiv u_dot_v F=$F [sddmm_vec4(4)]:$l" | tee -a $o
done
l=""; for m in 0 1 2 0 1 2; do l="$l $m:$(t u_dot_v $A 64 "sddmm_vec4(1)" GOP_EXP_ADDR=$m)"; done; echo "arxiv u_dot_v F=64 [sddmm_vec4(1)]:$l" | tee -a $o
echo "t=$SECONDS" | tee -a $o
