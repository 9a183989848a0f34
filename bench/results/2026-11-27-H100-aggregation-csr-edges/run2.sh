#!/bin/bash
# The CSR-order run (2026-11-27)'s second call (an H100, as the first): molhiv, the graph the
# first call left out, in both edge orders beside its peers; gopc runs
# through the API on reordered graphs (kernels for edge ids in CSR order,
# chosen by the run) checked against the interpreter; and the GPU suite's
# representative tier on three graphs.
# Carry (made here): .carry/gpu from tools/gpu-prepare.sh (cora citeseer
# pubmed molhiv; gop, python, faults and the all-operators packs left out
# to fit), its suite packs tarred (packs.tar.xz), gop_bench's u_mul_e_sum
# plans for molhiv in bench/ (file order) and bench-dst/ (--edges dst).
set -u
c=.carry/gpu
o=$OUT
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } | tee $o/run2.log
SECONDS=0
python3 -c 'import tarfile; tarfile.open(".carry/gpu/packs.tar.xz").extractall(".carry/gpu")'
bash tools/gpu-unpack.sh $c > /dev/null
timeout 150 $c/gop_bench run $c/bench-dst $c/datasets --csv $o/gop-dst-molhiv.csv --reps 10 --budget-s 120 > $o/gop-dst-molhiv.log 2>&1
echo "gop dst rc=$? t=$SECONDS; $(tail -1 $o/gop-dst-molhiv.log)" | tee -a $o/run2.log
timeout 150 $c/gop_bench run $c/bench $c/datasets --csv $o/gop-input-molhiv.csv --reps 10 --budget-s 120 > $o/gop-input-molhiv.log 2>&1
echo "gop input rc=$? t=$SECONDS; $(tail -1 $o/gop-input-molhiv.log)" | tee -a $o/run2.log
timeout 150 bash bench/peers/run_peers.sh $c/datasets $o/peers-molhiv molhiv > $o/peers-molhiv.log 2>&1
echo "peers rc=$? t=$SECONDS" | tee -a $o/run2.log
# through the API: a reordered graph's run compiles kernels for CSR order
for g in cora pubmed; do
  for s in default "spmm_groups(16, 4)" "spmm_groupsp(16, 4)" "spmm_teams(16, 8)" "spmm_vec4(4)" "spmm_rows(4, 4)" "warp_vertex(1, 1)" "thread_edge(2, 8)"; do
    for op in u_mul_e_sum u_mul_e_max; do
      sa=(); [ "$s" = default ] || sa=(--schedule "$s")
      r=$($c/gopc run stdlib:$op --graph $c/datasets/$g.mtx.gz --F 40 --reorder none "${sa[@]}" --gpu --check 2>&1 | grep -E "check:|error" | head -1)
      echo "api $g $op [$s]: $r" | tee -a $o/api.log
    done
  done
done
echo "api t=$SECONDS: $(grep -c 'agrees' $o/api.log) of $(grep -c . $o/api.log) agree" | tee -a $o/run2.log
GOP_SUITE_TIERS=rep GOP_SUITE_GRAPHS="cora pubmed molhiv" GOP_SUITE_BUDGET_S=$((520 - SECONDS)) \
  timeout $((580 - SECONDS)) bash tests/gpu/run.sh $c $o/suite > $o/suite.log 2>&1
echo "suite rc=$? t=$SECONDS" | tee -a $o/run2.log
tail -15 $o/suite.log
cd $o && tar czf out2.tgz *.csv *.log peers-molhiv suite 2>/dev/null; ls
