"""bench/multigpu.py: gop on the GPUs of one host (docs/multigpu.md).

    python3 bench/multigpu.py prepare --cache DIR          # here, with LLVM
    torchrun --nproc_per_node P bench/multigpu.py check --out DIR
    torchrun --nproc_per_node P bench/multigpu.py train --out DIR
    torchrun --nproc_per_node P bench/multigpu.py bench --out DIR --graph rmat:22:16

prepare  compiles, with a libgop that has LLVM and no GPU, every kernel the
         other modes run into a kernel cache folder (GOP_CACHE_DIR there):
         the GPU machine has no LLVM.
check    every stdlib aggregation (and the gradient of the sum, mean and
         max ones) on a sharded graph against the same operator on the
         whole graph, on each rank's GPU: max relative error printed.
train    full-graph GCN and GraphSAGE, 2 layers, 20 steps of Adam on a
         sharded graph; rank 0 writes the losses (compare with a run of
         one process: tests/gpu/multigpu.sh).
bench    sum and mean aggregation: one GPU (the plain operator on the whole
         graph; run with one process), and on P GPUs the halo exchange with
         the two work classes overlapped (the halo by one all-to-all, and by
         rounds of pairwise transfers), the same without overlap, and the
         NCCL all-gather baseline; CUDA-event medians, the slowest rank's;
         the fewest-bytes bound per GPU; --peer and --ce add the peer and
         copy-engine transports. Writes bench.csv.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import gop  # noqa: E402
from gop import distributed as gd  # noqa: E402

PREP_GRAPHS = ["rmat:14:16", "rmat:17:16", "rmat:20:16"]
WIDTHS = [64, 128, 256]
CHUNK_WIDTHS = [512, 1024, 2048]  # big: the column chunks a wide tensor goes by
AGG_OPS = ["copy_u_sum", "u_mul_e_sum", "copy_u_max", "copy_u_min", "u_add_e_sum",
           "copy_e_sum", "u_mul_e_max", "copy_u_mean", "u_mul_e_mean"]


def log(*a):
    print(*a, flush=True)


# ---- prepare (no torch, no GPU) ----

def graphs_of(g, P):
    """The graphs bench picks a schedule on: the whole one (one GPU), and
    each part's graph and local class (P GPUs; the all-gather layout has the
    part's degrees)."""
    out = [g]
    p = gd.Partition(g, P)
    for k in range(P):
        out += [p.part_graph(k), p.classes(k)[0]]
    return out


def prepare(args):
    st = gop.stdlib
    todo = set()
    specs = PREP_GRAPHS + [f"../shared/datasets/{n}.mtx.gz" for n in ("ogbn-arxiv",)]
    for spec in specs:
        if spec.endswith(".gz") and not os.path.exists(spec):
            continue
        g = gop.Graph.open(spec)
        for P in (2, 4):
            for gg in graphs_of(g, P):
                for F in WIDTHS + CHUNK_WIDTHS:
                    todo.add(("copy_u_sum", st.copy_u_sum.schedule_for(gg, "auto", F=F), F))
                    todo.add(("copy_u_sum", "spmm_groups(64, 4)", F))
        log(f"  {spec}: {len(todo)} kernels to prepare")
    for name in AGG_OPS:
        todo.add((name, None, 16))
    t0 = time.time()
    g = gop.Graph.open("rmat:10:8")
    ei = g.edge_index
    order = np.argsort(ei[1], kind="stable")  # edge ids in CSR order: the other layout
    gc = gop.Graph.from_arcs(ei[0][order], ei[1][order], g.num_nodes, "rmat:10:8 by dst")
    for name, sched, F in sorted(todo, key=str):
        op = st[name]
        for gg in (g, gc):
            op.prepare(gg, schedule=sched, **{e: F for e in op.extents})
    # the backward the checks and the training take: each input that needs
    # a gradient, under the default mapping (a forward's default schedule)
    grads = [("copy_u_sum", ("X",)), ("u_mul_e_sum", ("X",)), ("u_mul_e_sum", ("X", "W")),
             ("copy_u_max", ("X",)), ("copy_u_mean", ("X",))]
    for name, wrt in grads:
        for gg in (g, gc):
            st[name].grad(wrt).prepare(gg, schedule=None, F=16)
    log(f"prepared {len(todo)} forward kernels and {len(grads)} backward in "
        f"{time.time() - t0:.1f} s into {gop.cache_dir()}")


# ---- torch side ----

def setup():
    # gop launches on one device a process: this rank's (before gop's first
    # GPU call reads it)
    os.environ.setdefault("GOP_CUDA_DEVICE", os.environ.get("LOCAL_RANK", "0"))
    import torch
    import torch.distributed as dist
    from datetime import timedelta
    # a rank that fails ends the run: torchrun stops the others, and a
    # collective that waits longer than this raises instead of hanging
    opts = {}
    if os.environ.get("GOP_NCCL_HIGH_PRIORITY") == "1":
        # NCCL's kernels on a high-priority stream: its blocks are placed
        # ahead of the local class's when both wait for SMs
        opts["pg_options"] = dist.ProcessGroupNCCL.Options(is_high_priority_stream=True)
    dist.init_process_group("nccl", timeout=timedelta(seconds=300), **opts)
    rank = dist.get_rank()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    return torch, dist, rank, dist.get_world_size()


def rel(a, b):
    d = (a.double() - b.double()).norm()
    return (d / b.double().norm().clamp(min=1e-30)).item()


def check(args):
    torch, dist, rank, P = setup()
    st = gop.stdlib
    worst = 0.0
    rows = []
    for spec in args.graphs:
        g = gop.Graph.open(spec)
        sg = gd.ShardedGraph(g)
        if rank == 0:
            log(f"{spec}: {P} parts, cut {sg.partition.cut} of {g.num_edges}; rank 0 {sg}")
        gen = torch.Generator(device="cuda").manual_seed(1)
        F = 16
        x = torch.rand(g.num_nodes, F, device="cuda", generator=gen) + 0.5
        w1 = torch.rand(g.num_edges, device="cuda", generator=gen) + 0.5
        wf = torch.rand(g.num_edges, F, device="cuda", generator=gen) + 0.5
        for name in AGG_OPS:
            op = st[name]
            ins_whole, ins_part = [], []
            for s in op.inputs:
                if s.dims[0] == "src":
                    ins_whole.append(x), ins_part.append(sg.shard(x))
                else:
                    w = w1 if len(s.dims) == 1 else wf
                    ins_whole.append(w), ins_part.append(sg.shard_edges(w))
            ref = sg.shard(op(g, *ins_whole))
            for overlap in (True, False):
                y = sg.aggregate(op, *ins_part, overlap=overlap)
                e = rel(y, ref)
                worst = max(worst, e)
                rows.append((spec, name, "forward", overlap, e))
            if name in ("copy_u_sum", "u_mul_e_sum", "copy_u_mean", "u_mul_e_mean") and P > 1:
                for mode, fn in (("peer", sg.aggregate_peer), ("ce", sg.aggregate_ce),
                                 ("push", sg.aggregate_push)):
                    if mode == "peer" and name.endswith("_mean"):
                        continue
                    try:
                        e = rel(fn(op, *ins_part), ref)
                        worst = max(worst, e)
                        rows.append((spec, name, mode, False, e))
                    except Exception as ex:  # noqa: BLE001 (reported, not fatal)
                        rows.append((spec, name, f"{mode} unavailable: {type(ex).__name__}: "
                                     f"{str(ex)[:200]}", False, 0.0))
            if name in ("copy_u_sum", "u_mul_e_sum", "copy_u_max", "copy_u_mean"):
                xw = x.clone().requires_grad_(True)
                dy = torch.rand(g.num_nodes, F, device="cuda", generator=gen)
                op(g, xw, *ins_whole[1:]).backward(dy)
                xp = sg.shard(x).clone().requires_grad_(True)
                sg.aggregate(op, xp, *ins_part[1:]).backward(sg.shard(dy))
                e = rel(xp.grad, sg.shard(xw.grad))
                worst = max(worst, e)
                rows.append((spec, name, "dX", True, e))
        torch.cuda.synchronize()
    errs = torch.tensor([worst], device="cuda")
    dist.all_reduce(errs, op=dist.ReduceOp.MAX)
    if rank == 0:
        for r in rows:
            log(f"  {r[0]:28s} {r[1]:14s} {r[2]:8s} overlap={r[3]!s:5s} rel.err {r[4]:.2e}")
        ok = errs.item() < 1e-5
        log(f"check on {P} GPUs: {len(rows)} comparisons, worst relative error "
            f"{errs.item():.2e}: {'ok' if ok else 'FAILED'}")
        if args.out:
            with open(os.path.join(args.out, f"check-{P}.txt"), "w") as f:
                for r in rows:
                    f.write("\t".join(map(str, r)) + "\n")
        if not ok:
            sys.exit(1)
    dist.destroy_process_group()


def train(args):
    torch, dist, rank, P = setup()
    gcn, sage = gd.ShardedGCNConv, gd.ShardedSAGEConv
    res = {}
    for spec in args.graphs:
        g = gop.Graph.open(spec)
        sg = gd.ShardedGraph(g)
        N, F, H, C = g.num_nodes, 128, 64, 16
        gen = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(N, F, device="cuda", generator=gen)
        y = torch.randint(0, C, (N,), device="cuda", generator=gen)
        train_mask = torch.rand(N, device="cuda", generator=gen) < 0.5
        n_train = int(train_mask.sum())
        xs, ys, ms = sg.shard(x), sg.shard(y), sg.shard(train_mask)
        for kind, Layer in (("gcn", gcn), ("sage", sage)):
            torch.manual_seed(0)  # the same parameters on every rank and run
            l1, l2 = Layer(F, H), Layer(H, C)
            model = torch.nn.ModuleList([l1, l2]).cuda()
            opt = torch.optim.Adam(model.parameters(), lr=0.01)
            losses, times = [], []
            for step in range(args.steps):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                opt.zero_grad()
                h = torch.relu(l1(xs, sg))
                out = l2(h, sg)
                loss = torch.nn.functional.cross_entropy(out[ms], ys[ms], reduction="sum") \
                    / n_train
                loss.backward()
                gd.sync_grads(model)
                opt.step()
                whole = loss.detach().clone()
                dist.all_reduce(whole)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
                losses.append(whole.item())
            res[f"{spec}/{kind}"] = {"losses": losses,
                                     "epoch_ms": 1e3 * statistics.median(times[3:] or times)}
            if rank == 0:
                log(f"{spec} {kind} on {P} GPUs: loss {losses[0]:.6f} -> {losses[-1]:.6f}, "
                    f"epoch {res[f'{spec}/{kind}']['epoch_ms']:.2f} ms")
    if rank == 0 and args.out:
        with open(os.path.join(args.out, f"train-{P}.json"), "w") as f:
            json.dump(res, f, indent=1)
    dist.destroy_process_group()


def pick_schedule(torch, graph, F):
    """copy_u_sum's schedule on `graph` at width F: the chooser's pick where
    it was prepared, else the chooser's usual pick on R-MAT, else the
    default mapping (None)."""
    summ = gop.stdlib.copy_u_sum
    for s in (summ.schedule_for(graph, "auto", F=F), "spmm_groups(64, 4)"):
        try:
            summ(graph, torch.zeros(graph.num_nodes, F, device="cuda"), schedule=s)
            return s
        except gop.GopError:
            pass
    return None


def timed(torch, dist, fn, reps):
    """Median ms of fn over reps (CUDA events, after a barrier each), the
    slowest rank's."""
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    t = torch.tensor([statistics.median(ts)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def breakdown(torch, dist, sg, op, xs, s, reps):
    """Each step of the overlapped copy_u_sum timed alone, as modes
    step_pack, step_a2a (the all-to-all of the packed rows), step_local,
    step_remote (the carrying remote class), and step_local_a2a (the
    local class and the all-to-all together, as the overlap runs them)."""
    nown, nhalo = sg.num_own, sg.num_halo
    F = xs.shape[1]
    acc = sg._acc_buffer(F, xs.dtype)
    send = xs.index_select(0, sg.plan.send_idx)
    g, _ = sg._carry_graph()

    def a2a(async_op=False):
        return gd._exchange(sg.plan, send, sg.plan.send_counts, sg.plan.recv_counts,
                            out=acc[nown:nown + nhalo], async_op=async_op)[1]

    def both():
        w = a2a(True)
        op(sg.local, xs, out=acc[:nown], schedule=s)
        w.wait()
    steps = {"step_pack": lambda: xs.index_select(0, sg.plan.send_idx),
             "step_a2a": a2a,
             "step_local": lambda: op(sg.local, xs, out=acc[:nown], schedule=s),
             "step_remote": lambda: op(g, acc, schedule=s),
             "step_local_a2a": both}
    return {k: (timed(torch, dist, fn, reps), s) for k, fn in steps.items()}


def bench(args):
    torch, dist, rank, P = setup()
    st = gop.stdlib
    gpu = torch.cuda.get_device_name()
    rows = []
    for spec in args.graphs:
        t0 = time.time()
        g = gop.Graph.open(spec)
        t_open = time.time() - t0
        t0 = time.time()
        sg = gd.ShardedGraph(g)
        t_part = time.time() - t0
        if rank == 0:
            log(f"{spec}: |V| {g.num_nodes} |E| {g.num_edges}; opened in {t_open:.1f} s, "
                f"sharded in {t_part:.1f} s; {P} parts, cut {sg.partition.cut} "
                f"({100 * sg.partition.cut / max(g.num_edges, 1):.1f}%); rank 0 {sg}")
        for F in args.widths:
            if g.num_nodes * F >= 2**31:
                if rank == 0:
                    log(f"  F = {F}: |V| x F past 2^31 needs 64-bit kernels; skipped")
                continue
            gen = torch.Generator(device="cuda").manual_seed(F)
            # features where each mode reads them: no copy of the own rows
            xs = sg.features(F) if P > 1 else torch.empty(sg.num_own, F, device="cuda")
            xs.copy_(torch.rand(sg.num_own, F, device="cuda", generator=gen))
            xa = None
            if P > 1:
                xa = sg.features_allgather(F)
                xa.copy_(xs)
            for name in ("copy_u_sum", "copy_u_mean"):
                op = st[name]
                res = {}

                def pick(graph):
                    return pick_schedule(torch, graph, F)
                if P == 1:  # the whole graph (a mean is its sum over the in-degree)
                    s = pick(g)
                    res["1gpu"] = (timed(torch, dist, lambda: sg.aggregate(
                        op, xs, schedule=s), args.reps), s)
                else:
                    s = pick(sg.local)
                    # the carried sum's two exchanges: one all-to-all, and
                    # rounds of pairwise transfers (each peer's class run as
                    # its rows land)
                    for mode, ex in (("halo_overlap", "all_to_all"), ("halo_rounds", "rounds")):
                        sg.exchange = ex
                        res[mode] = (timed(torch, dist, lambda: sg.aggregate(
                            op, xs, overlap=True, schedule=s), args.reps), s)
                    sg.exchange = "all_to_all"
                    s1 = pick(sg.graph)
                    res["halo"] = (timed(torch, dist, lambda: sg.aggregate(
                        op, xs, overlap=False, schedule=s1), args.reps), s1)
                    # the other transports, where asked for (the peer one
                    # takes sums only); one that fails is reported and
                    # left out of the rest of the run
                    for mode, what, fn in (("peer", "peer", sg.aggregate_peer),
                                           ("ce", "copy-engine", sg.aggregate_ce),
                                           ("push", "push", sg.aggregate_push)):
                        if not getattr(args, mode) or (mode == "peer" and
                                                       name != "copy_u_sum"):
                            continue
                        try:
                            fn(op, xs, schedule=s)
                            res[mode] = (timed(torch, dist, lambda: fn(op, xs, schedule=s),
                                               args.reps), s)
                        except Exception as e:  # noqa: BLE001 (reported, not fatal)
                            if rank == 0:
                                log(f"  {what} transport: {type(e).__name__}: {e}")
                            setattr(args, mode, False)
                    if args.breakdown and name == "copy_u_sum":
                        res.update(breakdown(torch, dist, sg, op, xs, s, args.reps))
                    ag, _ = sg.allgather_graph()
                    s2 = pick(ag)
                    res["allgather"] = (timed(torch, dist, lambda: sg.aggregate_allgather(
                        op, xa, schedule=s2), args.reps), s2)
                # the fewest bytes one GPU must move: its rows of X and Y, its
                # halo rows once, its CSR (8 B offsets, 4 B sources)
                fb = 4 * F * (2 * sg.num_own + sg.num_halo) + 8 * sg.num_own + 4 * sg.num_edges
                for mode, (ms, s) in res.items():
                    rows.append({"gpu": gpu, "gpus": P, "graph": spec, "V": g.num_nodes,
                                 "E": g.num_edges, "F": F, "op": name, "mode": mode,
                                 "ms": round(ms, 4), "schedule": s or "default",
                                 "halo": sg.num_halo, "cut": int(sg.partition.cut),
                                 "fewest_bytes_per_gpu": fb,
                                 "gbps_per_gpu": round(fb / ms / 1e6, 1)})
                    if rank == 0:
                        log(f"  {name:12s} F={F:<4d} {mode:13s} {ms:9.3f} ms  "
                            f"({fb / ms / 1e6:7.1f} GB/s a GPU)  schedule {s or 'default'}")
    if rank == 0 and args.out:
        import csv
        path = os.path.join(args.out, f"bench-{P}.csv")
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    dist.destroy_process_group()


def big(args):
    """A vertex tensor too wide for one GPU: F chosen so that X and Y of the
    whole graph take 1.3x one GPU's memory (or --big-F); each rank holds
    its rows, aggregate() goes by column chunks. Checked on the first and
    last 128 columns against the whole graph on one GPU (those columns
    all-gathered); timed; writes big-P.json."""
    torch, dist, rank, P = setup()
    st = gop.stdlib
    spec = args.graphs[0]
    t0 = time.time()
    g = gop.Graph.open(spec)
    sg = gd.ShardedGraph(g)
    t_open = time.time() - t0
    total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    F = args.big_F or int(1.3 * total / (2 * g.num_nodes * 4)) // 1024 * 1024
    whole = 2 * g.num_nodes * F * 4
    gen = torch.Generator(device="cuda").manual_seed(rank)
    x = torch.rand(sg.num_own, F, device="cuda", generator=gen)
    C = sg.chunk_columns(F)
    s = pick_schedule(torch, sg.local, C)
    if rank == 0:
        log(f"{spec}: |V| {g.num_nodes} |E| {g.num_edges} (opened and sharded in {t_open:.1f} s); "
            f"F = {F}: X and Y of the whole graph take {whole / 1e9:.1f} GB, one GPU has "
            f"{total / 1e9:.1f} GB; on {P} GPUs rank 0 holds {sg.num_own} rows "
            f"({2 * sg.num_own * F * 4 / 1e9:.1f} GB of X and Y), halo {sg.num_halo}; "
            f"column chunks of {C}, schedule {s or 'default'}")
    m = max(sg.partition.part(q)["num_own"] for q in range(P))
    res = {"gpu": torch.cuda.get_device_name(), "gpus": P, "graph": spec, "V": g.num_nodes,
           "E": g.num_edges, "F": F, "whole_bytes": whole, "gpu_bytes": total, "chunk": C,
           "schedule": s or "default", "ops": {}}
    for name in ("copy_u_sum", "copy_u_mean"):
        op = st[name]
        y = sg.aggregate(op, x, schedule=s)
        errs = []
        for a in (0, F - 128):
            pad = torch.zeros(m, 128, device="cuda")
            pad[:sg.num_own] = x[:, a:a + 128]
            allg = torch.empty(P * m, 128, device="cuda")
            dist.all_gather_into_tensor(allg, pad)
            xw = torch.empty(g.num_nodes, 128, device="cuda")
            for q in range(P):
                pq = sg.partition.part(q)
                rows = torch.from_numpy(pq["rows"][:pq["num_own"]].astype(np.int64)).cuda()
                xw[rows] = allg[q * m:q * m + pq["num_own"]]
            ref = op(g, xw, schedule=pick_schedule(torch, g, 128) if name == "copy_u_sum"
                     else None)[sg.rows]
            errs.append(rel(y[:, a:a + 128], ref))
        del y
        e = torch.tensor([max(errs)], device="cuda")
        dist.all_reduce(e, op=dist.ReduceOp.MAX)
        ms = timed(torch, dist, lambda: sg.aggregate(op, x, schedule=s), args.reps)
        fb = 4 * F * (2 * sg.num_own + sg.num_halo) + 8 * sg.num_own + 4 * sg.num_edges
        res["ops"][name] = {"ms": round(ms, 3), "rel_err": e.item(),
                            "fewest_bytes_per_gpu": fb, "gbps_per_gpu": round(fb / ms / 1e6, 1)}
        if rank == 0:
            log(f"  {name:12s} F={F}: {ms:9.2f} ms ({fb / ms / 1e6:.1f} GB/s a GPU), "
                f"first and last 128 columns against one GPU: rel.err {e.item():.2e} "
                f"{'ok' if e.item() < 1e-5 else 'FAILED'}")
    peak = torch.tensor([torch.cuda.max_memory_allocated() / 1e9], device="cuda")
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    res["peak_gb_per_gpu"] = round(peak.item(), 1)
    if rank == 0:
        log(f"  peak memory a GPU: {peak.item():.1f} GB")
        if args.out:
            with open(os.path.join(args.out, f"big-{P}.json"), "w") as f:
                json.dump(res, f, indent=1)
    bad = any(o["rel_err"] >= 1e-5 for o in res["ops"].values())
    dist.destroy_process_group()
    if bad:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["prepare", "check", "train", "bench", "big"])
    ap.add_argument("--graphs", nargs="+", default=["rmat:16:16"])
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", default="")
    ap.add_argument("--peer", action="store_true",
                    help="bench: also the peer transport (symmetric memory over NVLink)")
    ap.add_argument("--ce", action="store_true",
                    help="bench: also the copy-engine transport (aggregate_ce)")
    ap.add_argument("--push", action="store_true",
                    help="bench: also the push transport (aggregate_push)")
    ap.add_argument("--breakdown", action="store_true",
                    help="bench: also each step of the overlapped sum alone (pack, "
                         "all-to-all, local class, remote class)")
    ap.add_argument("--cache", default="")
    ap.add_argument("--big-F", type=int, default=0,
                    help="big: the feature width (default: 1.3x one GPU's memory)")
    args = ap.parse_args()
    if args.cache:
        gop.set_cache_dir(args.cache)
    {"prepare": prepare, "check": check, "train": train, "bench": bench,
     "big": big}[args.mode](args)


if __name__ == "__main__":
    main()
