#!/usr/bin/env bash
# tests/gathercache/run.sh SUITE_DIR GOPC: bench/gather_cache.c's counts
# on a graph small enough to count by hand (star.mtx; F = 4, rows of 16
# bytes; no L1, an L2 of two rows), and its refusals.
#
# By hand (star.csv): the CSR is 5 offsets and 5 sources (40 bytes); the
# stream 0 | 0 1 3 | 0 reaches L2 whole (5 rows, 80 bytes). LRU of two
# rows misses 0, 1, 3 and then 0 again (4 rows, 64 bytes); Belady keeps 0
# and drops 1 for 3, missing 3 (48). Panels of 2 gather 0 | 0 1 3, and LRU
# misses 3 of them; one panel of 4 gathers 0 1 3. Source blocks: X (4 rows)
# over the L2 (2 rows) is S = 2 ranges {0, 1} {2, 3}; destination 2 is
# reached by both (3 rows of Y: written, read, written), 0, 1 and 3 once
# (6 rows, 96 bytes), the CSR's offsets read once more a range; at S = 4
# every source its own range, destination 2 reached three times (8 rows),
# and no more ranges than vertices. The tool is $GOP_GATHER_CACHE (set by
# ctest), else bench/gop_gather_cache beside GOPC.
set -u
source "$(dirname "$0")/../golden.sh"
golden_setup "$@"
golden_program GOP_GATHER_CACHE bench/gop_gather_cache gop_gather_cache
tool=$runner

if "$tool" --F 4 --l2-mb 0.000032 --l1-kb 0 --csv "$work/star.csv" star.mtx >"$work/out" 2>&1; then
  golden_check star.csv "$work/star.csv" "the counts on star.mtx" && golden_ok
else
  golden_bad "gop_gather_cache on star.mtx: $(tail -2 "$work/out")"
fi
# with an L1 of 200 KB every destination's block goes to one SM, whose L1
# holds the three rows: 3 reach L2
"$tool" --F 4 --csv "$work/l1.csv" star.mtx >/dev/null 2>&1
if grep -q '^star.mtx,none,4,4,5,lru,40,48,64,48$' "$work/l1.csv"; then golden_ok
else golden_bad "the L1 of 200 KB: $(grep ',lru,' "$work/l1.csv")"; fi

# an L2 smaller than a row keeps nothing: the 3 rows the L1 misses are read
# from DRAM; source blocks stop at a range a vertex (S = 4)
"$tool" --F 4 --l2-mb 0.000001 --csv "$work/tiny.csv" star.mtx >/dev/null 2>&1
if grep -q '^star.mtx,none,4,4,5,lru,40,48,64,48$' "$work/tiny.csv" &&
   [ "$(grep -c ',blocks' "$work/tiny.csv")" = 1 ] &&
   grep -q '^star.mtx,none,4,4,5,blocks4,120,64,128,48$' "$work/tiny.csv"; then golden_ok
else golden_bad "the L2 of one byte: $(tr '\n' ' ' <"$work/tiny.csv")"; fi

# refusals: exit status 2 (1 for a graph that cannot be read) and a message
refuse() {
  local want=$1 msg=$2
  shift 2
  "$tool" "$@" >"$work/r.out" 2>"$work/r.err"
  local rc=$?
  if [ $rc -eq "$want" ] && grep -qF -- "$msg" "$work/r.err"; then golden_ok
  else golden_bad "gop_gather_cache $*: exit $rc, $(head -2 "$work/r.err")"; fi
}
refuse 2 "--F wants widths 1..4096 separated by commas, got '4,x'" --F 4,x star.mtx
refuse 2 "--F wants widths" --F 0 star.mtx
refuse 2 "--l2-mb wants a number, got '-1'" --l2-mb -1 star.mtx
refuse 2 "--l2-gbps must be above 0" --l2-gbps 0 star.mtx
refuse 2 "--orders bogus: unknown method" --orders none,bogus star.mtx
refuse 2 "no graph given" --F 4
refuse 2 "usage:" --nonsense star.mtx
refuse 1 "nothere.mtx" nothere.mtx
# a refused command line leaves the --csv file as it was
echo "the user's file" >"$work/keep.csv"
refuse 2 "--F wants widths" --csv "$work/keep.csv" --F 0 star.mtx
if [ "$(cat "$work/keep.csv")" = "the user's file" ]; then golden_ok
else golden_bad "a refused command line changed the --csv file"; fi
golden_summary
