#!/usr/bin/env bash
# bench/feature_tiles.sh CARRY OUT: spmm_tiles(G, T) (feature tiles
# outside the neighbour groups, docs/scheduling.md) against the untuned
# choice, the group schedules and spmm_teams with the same (G, T), f32
# copy_u_sum, on the GPU machine.
#
# CARRY is bench/tc_probe.sh's (prepare: the static gopc and the graphs).
# Per graph (GOP_TILES_GRAPHS, default cnr-2000, ogbn-arxiv, molhiv,
# blogcatalog, then rmat22: R-MAT 22/16 written once as a .gopg in a
# temporary folder) and F = 64, 128, 256 (R-MAT: 64, 128), one line
# of medians of 20 (`gopc run --gpu`, ms); the two spmm_tiles points at
# F = 64 on the real graphs are first checked against the interpreter
# (a failed check prints BAD before the time). Writes OUT/tiles.log
# (every gopc output). Stops starting runs after GOP_TILES_BUDGET seconds
# (default 540) and says so.
source "$(dirname "$0")/../tools/gpu-common.sh"
gpu_usage "bench/feature_tiles.sh CARRY OUT" 2 "$@"
gpu_carry "$1"
gpu_out "$2"
budget=${GOP_TILES_BUDGET:-540}
gpu_name
graphs=${GOP_TILES_GRAPHS:-cnr-2000 ogbn-arxiv molhiv blogcatalog rmat22}
rmat=$(mktemp -d)/rmat22.gopg
case " $graphs " in
*" rmat22 "*) "$gopc" graph rmat:22:16 -o "$rmat" >/dev/null || echo "could not write rmat:22:16" ;;
esac
# each spmm_tiles(G, T) beside spmm_teams(G, T), the same kernel with the
# groups loop outermost: the tile order's own share of the difference
scheds=(model 'spmm_groups(32, 4)' 'spmm_groups(64, 4)' 'spmm_teams8(64, 32)'
  'spmm_teams(64, 8)' 'spmm_tiles(64, 8)' 'spmm_teams(32, 16)' 'spmm_tiles(32, 16)'
  'spmm_tiles(32, 8)' 'spmm_tiles(64, 4)')
# GOP_TILES_SCHEDS: another list, separated by semicolons ("model" is the
# untuned choice)
[ -n "${GOP_TILES_SCHEDS:-}" ] && IFS=';' read -r -a scheds <<<"$GOP_TILES_SCHEDS"
for g in $graphs; do
  case $g in rmat22) path=$rmat ;; *) path=$carry/datasets/$g.mtx.gz ;; esac
  [ -f "$path" ] || { echo "no $path"; continue; }
  for F in 64 128 256; do
    [ $g = rmat22 ] && [ $F = 256 ] && continue
    if ((SECONDS > budget)); then echo "STOPPED: the ${budget}s budget is spent"; break 2; fi
    line="$g F=$F:"
    for s in "${scheds[@]}"; do
      sarg=(--schedule "$s")
      [ "$s" = model ] && sarg=()
      chk=()
      [ $g != rmat22 ] && [ $F = 64 ] && [[ $s == spmm_tiles\(32,\ 8\) || $s == spmm_tiles\(64,\ 4\) ]] &&
        chk=(--check)
      r=$("$gopc" run stdlib:copy_u_sum --graph "$path" --F $F "${sarg[@]}" --gpu --reps 20 \
        "${chk[@]}" 2>&1)
      printf '### %s %s %s\n%s\n' "$g" "$F" "$s" "$r" >>"$out/tiles.log"
      t=$(echo "$r" | gpu_ms)
      [ ${#chk[@]} = 0 ] || echo "$r" | grep -q "check:.*agree" || t="BAD$t"
      line="$line $s=${t:-ERR};"
    done
    echo "$line"
  done
done
rm -f "$rmat"
echo "done in $SECONDS s"
