#!/usr/bin/env bash
# Prepares what the GPU machine needs for bench/run-all.sh and
# tests/gpu/run.sh, in .carry/gpu/ (git-ignored; name `.carry/gpu` in the
# device tool's carry list; about 50 MB, under its 64 MiB limit):
#   gopc, gop        gopc and the REPL with LLVM's NVPTX backend linked in
#                    statically (xz'ed when the graphs take much room;
#                    tools/gpu-unpack.sh unpacks them on the GPU machine)
#   suite, gop_bench the GPU suite and benchmark runners, built without LLVM
#   faults           the GPU fault tests' runner (tests/gpu/faults.sh), and
#   faults.pack      copy_u_sum's kernel pack, which it breaks
#   packs/           the representative ops x named schedules x settings as
#                    kernel packs (docs/operators.md names the subset)
#   packs-all.tar.xz every stdlib op x named schedule x setting (xz'ed)
#   bench/           the benchmark's plan (bench/gop_bench.c) and its packs
#   noise/           a small plan (the default, chosen and model's best rows
#                    of u_mul_e_sum, copy_u_sum and u_dot_v at F = 16 and 64
#                    on cora, citeseer and pubmed) for bench/timing_noise.sh:
#                    the spread between identical calls, events against graph
#                    replay (bench/README.md, Timing)
#   python/          the Python package's GPU checks (tests/gpu/python_check.sh,
#                    tests/gpu/train.sh): libgop.so without LLVM (SQLite
#                    linked in), and kernels/, every kernel the checks run
#                    (forward and derived backward) as packs
#   datasets/        the graphs, from ../shared/datasets
# Usage: tools/gpu-prepare.sh [GRAPH...]   (default: all 14 of MANIFEST.md)
# GOP_BENCH_TOP (default 3) is the number of the cost model's best points
# the benchmark measures per case, besides each strategy's best;
# GOP_BENCH_OPS (default: gop_bench's seven) the operators it plans;
# GOP_PREPARE_SUITE=0 leaves out the suite's packs (a benchmark-only call);
# GOP_PREPARE_ONLY=python prepares only python/ and the graphs (a few MB:
#   GOP_PREPARE_ONLY=python tools/gpu-prepare.sh cora pubmed ogbn-arxiv);
# GOP_PREPARE_ONLY=pylong what tests/gpu/python_longrun.sh needs, in
#   .carry/pylong (a few MB): libgop.so without LLVM, the kernels the long
#   runs and the thread check launch (tests/gpu/python_longrun.py --prepare,
#   compiled by build-python's libgop.so) and the graphs (default pubmed
#   ogbn-arxiv): GOP_PREPARE_ONLY=pylong tools/gpu-prepare.sh
# GOP_PREPARE_ONLY=noise what bench/timing_noise.sh needs (a few MB): gop_bench
#   without LLVM, noise/ and cora, citeseer, pubmed:
#   GOP_PREPARE_ONLY=noise tools/gpu-prepare.sh
# GOP_PREPARE_ONLY=models only gopc and the graphs, for tests/gpu/models.sh
#   and bench/models.sh (GOP_PREPARE_ONLY=models tools/gpu-prepare.sh, by
#   default cora, pubmed, ogbn-arxiv and molhiv);
# GOP_PREPARE_ONLY=index64 what tests/gpu/index64.sh needs (a few MB): gopc
#   and its ring runner index64 without LLVM, kernel packs of 64-bit indices
#   (index64/small: every representative operator x schedule, for checks
#   on cora with GOP_INDEX64=1; index64/big: the ring past 2^31 edges),
#   32-bit packs for the refusals and the |V| x F > 2^31 ring, and cora.
# GOP_PREPARE_ONLY=reliability what tests/gpu/reliability.sh needs, in
#   .carry/rel (about 30 MB): gopc, suite, threads and longrun built without
#   LLVM (in GOP_BUILD_NOLLVM, default build-nollvm), the representative
#   tier's packs (packs/) and the list of those initcheck runs
#   (initcheck/list.txt), the 64-bit packs of index64/small (neighbour
#   groups included) and the refusal's pack, the kernels of the thread and
#   long-run checks as cache folders (threads-kernels/, longrun-kernels/),
#   compiled by a build with LLVM (GOP_BUILD_LLVM, default build-static),
#   and the graphs (default cora pubmed):
#   GOP_PREPARE_ONLY=reliability tools/gpu-prepare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# build_static TARGET...: the targets in build-static (LLVM's NVPTX backend
# linked in statically: gopc and the preparations that compile here);
# build_nollvm TARGET...: in build-nollvm (no LLVM: what runs on the GPU
# machine, which has none).
build_static() {
  cmake -S . -B build-static -G Ninja -DGOP_STATIC=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-static --target "$@" >/dev/null
}
build_nollvm() {
  cmake -S . -B build-nollvm -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-nollvm --target "$@" >/dev/null
}
out=.carry/gpu
graphs=("$@")

# The Python package's check: a libgop.so without LLVM (the GPU machine has
# none) and the kernels it needs, compiled here into a cache folder of packs
# by a libgop.so with LLVM (both load them: the keys are the same).
prepare_python() {
  build_nollvm gop_shared
  cmake -S . -B build-python -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-python --target gop_shared >/dev/null
  mkdir -p "$out/python"
  strip -o "$out/python/libgop.so" build-nollvm/libgop.so
  GOP_LIBRARY=build-python/libgop.so GOP_CUDA_LIBRARY=/nonexistent/libcuda.so \
    GOP_CACHE_DIR="$out/python/kernels" PYTHONPATH=python \
    python3 tests/gpu/python_check.py --prepare
  # bench/train.py (tests/gpu/train.sh): every kernel its gradcheck and its
  # training call, forward and derived backward, the training's at the
  # schedule gop_choose_schedule picks for each call's graph and width
  # (gop.plan: the calls gop.nn's layers make) and at the default mapping;
  # no tuning database, as on the GPU machine
  env -u GOP_TUNE_DB GOP_LIBRARY=build-python/libgop.so \
    GOP_CUDA_LIBRARY=/nonexistent/libcuda.so GOP_CACHE_DIR="$out/python/kernels" \
    PYTHONPATH=python python3 bench/train.py --prepare --datasets ../shared/datasets \
    --graphs "${GOP_TRAIN_GRAPHS:-pubmed ogbn-arxiv}"
}
# noise/: gop_bench's plan for bench/timing_noise.sh, cut to the rows a user
# meets (default, chosen, the model's best) so that a call takes seconds;
# the packs no row names are dropped. Needs build-static's gop_bench and
# $out/datasets with the graphs.
prepare_noise() {
  local n=$out/noise g
  local small=()
  for g in cora citeseer pubmed; do [ -f "$out/datasets/$g.mtx.gz" ] && small+=("$g"); done
  build-static/bench/gop_bench plan "$n" "$out/datasets" --graphs "${small[*]}" --top 1 \
    --ops "u_mul_e_sum copy_u_sum u_dot_v" --F "16 64" | tail -1
  awk -F'\t' '/^#/ || $4 == "default" || $4 ~ /^chosen/ || ($4 == "model" && $5 == 1)' \
    "$n/plan.txt" >"$n/plan.cut" && mv "$n/plan.cut" "$n/plan.txt"
  cut -f8 "$n/plan.txt" | grep -v '^#' | sort -u >"$n/keep"
  for f in "$n"/*.pack; do grep -qxF "$(basename "$f")" "$n/keep" || rm -f "$f"; done
  rm -f "$n/keep"
  echo "noise plan: $(grep -vc '^#' "$n/plan.txt") rows, $(ls "$n"/*.pack | wc -l) packs"
}
if [ "${GOP_PREPARE_ONLY:-}" = noise ]; then
  rm -rf "$out" && mkdir -p "$out/datasets"
  build_static gop_bench
  build_nollvm gop_bench
  strip -o "$out/gop_bench" build-nollvm/bench/gop_bench
  [ ${#graphs[@]} -gt 0 ] || graphs=(cora citeseer pubmed)
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"; done
  prepare_noise
  du -sh "$out"
  exit 0
fi
if [ "${GOP_PREPARE_ONLY:-}" = python ]; then
  [ ${#graphs[@]} -gt 0 ] || graphs=(cora pubmed ogbn-arxiv)
  rm -rf "$out" && mkdir -p "$out/datasets"
  prepare_python
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"; done
  du -sh "$out"
  exit 0
fi
# GOP_PREPARE_ONLY=pylong: what tests/gpu/python_longrun.sh needs, in
# .carry/pylong: python/libgop.so without LLVM, python/kernels/ (every
# kernel of its three parts as packs, compiled here with no tuning
# database, as the GPU run chooses) and the graphs
if [ "${GOP_PREPARE_ONLY:-}" = pylong ]; then
  [ ${#graphs[@]} -gt 0 ] || graphs=(pubmed ogbn-arxiv)
  p=.carry/pylong
  rm -rf "$p" && mkdir -p "$p/datasets" "$p/python"
  build_nollvm gop_shared
  cmake -S . -B build-python -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-python --target gop_shared >/dev/null
  strip -o "$p/python/libgop.so" build-nollvm/libgop.so
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$p/datasets/"; done
  env -u GOP_TUNE_DB GOP_LIBRARY=build-python/libgop.so \
    GOP_CUDA_LIBRARY=/nonexistent/libcuda.so GOP_CACHE_DIR="$p/python/kernels" \
    PYTHONPATH=python python3 tests/gpu/python_longrun.py --prepare --datasets "$p/datasets"
  du -sh "$p"
  exit 0
fi
# GOP_PREPARE_ONLY=multigpu: what tests/gpu/multigpu.sh needs, in
# .carry/mgpu (a few MB): libgop.so without LLVM, the kernel cache that
# bench/multigpu.py prepare fills (every kernel its phases run), and the
# graphs (default cora, pubmed, ogbn-arxiv)
if [ "${GOP_PREPARE_ONLY:-}" = multigpu ]; then
  [ ${#graphs[@]} -gt 0 ] || graphs=(cora pubmed ogbn-arxiv)
  m=.carry/mgpu
  rm -rf "$m" && mkdir -p "$m/datasets"
  build_nollvm gop_shared
  cmake -S . -B build-python -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-python --target gop_shared >/dev/null
  strip -o "$m/libgop.so" build-nollvm/libgop.so
  GOP_LIBRARY=build-python/libgop.so GOP_CUDA_LIBRARY=/nonexistent/libcuda.so \
    PYTHONPATH=python python3 bench/multigpu.py prepare --cache "$m/kernels"
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$m/datasets/"; done
  du -sh "$m"
  exit 0
fi
if [ "${GOP_PREPARE_ONLY:-}" = models ]; then
  [ ${#graphs[@]} -gt 0 ] || graphs=(cora pubmed ogbn-arxiv molhiv)
  rm -rf "$out" && mkdir -p "$out/datasets"
  build_static gopc
  strip -o "$out/gopc" build-static/gopc
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"; done
  du -sh "$out"
  exit 0
fi
# spill_ptx GOPC FILE: the PTX of a kernel that spills at the occupancy
# floor gop asks for (copy_e_sum_s1, 64-bit spmm_groups(1, 1): 4 bytes at
# 768 threads an SM, none at 384), for tests/gpu/test_driver's check that
# the runtime lowers the floor (tests/gpu/run.sh passes it as GOP_SPILL_PTX)
spill_ptx() {
  "$1" emit stdlib:copy_e_sum --stage ptx --schedule 'spmm_groups(1, 1)' --index64 \
    --target sm_90 >"$2"
}
# index64_small GOPC DIR: every representative operator x named schedule
# (a setting of 2s) and the default, packed in 64-bit by GOPC (with LLVM)
# into DIR: DIR/N.pack listed in DIR/list.txt (N.pack|op|schedule|extents,
# for tests/gpu/index64.sh's gopc runs), the same packs in DIR/suite/list.txt
# (the GPU suite's format, for one `suite run` with GOP_INDEX64=1), and
# what the compiler refused, with why, in DIR/refused.txt.
index64_small() {
  local pack=$1 small=$2 t=sm_90 n=0 op sched sig ext
  local ops scheds sargs
  mkdir -p "$small/suite"
  : >"$small/list.txt"
  : >"$small/refused.txt"
  : >"$small/suite/list.txt"
  mapfile -t ops < <("$pack" ops --representative | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p')
  mapfile -t scheds < <(sed -n 's/^schedule \([A-Za-z_][A-Za-z0-9_]*\)(\([^)]*\)).*/\1 \2/p' \
    stdlib/schedules*.gop | awk '{s = $1 "("; for (i = 1; i < NF; i++) s = s (i > 1 ? ", " : "") "2"; print s ")"}')
  for op in "${ops[@]}"; do
    for sched in default "${scheds[@]}"; do
      sargs=()
      [ "$sched" != default ] && sargs=(--schedule "$sched")
      "$pack" emit "stdlib:$op" --stage lowered "${sargs[@]}" >/dev/null 2>&1 || continue
      n=$((n + 1))
      # the extents its signature names: F = 16, H = 2
      sig=$("$pack" ops --representative | grep "^$op(")
      ext=""
      [[ $sig == *F]* ]] && ext="--F 16"
      [[ $sig == *", H"* ]] && ext="$ext --H 2"
      if "$pack" pack "stdlib:$op" "${sargs[@]}" --target $t --index64 \
           -o "$small/$n.pack" >/dev/null 2>"$small/err"; then
        echo "$n.pack|$op|$sched|$ext" >>"$small/list.txt"
        printf '%s\t%s\t../%s\n' "$op" "$sched" "$n.pack" >>"$small/suite/list.txt"
      else
        echo "$op $sched: $(grep -m1 'error:' "$small/err" | sed 's/.*error: //')" >>"$small/refused.txt"
      fi
    done
  done
  rm -f "$small/err"
}
# initcheck_list PACKS DIR: DIR/list.txt (the GPU suite's format, naming
# the packs of PACKS as ../packs/FILE) of what reliability.sh's initcheck
# part runs with the runner's --no-poison, so that the tensors the kernels
# write whole stay unwritten until they do:
#   - every pack with a tensor the op fills itself (a `tensor ... filled`
#     line: neighbour-group outputs, passes/fill.c; the segmented rows of
#     edge_softmax under deterministic(), passes/segment.c), at the first
#     and the last of its schedule's settings (tests/gpu/suite.c: the last
#     splits rows or features unevenly, e.g. gnnadvisor(16, 5)'s 5 lanes on
#     32 features, where a forgotten tail would be), in every variant
#     (deterministic(), interleaved); the middle setting is left out to
#     keep the part short;
#   - every operator's default mapping: plain-store outputs (edge-wise
#     operators, edge_softmax) and reduction targets the runtime fills
#     (cuMemsetD32: initialised, so no finding).
# 179 packs of the representative tier's 1,179; one launch each on cora.
initcheck_list() {
  local packs=$1 dir=$2 filled
  mkdir -p "$dir"
  filled=$(cd "$packs" && { grep -l '^tensor .* filled$' -- *.pack || true; } | tr '\n' ' ')
  # shellcheck disable=SC2016 # awk's fields, not the shell's
  awk -F'\t' -v filled="$filled" '
    BEGIN { n = split(filled, f, " "); for (i = 1; i <= n; i++) has[f[i]] = 1 }
    $3 == "REFUSED" { next }
    { k = $3; sub(/\.pack$/, "", k); sub(/.*_/, "", k) } # the setting: 0..2, 3..5, 6..8
    $2 == "default" || ($3 in has && k % 3 != 1) { print $1 "\t" $2 "\t../packs/" $3 }' \
    "$packs/list.txt" >"$dir/list.txt"
}
# GOP_PREPARE_ONLY=suite: the GPU suite's two tiers alone (tests/gpu/run.sh
# with GOP_SUITE_PRELUDE=0), in .carry/suite: the runner built without
# LLVM, the representative packs, every stdlib operator's packs (xz'ed:
# ~100 MB of PTX) and the graphs named (default cora citeseer pubmed).
if [ "${GOP_PREPARE_ONLY:-}" = suite ]; then
  [ ${#graphs[@]} -gt 0 ] || graphs=(cora citeseer pubmed)
  s=.carry/suite
  rm -rf "$s" && mkdir -p "$s/datasets"
  build_static gop_gpu_suite
  build_nollvm gop_gpu_suite
  strip -o "$s/suite" build-nollvm/tests/gop_gpu_suite
  build-static/tests/gop_gpu_suite prepare "$s/packs" | tail -1
  build-static/tests/gop_gpu_suite prepare "$s/packs-all" --all | tail -1
  tar -C "$s" -cf - packs-all | xz -6 -T0 >"$s/packs-all.tar.xz" && rm -rf "$s/packs-all"
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$s/datasets/"; done
  du -sh "$s"
  exit 0
fi
if [ "${GOP_PREPARE_ONLY:-}" = reliability ]; then
  [ ${#graphs[@]} -gt 0 ] || graphs=(cora pubmed)
  rel=.carry/rel
  llvm=${GOP_BUILD_LLVM:-build-static}
  nollvm=${GOP_BUILD_NOLLVM:-build-nollvm}
  rm -rf "$rel" && mkdir -p "$rel/datasets" "$rel/index64"
  [ -f "$llvm/CMakeCache.txt" ] ||
    cmake -S . -B "$llvm" -G Ninja -DGOP_STATIC=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$llvm" --target gopc gop_gpu_suite gop_gpu_threads gop_gpu_longrun >/dev/null
  cmake -S . -B "$nollvm" -G Ninja -DGOP_WITH_LLVM=OFF -DGOP_STATIC=ON \
        -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$nollvm" --target gopc gop_gpu_suite gop_gpu_longrun >/dev/null
  strip -o "$rel/gopc" "$nollvm/gopc"
  strip -o "$rel/suite" "$nollvm/tests/gop_gpu_suite"
  strip -o "$rel/longrun" "$nollvm/tests/gop_gpu_longrun"
  # compiled with no GPU here: for sm_90 (H100 and H200), the GPU's target
  export GOP_CUDA_LIBRARY=/nonexistent/libcuda.so
  "$llvm/tests/gop_gpu_suite" prepare "$rel/packs" | tail -1
  initcheck_list "$rel/packs" "$rel/initcheck"
  echo "initcheck: $(wc -l <"$rel/initcheck/list.txt") packs"
  # GAT's fused attention (examples/models/layers.gop), three stages with
  # temporaries between them: the default mapping and gat_groups (teams
  # of lanes that shuffle within a warp) and gat_teams (a group's in-edges
  # on a team's lanes, one lane storing: passes/promote.c) for the
  # sanitizers; the suite's runner sets H = 4, C = F / 4
  mkdir -p "$rel/gat"
  : >"$rel/gat/list.txt"
  for s in default 'gat_groups(32, 4, 32)' 'gat_groups(8, 2, 16)' 'gat_groups(32, 1, 8)' \
           'gat_teams(32, 4, 16)' 'gat_teams(16, 2, 8)'; do
    f=gat_attention__$(printf '%s' "$s" | tr -c 'a-z0-9' '_').pack
    sched=()
    [ "$s" = default ] || sched=(--schedule "$s")
    "$llvm/gopc" pack examples/models/layers.gop --op gat_attention "${sched[@]}" \
      --target sm_90 -o "$rel/gat/$f" >/dev/null
    printf 'gat_attention\t%s\t%s\n' "$s" "$f" >>"$rel/gat/list.txt"
  done
  index64_small "$llvm/gopc" "$rel/index64/small"
  echo "64-bit: $(wc -l <"$rel/index64/small/list.txt") packs, $(wc -l <"$rel/index64/small/refused.txt") refused"
  "$llvm/gopc" pack stdlib:copy_u_sum --schedule 'warp_vertex(1, 1)' --target sm_90 \
    -o "$rel/index64/narrow.pack" >/dev/null
  GOP_BUILD_LLVM=$llvm GOP_BUILD_NOLLVM=$nollvm bash tests/gpu/threads.sh --prepare "$rel"
  "$llvm/tests/gop_gpu_longrun" --prepare "$rel/longrun-kernels"
  for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$rel/datasets/"; done
  du -sh "$rel"
  exit 0
fi
if [ "${GOP_PREPARE_ONLY:-}" = index64 ]; then
  rm -rf "$out" && mkdir -p "$out/datasets" "$out/index64/small" "$out/index64/big"
  build_static gopc
  build_nollvm gopc gop_gpu_index64
  strip -o "$out/gopc" build-nollvm/gopc
  strip -o "$out/index64/index64" build-nollvm/tests/gop_gpu_index64
  pack=build-static/gopc
  t=sm_90 # H100 and H200
  # the ring past 2^31 edges: 64-bit kernels (name:F lines of list.txt)
  big=$out/index64/big
  : >"$big/list.txt"
  while IFS='|' read -r name op sched F; do
    "$pack" pack "stdlib:$op" --schedule "$sched" --target $t --index64 -o "$big/$name.pack" >/dev/null
    echo "$name.pack:$F" >>"$big/list.txt"
  done <<'LIST'
copy_u_sum-thread_vertex|copy_u_sum|thread_vertex(1, 1)|1
copy_u_sum-warp_vertex|copy_u_sum|warp_vertex(1, 1)|2
copy_u_sum-thread_edge|copy_u_sum|thread_edge(1, 1)|1
u_mul_e_sum-thread_vertex|u_mul_e_sum|thread_vertex(1, 1)|1
u_mul_e_sum-spmm_vec4p|u_mul_e_sum|spmm_vec4p(1)|4
LIST
  # |V| x F past 2^31 with 32-bit indices (ring:67108864:2, F = 33)
  "$pack" pack stdlib:copy_u_sum --schedule 'thread_vertex(1, 1)' --target $t \
    -o "$big/wide_rows-thread_vertex.pack" >/dev/null
  "$pack" pack stdlib:copy_u_sum --schedule 'warp_vertex(1, 1)' --target $t \
    -o "$big/wide_rows-warp_vertex.pack" >/dev/null
  index64_small "$pack" "$out/index64/small"
  small=$out/index64/small
  spill_ptx "$pack" "$out/spill.ptx"
  # the refusals: a 32-bit pack where 64-bit is asked for
  "$pack" pack stdlib:copy_u_sum --schedule 'warp_vertex(1, 1)' --target $t \
    -o "$out/index64/narrow.pack" >/dev/null
  cp ../shared/datasets/cora.mtx.gz "$out/datasets/"
  echo "$(wc -l <"$small/list.txt") small packs, $(wc -l <"$small/refused.txt") refused"
  du -sh "$out"
  exit 0
fi
[ ${#graphs[@]} -gt 0 ] || graphs=(cora citeseer pubmed wiki-Vote ca-HepPh musae-facebook
  deezer-HU blogcatalog proteins delaunay_n16 soc-Slashdot0902 ogbn-arxiv cnr-2000 molhiv)
rm -rf "$out" && mkdir -p "$out/datasets"

build_static gopc gop_repl gop_gpu_suite gop_bench
build_nollvm gop_gpu_suite gop_bench gop_gpu_faults
strip -o "$out/gopc" build-static/gopc
strip -o "$out/gop" build-static/gop
strip -o "$out/suite" build-nollvm/tests/gop_gpu_suite
spill_ptx build-static/gopc "$out/spill.ptx"
strip -o "$out/gop_bench" build-nollvm/bench/gop_bench
# the GPU fault tests (tests/gpu/faults.sh): their runner and a pack to break
strip -o "$out/faults" build-nollvm/tests/gop_gpu_faults
build-static/gopc pack stdlib:copy_u_sum --schedule 'thread_edge(1, 1)' \
  -o "$out/faults.pack" >/dev/null
if [ "${GOP_PREPARE_SUITE:-1}" != 0 ]; then
  build-static/tests/gop_gpu_suite prepare "$out/packs"
  build-static/tests/gop_gpu_suite prepare "$out/packs-all" --all
  tar -C "$out" -cJf "$out/packs-all.tar.xz" packs-all && rm -rf "$out/packs-all"
fi
prepare_python
for g in "${graphs[@]}"; do cp "../shared/datasets/$g.mtx.gz" "$out/datasets/"; done
# The largest graphs first: if the GPU run's budget runs out, it runs out
# on the small graphs, whose cases take least time to redo.
order=()
for g in cnr-2000 molhiv ogbn-arxiv; do [[ " ${graphs[*]} " == *" $g "* ]] && order+=("$g"); done
for g in "${graphs[@]}"; do [[ " ${order[*]} " == *" $g "* ]] || order+=("$g"); done
build-static/bench/gop_bench plan "$out/bench" "$out/datasets" --graphs "${order[*]}" \
  --top "${GOP_BENCH_TOP:-3}" --grid "u_mul_e_sum:blogcatalog:64" \
  ${GOP_BENCH_OPS:+--ops "$GOP_BENCH_OPS"} | tail -1
prepare_noise
# Many graphs leave no room for 60 MB of static binaries: compress them
# (bench/run-all.sh and tests/gpu/run.sh unpack them on the GPU machine).
if [ "$(du -sm "$out/datasets" | cut -f1)" -gt 16 ]; then xz -6 -T0 "$out/gopc" "$out/gop"; fi
du -sh "$out"
