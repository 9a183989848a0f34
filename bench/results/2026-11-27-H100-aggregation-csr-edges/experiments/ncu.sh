#!/bin/bash
# Nsight Compute: weighted vs unweighted group kernels on cnr-2000 (dst-sorted) F=128.
cd "$(dirname "$0")/../.."
c=.carry/o
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' $c/gopc.xz $c/gopc; chmod +x $c/gopc
mkdir -p /tmp/ds $OUT/n
python3 - <<'PY'
import gzip, numpy as np
for n in ["cnr-2000"]:
    lines = gzip.open(f".carry/o/datasets/{n}.mtx.gz", "rt").read().split("\n")
    i = 0
    while lines[i].startswith("%"): i += 1
    a = np.array(" ".join(lines[i+1:]).split(), dtype=np.int64).reshape(-1, 2)
    a = a[np.lexsort((a[:, 0], a[:, 1]))]
    with open(f"/tmp/ds/{n}.mtx", "w") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n" + lines[i] + "\n")
        np.savetxt(f, a, fmt="%d")
PY
N="/usr/local/cuda/bin/ncu --csv --page details --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats --section ComputeWorkloadAnalysis --section SpeedOfLight --section InstructionStats -k regex:_s1 -c 1"
i=0; for v in "u_mul_e_sum GOP_EXP_ADDR=1 GOP_EXP_EIDPOS=1" "u_mul_e_sum GOP_EXP_ADDR=1" "copy_u_sum GOP_EXP_ADDR=1" "copy_u_sum GOP_EXP_ADDR=0"; do
  set -- $v; op=$1; shift; i=$((i+1))
  env "$@" $N $c/gopc run stdlib:$op --graph /tmp/ds/cnr-2000.mtx --F 128 --schedule "spmm_groups(64, 4)" --gpu --warmup 2 --reps 1 > $OUT/n/$i-$op.csv 2>&1
done
cd $OUT && tar czf ncu.tgz n && rm -rf n
