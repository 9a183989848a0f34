"""GraphSAGE (or GCN) trained on PyG NeighborLoader mini-batches through gop's layers.

Each step takes a sampled subgraph from torch_geometric.loader.NeighborLoader,
builds its gop.Graph from the batch's edge_index and runs a two-layer
gop.nn.SAGEConv model on it. The graph of a batch is freed, with the runs
made on it, when the next replaces it; the kernels are not: they are
compiled (or read from the kernel cache) once per operator, width and
layout, and every later batch, whatever its size, launches the same ones.
The time of each step is reported split into the graph build and the
compute (forward, backward, optimiser step).

On the GPU, gop.Graph.from_edge_index builds a batch's graph where it is
faster: a batch of a few thousand edges on the host (one copy of its edges
to the host), and one of gop.graph.DEVICE_BUILD_MIN_EDGES edges or more on
the GPU, with no host round trip of the edges (its neighbour-group tables,
if a schedule wants them, are built there too).

    python3 examples/minibatch/sage_neighborloader.py --graph ogbn-arxiv.mtx.gz \\
        --device cuda --steps 50

Options:
  --graph G         a Matrix Market / SNAP file, .gopg, or generator spec
                    (default rmat:14:8); features and labels are synthetic
                    (seeded): the graphs carried are structure only
  --device D        cpu (the reference interpreter) or cuda
  --steps N         mini-batches to train on (default 20)
  --batch-size B    seed vertices a batch (default 1024)
  --fanout K,K      neighbours sampled per layer (default 10,10)
  --features F, --hidden H, --classes C   widths (default 128, 64, 16)
  --model M         sage (two SAGEConv, mean; the default), gcn (two
                    GCNConv, normalised per batch as PyG's) or gat (two
                    GATConv of one head, self-loops as PyG's)
  --check           train PyG's SAGEConv with the same weights on the same
                    batches and report the largest loss difference and
                    PyG's step time against gop's (build + compute)
  --host-build      on cuda, also time both builds of each batch's graph, on
                    the host (copying its edge_index there) and on the
                    device, and check that they have the same statistics
  --prepare         compile the kernels the training needs into the kernel
                    cache ($GOP_CACHE_DIR) and exit: for a GPU machine
                    without LLVM (needs no GPU)
  --sampler S       auto (NeighborLoader, else TorchSampler where PyG has no
                    sampling backend: pyg-lib or torch-sparse), pyg, torch
  --capture         train through gop.train.CapturedBatches: each batch
                    loaded into one gop.BatchGraph of fixed capacity (grown
                    and captured again when a batch outgrows it) and the
                    whole step (forward, loss, backward, Adam) replayed as
                    one CUDA graph (cuda only; the step time is then the
                    load, the copies into the static inputs and the replay)
  --capacity N,E    with --capture: the first graph's capacity (max_nodes,
                    max_edges; default 1.25x the first batch); a batch
                    that outgrows it makes a larger graph and captures again
  --profile         time each stage of a step alone (graph build, forward,
                    loss, backward, optimiser step), waiting for the GPU after
                    each: per stage the host time (until the call returns)
                    and the time until the GPU is done, medians printed at
                    the end (stages that wait for the GPU inside, a
                    synchronising copy or free, show host ~ GPU time)
  --cprofile PATH   profile the Python of steps 1.. with cProfile: gop's
                    step (build and compute) into PATH, PyG's (with --check)
                    into PATH.pyg, and the 25 functions of most own time of
                    each printed
  --json PATH       write the measurements as JSON
"""
import argparse
import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import gop
import gop.nn as gnn
from gop import plan


def load_graph(spec):
    g = gop.Graph.open(spec)
    return torch.from_numpy(g.edge_index), g.num_nodes


def synthetic(nv, features, classes, seed=0):
    """Features, and labels a SAGE model can learn: the class of a random
    linear map of the features, smoothed once over the graph."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(nv, features, generator=gen)
    w = torch.randn(features, classes, generator=gen)
    y = (x @ w).argmax(1)
    return x, y


CONVS = {"sage": gnn.SAGEConv, "gcn": gnn.GCNConv, "gat": gnn.GATConv}


def pyg_conv(model):
    """PyG's layer of the same kind as gop's (same parameters)."""
    from torch_geometric.nn import GATConv, GCNConv, SAGEConv
    return {"sage": SAGEConv, "gcn": GCNConv, "gat": GATConv}[model]


class SAGE(torch.nn.Module):
    """Two layers of `conv` (gop's SAGEConv by default; any layer of the
    same signature: GCNConv, PyG's own) with a ReLU between."""

    def __init__(self, features, hidden, classes, conv=gnn.SAGEConv):
        super().__init__()
        self.conv1 = conv(features, hidden)
        self.conv2 = conv(hidden, classes)

    def forward(self, x, graph):
        h = F.relu(self.conv1(x, graph))
        return self.conv2(h, graph)


class Batch:
    """What a NeighborLoader batch holds that the training reads."""

    def __init__(self, x, y, edge_index, n_id, batch_size):
        self.x, self.y, self.edge_index, self.n_id = x, y, edge_index, n_id
        self.batch_size, self.num_nodes = batch_size, n_id.numel()

    def to(self, device):
        return Batch(self.x.to(device), self.y.to(device), self.edge_index.to(device),
                     self.n_id.to(device), self.batch_size)


class TorchSampler:
    """Uniform neighbour sampling in plain torch, for a PyG without its
    sampling backend (NeighborLoader needs pyg-lib or torch-sparse): each
    hop takes up to K in-neighbours of every frontier vertex (all of them
    when it has at most K; else K drawn with replacement, repeats dropped),
    and relabels vertices as NeighborLoader does, seeds first. Batches of
    the same shape as NeighborLoader's, not the same draws."""

    def __init__(self, edge_index, nv, x, y, fanout, batch_size, seed=1):
        src, dst = edge_index[0], edge_index[1]
        order = torch.sort(dst, stable=True).indices
        self.in_src = src[order]
        self.ptr = torch.zeros(nv + 1, dtype=torch.int64)
        torch.cumsum(torch.bincount(dst, minlength=nv), 0, out=self.ptr[1:])
        self.nv, self.x, self.y, self.fanout, self.batch_size = nv, x, y, fanout, batch_size
        self.gen = torch.Generator().manual_seed(seed)

    def __iter__(self):
        perm = torch.randperm(self.nv, generator=self.gen)
        for i in range(0, self.nv, self.batch_size):
            yield self.sample(perm[i:i + self.batch_size])

    def sample(self, seeds):
        local = torch.full((self.nv,), -1, dtype=torch.int64)
        nodes = [seeds]
        local[seeds] = torch.arange(seeds.numel())
        count, frontier, edges = seeds.numel(), seeds, []
        for k in self.fanout:
            deg = self.ptr[frontier + 1] - self.ptr[frontier]
            take = deg.clamp(max=k)
            owner = torch.repeat_interleave(torch.arange(frontier.numel()), take)
            first = torch.cumsum(take, 0) - take
            rank = torch.arange(owner.numel()) - first[owner]
            drawn = (torch.rand(owner.numel(), generator=self.gen) * deg[owner]).long()
            pos = torch.where(deg[owner] <= k, rank, drawn)
            pair = torch.stack([owner, self.ptr[frontier[owner]] + pos])
            pair = torch.unique(pair, dim=1)  # repeats of a draw
            s = self.in_src[pair[1]]
            new = torch.unique(s[local[s] < 0])
            local[new] = torch.arange(count, count + new.numel())
            count += new.numel()
            nodes.append(new)
            edges.append(torch.stack([local[s], local[frontier[pair[0]]]]))
            frontier = new
        n_id = torch.cat(nodes)
        return Batch(self.x[n_id], self.y[n_id], torch.cat(edges, 1), n_id, seeds.numel())


def make_loader(edge_index, nv, x, y, fanout, batch_size, sampler="auto"):
    """(batches, name): PyG's NeighborLoader, or TorchSampler where PyG has
    no sampling backend (sampler="torch" asks for it)."""
    if sampler != "torch":
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader
        data = Data(x=x, y=y, edge_index=edge_index, num_nodes=nv)
        loader = NeighborLoader(data, num_neighbors=fanout, batch_size=batch_size,
                                shuffle=True, generator=torch.Generator().manual_seed(1))
        try:
            next(iter(loader))
            return loader, "torch_geometric.loader.NeighborLoader"
        except ImportError as e:  # no pyg-lib, no torch-sparse
            if sampler == "pyg":
                raise
            print(f"NeighborLoader cannot sample here ({e}): sampling with TorchSampler",
                  flush=True)
    return TorchSampler(edge_index, nv, x, y, fanout, batch_size), "TorchSampler"


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


PROFILE_STAGES = ("build", "forward", "loss", "backward", "optimizer")


def profiled_step(model, opt, batch, g, device, prof):
    """One training step with each stage timed alone (--profile): into
    prof[stage], (seconds until its calls returned, seconds until the GPU
    had finished it), the GPU waited for before each stage starts."""
    def stage(name, fn):
        sync(device)
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        sync(device)
        prof[name] = (t1 - t0, time.perf_counter() - t0)
        return out
    opt.zero_grad()
    out = stage("forward", lambda: model(batch.x, g)[:batch.batch_size])
    loss = stage("loss", lambda: F.cross_entropy(out, batch.y[:batch.batch_size]))
    stage("backward", loss.backward)
    stage("optimizer", opt.step)
    return loss


def pyg_step(twin, batch):
    """One training step of a PyG model and its optimizer (a pair) on the
    batch; the loss."""
    m, opt = twin
    opt.zero_grad()
    loss = F.cross_entropy(m(batch.x, batch.edge_index)[:batch.batch_size],
                           batch.y[:batch.batch_size])
    loss.backward()
    opt.step()
    return loss


def captured_run(model, opt, batch_size, capacity=None):
    """--capture: the training step as gop.train.CapturedBatches replays it,
    over its BatchGraph g and static inputs x (node features) and y (the
    seeds' labels, -100 past a short batch's seeds: ignored by the loss);
    capacity: (max_nodes, max_edges) of its first graph (--capacity)."""
    def step(g, x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x, g)[:batch_size], y)
        loss.backward()
        opt.step()
        return loss
    mn, me = capacity or (None, None)
    return gop.train.CapturedBatches(step, optimizer=opt, model=model, batch_size=batch_size,
                                     max_nodes=mn, max_edges=me)


def prepare(args):
    """The kernels of the training, forward and backward, at its widths,
    for both layouts a batch's graph may have (edge ids in CSR order or
    not: gop compiles kernels for each), and at 64-bit indices never (a
    batch has far fewer than 2^31 edges)."""
    before = gop.cache_stats()["compiled"]
    for ei in ([[0, 1, 2], [1, 2, 0]], [[1, 0, 2], [0, 1, 2]]):
        g = gop.Graph.from_edge_index(np.array(ei), 3)
        for make in (plan.sage, plan.gcn, plan.gat):  # every model'
            for c in (make(g, args.features, args.hidden, input_grad=False, train=True) +
                      make(g, args.hidden, args.classes, input_grad=True, train=True)):
                c.prepare()
    print(f"prepared: {gop.cache_stats()['compiled'] - before} kernels compiled into "
          f"{gop.cache_dir()}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", default="rmat:14:8")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--fanout", default="10,10")
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--model", choices=sorted(CONVS), default="sage")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--host-build", action="store_true")
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--sampler", choices=("auto", "pyg", "torch"), default="auto")
    ap.add_argument("--capture", action="store_true")
    ap.add_argument("--capacity")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--cprofile")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.prepare:
        prepare(args)
        return 0
    device = torch.device(args.device)
    t0 = time.perf_counter()
    edge_index, nv = load_graph(args.graph)
    x, y = synthetic(nv, args.features, args.classes)
    fanout = [int(k) for k in args.fanout.split(",")]
    loader, sampler = make_loader(edge_index, nv, x, y, fanout, args.batch_size, args.sampler)
    print(f"{args.graph}: {nv} vertices, {edge_index.size(1)} edges, ready in "
          f"{time.perf_counter() - t0:.1f} s; batches of {args.batch_size} seeds, "
          f"fanout {fanout}, from {sampler}, on {device}", flush=True)

    torch.manual_seed(0)
    model = SAGE(args.features, args.hidden, args.classes, CONVS[args.model]).to(device)
    if args.capture and (device.type != "cuda" or args.profile):
        raise SystemExit("--capture: CUDA graphs need --device cuda (and not --profile)")
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, capturable=args.capture)
    capacity = None
    if args.capacity:
        try:
            capacity = tuple(int(v) for v in args.capacity.split(","))
        except ValueError:
            capacity = ()
        if len(capacity) != 2 or min(capacity) < 1:
            raise SystemExit(f"--capacity {args.capacity!r}: two numbers >= 1, NODES,EDGES")
    run = captured_run(model, opt, args.batch_size, capacity) if args.capture else None
    ref = again = fast = None
    if args.check:
        def pyg_twin(capturable):
            """PyG's model with gop's weights, and its Adam."""
            m = SAGE(args.features, args.hidden, args.classes, pyg_conv(args.model)).to(device)
            m.load_state_dict(model.state_dict())
            return m, torch.optim.Adam(m.parameters(), lr=args.lr, capturable=capturable)
        # the same Adam as gop's: capturable=True computes its bias
        # corrections on the device, in float32, and the two step for step
        # differ by rounding otherwise (~1e-4 after 40 steps)
        ref = pyg_twin(args.capture)
        if device.type == "cuda":
            # PyG once more, as ref: its own run-to-run drift (atomics in
            # its scatter, as in gop's default mapping), which Adam magnifies
            again = pyg_twin(args.capture)
        if args.capture:
            # PyG's step is timed with the Adam it runs by default
            fast = pyg_twin(False)

    rows = []
    prof_gop = prof_pyg = None
    if args.cprofile:
        import cProfile
        prof_gop, prof_pyg = cProfile.Profile(), cProfile.Profile()
    compiled0 = gop.cache_stats()["compiled"]
    it = iter(loader)
    for step in range(args.steps):
        t_sample = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            it = iter(loader)
            batch = next(it)
        batch = batch.to(device)
        sample_ms = (time.perf_counter() - t_sample) * 1e3  # the loader's (and the copy's)
        sync(device)
        if prof_gop and step:
            prof_gop.enable()
        t_build = time.perf_counter()
        g = run.graph if run else gop.Graph.from_edge_index(batch.edge_index, batch.num_nodes)
        sync(device)
        t_compute = time.perf_counter()
        if run:
            loss = run(batch.edge_index, batch.num_nodes, nodes={"x": batch.x},
                       seeds={"y": batch.y[:batch.batch_size]})
            g = run.graph
        elif args.profile:
            prof = {"build": (t_compute - t_build, t_compute - t_build)}
            loss = profiled_step(model, opt, batch, g, device, prof)
        else:
            opt.zero_grad()
            out = model(batch.x, g)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            opt.step()
        sync(device)
        t_end = time.perf_counter()
        if prof_gop and step:
            prof_gop.disable()
        row = {"step": step, "nodes": int(batch.num_nodes), "edges": int(batch.edge_index.size(1)),
               "sample_ms": sample_ms,
               "build_ms": (t_compute - t_build) * 1e3, "compute_ms": (t_end - t_compute) * 1e3,
               "loss": loss.item(), "csr_edges": bool(g.info["csr_edges"]),
               "device_built": g.device_built}
        if run:
            row["captures"] = run.captures
        if args.profile:
            for k, (host, done) in prof.items():
                row[f"{k}_host_ms"], row[f"{k}_ms"] = host * 1e3, done * 1e3
        if args.host_build and device.type == "cuda":
            sync(device)
            t = time.perf_counter()
            h = gop.Graph.from_edge_index(batch.edge_index, batch.num_nodes,
                                          device_build=False)
            row["host_build_ms"] = (time.perf_counter() - t) * 1e3
            sync(device)
            t = time.perf_counter()
            d = gop.Graph.from_edge_index(batch.edge_index, batch.num_nodes,
                                          device_build=True)
            sync(device)
            row["device_build_ms"] = (time.perf_counter() - t) * 1e3
            for k in ("num_edges", "in_degree_max", "out_degree_max", "isolated",
                      "self_loops", "aes", "csr_edges"):
                if h.info[k] != d.info[k]:
                    raise SystemExit(f"step {step}: the device build's {k} is {d.info[k]}, "
                                     f"the host build's {h.info[k]}")
            del h, d
        if ref is not None:
            # PyG's step on the same batch, timed as gop's (build + compute)
            sync(device)
            if prof_pyg and step:
                prof_pyg.enable()
            t = time.perf_counter()
            rloss = pyg_step(ref, batch)
            sync(device)
            row["pyg_ms"] = (time.perf_counter() - t) * 1e3
            if prof_pyg and step:
                prof_pyg.disable()
            if fast is not None:
                row["pyg_capturable_ms"] = row["pyg_ms"]
                t = time.perf_counter()
                pyg_step(fast, batch)
                sync(device)
                row["pyg_ms"] = (time.perf_counter() - t) * 1e3
            row["pyg_loss"] = rloss.item()
            if again is not None:
                row["pyg_again_loss"] = pyg_step(again, batch).item()
        rows.append(row)
        del g  # the batch's graph and its runs go now
        if step < 3 or step % 10 == 9 or step == args.steps - 1:
            extra = (f" ({'device' if row['device_built'] else 'host'})"
                     if device.type == "cuda" else "")
            extra += (f"  host build {row['host_build_ms']:.2f} ms, device build "
                      f"{row['device_build_ms']:.2f} ms" if "host_build_ms" in row else "")
            extra += f"  pyg loss {row['pyg_loss']:.5f}" if "pyg_loss" in row else ""
            print(f"step {step:3d}: {row['nodes']:6d} nodes {row['edges']:7d} edges  "
                  f"build {row['build_ms']:7.2f} ms  compute {row['compute_ms']:8.2f} ms  "
                  f"loss {row['loss']:.5f}{extra}", flush=True)

    compiled = gop.cache_stats()["compiled"] - compiled0
    warm = rows[1:] if len(rows) > 1 else rows  # the first step loads the kernels
    summary = {
        "graph": args.graph, "model": args.model, "device": str(device), "sampler": sampler,
        "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None,
        "steps": len(rows), "batch_size": args.batch_size, "fanout": fanout,
        "median_build_ms": float(np.median([r["build_ms"] for r in warm])),
        "median_compute_ms": float(np.median([r["compute_ms"] for r in warm])),
        "mean_edges": float(np.mean([r["edges"] for r in rows])),
        "median_sample_ms": float(np.median([r["sample_ms"] for r in warm])),
        "kernels_compiled": compiled,
        "captures": rows[-1].get("captures", 0),
        "first_loss": rows[0]["loss"], "last_loss": rows[-1]["loss"],
    }
    if any("host_build_ms" in r for r in warm):
        summary["median_host_build_ms"] = float(np.median([r["host_build_ms"] for r in warm]))
        summary["median_device_build_ms"] = float(np.median([r["device_build_ms"]
                                                             for r in warm]))
    if ref is not None:
        summary["max_loss_diff"] = max(abs(r["loss"] - r["pyg_loss"]) for r in rows)
        # the first steps, before rounding has been magnified
        summary["max_loss_diff_first5"] = max(abs(r["loss"] - r["pyg_loss"]) for r in rows[:5])
        if "pyg_again_loss" in rows[0]:
            summary["pyg_drift"] = max(abs(r["pyg_again_loss"] - r["pyg_loss"]) for r in rows)
        summary["median_pyg_ms"] = float(np.median([r["pyg_ms"] for r in warm]))
        if args.capture:
            summary["median_pyg_capturable_ms"] = float(np.median([r["pyg_capturable_ms"]
                                                                   for r in warm]))
        summary["median_step_ms"] = float(np.median([r["build_ms"] + r["compute_ms"]
                                                     for r in warm]))
    build, comp = summary["median_build_ms"], summary["median_compute_ms"]
    print(f"median of steps 1..{len(rows) - 1}: graph build {build:.2f} ms, compute "
          f"{comp:.2f} ms ({100 * build / (build + comp):.1f}% of the step in the build); "
          f"{compiled} kernels compiled in the run; loss {summary['first_loss']:.4f} -> "
          f"{summary['last_loss']:.4f}" +
          (f"; host build {summary['median_host_build_ms']:.2f} ms, device build "
           f"{summary['median_device_build_ms']:.2f} ms"
           if "median_host_build_ms" in summary else "") +
          (f"; largest |loss - PyG's| {summary['max_loss_diff']:.2e} (first 5 steps "
           f"{summary['max_loss_diff_first5']:.2e}" +
           (f", PyG against itself {summary['pyg_drift']:.2e}" if "pyg_drift" in summary
            else "") + f"); a step (build + "
           f"compute) {summary['median_step_ms']:.2f} ms, PyG's on the same batch "
           f"{summary['median_pyg_ms']:.2f} ms: "
           f"{summary['median_pyg_ms'] / summary['median_step_ms']:.2f}x"
           if ref is not None else ""))
    if args.profile:
        print("stages alone (median ms: host until the call returns / until the GPU is "
              "done): " + ", ".join(
                  f"{k} {np.median([r[f'{k}_host_ms'] for r in warm]):.3f} / "
                  f"{np.median([r[f'{k}_ms'] for r in warm]):.3f}" for k in PROFILE_STAGES))
        for k in PROFILE_STAGES:
            summary[f"median_{k}_host_ms"] = float(np.median([r[f"{k}_host_ms"] for r in warm]))
            summary[f"median_{k}_ms"] = float(np.median([r[f"{k}_ms"] for r in warm]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "steps": rows}, f, indent=1)
    if prof_gop:
        import pstats
        for name, p, path in (("gop", prof_gop, args.cprofile),
                              ("PyG", prof_pyg, args.cprofile + ".pyg")):
            if p.getstats():
                p.dump_stats(path)
                print(f"{name}'s steps 1..{len(rows) - 1}, by own time ({path}):")
                pstats.Stats(p, stream=sys.stdout).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
