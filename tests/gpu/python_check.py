"""tests/gpu/python_check.py: the Python package on a GPU, in one run
(tests/gpu/python_check.sh runs it; tools/gpu-prepare.sh prepares what it
needs). Checks and measures:

  ops       every stdlib operator on torch CUDA tensors against the reference
            interpreter (CPU tensors), and a core set against torch / PyG
            formulas
  streams   launches queue in the current (or given) stream without waiting,
            ordered after earlier work there; a stream of another CUDA
            context is refused
  errors    non-contiguous, wrong-dtype, wrong-device tensors raise; raw
            pointers that are host memory, pinned memory or too small are
            refused by the C library, and the context stays usable
  cache     kernels come from the carried packs (no LLVM here) and are
            compiled/loaded once
  overhead  per-call host cost of a cached kernel, C path and Python path,
            against the kernel's own time (target: under 10 us)
  models    GCN, GAT, GraphSAGE, GIN forward from Python on pubmed and
            ogbn-arxiv, against PyG's forward with the same weights
            (relative L2 < 1e-4), timed as a whole with CUDA events

  python3 tests/gpu/python_check.py --datasets DIR --out DIR
  python3 tests/gpu/python_check.py --prepare   (no GPU, no torch: fills the
            kernel cache, GOP_CACHE_DIR, with every kernel the run needs)
Writes OUT/python_check.json and OUT/python_check.md; exits 1 if a check
failed.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import numpy as np

import gop
from gop import core
from pyg_common import (build_model, finish, prepare as prepare_kernels, recorder, rel_l2,
                        report_checks, report_head, section, small_graph, start)

EXT = {"F": 32, "H": 4, "C": 8}  # extents of the operator checks
MODEL_LAYERS = ["gcn_propagate", "gin_aggregate", "gat_attention"]  # + stdlib ops
SAGE_OPS = ["copy_u_mean"]

results, record = recorder(8)
# issue 19: 16-bit instances through the Python package on CUDA tensors
# (plain reductions: 16-bit outputs refuse atomics)
DTYPE_OPS = [(op, dt) for op in ("copy_u_sum", "u_mul_e_sum", "copy_u_mean")
             for dt in ("bf16", "f16")]
DTYPE_SCHED = "warp_vertex(1, 1)"


def prepare():
    """Compiles every kernel the GPU run uses into the cache folder."""
    def retyped(op, dt):  # the 16-bit instances (check_dtypes)
        return lambda g: getattr(gop.stdlib, op).retype(dt).prepare(g, schedule=DTYPE_SCHED)
    return prepare_kernels(list(gop.stdlib) + [gop.layers[n] for n in MODEL_LAYERS],
                           extra=[(f"{op} {dt}", retyped(op, dt)) for op, dt in DTYPE_OPS])


# ---- helpers on the GPU ----

def inputs_for(op, g, torch, gen):
    xs = []
    for s in op.inputs:
        shape = s.shape(g, {k: EXT.get(k, 8) for k in op.extents})
        xs.append(torch.rand(shape, generator=gen) + 0.5)  # positive: safe for div, log
    return xs


def check_ops(torch, g, tg):
    gen = torch.Generator().manual_seed(0)
    n_ok = 0
    for op in gop.stdlib:
        try:
            xs = inputs_for(op, g, torch, gen)
            ext = {k: EXT.get(k, 8) for k in op.extents}
            ref = op(g, *xs, **ext)  # CPU tensors: the interpreter
            got = op(g, *[x.cuda() for x in xs], **ext)
            torch.cuda.synchronize()
            ref = ref if isinstance(ref, tuple) else (ref,)
            got = got if isinstance(got, tuple) else (got,)
            errs = [rel_l2(a.cpu(), b) for a, b in zip(got, ref)]
            ok = all(e < 1e-5 for e in errs)
            n_ok += ok
            if not ok:
                record("ops", op.name, False, f"rel L2 vs interpreter {max(errs):.3g}")
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            record("ops", op.name, False, f"{type(e).__name__}: {str(e)[:300]}")
    record("ops", "every stdlib operator vs the interpreter", n_ok == len(gop.stdlib),
           f"{n_ok}/{len(gop.stdlib)} agree (F={EXT['F']}, H={EXT['H']}, graph {g.name})")

    # torch / PyG formulas for the core set
    src, dst = (torch.from_numpy(a).cuda() for a in g.edge_index)
    N, E, Fd = g.num_nodes, g.num_edges, 32
    x = torch.rand(N, Fd, device="cuda")
    y2 = torch.rand(N, Fd, device="cuda")
    w = torch.rand(E, device="cuda")
    we = torch.rand(E, Fd, device="cuda")
    s = torch.rand(E, device="cuda")
    deg = torch.zeros(N, device="cuda").index_add_(0, dst, torch.ones(E, device="cuda"))

    def seg_sum(m):
        return torch.zeros((N,) + m.shape[1:], device="cuda").index_add_(0, dst, m)

    def seg_max(m):
        out = torch.full((N,) + m.shape[1:], -math.inf, device="cuda")
        idx = dst.view(-1, *([1] * (m.dim() - 1))).expand_as(m)
        out = out.scatter_reduce(0, idx, m, "amax", include_self=True)
        return torch.where(torch.isinf(out), torch.zeros((), device="cuda"), out)

    exp_s = (s - seg_max(s.view(-1, 1)).view(-1)[dst]).exp()
    softmax = exp_s / seg_sum(exp_s.view(-1, 1)).view(-1)[dst]
    if tg is not None:
        softmax_pyg = tg.utils.softmax(s, dst, num_nodes=N)
        record("ops", "edge_softmax: torch formula vs PyG's softmax",
               rel_l2(softmax, softmax_pyg) < 1e-5, f"{rel_l2(softmax, softmax_pyg):.2g}")
    cases = [
        ("copy_u_sum", (x,), seg_sum(x[src])),
        ("copy_u_mean", (x,), seg_sum(x[src]) / deg.clamp(min=1).view(-1, 1)),
        ("copy_u_max", (x,), seg_max(x[src])),
        ("u_mul_e_sum", (x, w), seg_sum(x[src] * w.view(-1, 1))),
        ("u_mul_e_sum_full", (x, we), seg_sum(x[src] * we)),
        ("copy_e_sum", (we,), seg_sum(we)),
        ("u_dot_v", (x, y2), (x[src] * y2[dst]).sum(1)),
        ("u_add_v", (x, y2), x[src] + y2[dst]),
        ("e_mul_u", (w, x), w.view(-1, 1) * x[src]),
        ("edge_softmax", (s,), softmax),
    ]
    for name, args, want in cases:
        if name not in gop.stdlib:
            continue
        got = gop.stdlib[name](g, *args)
        torch.cuda.synchronize()
        e = rel_l2(got, want)
        record("ops", f"{name} vs torch", e < 1e-5, f"rel L2 {e:.2g}")


def check_dtypes(torch, g):
    """bf16 and f16 instances on torch CUDA tensors of that dtype, against the
    interpreter on the same CPU tensors (f32 accumulation, one rounding at
    the end in both: they differ by a last-place rounding at most)."""
    gen = torch.Generator().manual_seed(3)
    for name, dt in DTYPE_OPS:
        tdt = torch.bfloat16 if dt == "bf16" else torch.float16
        try:
            op = getattr(gop.stdlib, name).retype(dt)
            xs = [x.to(tdt) for x in inputs_for(op, g, torch, gen)]
            ref = op(g, *xs, schedule=DTYPE_SCHED)
            got = op(g, *[x.cuda() for x in xs], schedule=DTYPE_SCHED)
            torch.cuda.synchronize()
            e = rel_l2(got.cpu(), ref)
            ok = got.dtype == tdt and e < (1e-2 if dt == "bf16" else 2e-3)
            record("dtypes", f"{name} {dt}", ok, f"rel L2 vs interpreter {e:.3g}, {got.dtype}")
        except Exception as ex:  # noqa: BLE001 - every failure is recorded
            record("dtypes", f"{name} {dt}", False, f"{type(ex).__name__}: {str(ex)[:300]}")


def check_streams(torch, g):
    op = gop.stdlib.copy_u_sum
    N = g.num_nodes
    x = torch.ones(N, 16, device="cuda")
    y = torch.empty(N, 16, device="cuda")
    want = op(g, x)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    done = torch.cuda.Event()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # keeps s busy for tens of milliseconds
        x2 = x * 2  # ordered in s, after the sleep
        t0 = time.perf_counter()
        op(g, x2, out=y)
        host_ms = (time.perf_counter() - t0) * 1e3
        done.record(s)
    pending = not done.query()
    record("streams", "asynchronous in the current stream", pending and host_ms < 5,
           f"the call returned in {host_ms:.3f} ms while its stream was still busy "
           f"(event pending: {pending})")
    s.synchronize()
    record("streams", "ordered after earlier work in that stream",
           rel_l2(y, 2 * want) < 1e-6, f"rel L2 {rel_l2(y, 2 * want):.2g}")
    s2 = torch.cuda.Stream()
    y.zero_()
    op(g, x, out=y, stream=s2)
    s2.synchronize()
    record("streams", "stream= argument (a torch.cuda.Stream)", rel_l2(y, want) < 1e-6, "")

    # a stream of another context
    cuda = ctypes.CDLL("libcuda.so.1")
    create = getattr(cuda, "cuCtxCreate_v2", None)
    if create is None:
        record("streams", "a stream of another context is refused", True,
               "skipped: this driver has no cuCtxCreate_v2")
        return
    ctx, st, prev = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    r = create(ctypes.byref(ctx), 0, torch.cuda.current_device())
    if r != 0:
        record("streams", "a stream of another context is refused", True,
               f"skipped: cuCtxCreate_v2 returned {r}")
        return
    try:
        cuda.cuStreamCreate(ctypes.byref(st), 0)
        cuda.cuCtxPopCurrent_v2(ctypes.byref(prev))
        try:
            op(g, x, out=y, stream=st.value)
            record("streams", "a stream of another context is refused", False, "accepted")
        except gop.GopError as e:
            record("streams", "a stream of another context is refused",
                   "another CUDA context" in str(e), str(e).splitlines()[-1][:200])
    finally:
        cuda.cuCtxPushCurrent_v2(ctx)
        if st.value:
            cuda.cuStreamDestroy_v2(st)
        cuda.cuCtxPopCurrent_v2(ctypes.byref(prev))
        cuda.cuCtxDestroy_v2(ctx)
    y.zero_()
    op(g, x, out=y)
    torch.cuda.synchronize()
    record("streams", "the context works after the refusal", rel_l2(y, want) < 1e-6, "")


def expect(section, name, exc, fn, text):
    try:
        fn()
        record(section, name, False, "no error raised")
    except exc as e:
        record(section, name, text in str(e), str(e).splitlines()[-1][:200])
    except Exception as e:  # noqa: BLE001
        record(section, name, False, f"{type(e).__name__}: {e}")


def check_errors(torch, g):
    op = gop.stdlib.u_mul_e_sum
    N, E = g.num_nodes, g.num_edges
    x = torch.rand(N, 16, device="cuda")
    w = torch.rand(E, device="cuda")
    expect("errors", "non-contiguous", ValueError,
           lambda: op(g, torch.rand(16, N, device="cuda").t(), w), "not contiguous")
    expect("errors", "float64", TypeError, lambda: op(g, x.double(), w), "float32")
    expect("errors", "CPU and CUDA mixed", ValueError, lambda: op(g, x, w.cpu()),
           "on the CPU and on the GPU")
    expect("errors", "wrong shape", ValueError, lambda: op(g, x[:-1], w), "must have shape")
    if torch.cuda.device_count() > 1:
        expect("errors", "another GPU", ValueError,
               lambda: op(g, x.to("cuda:1"), w.to("cuda:1")), "gop runs on cuda:0")
    # raw pointers through the C API
    run = op._run(g, None, None, gop.core._lib.GOP_DEVICE_GPU, {"F": 16})
    h, ptrs = run[0], run[3]
    y = torch.empty(N, 16, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    host = np.zeros((N, 16), dtype=np.float32)
    pinned = torch.zeros(N, 16, pin_memory=True)
    # the end of an allocation (torch's allocator carves tensors out of
    # larger segments: the driver sees the segment)
    small = torch.empty(10, device="cuda")
    cuda = ctypes.CDLL("libcuda.so.1")
    start, size = ctypes.c_uint64(), ctypes.c_size_t()
    cuda.cuPointerGetAttribute(ctypes.byref(start), 11, ctypes.c_uint64(small.data_ptr()))
    cuda.cuPointerGetAttribute(ctypes.byref(size), 12, ctypes.c_uint64(small.data_ptr()))
    near_end = start.value + size.value - 64

    def launch(px):
        ptrs[0], ptrs[1], ptrs[2] = px, w.data_ptr(), y.data_ptr()
        if core.lib.gop_run_launch_ptrs(h, ptrs, 3, stream) != 0:
            raise gop.GopError(core._diag())

    expect("errors", "host pointer refused by the C library", gop.GopError,
           lambda: launch(host.ctypes.data), "not memory CUDA knows")
    expect("errors", "pinned host memory refused", gop.GopError,
           lambda: launch(pinned.data_ptr()), "page-locked host memory")
    expect("errors", "allocation too small refused", gop.GopError,
           lambda: launch(near_end), "run past the end")
    launch(x.data_ptr())
    torch.cuda.synchronize()
    want = op(g, x.cpu(), w.cpu())
    record("errors", "the context works after the refusals", rel_l2(y.cpu(), want) < 1e-5, "")


def check_cache(torch, g):
    st0 = gop.cache_stats()
    g2 = gop.Graph.open("rmat:10:8")
    x = torch.rand(g2.num_nodes, 8, device="cuda")
    op = gop.stdlib.copy_u_sum
    op(g2, x)
    st1 = gop.cache_stats()
    for _ in range(10):
        op(g2, x)
    torch.cuda.synchronize()
    st2 = gop.cache_stats()
    record("cache", "a new graph reuses the cached kernel",
           st1["compiled"] == st0["compiled"] and st1["memory_hits"] == st0["memory_hits"] + 1,
           f"{st0} -> {st1}")
    record("cache", "later calls look nothing up", st2 == st1, f"{st2}")
    record("cache", "no compilation on this machine (kernels from the carried packs)",
           st2["compiled"] == 0, f"disk hits {st2['disk_hits']}, compiled {st2['compiled']}")
    results["cache"] = st2


def check_overhead(torch):
    g = gop.Graph.open("grid:8x8")
    op = gop.stdlib.copy_u_sum
    x = torch.rand(g.num_nodes, 4, device="cuda")
    y = torch.empty_like(x)
    stream = torch.cuda.current_stream().cuda_stream
    for _ in range(200):
        op(g, x, out=y)
    torch.cuda.synchronize()
    run = op._run(g, None, None, gop.core._lib.GOP_DEVICE_GPU, {"F": 4})
    h, ptrs = run[0], run[3]
    ptrs[0], ptrs[1] = x.data_ptr(), y.data_ptr()
    launch = core.lib.gop_run_launch_ptrs
    # the kernel's own time: events around single launches
    dev = []
    for _ in range(200):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        launch(h, ptrs, 2, stream)
        b.record()
        b.synchronize()
        dev.append(a.elapsed_time(b) * 1e3)
    dev_us = statistics.median(dev)
    N = 20000

    def loop(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(N):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        return (t1 - t0) / N * 1e6, (t2 - t0) / N * 1e6

    c_host, c_total = loop(lambda: launch(h, ptrs, 2, stream))
    py_host, py_total = loop(lambda: op(g, x, out=y))
    bound = op.bind(g, x, out=y)
    b_host, b_total = loop(bound)
    y.zero_()
    bound()
    torch.cuda.synchronize()
    record("overhead", "a bound call computes the operator",
           rel_l2(y, op(g, x)) < 1e-6, "")
    t_host, t_total = loop(lambda: torch.add(x, 1.0, out=y))
    over_c = max(0.0, c_total - dev_us)
    results["overhead"] = {
        "kernel_us": dev_us, "c_host_us": c_host, "c_back_to_back_us": c_total,
        "python_host_us": py_host, "python_back_to_back_us": py_total,
        "python_bound_host_us": b_host, "python_bound_back_to_back_us": b_total,
        "torch_add_host_us": t_host, "torch_add_back_to_back_us": t_total,
        "c_overhead_over_kernel_us": over_c,
        "python_overhead_over_kernel_us": max(0.0, py_total - dev_us)}
    record("overhead", "C path per call (gop_run_launch_ptrs)", c_host < 10,
           f"host {c_host:.2f} us a call, back-to-back {c_total:.2f} us, the kernel "
           f"(with its output's initialisation) {dev_us:.2f} us: {over_c:.2f} us over it")
    record("overhead", "Python path per call (op(g, x, out=y))", True,
           f"host {py_host:.2f} us a call, back-to-back {py_total:.2f} us (torch.add: host "
           f"{t_host:.2f} us); informational")
    record("overhead", "Python bound call (op.bind(g, x, out=y)())", b_host < 10,
           f"host {b_host:.2f} us a call, back-to-back {b_total:.2f} us")


# ---- models ----

def time_forward(torch, fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        out = fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts), out


def check_models(torch, tg, datasets, graphs, reps):
    sizes = {"pubmed": (500, 3), "ogbn-arxiv": (128, 40), "cora": (1433, 7)}
    rows = []
    for gname in graphs:
        path = os.path.join(datasets, f"{gname}.mtx.gz")
        if not os.path.exists(path):
            record("models", gname, False, f"{path} is missing")
            continue
        g = gop.Graph.open(path)
        ei = torch.from_numpy(g.edge_index).cuda()
        fin, classes = sizes.get(gname, (128, 16))
        torch.manual_seed(0)
        x = torch.randn(g.num_nodes, fin, device="cuda")
        for m in ("gcn", "gcn-unfused", "gat", "sage", "gin", "gin-unfused"):
            torch.manual_seed(1)
            kw = {"fused": False} if m.endswith("-unfused") else {"fused": True}
            ref = build_model(torch, tg.nn, m, fin, classes).cuda().eval()
            mine = build_model(torch, gop.nn, m, fin, classes, **kw).cuda().eval()
            try:
                mine.load_state_dict(ref.state_dict(), strict=True)
            except Exception as e:  # noqa: BLE001
                record("models", f"{m} on {gname}", False, f"PyG's state_dict: {e}")
                continue
            with torch.no_grad():
                t_pyg, y_pyg = time_forward(torch, lambda: ref(x, ei), reps)
                t_gop, y_gop = time_forward(torch, lambda: mine(x, g), reps)
                t_gop_ei, _ = time_forward(torch, lambda: mine(x, ei), reps)
            err = rel_l2(y_gop, y_pyg)
            row = {"graph": gname, "model": m, "nodes": g.num_nodes, "edges": g.num_edges,
                   "pyg_ms": t_pyg, "gop_ms": t_gop, "gop_edge_index_ms": t_gop_ei,
                   "speedup": t_pyg / t_gop, "rel_l2": err}
            rows.append(row)
            record("models", f"{m} on {gname}", err < 1e-4,
                   f"rel L2 {err:.2g}; PyG {t_pyg:.3f} ms, gop {t_gop:.3f} ms "
                   f"({t_pyg / t_gop:.2f}x; from edge_index {t_gop_ei:.3f} ms)")
    results["models"] = rows
    main3 = [r["speedup"] for r in rows if r["model"] in ("gcn", "gat", "sage")]
    best = {}
    for r in rows:  # GCN and GIN: the faster of the fused and unfused forms
        k = (r["graph"], r["model"].split("-")[0])
        best[k] = max(best.get(k, 0), r["speedup"])
    best3 = [v for (g_, m_), v in best.items() if m_ in ("gcn", "gat", "sage")]
    if best3:
        results["models_geomean_speedup_best_form"] = math.exp(
            sum(math.log(v) for v in best3) / len(best3))
    if main3:
        gm = math.exp(sum(math.log(s) for s in main3) / len(main3))
        results["models_geomean_speedup_gcn_gat_sage"] = gm
        print(f"geometric mean speedup over PyG (GCN, GAT, SAGE): {gm:.2f}x")


def write_report(out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "python_check.json"), "w") as f:
        json.dump(results, f, indent=1)
    lines = report_head(results, "gop Python package")
    if "overhead" in results:
        lines += ["## per-call overhead (us)", ""]
        lines += [f"- {k}: {v:.2f}" for k, v in results["overhead"].items()] + [""]
    if results.get("models"):
        lines += ["## whole forward, ms (median of CUDA-event times)", "",
                  "| graph | model | PyG | gop | gop (edge_index) | speedup | rel L2 |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in results["models"]:
            lines.append(f"| {r['graph']} | {r['model']} | {r['pyg_ms']:.3f} | {r['gop_ms']:.3f} "
                         f"| {r['gop_edge_index_ms']:.3f} | {r['speedup']:.2f}x | "
                         f"{r['rel_l2']:.1e} |")
        if "models_geomean_speedup_gcn_gat_sage" in results:
            lines += ["", f"geometric mean speedup (GCN, GAT, SAGE): "
                      f"{results['models_geomean_speedup_gcn_gat_sage']:.2f}x; with the "
                      f"faster GCN form: {results.get('models_geomean_speedup_best_form', 0):.2f}x"]
    lines += report_checks(results)
    with open(os.path.join(out, "python_check.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--out", default="python-check")
    ap.add_argument("--graphs", default="pubmed ogbn-arxiv")
    ap.add_argument("--small", default="cora", help="graph of the operator checks")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--skip", default="", help="sections to skip, separated by spaces or commas")
    a = ap.parse_args()
    if a.prepare:
        return prepare()
    import torch
    try:
        import torch_geometric as tg
        import torch_geometric.nn  # noqa: F401
        import torch_geometric.utils  # noqa: F401
    except ImportError:
        tg = None
    ready, what = start(results, torch, getattr(tg, "__version__", None),
                        cache_dir=gop.cache_dir())
    print(f"== gop {gop.__version__} ({gop.library_path}) on {what}; torch {torch.__version__}, "
          f"PyG {results['pyg']}", flush=True)
    if not ready:
        record("setup", "GPU", False, what)
        write_report(a.out)
        return 1
    g = small_graph(a.datasets, a.small)
    skip = set(a.skip.replace(",", " ").split())
    sections = [("ops", lambda: check_ops(torch, g, tg)),
                ("dtypes", lambda: check_dtypes(torch, g)),
                ("streams", lambda: check_streams(torch, g)),
                ("errors", lambda: check_errors(torch, g)),
                ("cache", lambda: check_cache(torch, g)),
                ("overhead", lambda: check_overhead(torch)),
                ("models", lambda: check_models(torch, tg, a.datasets, a.graphs.split(), a.reps))]
    for name, fn in sections:
        if name in skip:
            continue
        if name == "models" and tg is None:
            record("models", "PyG", False, "torch_geometric is not installed")
            continue
        section(record, name, fn)
    write_report(a.out)
    return finish(results)


if __name__ == "__main__":
    sys.exit(main())
