"""tests/gpu/python_longrun.py: the Python package over long runs and from
threads on a GPU (tests/gpu/python_longrun.sh runs it from the carry that
`GOP_PREPARE_ONLY=pylong tools/gpu-prepare.sh` makes). Three parts:

  train      a 2-layer GCN of gop.nn layers (128 -> 64 -> 16, default
             mapping) trained full-batch for STEPS steps (default 10,000) on
             ogbn-arxiv (else pubmed) with Adam (lr 0.01), PyTorch's caching
             allocator beside gop. Random features; labels are the argmax of
             a second, fixed GCN of the same shape (a teacher), so the task is
             learnable. Each step's loss is kept on the device (no host wait
             per step).
  minibatch  the same model for STEPS steps, each on a NEW graph (2,048
             vertices, 16,384 random edges made on the GPU, gop.Graph built
             from that edge_index, new features and teacher labels), the
             graph freed by Python's garbage collection when the step drops
             it: a loader of sampled mini-batches.
  threads    8 Python threads, each with its own torch.cuda.Stream, ITERS
             iterations each (default 500) of copy_u_sum, u_mul_e_sum
             (default mapping and schedule="auto"), edge_softmax (stages
             with device temporaries, a run per thread) and a gop.nn.GCNConv
             forward + backward (its own copy of one module), on one graph all
             threads share (pubmed) and on a graph of each thread's own
             (rmat:11:8:SEED), through the package's one context, kernel cache
             and schedule choices. Every output of every iteration is compared
             on the device with what the same call computed single-threaded
             before the threads started.

Rules (each part passes or fails on its own; exit 1 if one fails):
  train, minibatch   between step WARM (100: after the warm-up, when every
    kernel is loaded and the caching allocator has its blocks) and the end,
    both measured after torch.cuda.synchronize() and gc.collect():
      host RSS (VmRSS of /proc/self/status) grows by under 1 MiB (the issue's
        target; the C long run grows by 0 KiB on an H200);
      device memory does not grow: the driver's free memory
        (torch.cuda.mem_get_info, cuMemGetInfo) is not lower, and
        torch.cuda.memory_allocated and memory_reserved are unchanged;
      gop's kernel cache holds as many kernels as at step WARM and compiled
        nothing after it (on the GPU machine it compiles nothing at all: it
        has no LLVM, every kernel comes from the carried packs);
      every loss is finite, and from 400 steps on the mean of the last 100
        is below the mean of the first 100;
      minibatch also: every graph the steps made was freed (gop.graph._kept
        stays 0), and each operator's table of runs stays bounded.
  threads  every output within 1e-5 relative L2 of the single-threaded one
    (the default mapping sums with atomics, in an order that may change
    between launches; how many were also equal bit for bit is reported), no
    exception in any thread, nothing compiled.
The time per step (wall clock from step WARM to the end, over the steps) is
reported, not checked.

  python3 tests/gpu/python_longrun.py --datasets DIR --out DIR
        [--parts "train minibatch threads"] [--steps 10000] [--iters 500]
  python3 tests/gpu/python_longrun.py --prepare --datasets DIR
        (no GPU, no torch: compiles every kernel the run launches into
        GOP_CACHE_DIR, from the same gop.plan calls the layers make)
  python3 tests/gpu/python_longrun.py --device cpu --steps 8 --iters 2 --out DIR
        (the whole script on CPU tensors, the interpreter, on small graphs:
        python/tests/test_pylong.py; the memory rules are reported, not
        checked, over so few steps)
Writes OUT/summary.md and OUT/python_longrun.json.
"""
import argparse
import contextlib
import copy
import gc
import json
import os
import sys
import threading
import time

import numpy as np

import gop
import gop.plan as gplan

F_IN, HIDDEN, CLASSES = 128, 64, 16  # the GCN's widths
MB_NODES, MB_EDGES = 2048, 16384  # a mini-batch's graph
TH_F = 32  # the threads' feature width
THREADS = 8
WARM = 100
HOST_MAX_KIB = 1024
TOL_REL = 1e-5
SCHEDULE = None  # the default mapping: one kernel per operator whatever the graph


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def graph_path(datasets, name):
    return os.path.join(datasets, f"{name}.mtx.gz")


def train_graph_name(datasets, name):
    """ogbn-arxiv when carried, else pubmed (name "auto"), else `name`."""
    if name != "auto":
        return name
    return "ogbn-arxiv" if os.path.exists(graph_path(datasets, "ogbn-arxiv")) else "pubmed"


def open_graph(datasets, name, fallback):
    p = graph_path(datasets, name)
    return gop.Graph.open(p if os.path.exists(p) else fallback)


def thread_graph_spec(i, scale=11):
    return f"rmat:{scale}:8:{i + 1}"


# ---- preparation (no torch) ----

def gcn_calls(g, fin, hidden, classes):
    """gop.plan's calls of the 2-layer GCN on g, training and inference."""
    out = []
    for train in (True, False):
        out += gplan.gcn(g, fin, hidden, schedule=SCHEDULE, input_grad=False, train=train)
        out += gplan.gcn(g, hidden, classes, schedule=SCHEDULE, input_grad=train, train=train)
    return out


def prepare(a):
    """Every kernel the run launches, into GOP_CACHE_DIR: the GCN's (forward
    and derived backward) on the training graph and on a mini-batch's, and
    the threads' calls on the shared and the per-thread graphs (the
    schedule="auto" pick resolved on each, as the run resolves it: no tuning
    database on either side)."""
    kernels = set()
    tname = train_graph_name(a.datasets, a.graph)
    tg = open_graph(a.datasets, tname, "rmat:12:8")
    mb = gop.Graph.from_arcs(*np.random.default_rng(0).integers(0, MB_NODES, (2, MB_EDGES)),
                             MB_NODES, "minibatch")
    for g in (tg, mb):
        for c in gcn_calls(g, F_IN, HIDDEN, CLASSES):
            c.prepare()
            kernels.update((k[0], k[1] or "default", str(k[2])) for k in c.kernels())
    shared = open_graph(a.datasets, a.thread_graph, "rmat:12:8")
    for g in [shared] + [gop.Graph.open(thread_graph_spec(i)) for i in range(THREADS)]:
        for c in gplan.gcn(g, TH_F, TH_F, schedule=SCHEDULE, input_grad=False, train=True):
            c.prepare()
            kernels.update((k[0], k[1] or "default", str(k[2])) for k in c.kernels())
        for op, sched in (("copy_u_sum", None), ("u_mul_e_sum", None), ("u_mul_e_sum", "auto")):
            gop.stdlib[op].prepare(g, schedule=sched, F=TH_F)
            kernels.add((op, gop.stdlib[op].schedule_for(g, sched, F=TH_F) or "default",
                         str({"F": TH_F})))
        gop.stdlib.edge_softmax.prepare(g)
        kernels.add(("edge_softmax", "default", "{}"))
    print(f"prepared into {gop.cache_dir()}: {gop.cache_stats()}")
    print(f"kernels ({len(kernels)}: operator, schedule, extents):")
    for k in sorted(kernels):
        print("  " + " | ".join(k))
    return 0


# ---- on torch tensors ----

def make_gcn(torch, seed):
    import gop.nn as gnn

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = gnn.GCNConv(F_IN, HIDDEN, schedule=SCHEDULE)
            self.conv2 = gnn.GCNConv(HIDDEN, CLASSES, schedule=SCHEDULE)

        def forward(self, x, g):
            return self.conv2(torch.relu(self.conv1(x, g)), g)
    torch.manual_seed(seed)
    return GCN()


class Memory:
    """Samples of host and device memory and gop's kernel cache."""

    def __init__(self, torch, dev):
        self.torch, self.dev, self.rows = torch, dev, []

    def sample(self, step):
        torch = self.torch
        gc.collect()
        row = {"step": step}
        if self.dev == "cuda":
            torch.cuda.synchronize()
            free, total = torch.cuda.mem_get_info()
            row.update(device_free=free, device_total=total,
                       allocated=torch.cuda.memory_allocated(),
                       reserved=torch.cuda.memory_reserved())
        row["rss_kib"] = rss_kib()
        cs = gop.cache_stats()
        row.update(cache_entries=cs["entries"], compiled=cs["compiled"],
                   disk_hits=cs["disk_hits"])
        self.rows.append(row)
        return row


def loss_rules(losses):
    """(finite, first mean, last mean, decreasing)."""
    n = len(losses)
    k = 100 if n >= 400 else max(1, n // 4)
    finite = bool(np.isfinite(losses).all())
    first, last = float(np.mean(losses[:k])), float(np.mean(losses[-k:]))
    # a few steps (the CPU smoke test) on a new graph each may go either way
    return finite, first, last, finite and (last < first or n < 400)


def judge_long(name, dev, mem, losses, t_warm, t_end, steps, warm, extra=None):
    """The part's result dict from its memory samples and losses."""
    w = next(r for r in mem.rows if r["step"] == warm)
    e = mem.rows[-1]
    finite, first, last, decreasing = loss_rules(losses)
    res = {"part": name, "steps": steps, "warm": warm,
           "ms_per_step": (t_end - t_warm) * 1e3 / max(1, steps - warm),
           "host_growth_kib": e["rss_kib"] - w["rss_kib"],
           "cache_entries": [w["cache_entries"], e["cache_entries"]],
           "compiled": [w["compiled"], e["compiled"]],
           "loss_first": first, "loss_last": last, "loss_finite": finite,
           "samples": mem.rows}
    checks = {"loss finite and decreasing": decreasing,
              "kernel cache flat, nothing compiled after warm-up":
                  w["cache_entries"] == e["cache_entries"] and w["compiled"] == e["compiled"]}
    if dev == "cuda":
        res.update(device_free_drop=w["device_free"] - e["device_free"],
                   allocated_growth=e["allocated"] - w["allocated"],
                   reserved_growth=e["reserved"] - w["reserved"])
        checks["host RSS growth < 1 MiB"] = res["host_growth_kib"] < HOST_MAX_KIB
        checks["device free memory not lower (cuMemGetInfo)"] = res["device_free_drop"] <= 0
        checks["torch allocated and reserved unchanged"] = (
            res["allocated_growth"] == 0 and res["reserved_growth"] == 0)
    checks.update(extra or {})
    res["checks"] = checks
    res["ok"] = all(checks.values())
    return res


def run_train(torch, dev, g, gname, steps, warm):
    import torch.nn.functional as F
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(g.num_nodes, F_IN, device=dev, generator=gen)
    teacher = make_gcn(torch, 1).to(dev).eval()
    with torch.no_grad():
        y = teacher(x, g).argmax(1)
    model = make_gcn(torch, 0).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = torch.zeros(steps, device=dev)
    mem = Memory(torch, dev)
    t_warm = None
    every = max(warm, steps // 10)
    for i in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x, g), y)
        loss.backward()
        opt.step()
        losses[i] = loss.detach()
        if i + 1 == warm or (i + 1) % every == 0 or i + 1 == steps:
            mem.sample(i + 1)
            if i + 1 == warm:
                t_warm = time.perf_counter()
    t_end = time.perf_counter()
    res = judge_long("train", dev, mem, losses.cpu().numpy(), t_warm, t_end, steps, warm)
    res["graph"] = f"{gname} ({g.num_nodes} vertices, {g.num_edges} edges)"
    return res


def run_minibatch(torch, dev, steps, warm, nodes=MB_NODES, edges=MB_EDGES):
    import torch.nn.functional as F
    from gop import graph as ggraph
    gen = torch.Generator(device=dev).manual_seed(1)
    teacher = make_gcn(torch, 1).to(dev).eval()
    model = make_gcn(torch, 0).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = torch.zeros(steps, device=dev)
    mem = Memory(torch, dev)
    kept0 = ggraph._kept[0]
    ops = [gop.stdlib.u_mul_e_sum] + gop.stdlib.u_mul_e_sum.grad(("X",)).operators
    most_runs = 0
    t_warm = None
    every = max(warm, steps // 10)
    for i in range(steps):
        ei = torch.randint(0, nodes, (2, edges), device=dev, generator=gen)
        g = gop.Graph.from_edge_index(ei, nodes)
        x = torch.randn(nodes, F_IN, device=dev, generator=gen)
        with torch.no_grad():
            y = teacher(x, g).argmax(1)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x, g), y)
        loss.backward()
        opt.step()
        losses[i] = loss.detach()
        del g, ei, x, y, loss
        most_runs = max(most_runs, max(len(op._runs) for op in ops))
        if i + 1 == warm or (i + 1) % every == 0 or i + 1 == steps:
            mem.sample(i + 1)
            if i + 1 == warm:
                t_warm = time.perf_counter()
    t_end = time.perf_counter()
    kept = ggraph._kept[0] - kept0
    res = judge_long("minibatch", dev, mem, losses.cpu().numpy(), t_warm, t_end, steps, warm,
                     extra={"every graph freed (gop.graph._kept)": kept == 0,
                            "operators' run tables bounded (<= 2 x 65)": most_runs <= 130})
    res.update(graph=f"a new graph per step: {nodes} vertices, {edges} random edges",
               graphs_not_freed=kept, most_runs_per_operator=most_runs)
    return res


def thread_work(torch, stream_ctx, gs, data, module):
    """One iteration of a thread: {name: output tensor}."""
    out = {}
    with stream_ctx():
        for tag, g in gs:
            x, w, r = data[tag]
            out[f"{tag} copy_u_sum"] = gop.stdlib.copy_u_sum(g, x)
            out[f"{tag} u_mul_e_sum"] = gop.stdlib.u_mul_e_sum(g, x, w)
            out[f"{tag} u_mul_e_sum auto"] = gop.stdlib.u_mul_e_sum(g, x, w, schedule="auto")
            # several stages with device temporaries in its run (per thread)
            out[f"{tag} edge_softmax"] = gop.stdlib.edge_softmax(g, w)
            module.zero_grad(set_to_none=True)
            y = module(x, g)
            (y * r).sum().backward()
            out[f"{tag} GCNConv y"] = y.detach()
            out[f"{tag} GCNConv d lin.weight"] = module.lin.weight.grad
            out[f"{tag} GCNConv d bias"] = module.bias.grad
    return out


def run_threads(torch, dev, shared, sname, iters, scale=11):
    import gop.nn as gnn
    cs0 = gop.cache_stats()
    torch.manual_seed(2)
    base = gnn.GCNConv(TH_F, TH_F, schedule=SCHEDULE).to(dev)
    gen = torch.Generator(device=dev).manual_seed(3)

    def inputs(g):
        return (torch.randn(g.num_nodes, TH_F, device=dev, generator=gen),
                torch.rand(g.num_edges, device=dev, generator=gen),
                torch.randn(g.num_nodes, TH_F, device=dev, generator=gen))
    per = []
    for i in range(THREADS):
        own = gop.Graph.open(thread_graph_spec(i, scale))
        per.append({"gs": [("shared", shared), ("own", own)],
                    "data": {"shared": inputs(shared), "own": inputs(own)},
                    "module": copy.deepcopy(base)})
    # the single-threaded results, on the default stream
    refs = []
    for p in per:
        o = thread_work(torch, contextlib.nullcontext, p["gs"], p["data"], p["module"])
        refs.append({k: v.clone() for k, v in o.items()})
    if dev == "cuda":
        torch.cuda.synchronize()
    names = list(refs[0])
    errs = [None] * THREADS
    fails = [None] * THREADS
    barrier = threading.Barrier(THREADS)

    def body(i):
        try:
            p = per[i]
            if dev == "cuda":
                s = torch.cuda.Stream()
                ctx = lambda: torch.cuda.stream(s)  # noqa: E731
            else:
                ctx = contextlib.nullcontext
            with ctx():
                maxrel = torch.zeros(len(names), device=dev)
                differ = torch.zeros(len(names), device=dev, dtype=torch.int64)
            barrier.wait()
            for _ in range(iters):
                o = thread_work(torch, ctx, p["gs"], p["data"], p["module"])
                with ctx():
                    for k, n in enumerate(names):
                        a, b = o[n], refs[i][n]
                        rel = (a - b).norm() / b.norm().clamp_min(1e-30)
                        maxrel[k] = torch.maximum(maxrel[k], rel)
                        differ[k] += (a != b).any().long()
            if dev == "cuda":
                s.synchronize()
            errs[i] = (maxrel.cpu().numpy(), differ.cpu().numpy())
        except Exception as e:  # noqa: BLE001 - a thread's failure is recorded
            import traceback
            fails[i] = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
            barrier.abort()
    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    cs1 = gop.cache_stats()
    rows = []
    for k, n in enumerate(names):
        got = [e for e in errs if e is not None]
        rows.append({"output": n,
                     "max_rel_l2": float(max((e[0][k] for e in got), default=float("nan"))),
                     "iterations_not_bitwise": int(sum(e[1][k] for e in got)),
                     "iterations": iters * len(got)})
    ok_err = all(r["max_rel_l2"] <= TOL_REL for r in rows)
    checks = {"no exception in any thread": not any(fails),
              f"every output within {TOL_REL:g} relative L2 of the single-threaded": ok_err,
              "nothing compiled in the threads": cs1["compiled"] == cs0["compiled"] or dev == "cpu"}
    return {"part": "threads", "threads": THREADS, "iters": iters, "wall_s": wall,
            "ms_per_iteration": wall * 1e3 / max(1, iters),
            "graph": f"shared {sname} ({shared.num_nodes} vertices, {shared.num_edges} edges); "
                     f"own rmat:{scale}:8:SEED per thread",
            "outputs": rows, "failures": [f for f in fails if f],
            "checks": checks, "ok": all(checks.values())}


# ---- the report ----

def fmt_bytes(n):
    return f"{n:+d} B" if abs(n) < 1024 else f"{n / 1024:+.1f} KiB"


def write_summary(out, head, parts):
    lines = [f"# Python package: long runs and threads", "", head, ""]
    for p in parts:
        lines.append(f"## {p['part']}: {'PASS' if p['ok'] else 'FAIL'}")
        lines.append("")
        lines.append(f"- graph: {p.get('graph', '')}")
        if "outputs" not in p and "steps" not in p:
            pass  # the part crashed: its checks say how
        elif p["part"] == "threads":
            lines.append(f"- {p['threads']} threads x {p['iters']} iterations, "
                         f"{p['wall_s']:.1f} s ({p['ms_per_iteration']:.2f} ms per iteration "
                         f"of all threads)")
            lines += ["", "| output | max rel L2 | iterations not bitwise equal |",
                      "| --- | --- | --- |"]
            lines += [f"| {r['output']} | {r['max_rel_l2']:.2g} | "
                      f"{r['iterations_not_bitwise']} / {r['iterations']} |"
                      for r in p["outputs"]]
            for f in p["failures"]:
                lines += ["", "```", f.strip()[-2000:], "```"]
        else:
            lines.append(f"- {p['steps']} steps, {p['ms_per_step']:.3f} ms per step "
                         f"(steps {p['warm']} to {p['steps']})")
            lines.append(f"- loss: first {p['loss_first']:.4f}, last {p['loss_last']:.4f}, "
                         f"finite {p['loss_finite']}")
            lines.append(f"- host RSS growth from step {p['warm']}: "
                         f"{p['host_growth_kib']:+d} KiB")
            if "device_free_drop" in p:
                lines.append(f"- device: free memory dropped by {fmt_bytes(p['device_free_drop'])}"
                             f"; torch allocated {fmt_bytes(p['allocated_growth'])}, reserved "
                             f"{fmt_bytes(p['reserved_growth'])}")
            lines.append(f"- gop kernel cache entries {p['cache_entries'][0]} -> "
                         f"{p['cache_entries'][1]}, compiled {p['compiled'][0]} -> "
                         f"{p['compiled'][1]}")
            if p["part"] == "minibatch":
                lines.append(f"- graphs not freed: {p['graphs_not_freed']}; most runs held "
                             f"by one operator: {p['most_runs_per_operator']}")
            lines += ["", "| step | RSS KiB | device free | torch allocated | reserved |",
                      "| --- | --- | --- | --- | --- |"]
            lines += [f"| {r['step']} | {r['rss_kib']} | {r.get('device_free', '')} | "
                      f"{r.get('allocated', '')} | {r.get('reserved', '')} |"
                      for r in p["samples"]]
        lines += ["", "checks:"]
        lines += [f"- {'ok  ' if v else 'FAIL'} {k}" for k, v in p["checks"].items()]
        lines.append("")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines))
    with open(os.path.join(out, "python_longrun.json"), "w") as f:
        json.dump({"head": head, "parts": parts}, f, indent=1, default=str)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--out", default="pylong-out")
    ap.add_argument("--parts", default="train minibatch threads")
    ap.add_argument("--graph", default="auto", help="training graph (auto: ogbn-arxiv, "
                    "else pubmed)")
    ap.add_argument("--thread-graph", default="pubmed", help="the graph the threads share")
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    a = ap.parse_args(argv)
    if a.prepare:
        return prepare(a)
    import torch
    dev = a.device
    os.makedirs(a.out, exist_ok=True)
    if dev == "cuda" and not (torch.cuda.is_available() and gop.gpu_available()):
        print(f"no GPU: torch {torch.cuda.is_available()}, gop {gop.device_status()}")
        return 1
    what = torch.cuda.get_device_name() if dev == "cuda" else "CPU (the interpreter)"
    head = (f"gop {gop.__version__} on {what}; torch {torch.__version__}; "
            f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; steps {a.steps}, "
            f"threads {THREADS} x {a.iters}")
    print("== " + head, flush=True)
    warm = WARM if a.steps >= 2 * WARM else max(1, a.steps // 2)
    small = dev == "cpu"  # the interpreter: small graphs and widths
    if small:
        global F_IN, HIDDEN, CLASSES, TH_F
        F_IN, HIDDEN, CLASSES, TH_F = 16, 8, 4, 8
    parts = []
    for part in a.parts.split():
        t0 = time.time()
        try:
            if part == "train":
                gname = "rmat:7:4" if small else train_graph_name(a.datasets, a.graph)
                g = gop.Graph.open(gname) if small else open_graph(a.datasets, gname, "rmat:14:8")
                res = run_train(torch, dev, g, gname, a.steps, warm)
            elif part == "minibatch":
                res = (run_minibatch(torch, dev, a.steps, warm, 64, 256) if small
                       else run_minibatch(torch, dev, a.steps, warm))
            elif part == "threads":
                sname = "rmat:7:4" if small else a.thread_graph
                shared = (gop.Graph.open(sname) if small
                          else open_graph(a.datasets, sname, "rmat:14:8"))
                res = run_threads(torch, dev, shared, sname, a.iters, scale=5 if small else 11)
            else:
                raise ValueError(f"no part {part!r}: train, minibatch, threads")
        except Exception as e:  # noqa: BLE001 - a part's crash is its failure
            import traceback
            traceback.print_exc()
            res = {"part": part, "ok": False, "checks": {f"ran ({type(e).__name__}: {e})": False},
                   "graph": ""}
            res.setdefault("samples", [])
        res["seconds"] = time.time() - t0
        parts.append(res)
        print(f"== {part}: {'PASS' if res['ok'] else 'FAIL'} in {res['seconds']:.1f} s", flush=True)
        for k, v in res["checks"].items():
            print(f"   {'ok  ' if v else 'FAIL'} {k}", flush=True)
        for k in ("ms_per_step", "host_growth_kib", "device_free_drop", "allocated_growth",
                  "reserved_growth", "loss_first", "loss_last", "ms_per_iteration"):
            if k in res:
                print(f"   {k} = {res[k]}", flush=True)
    if not small:
        write_summary(a.out, head, parts)
    else:
        write_summary(a.out, head + " (CPU: the memory rules are not checked)", parts)
    print(f"wrote {os.path.join(a.out, 'summary.md')}")
    return 0 if all(p["ok"] for p in parts) else 1


if __name__ == "__main__":
    sys.exit(main())
