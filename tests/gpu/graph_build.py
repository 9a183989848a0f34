"""Graph building on the GPU (tests/gpu/graph_build.sh runs this there).

  build   for R-MAT edge_index generated on the GPU (scales 18, 20 and 22,
          edge factor 16: 4M, 17M and 67M edges) and ogbn-arxiv: times
          gop.Graph.from_edge_index on the CUDA tensor (the device build,
          median of 5, the statistics' one synchronisation included) against
          the host build of the same edge_index (copied to the host first,
          the copy timed apart); checks the device build's arrays equal the
          host build's (read back from the .gopg file libgop writes) where
          the graph has at most 20M edges, its statistics everywhere, and
          that copy_u_sum gives the same result, bit for bit, on the two
          graphs (the adopted arrays are what the kernels read);
  train   GraphSAGE on mini-batches of ogbn-arxiv
          (examples/minibatch/sage_neighborloader.py: NeighborLoader, or its
          TorchSampler where PyG has no sampling backend), time per step
          split into graph build and compute, losses against PyG's SAGEConv
          on the same batches, and the host build of each batch timed
          beside the device build.

  tables  neighbour-group tables built on the GPU (gop.graph.build_groups,
          asked by libgop through the graph's builder) against the host's
          (GOP_GROUP_ORDER=dst), bit for bit, for plain tables and
          interleaved ones (two classes, and 3 and 8 quantile classes), on
          the carried shared graphs and R-MAT (scales 18, 20, 22), and on
          R-MAT 18 at 64-bit indices; copy_u_sum under two group schedules
          equal on the device- and host-built graphs; the build timed with
          the G = 32 table (from_edge_index + the table, synchronised,
          median of 5): the target is R-MAT 22's 67M edges in 50 ms or less;
  gopc    `gopc run` wall time on R-MAT 24 (268M edges) at F = 64, and on
          R-MAT 26 (1.07 billion) with --rmat26 (an H200's memory; the host
          build needs about 45 GB of RAM), the carried pack of copy_u_sum;
  index64 copy_u_sum at 64-bit against 32-bit indices (GOP_INDEX64=1, the
          carried packs of both widths) on R-MAT 20 and 22 and ogbn-arxiv,
          F = 64, spmm_vec4(2) and spmm_groups(32, 2): the target is within
          1.1x.
  profile the train phase's run with cProfile (--cprofile of the example):
          where a step's Python time goes, gop's and PyG's; not a default
          phase (cProfile slows the Python it watches); OUT/train.prof.

--phases picks some (default build,tables,gopc,index64,train,capture;
capture: gop.BatchGraph against build_arrays, and mini-batch training
through gop.train.CapturedBatches against PyG; profile on request; --skip
leaves some out). --prepare (here, no GPU needed) compiles the kernels the
Python parts run into $GOP_CACHE_DIR. Writes OUT/graph_build.json,
OUT/tables.json, OUT/gopc.json, OUT/index64.json and OUT/train.json."""
import argparse
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

import gop
from gop import _lib
from gop._context import _ctx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
F = 32  # copy_u_sum's width in the check


def example():
    path = os.path.join(ROOT, "examples", "minibatch", "sage_neighborloader.py")
    spec = importlib.util.spec_from_file_location("sage_neighborloader", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


# the group schedules the tables phase runs on both graphs, and the tables
# it compares: (G, distance, classes, threshold)
GROUP_SCHEDULES = ("spmm_groups(32, 2)", "gnnadvisor(8, 4); interleave(eo, 3, 2)")
TABLES = ((32, 0, 0, 0), (16, 4, 2, 0), (8, 2, 3, 0), (4, 1, 8, 0))
# the copy_u_sum packs the gopc and index64 phases run (tests/gpu/graph_build.sh
# --prepare packs them for both widths)
PACKS = {"vec4": "spmm_vec4(2)", "groups": "spmm_groups(32, 2)"}


def prepare():
    before = gop.cache_stats()["compiled"]
    for wide in (False, True):
        if wide:
            os.environ["GOP_INDEX64"] = "1"
        for ei in ([[0, 1, 2], [1, 2, 0]], [[1, 0, 2], [0, 1, 2]]):  # both edge layouts
            g = gop.Graph.from_edge_index(np.array(ei), 3)
            for s in (None,) + GROUP_SCHEDULES:
                gop.stdlib.copy_u_sum.prepare(g, schedule=s, F=F)
            if not wide:  # check_batch_graph's
                gop.stdlib.copy_u_mean.prepare(g, schedule=BATCH_SCHEDULE, F=64)
        os.environ.pop("GOP_INDEX64", None)
    example().prepare(argparse.Namespace(features=128, hidden=64, classes=16))
    print(f"graph_build: {gop.cache_stats()['compiled'] - before} kernels compiled into "
          f"{gop.cache_dir()}")


def rmat(scale, factor, seed, device):
    """Graph500's R-MAT (a=.57, b=.19, c=.19) edge_index on the device,
    vertex labels permuted; repeats and self-loops kept (both builds take
    them alike)."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    ne = factor << scale
    src = torch.zeros(ne, dtype=torch.int64, device=device)
    dst = torch.zeros(ne, dtype=torch.int64, device=device)
    for bit in range(scale):
        r = torch.rand(ne, generator=gen, device=device)
        src |= (r > 0.76).long() << bit
        dst |= (((r > 0.57) & (r <= 0.76)) | (r > 0.95)).long() << bit
    perm = torch.randperm(1 << scale, generator=gen, device=device)
    return torch.stack([perm[src], perm[dst]]), 1 << scale


_ARRAYS = ("src", "dst", "in_ptr", "in_eid", "in_src", "out_ptr", "out_eid", "out_dst")
_WIDTH = dict(zip(_ARRAYS, (4, 4, 8, 8, 4, 8, 8, 4)))


def host_arrays(g, folder):
    """The host build's arrays (graph/gopg.c's layout: the arrays'
    offsets and sizes from byte 48)."""
    import ctypes
    path = os.path.join(folder, "g.gopg")
    lib = _lib.lib
    lib.gop_graph_write_gopg.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
    if lib.gop_graph_write_gopg(_ctx, g._h, path.encode()) != 0:
        raise gop.GopError(lib.gop_diagnostics(_ctx).decode())
    data = np.fromfile(path, dtype=np.uint8)
    os.unlink(path)
    out = {}
    for i, name in enumerate(_ARRAYS):
        off, n, _ = struct.unpack_from("<QQQ", data, 48 + 24 * i)
        dt = np.int32 if _WIDTH[name] == 4 else np.int64
        out[name] = data[off:off + n].view(dt)
    return out


def sync():
    import torch
    torch.cuda.synchronize()


def build_case(name, ei, nv, full_check, tmp):
    import torch
    row = {"graph": name, "vertices": nv, "edges": int(ei.size(1))}
    times = []
    for _ in range(6):  # the first warms torch's allocator and sort
        sync()
        t = time.perf_counter()
        dg = gop.Graph.from_edge_index(ei, nv)
        sync()
        times.append(time.perf_counter() - t)
        if _ < 5:
            del dg
    row["device_build_ms"] = float(np.median(times[1:]) * 1e3)
    row["device_edges_per_s"] = row["edges"] / (row["device_build_ms"] / 1e3)
    t = time.perf_counter()
    ei_host = ei.cpu()
    row["copy_to_host_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    hg = gop.Graph.from_edge_index(ei_host, nv)
    row["host_build_ms"] = (time.perf_counter() - t) * 1e3
    row["host_edges_per_s"] = row["edges"] / (row["host_build_ms"] / 1e3)
    row["speedup"] = row["host_build_ms"] / row["device_build_ms"]
    problems = []
    for k in ("num_vertices", "num_edges", "in_degree_max", "out_degree_max", "isolated",
              "self_loops", "aes", "csr_edges"):
        if dg.info[k] != hg.info[k]:
            problems.append(f"statistic {k}: device {dg.info[k]}, host {hg.info[k]}")
    if abs(dg.info["in_degree_std"] - hg.info["in_degree_std"]) > 1e-9 * max(
            1.0, hg.info["in_degree_std"]):
        problems.append(f"in_degree_std: device {dg.info['in_degree_std']}, "
                        f"host {hg.info['in_degree_std']}")
    if full_check:
        ref = host_arrays(hg, tmp)
        arrays = dg._device[0]
        for k, v in ref.items():
            a = arrays[k].cpu().numpy().astype(v.dtype)
            if not np.array_equal(a, v):
                bad = int(np.argmax(a != v)) if a.shape == v.shape else -1
                problems.append(f"array {k} differs from the host build's (first at {bad})")
        row["arrays_checked"] = True
    # the kernels read the adopted arrays: the same result on both graphs.
    # Small integers as features: every sum is exact, so the order the
    # default mapping's atomics add in does not matter
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randint(-8, 9, (nv, F), device="cuda", generator=gen).float()
    yd = gop.stdlib.copy_u_sum(dg, x)
    yh = gop.stdlib.copy_u_sum(hg, x)
    sync()
    t = time.perf_counter()
    gop.stdlib.copy_u_sum(dg, x)
    sync()
    row["copy_u_sum_ms"] = (time.perf_counter() - t) * 1e3
    row["copy_u_sum_equal"] = bool(torch.equal(yd, yh))
    if not row["copy_u_sum_equal"]:
        problems.append(f"copy_u_sum differs on the device-built graph: max |diff| "
                        f"{float((yd - yh).abs().max())}")
    row["problems"] = problems
    print(f"{name}: {row['edges']} edges: device build {row['device_build_ms']:.2f} ms "
          f"({row['device_edges_per_s'] / 1e9:.2f} G edges/s), host build "
          f"{row['host_build_ms']:.1f} ms (+ {row['copy_to_host_ms']:.1f} ms copying the edges "
          f"to the host), {row['speedup']:.1f}x; copy_u_sum equal: {row['copy_u_sum_equal']}"
          f"{'; arrays equal' if full_check and not problems else ''}"
          f"{''.join(chr(10) + '  PROBLEM: ' + p for p in problems)}", flush=True)
    return row


def compare_tables(dg, hg, problems, label):
    """Every table of TABLES of the device-built graph dg (built on the GPU
    when asked) against the host-built hg's, bit for bit."""
    for G, ilv, K, thr in TABLES:
        what = f"{label}: table G {G}, distance {ilv}, {K} classes"
        d, h = dg.group_table(G, ilv, K, thr), hg.group_table(G, ilv, K, thr)
        for k in ("rows", "unowned_count", "threshold", "order"):
            if d[k] != h[k]:
                problems.append(f"{what}: {k} device {d[k]}, host {h[k]}")
        for k in ("dst", "first", "end", "vptr", "vrow", "unowned", "class_rows",
                  "class_min"):
            a, b = d[k].cpu().numpy().astype(np.int64), h[k].astype(np.int64)
            if a.shape != b.shape or not np.array_equal(a, b):
                bad = int(np.argmax(a != b)) if a.shape == b.shape else -1
                problems.append(f"{what}: {k} differs (first at {bad})")


def tables_case(name, ei, nv, time_it):
    """The tables phase on one edge_index (a CUDA tensor)."""
    import torch
    row = {"graph": name, "vertices": nv, "edges": int(ei.size(1)),
           "index_bits": lib_bits(nv, int(ei.size(1)))}
    problems = []
    dg = gop.Graph.from_edge_index(ei, nv, device_build=True)
    hg = gop.Graph.from_edge_index(ei.cpu(), nv, device_build=False)
    compare_tables(dg, hg, problems, name)
    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randint(-8, 9, (nv, F), device="cuda", generator=gen).float()
    for s in GROUP_SCHEDULES:
        yd = gop.stdlib.copy_u_sum(dg, x, schedule=s)
        yh = gop.stdlib.copy_u_sum(hg, x, schedule=s)
        if not torch.equal(yd, yh):
            problems.append(f"copy_u_sum under {s} differs on the device-built graph: max "
                            f"|diff| {float((yd - yh).abs().max())}")
    del dg, hg
    if time_it:
        plain, with_table = [], []
        for _ in range(6):  # the first warms torch's allocator and sort
            sync()
            t = time.perf_counter()
            g = gop.Graph.from_edge_index(ei, nv, device_build=True)
            sync()
            t1 = time.perf_counter()
            g.group_table(32)
            sync()
            t2 = time.perf_counter()
            plain.append(t1 - t)
            with_table.append(t2 - t)
            del g
        row["build_ms"] = float(np.median(plain[1:]) * 1e3)
        row["build_with_table_ms"] = float(np.median(with_table[1:]) * 1e3)
        row["edges_per_s_with_table"] = row["edges"] / (row["build_with_table_ms"] / 1e3)
    row["problems"] = problems
    timing = (f"; build {row['build_ms']:.2f} ms, with the G = 32 table "
              f"{row['build_with_table_ms']:.2f} ms "
              f"({row['edges_per_s_with_table'] / 1e9:.2f} G edges/s)") if time_it else ""
    print(f"tables {name} ({row['edges']} edges, {row['index_bits']}-bit): "
          f"{'equal' if not problems else 'DIFFER'}{timing}"
          f"{''.join(chr(10) + '  PROBLEM: ' + p for p in problems)}", flush=True)
    return row


def lib_bits(nv, ne):
    return _lib.lib.gop_graph_device_index_bits(nv, ne)


def gopc_run(gopc, pack, graph, wide=False, timeout=540):
    """`gopc run --pack PACK --graph GRAPH --F 64`: (wall s, kernel ms, output)."""
    env = dict(os.environ)
    env.pop("GOP_INDEX64", None)
    if wide:
        env["GOP_INDEX64"] = "1"
    cmd = [gopc, "run", "--pack", pack, "--graph", graph, "--F", "64"]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = f"{e.stdout or ''}timed out after {timeout} s", -1
    wall = time.perf_counter() - t
    ms = None
    for line in out.splitlines():
        if line.startswith("  time ") and line.split()[1].replace(".", "", 1).isdigit():
            ms = float(line.split()[1])
            break
    if ms is None:  # the summary line: "... on the GPU ..., X ms"
        import re
        m = re.search(r"([0-9.]+) ms", out.splitlines()[0] if out else "")
        ms = float(m.group(1)) if m and rc == 0 else None
    return wall, ms, rc, out


# check_batch_graph's schedule: rows in order (the default mapping's
# warp_edge(1, 1) adds a row's edges in no fixed order, so two graphs'
# sums agree to rounding only)
BATCH_SCHEDULE = "spmm_vec4(2)"


def check_batch_graph(steps=12, seed=3):
    """gop.BatchGraph on the GPU: after each load (the build replayed from
    its CUDA graph) its arrays equal build_arrays' on the padded edges, and
    copy_u_mean on it equals copy_u_mean on the batch's own graph on the
    batch's rows, bit for bit; batches of changing sizes, the last one
    empty. Returns the number of mismatches."""
    import torch
    import gop
    from gop.graph import build_arrays, padded_edges, self_loop_edges
    gen = torch.Generator(device="cuda").manual_seed(seed)
    g = gop.BatchGraph(5000, 20000)
    bad = 0
    for step in range(steps):
        n = 100 + 400 * step if step < steps - 1 else 7
        e = 1500 * (step + 1) if step < steps - 1 else 0
        ei = torch.randint(0, n, (2, e), device="cuda", generator=gen)
        g.load(ei, n)
        want, _ = build_arrays(padded_edges(ei, g.max_nodes, g.max_edges), g.num_nodes)
        for k, t in want.items():
            if not torch.equal(g._arrays[k], t):
                print(f"PROBLEM: BatchGraph step {step}: {k} differs from build_arrays'")
                bad += 1
        loops = g.with_self_loops()
        pe = padded_edges(ei, g.max_nodes, g.max_edges)
        want_loops, _ = build_arrays(self_loop_edges(pe, g._pad, g.num_nodes), g.num_nodes)
        for k, t in want_loops.items():
            if not torch.equal(loops._arrays[k], t):
                print(f"PROBLEM: BatchGraph step {step}: with_self_loops' {k} differs")
                bad += 1
        hw, hs = gop.Graph.from_edge_index(padded_edges(ei, g.max_nodes, g.max_edges).cpu(),
                                           g.num_nodes).gcn_norm()
        w, s = g.gcn_weights()
        if not (torch.equal(w.cpu(), torch.from_numpy(hw)) and
                torch.equal(s.cpu(), torch.from_numpy(hs))):
            print(f"PROBLEM: BatchGraph step {step}: gcn_weights differ from the host's gcn_norm")
            bad += 1
        x = torch.randn(n, 64, device="cuda", generator=gen)
        y = gop.stdlib.copy_u_mean(g, g.node_rows(x), schedule=BATCH_SCHEDULE)[:n]
        own = gop.Graph.from_edge_index(ei, n, device_build=True)
        ref = gop.stdlib.copy_u_mean(own, x, schedule=BATCH_SCHEDULE)
        if not torch.equal(y, ref):
            print(f"PROBLEM: BatchGraph step {step}: copy_u_mean differs by "
                  f"{(y - ref).abs().max().item():.3e}")
            bad += 1
    print(f"BatchGraph: {steps} loads checked, {bad} mismatches")
    return bad


def phase_capture(args):
    """Mini-batch GraphSAGE through gop.train.CapturedBatches (the example's
    --capture) against PyG's eager step on the same batches: losses and
    step times; after check_batch_graph."""
    rc = 1 if check_batch_graph() else 0
    ex = example()
    arxiv = os.path.join(args.datasets, "ogbn-arxiv.mtx.gz")
    # the last run starts from a graph too small for most batches: it grows
    # and captures again (captures > 1), and must train as the others
    for model, bs, fan, graph, cap in (
            ("sage", 1024, "10,10", arxiv, None), ("sage", 4096, "15,10", arxiv, None),
            ("gcn", 1024, "10,10", arxiv, None), ("gat", 1024, "10,10", arxiv, None),
            ("sage", 1024, "10,10", "rmat:21:16", None),
            ("gcn", 1024, "10,10", arxiv, "7700,7900")):
        name = ("" if graph == arxiv else "-" + graph.replace(":", "-")) + \
            ("-grown" if cap else "")
        out = os.path.join(args.out, f"capture-{model}-{bs}{name}.json")
        ex.main(["--graph", graph, "--device", "cuda", "--steps", str(args.steps),
                 "--batch-size", str(bs), "--fanout", fan,
                 "--model", model, "--check", "--capture", "--json", out] +
                (["--capacity", cap] if cap else []))
        with open(out) as f:
            s = json.load(f)["summary"]
        # the first steps exactly; later, rounding (atomics in both
        # libraries' sums) grows step by step through Adam: within 1e-2, and
        # the run prints PyG's own drift beside it
        if s["max_loss_diff_first5"] > 1e-5 or s["max_loss_diff"] > 1e-2:
            print(f"PROBLEM: captured, the losses differ from PyG's by up to "
                  f"{s['max_loss_diff_first5']:.2e} in the first 5 steps, "
                  f"{s['max_loss_diff']:.2e} in all (PyG against itself "
                  f"{s.get('pyg_drift', float('nan')):.2e})")
            rc = 1
        if s["kernels_compiled"]:
            print(f"PROBLEM: {s['kernels_compiled']} kernels compiled during training")
            rc = 1
        if cap and s["captures"] < 2:
            print(f"PROBLEM: from a capacity of {cap}, {s['captures']} capture(s): the "
                  f"graph never grew")
            rc = 1
    return rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--datasets", default=os.path.join(ROOT, "..", "shared", "datasets"))
    ap.add_argument("--out", default=".")
    ap.add_argument("--scales", default="18,20,22")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--skip", default="", help="phases left out")
    ap.add_argument("--phases", default="build,tables,gopc,index64,train,capture")
    ap.add_argument("--carry", default=None, help="the carry folder (gopc, packs/)")
    ap.add_argument("--rmat26", action="store_true", help="gopc phase: R-MAT 26 too")
    args = ap.parse_args()
    phases = [p for p in args.phases.split(",") if p and p not in args.skip.split(",")]
    if args.prepare:
        prepare()
        return 0
    import torch
    if not torch.cuda.is_available() or not gop.gpu_available():
        print(f"graph_build: no GPU ({gop.device_status()})")
        return 1
    torch.cuda.init()
    rc = 0
    if "build" in phases:
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for s in [int(k) for k in args.scales.split(",") if k]:
                ei, nv = rmat(s, 16, s, "cuda")
                rows.append(build_case(f"rmat:{s}:16", ei, nv, ei.size(1) <= 20_000_000, tmp))
                del ei
                torch.cuda.empty_cache()
            arxiv = os.path.join(args.datasets, "ogbn-arxiv.mtx.gz")
            g = gop.Graph.open(arxiv)
            ei = torch.from_numpy(g.edge_index).cuda()
            rows.append(build_case("ogbn-arxiv", ei, g.num_nodes, True, tmp))
        with open(os.path.join(args.out, "graph_build.json"), "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
        if any(r["problems"] for r in rows):
            rc = 1
    if "tables" in phases:
        os.environ["GOP_GROUP_ORDER"] = "dst"  # the community order is the host's only
        rows = []
        for f in sorted(os.listdir(args.datasets)):
            if f.endswith(".mtx.gz"):
                g = gop.Graph.open(os.path.join(args.datasets, f))
                ei = torch.from_numpy(g.edge_index).cuda()
                rows.append(tables_case(f[:-7], ei, g.num_nodes, f.startswith("ogbn-arxiv")))
        for s in [int(k) for k in args.scales.split(",") if k]:
            ei, nv = rmat(s, 16, s, "cuda")
            rows.append(tables_case(f"rmat:{s}:16", ei, nv, True))
            del ei
            torch.cuda.empty_cache()
        os.environ["GOP_INDEX64"] = "1"
        ei, nv = rmat(18, 16, 18, "cuda")
        rows.append(tables_case("rmat:18:16", ei, nv, True))
        del os.environ["GOP_INDEX64"]
        del os.environ["GOP_GROUP_ORDER"]
        with open(os.path.join(args.out, "tables.json"), "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
        if any(r["problems"] for r in rows):
            rc = 1
    carry = args.carry
    if "gopc" in phases and carry:
        rows = []
        graphs = ["rmat:24:16"] + (["rmat:26:16"] if args.rmat26 else [])
        for graph in graphs:
            wall, ms, grc, out = gopc_run(os.path.join(carry, "gopc"),
                                          os.path.join(carry, "packs", "vec4-32.pack"), graph)
            rows.append({"graph": graph, "wall_s": wall, "kernel_ms": ms, "rc": grc,
                         "output": out[-3000:]})
            print(f"gopc run {graph} F=64 (spmm_vec4(2)): {wall:.1f} s wall, kernel "
                  f"{ms} ms, rc {grc}\n{out.rstrip()}", flush=True)
            if grc != 0:
                rc = 1
        with open(os.path.join(args.out, "gopc.json"), "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    if "index64" in phases and carry:
        rows = []
        arxiv = os.path.join(args.datasets, "ogbn-arxiv.mtx.gz")
        for graph in ("rmat:20:16", "rmat:22:16", arxiv):
            for key, sched in PACKS.items():
                r = {"graph": os.path.basename(graph), "schedule": sched}
                for bits in (32, 64):
                    wall, ms, grc, out = gopc_run(
                        os.path.join(carry, "gopc"),
                        os.path.join(carry, "packs", f"{key}-{bits}.pack"), graph, bits == 64,
                        timeout=120)
                    r[f"ms_{bits}"] = ms
                    if grc != 0 or ms is None:
                        print(f"PROBLEM: {graph} {sched} {bits}-bit: rc {grc}\n{out[-1500:]}")
                        rc = 1
                if r["ms_32"] and r["ms_64"]:
                    r["ratio_64_over_32"] = r["ms_64"] / r["ms_32"]
                print(f"index64 {r['graph']} {sched}: 32-bit {r['ms_32']} ms, 64-bit "
                      f"{r['ms_64']} ms, {r.get('ratio_64_over_32', float('nan')):.3f}x",
                      flush=True)
                rows.append(r)
        with open(os.path.join(args.out, "index64.json"), "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    if "train" in phases:
        ex = example()
        out = os.path.join(args.out, "train.json")
        ex.main(["--graph", os.path.join(args.datasets, "ogbn-arxiv.mtx.gz"), "--device", "cuda",
                 "--steps", str(args.steps), "--batch-size", "1024", "--fanout", "10,10",
                 "--check", "--host-build", "--json", out])
        with open(out) as f:
            s = json.load(f)["summary"]
        if s["max_loss_diff"] > 1e-3:
            print(f"PROBLEM: the losses differ from PyG's by up to {s['max_loss_diff']:.2e}")
            rc = 1
        if s["kernels_compiled"]:
            print(f"PROBLEM: {s['kernels_compiled']} kernels compiled during training")
            rc = 1
    if "capture" in phases:
        rc |= phase_capture(args)
    if "profile" in phases:
        # not a default phase: cProfile slows Python down, so its step times
        # are not the train phase's; what it gives is where they go
        ex = example()
        ex.main(["--graph", os.path.join(args.datasets, "ogbn-arxiv.mtx.gz"), "--device", "cuda",
                 "--steps", str(args.steps), "--batch-size", "1024", "--fanout", "10,10",
                 "--check", "--cprofile", os.path.join(args.out, "train.prof")])
    print(f"graph_build rc={rc}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
