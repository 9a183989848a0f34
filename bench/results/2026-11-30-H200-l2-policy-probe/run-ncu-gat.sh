c=.carry/l2
xz -dc $c/gopc.xz > /tmp/gopc && chmod +x /tmp/gopc
ncu=$(command -v ncu)
g=$c/datasets/ogbn-arxiv.mtx.gz
for hc in "8 8 gat_groups(32, 8, 16)" "1 40 gat_teams(32, 4, 16)"; do
  set -- $hc; H=$1 C=$2; s=${hc#* * }
  echo "=== gat_attention H=$H C=$C $s"
  $ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats -k regex:'gat_attention_s[0-9]' --launch-skip 0 --launch-count 7 \
    /tmp/gopc run $c/layers.gop --op gat_attention --graph $g --reorder none --H $H --C $C --schedule "$s" --gpu --reps 1 --warmup 0 2>&1 | grep -vE "^==PROF==|^\s*$"
done
for F in 64 40; do
echo "=== copy_u_sum F=$F spmm_teams(64, 16)"
$ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats -k regex:'copy_u_sum_s1' --launch-count 1 \
  /tmp/gopc run stdlib:copy_u_sum --graph $g --reorder none --F $F --schedule 'spmm_teams(64, 16)' --gpu --reps 1 --warmup 0 2>&1 | grep -vE "^==PROF==|^\s*$"
done
