"""bench/train.py: training with gop's autograd on the GPU, against PyG
(tests/gpu/train.sh runs it from the carried build; tools/gpu-prepare.sh
prepares the kernels it needs).

  packs     before a graph is trained: every kernel of its training plan
            (plan_calls: gop.plan's calls of the models' layers, forward and
            derived backward, under the chosen schedule and the default
            mapping) is in the carried packs (this gop has no LLVM).
  train     full-batch training of GCN, GAT, GraphSAGE and GIN on each graph
            (default pubmed and ogbn-arxiv), gop.nn against
            torch_geometric.nn: same initial weights (PyG's state_dict
            loaded into gop's model), same optimiser (Adam, lr 0.01), no
            dropout, 50 steps. A planted-partition task the graph predicts:
            labels are K = 8 communities grown by breadth-first search from
            K seed vertices (so neighbours mostly share a label), features
            a noisy one-hot of the label (signal 1, Gaussian noise 1.5, plus
            pure-noise columns), half the vertices train, half test; numpy
            seed 0. Records per step the loss of both (and of a second PyG
            run: PyG's own nondeterminism, its scatter atomics, is the noise
            floor), the parameter gradients of step 0, final test accuracies,
            epoch time (CUDA events around forward + backward + Adam step,
            median of the steps after 5 warm-up steps; the forward and loss
            alone beside it) and peak device
            memory (torch.cuda.max_memory_allocated; gop's own device
            memory, the graph's CSR/CSC and its kernels' temporaries, is
            outside torch's allocator: it is reported separately as the
            growth of cudaMemGetInfo's used memory over the run). gop's
            models train with schedule="auto" (SCHEDULE: gop_choose_schedule's
            pick for each forward and derived operator at its graph and
            width); the same model under the default mapping is timed beside
            it (its loss difference reported, not checked).
            "gop captured": the same gop model (same initial weights, under
            SCHEDULE) trained with Adam(lr, capturable=True), its whole
            step (zero_grad, forward, loss, backward through gop's autograd
            Functions, Adam step) captured once into a CUDA graph by
            gop.train.capture_step and replayed STEPS times: no Python, no
            autograd bookkeeping and no per-call checks in the epoch, only
            the step's kernels, launched as one graph. Every kernel is
            prepared before the capture (check_packs, then capture_step's
            warm-up steps, whose changes to weights, Adam state and RNG it
            undoes, so that replay k is eager step k). The loss is indexed
            by the training vertices' indices, not the boolean mask (a mask
            index waits on the host, which a capture cannot). Its loss
            curve and accuracy are checked against PyG as the eager run's
            are; its epoch is CUDA events around replay(), median after
            the warm-up steps. PyG's model is captured the same way where
            it can be (Adam capturable too): PyG's GCNConv and GATConv
            drop and add self loops through boolean masks (a host wait), so
            their capture is expected to fail; the table then says "not
            capturable" with torch's first line, a fact about PyG, not a
            failed check. On --device cpu both are skipped (CUDA graphs
            capture CUDA work only).
  ops       each distinct gop call of the training, forward and backward
            (joint, and per input where there are several), under the
            default mapping and under the chosen schedules: median of 20
            launches between CUDA events, random inputs.
  gradcheck every operator the package exposes (gop.stdlib's 86 and
            gop.layers' 10): torch.autograd gradients of the gop operator
            (its derived backward on the GPU) against torch.autograd
            through an equivalent torch computation (gathers by src/dst,
            index_add / scatter_reduce, the softmax formula, leaky_relu,
            elu), on CUDA, relative L2 per input; on cora.

Tolerances (float32 everywhere):
  gradcheck       relative L2 <= 1e-4 per input gradient: both sides sum the
                  same terms in float32 in different orders (atomics in
                  torch's index_add_, sequential per vertex or edge in
                  gop): about 1e-6 relative per sum, times the depth of
                  the chain (softmax, division) - 1e-4 leaves two orders
                  of margin and still catches any wrong term (a missing
                  edge or a wrong degree is >= 1e-2 on these graphs).
  loss curves     |loss_gop - loss_pyg| <= 1e-3 * |loss_pyg| at each of
                  the 50 steps. The forward alone agrees to ~1e-6; Adam
                  divides each gradient by the root of its running square,
                  so a rounding difference in a near-zero gradient element
                  can change its update by up to lr, and such differences
                  compound over steps. The second PyG run shows the same
                  drift from PyG's own nondeterministic atomics; the check
                  also reports gop vs PyG's drift beside it.
  accuracy        final test accuracies within 0.5 percentage points
                  (predictions near a tie may flip between float orders).

  python3 bench/train.py --datasets DIR --out DIR [--graphs "pubmed ogbn-arxiv"]
        [--models "gcn gat sage gin"] [--skip "gradcheck train ops"] [--steps 50]
  python3 bench/train.py --prepare [--datasets DIR --graphs ...]
        (no GPU, no torch: fills GOP_CACHE_DIR with every kernel the run
        calls on those graphs, and lists the training's)
  python3 bench/train.py --device cpu --steps 6 --graphs cora --skip gradcheck
        (a smoke test of the whole script on the interpreter, no GPU; the
        captured runs are skipped)
Writes OUT/train.csv (one row per graph, model, framework and step),
OUT/train_summary.csv, OUT/gradcheck.csv, OUT/ops.csv, OUT/train.json,
OUT/train.md and OUT/loss_<graph>.svg (loss curves, SVG written by hand);
exits 1 if a check failed.
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys
import time

import numpy as np

import gop
import gop.plan as gplan

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
from pyg_common import (finish, recorder, rel_l2, report_checks, report_head,  # noqa: E402
                        start)

STEPS, WARMUP, LR = 50, 5, 0.01
K, FIN = 8, 64
TOL_GRAD, TOL_LOSS, TOL_ACC = 1e-4, 1e-3, 0.005
EXT = {"F": 16, "H": 4, "C": 8}
MODELS = ("gcn", "gat", "sage", "gin")
# The schedule the gop models train with: gop_choose_schedule's pick for
# every forward and derived operator, per graph and width (gop.nn, "auto");
# each model is also timed under the default mapping (None) beside it.
SCHEDULE = "auto"

# The models, torch-free: per layer, its kind and constructor arguments.
# build() makes them with PyG's and gop's classes; plan_calls() gives the
# gop operator calls of the same layers (gop.plan, which gop.nn's forward
# methods use too), from which --prepare prepares exactly their kernels.
ARCH = {
    "gcn": (("gcn", {"in_channels": FIN, "out_channels": 16}),
            ("gcn", {"in_channels": 16, "out_channels": K})),
    "gat": (("gat", {"in_channels": FIN, "out_channels": 8, "heads": 8}),
            ("gat", {"in_channels": 64, "out_channels": K, "heads": 1})),
    "sage": (("sage", {"in_channels": FIN, "out_channels": 64}),
             ("sage", {"in_channels": 64, "out_channels": K})),
    # GINConv(MLP(in, 64, out), train_eps=True)
    "gin": (("gin", {"in_channels": FIN, "out_channels": 64, "train_eps": True}),
            ("gin", {"in_channels": 64, "out_channels": K, "train_eps": True})),
}

results, record = recorder(9)


# ---- what the run needs compiled (no torch here) ----

def plan_calls(g, model, schedule=SCHEDULE):
    """The gop operator calls of one training step's forward of `model` on
    `g` (gop.plan, as gop.nn's layers make them): the first layer's input
    is the data (no gradient), the others' require one."""
    out = []
    for i, (kind, kw) in enumerate(ARCH[model]):
        kw = dict(kw)
        if kind == "gin":  # the layer aggregates its input: the MLP's width is not gop's
            kw = {"in_channels": kw["in_channels"], "train_eps": kw["train_eps"]}
        out += getattr(gplan, kind)(g, schedule=schedule, input_grad=i > 0, train=True, **kw)
    return out


def each_variant(g):
    """(model, call, schedule, joint) for every gop call the models make on
    graph g (plan_calls) and every way it is prepared and timed."""
    for m in MODELS:
        for c in plan_calls(g, m):
            for sched, joint in plan_variants(c):
                yield m, c, sched, joint


def plan_variants(c):
    """(schedule, joint) under which --ops times a call, and --prepare
    prepares it: the training's (SCHEDULE, joint) and the default mapping,
    and each input's gradient separately where there are several."""
    out = [(gplan.OWN, True), (None, True)]
    if len(c.wrt) > 1:
        out += [(gplan.OWN, False), (None, False)]
    return out


def graph_path(datasets, gname):
    return os.path.join(datasets, f"{gname}.mtx.gz")


def prepare(datasets, graphs):
    """Fills GOP_CACHE_DIR with every kernel the GPU run calls: gradcheck's
    (each operator of gop.stdlib and gop.layers and its joint gradient,
    default mapping: any graph will do) and the training's, from
    plan_calls() on each graph to be trained, under the schedule the call
    resolves there (gop_choose_schedule's pick at its width) and under the
    default mapping, joint and per input (--ops times them all)."""
    g = gop.Graph.open("grid:4x4")
    n, bad = 0, []
    for op in list(gop.stdlib) + list(gop.layers):
        try:
            op.prepare(g)
            n += 1
        except gop.GopError as e:
            bad.append(f"{op.name}: {str(e).splitlines()[-1]}")
        try:
            op.grad(tuple(s.name for s in op.inputs if s.dtype.startswith("f"))).prepare(g)
            n += 1
        except gop.GopError as e:
            bad.append(f"{op.name} grad: {' '.join(str(e).split())[:300]}")
    kernels = set()
    for gname in graphs:
        path = graph_path(datasets, gname)
        if not os.path.exists(path):
            bad.append(f"{path} is missing: nothing prepared for training on {gname}")
            continue
        tg = gop.Graph.open(path)
        for m, c, sched, joint in each_variant(tg):
            try:
                c.prepare(sched, joint)
                n += 1
            except gop.GopError as e:
                bad.append(f"{m} on {gname}: {c!r}: {' '.join(str(e).split())[:300]}")
            for k in c.kernels(sched, joint):
                kernels.add((gname, k[0], k[1] or "default mapping",
                             ", ".join(f"{e}={v}" for e, v in sorted(k[2].items()))))
    print(f"prepared {n} operator calls into {gop.cache_dir()}: {gop.cache_stats()}")
    print(f"training kernels ({len(kernels)}: graph, operator, schedule, extents):")
    for k in sorted(kernels):
        print("  " + " | ".join(k))
    for b in bad:
        print("  not prepared:", b)
    return 1 if bad else 0


# ---- gradcheck: every stdlib operator against torch ----

class TorchRef:
    """A torch computation of a stdlib operator from its DGL-style name
    (lhs_op_rhs[_reduce][_full|_heads], copy_x[_reduce], edge_softmax) and
    its signature: operands gathered by domain (src: X[src], dst: X[dst],
    edge: W), broadcast by right-padding the lower rank, reduced over the
    in-edges of each destination."""

    def __init__(self, torch, g, dev):
        self.torch, self.dev = torch, dev
        self.src, self.dst = (torch.from_numpy(a).to(dev) for a in g.edge_index)
        self.N, self.E = g.num_nodes, g.num_edges
        self.deg = torch.zeros(self.N, device=dev).index_add_(
            0, self.dst, torch.ones(self.E, device=dev))

    def gather(self, spec, x):
        d = spec.dims[0]
        return x[self.src] if d == "src" else x[self.dst] if d == "dst" else x

    def seg(self, m, how):
        torch = self.torch
        shape = (self.N,) + tuple(m.shape[1:])
        if how in ("sum", "mean"):
            y = torch.zeros(shape, device=self.dev).index_add(0, self.dst, m)
            if how == "mean":
                y = y / self.deg.clamp(min=1).view(-1, *([1] * (m.dim() - 1)))
            return y
        idx = self.dst.view(-1, *([1] * (m.dim() - 1))).expand_as(m)
        init = torch.full(shape, -math.inf if how == "max" else math.inf, device=self.dev)
        return init.scatter_reduce(0, idx, m, "amax" if how == "max" else "amin",
                                   include_self=True)

    def softmax(self, s):
        """Edge softmax over the in-edges of each destination, per column."""
        torch = self.torch
        m = self.seg(s, "max")
        m = torch.where(torch.isinf(m), torch.zeros((), device=self.dev), m)
        ex = (s - m[self.dst]).exp()
        return ex / self.seg(ex, "sum")[self.dst]

    def layer(self, name, xs):
        """examples/models/layers.gop's operators."""
        torch = self.torch
        Fn = torch.nn.functional
        src, dst = self.src, self.dst
        lrelu = lambda t: Fn.leaky_relu(t, 0.2)  # noqa: E731
        if name == "bias":
            return xs[0] + xs[1]
        if name == "bias_relu":
            return Fn.relu(xs[0] + xs[1])
        if name == "bias_elu":
            return Fn.elu(xs[0] + xs[1])
        if name == "gcn_propagate":
            h, hd, w, s = xs
            return self.seg(h[src] * w.view(-1, 1), "sum") + s.view(-1, 1) * hd
        if name == "gin_aggregate":
            x, xd, eps = xs
            return self.seg(x[src], "sum") + (1 + eps) * xd
        if name == "gat_terms":
            return (xs[0] * xs[1]).sum(-1)
        if name == "gat_scores":
            return lrelu(xs[0][src] + xs[1][dst])
        if name == "edge_softmax_heads":
            return self.softmax(xs[0])
        if name == "gat_aggregate":
            z, p = xs
            return self.seg(p.unsqueeze(-1) * z[src], "sum")
        if name == "gat_attention":
            z, a_s, a_d = xs
            p = self.softmax(lrelu(a_s[src] + a_d[dst]))
            return self.seg(p.unsqueeze(-1) * z[src], "sum")
        raise KeyError(f"no torch equivalent of {name}")

    def __call__(self, op, xs):
        torch = self.torch
        if op.library is gop.layers:
            return self.layer(op.name, xs)
        if op.name == "edge_softmax":
            s = xs[0]
            m = self.seg(s.view(-1, 1), "max").view(-1)
            m = torch.where(torch.isinf(m), torch.zeros((), device=self.dev), m)
            ex = (s - m[self.dst]).exp()
            return ex / self.seg(ex.view(-1, 1), "sum").view(-1)[self.dst]
        parts = [p for p in op.name.split("_") if p not in ("full", "heads")]
        red = parts[-1] if parts[-1] in ("sum", "max", "min", "mean") else None
        if red:
            parts = parts[:-1]
        g = [self.gather(s, x) for s, x in zip(op.inputs, xs)]
        if parts[0] == "copy":
            m = g[0]
        else:
            a, b = g
            r = max(a.dim(), b.dim())
            a = a.reshape(tuple(a.shape) + (1,) * (r - a.dim()))
            b = b.reshape(tuple(b.shape) + (1,) * (r - b.dim()))
            how = parts[1]
            m = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
                 "div": lambda: a / b, "dot": lambda: (a * b).sum(-1)}[how]()
        y = self.seg(m, red) if red else m
        want = op.outputs[0].shape(_Shapes(self.N, self.E), EXT)
        return y.reshape(want)


class _Shapes:
    def __init__(self, n, e):
        self.num_nodes, self.num_edges = n, e


def gradcheck(torch, g, rows, dev="cuda", only=None):
    """dev="cpu" runs the same check on the interpreter (a smoke test of
    this script where there is no GPU); only: operator names to check."""
    ref = TorchRef(torch, g, dev)
    gen = torch.Generator(device=dev).manual_seed(0)
    n_ok, n = 0, 0
    for op in list(gop.stdlib) + list(gop.layers):
        if only and op.name not in only:
            continue
        n += 1
        try:
            ext = {k: EXT[k] for k in op.extents}
            # the stdlib's: positive (division); the layers': both signs
            # (relu, leaky_relu and elu take both branches)
            xs = [((torch.rand(s.shape(g, ext), generator=gen, device=dev) + 0.5)
                   if op.library is gop.stdlib else
                   torch.randn(s.shape(g, ext), generator=gen, device=dev))
                  .requires_grad_(s.dtype.startswith("f")) for s in op.inputs]
            y = op(g, *xs)
            y_ref = ref(op, xs)
            dy = torch.randn(y.shape, generator=gen, device=dev)
            fin = torch.isfinite(y_ref)
            dy = torch.where(fin, dy, torch.zeros((), device=dev))  # no gradient at -inf
            want = [x for x in xs if x.requires_grad]
            got = torch.autograd.grad(y, want, dy)
            exp = torch.autograd.grad(y_ref, want, dy)
            if dev != "cpu":
                torch.cuda.synchronize()
            fwd = rel_l2(y.detach(), y_ref.detach())
            errs = [rel_l2(a, b) for a, b in zip(got, exp)]
            worst = max(errs + [fwd])
            ok = worst <= TOL_GRAD
            n_ok += ok
            rows.append({"op": op.name, "inputs": " ".join(s.name for s in op.inputs),
                         "forward_rel_l2": fwd,
                         "grad_rel_l2": " ".join(f"{e:.2e}" for e in errs), "ok": ok})
            if not ok:
                record("gradcheck", op.name, False,
                       f"rel L2: forward {fwd:.2e}, gradients {errs} (limit {TOL_GRAD})")
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            rows.append({"op": op.name, "inputs": "", "forward_rel_l2": "",
                         "grad_rel_l2": f"{type(e).__name__}: {str(e)[:200]}", "ok": False})
            record("gradcheck", op.name, False, f"{type(e).__name__}: {str(e)[:300]}")
    record("gradcheck", "every stdlib and layers.gop operator vs torch autograd", n_ok == n,
           f"{n_ok}/{n} within relative L2 {TOL_GRAD} (graph {g.name}, "
           f"F={EXT['F']}, H={EXT['H']}, C={EXT['C']})")


# ---- the training task ----

def planted_partition(g, seed=0):
    """Labels: K communities grown from K random seed vertices by
    breadth-first search over the graph taken as undirected (ties to the
    last arc in edge order: numpy's fancy assignment, deterministic);
    vertices no seed reaches get a random label. Features: noisy one-hot."""
    rng = np.random.default_rng(seed)
    ei = g.edge_index
    a = np.concatenate([ei[0], ei[1]])
    b = np.concatenate([ei[1], ei[0]])
    n = g.num_nodes
    lab = np.full(n, -1, dtype=np.int64)
    seeds = rng.choice(n, size=K, replace=False)
    lab[seeds] = np.arange(K)
    while True:
        grow = (lab[a] >= 0) & (lab[b] < 0)
        if not grow.any():
            break
        lab[b[grow]] = lab[a[grow]]
    lost = lab < 0
    lab[lost] = rng.integers(0, K, size=int(lost.sum()))
    x = rng.normal(0.0, 1.5, size=(n, FIN)).astype(np.float32)
    x[np.arange(n), lab] += 1.0
    train = rng.random(n) < 0.5
    return x, lab, train


def build(torch, gnn, name, classes=K, **kw):
    """Model `name` of ARCH with the convolutions of `gnn` (PyG's
    torch_geometric.nn or gop.nn; `kw`, e.g. schedule=, goes to gop's):
    two layers, relu between them (GAT: elu)."""
    nn, Fn = torch.nn, torch.nn.functional
    kw = kw if gnn is gop.nn else {}
    if classes != K:
        raise ValueError("ARCH is written for K classes")

    def layer(kind, a):
        if kind == "gcn":
            return gnn.GCNConv(a["in_channels"], a["out_channels"], **kw)
        if kind == "gat":
            return gnn.GATConv(a["in_channels"], a["out_channels"], heads=a["heads"], **kw)
        if kind == "sage":
            return gnn.SAGEConv(a["in_channels"], a["out_channels"], **kw)
        mlp = nn.Sequential(nn.Linear(a["in_channels"], 64), nn.ReLU(),
                            nn.Linear(64, a["out_channels"]))
        return gnn.GINConv(mlp, train_eps=a["train_eps"], **kw)

    act = Fn.elu if name == "gat" else Fn.relu

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            (k1, a1), (k2, a2) = ARCH[name]
            self.conv1, self.conv2 = layer(k1, a1), layer(k2, a2)

        def forward(self, x, g):
            return self.conv2(act(self.conv1(x, g)), g)

    return Model()


def train_one(torch, model, x, y, train, test, g):
    """50 full-batch Adam steps: (losses, step-0 gradients by name, test
    accuracy, median epoch ms, peak torch memory, device memory growth)."""
    Fn = torch.nn.functional
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    cuda = x.is_cuda
    free0 = 0
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        free0, _ = torch.cuda.mem_get_info()
    losses, events, grads0 = [], [], None
    for step in range(STEPS):
        a, m, b = [torch.cuda.Event(enable_timing=True) if cuda else _Clock()
                   for _ in range(3)]
        a.record()
        opt.zero_grad(set_to_none=True)
        out = model(x, g)
        loss = Fn.cross_entropy(out[train], y[train])
        m.record()
        loss.backward()
        if step == 0:
            grads0 = {k: p.grad.detach().clone() for k, p in model.named_parameters()
                      if p.grad is not None}
        opt.step()
        b.record()
        losses.append(loss.detach())
        events.append((a, m, b))
    acc, peak, grown = _after_steps(torch, model, x, y, test, g, cuda, free0)
    times = [a.elapsed_time(b) for a, m, b in events[WARMUP:]]
    fwd = statistics.median(a.elapsed_time(m) for a, m, b in events[WARMUP:])
    return ([l.item() for l in losses], grads0, acc, statistics.median(times), peak, grown, fwd)


def _after_steps(torch, model, x, y, test, g, cuda, free0):
    """After a run's steps: (test accuracy, peak torch memory, growth of
    the device's used memory since free0 was read)."""
    free1 = peak = 0
    if cuda:
        torch.cuda.synchronize()
        free1, _ = torch.cuda.mem_get_info()
        peak = torch.cuda.max_memory_allocated()
    with torch.no_grad():
        pred = model(x, g).argmax(1)
        acc = (pred[test] == y[test]).float().mean().item()
    return acc, peak, max(0, free0 - free1)


def train_captured(torch, model, x, y, train_idx, test, g, mode="global"):
    """train_one's STEPS Adam steps (Adam capturable=True), the whole step
    captured by gop.train.capture_step and replayed: the same tuple (the
    forward alone is not timed: nan). The loss takes the training rows by
    index (train_idx), since a boolean mask waits on the host. mode:
    torch.cuda.graph's capture_error_mode. Raises gop.train.CaptureError
    when the step cannot be captured."""
    Fn = torch.nn.functional
    opt = torch.optim.Adam(model.parameters(), lr=LR, capturable=True)
    y_train = y[train_idx]

    def step():
        opt.zero_grad(set_to_none=True)
        loss = Fn.cross_entropy(model(x, g).index_select(0, train_idx), y_train)
        loss.backward()
        opt.step()
        return loss

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    free0, _ = torch.cuda.mem_get_info()
    # warm-up steps (undone: weights, Adam state, RNG), then one capture
    cap = gop.train.capture_step(step, optimizer=opt, model=model, capture_error_mode=mode)
    losses, events, grads0 = [], [], None
    for i in range(STEPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        loss = cap.replay()
        b.record()
        losses.append(loss.detach().clone())  # the next replay overwrites it
        if i == 0:
            grads0 = {k: p.grad.detach().clone() for k, p in model.named_parameters()
                      if p.grad is not None}
        events.append((a, b))
    acc, peak, grown = _after_steps(torch, model, x, y, test, g, True, free0)
    times = [a.elapsed_time(b) for a, b in events[WARMUP:]]
    del cap
    return ([v.item() for v in losses], grads0, acc, statistics.median(times), peak, grown,
            float("nan"))


def run_captured(torch, make, x, y, train_idx, test, g):
    """train_captured on a model from make(), under torch's capture mode
    ("global"), and again under "relaxed" where the capture refused a gop
    call (a driver counting gop's pointer query, cuPointerGetAttributes
    once per new address, as unsafe during a capture): (result, mode).
    Raises CaptureError when neither captures."""
    for mode in ("global", "relaxed"):
        model = make()
        try:
            return train_captured(torch, model, x, y, train_idx, test, g, mode), mode
        except gop.train.CaptureError as e:
            if mode == "relaxed" or not isinstance(e.error, gop.GopError):
                raise
            print(f"     capture under 'global' refused a gop call ({e.cause}): again "
                  "under capture_error_mode='relaxed'", flush=True)
        finally:
            del model


def _first_line(e):
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


class _Clock:
    """torch.cuda.Event's interface on the host clock (dev="cpu" runs)."""

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def train_graph(torch, tg, path, gname, rows, summary, dev="cuda", models=MODELS):
    """Each model trained by PyG, by gop under SCHEDULE (checked against
    PyG), by PyG again (its own drift), by gop under the default mapping
    (timed beside it: what the schedule choice gains), by gop with the whole
    step captured as a CUDA graph (checked against PyG) and by PyG captured
    where it can be (timed beside it). dev="cpu": the same on the
    interpreter (a smoke test without a GPU), without the captured runs."""
    g = gop.Graph.open(path)
    xn, lab, trn = planted_partition(g)
    x = torch.from_numpy(xn).to(dev)
    y = torch.from_numpy(lab).to(dev)
    train = torch.from_numpy(trn).to(dev)
    test = ~train
    train_idx = train.nonzero().squeeze(1)  # the captured steps index by it
    ei = torch.from_numpy(g.edge_index).to(dev)
    curves = {}
    for m in models:
        torch.manual_seed(0)
        ref = build(torch, tg.nn, m, K).to(dev)
        init = {k: v.detach().clone() for k, v in ref.state_dict().items()}
        mine = build(torch, gop.nn, m, K, schedule=SCHEDULE).to(dev)
        mine.load_state_dict(init, strict=True)
        ref2 = build(torch, tg.nn, m, K).to(dev)
        ref2.load_state_dict(init, strict=True)
        base = build(torch, gop.nn, m, K, schedule=None).to(dev)
        base.load_state_dict(init, strict=True)
        r_pyg = train_one(torch, ref, x, y, train, test, ei)
        r_gop = train_one(torch, mine, x, y, train, test, g)
        r_pyg2 = train_one(torch, ref2, x, y, train, test, ei)
        r_base = train_one(torch, base, x, y, train, test, g)
        del base
        # the whole step as one CUDA graph: gop's model (checked), PyG's
        # (where it captures; timed beside it)
        r_cap = r_pcap = None
        if dev == "cpu":
            note_cap = note_pcap = "skipped: --device cpu"
            print(f"     {m} on {gname}: captured runs skipped on --device cpu (CUDA graphs "
                  "capture CUDA work only)", flush=True)
        else:
            note_cap = note_pcap = ""

            def make(gnn, **kw):
                def f():
                    model = build(torch, gnn, m, K, **kw).to(dev)
                    model.load_state_dict(init, strict=True)
                    return model
                return f
            try:
                r_cap, mode = run_captured(torch, make(gop.nn, schedule=SCHEDULE), x, y,
                                           train_idx, test, g)
                if mode != "global":
                    note_cap = f"capture_error_mode={mode!r}"
            except Exception as e:  # noqa: BLE001 - recorded as the check's failure
                import traceback
                traceback.print_exc()
                note_cap = (f"not capturable: {e.cause}" if isinstance(e, gop.train.CaptureError)
                            else f"failed: {_first_line(e)}")
            record("train", f"{m} on {gname}: gop captured", r_cap is not None,
                   f"whole step captured (gop.train.capture_step) and replayed {STEPS} times"
                   + (f" ({note_cap})" if note_cap else "") if r_cap is not None else note_cap)
            try:
                r_pcap, mode = run_captured(torch, make(tg.nn), x, y, train_idx, test, ei)
                if mode != "global":
                    note_pcap = f"capture_error_mode={mode!r}"
            except gop.train.CaptureError as e:
                note_pcap = f"not capturable: {e.cause}"
            except Exception as e:  # noqa: BLE001 - a fact about PyG, not a check
                note_pcap = f"not capturable: {_first_line(e)}"
            if r_pcap is None:
                print(f"     {m} on {gname}: PyG captured: {note_pcap}", flush=True)
                # a failed capture must leave the device usable for what follows
                torch.cuda.synchronize()
        nan_curve = [float("nan")] * STEPS
        l_pyg, l_gop, l_pyg2 = r_pyg[0], r_gop[0], r_pyg2[0]
        l_cap = r_cap[0] if r_cap else nan_curve
        l_pcap = r_pcap[0] if r_pcap else nan_curve
        curves[m] = (l_pyg, l_gop)
        for step in range(STEPS):
            rows.append({"graph": gname, "model": m, "step": step, "loss_pyg": l_pyg[step],
                         "loss_gop": l_gop[step], "loss_pyg_rerun": l_pyg2[step],
                         "loss_gop_captured": l_cap[step], "loss_pyg_captured": l_pcap[step]})
        drift = max(abs(a - b) / abs(b) for a, b in zip(l_gop, l_pyg))
        drift_pyg = max(abs(a - b) / abs(b) for a, b in zip(l_pyg2, l_pyg))
        nan = float("nan")
        drift_cap = (max(abs(a - b) / abs(b) for a, b in zip(l_cap, l_pyg)) if r_cap else nan)
        drift_pcap = (max(abs(a - b) / abs(b) for a, b in zip(l_pcap, l_pyg)) if r_pcap
                      else nan)
        # PyG before 2.5 names GATConv's projection lin_src (gop: lin)
        gops = {k: v for k, v in r_gop[1].items()}
        pygs = {k.replace("lin_src.", "lin."): v for k, v in r_pyg[1].items()
                if ".lin_dst." not in k or k.replace("lin_dst.", "lin_src.") not in r_pyg[1]}
        gerr = {k: rel_l2(gops[k], pygs[k]) for k in pygs if k in gops}
        missing = sorted(set(pygs) - set(gops))
        s = {"graph": gname, "model": m, "nodes": g.num_nodes, "edges": g.num_edges,
             "max_rel_loss_diff": drift, "max_rel_loss_diff_pyg_rerun": drift_pyg,
             "worst_step0_grad_rel_l2": max(gerr.values()) if gerr else float("inf"),
             "final_loss_pyg": l_pyg[-1], "final_loss_gop": l_gop[-1],
             "acc_pyg": r_pyg[2], "acc_gop": r_gop[2],
             "epoch_ms_pyg": r_pyg[3], "epoch_ms_gop": r_gop[3],
             "forward_ms_pyg": r_pyg[6], "forward_ms_gop": r_gop[6],
             "speedup": r_pyg[3] / r_gop[3],
             "peak_mb_pyg": r_pyg[4] / 2**20, "peak_mb_gop": r_gop[4] / 2**20,
             "device_growth_mb_pyg": r_pyg[5] / 2**20, "device_growth_mb_gop": r_gop[5] / 2**20,
             "schedule_gop": SCHEDULE,
             "epoch_ms_gop_default": r_base[3], "forward_ms_gop_default": r_base[6],
             "speedup_default": r_pyg[3] / r_base[3],
             "max_rel_loss_diff_default": max(abs(a - b) / abs(b)
                                              for a, b in zip(r_base[0], l_pyg)),
             "epoch_ms_gop_captured": r_cap[3] if r_cap else nan,
             "speedup_captured": r_pyg[3] / r_cap[3] if r_cap else nan,
             "acc_gop_captured": r_cap[2] if r_cap else nan,
             "peak_mb_gop_captured": r_cap[4] / 2**20 if r_cap else nan,
             "device_growth_mb_gop_captured": r_cap[5] / 2**20 if r_cap else nan,
             "max_rel_loss_diff_captured": drift_cap, "gop_captured_note": note_cap,
             "epoch_ms_pyg_captured": r_pcap[3] if r_pcap else nan,
             "speedup_captured_vs_pyg_captured": (r_pcap[3] / r_cap[3]
                                                  if r_cap and r_pcap else nan),
             "acc_pyg_captured": r_pcap[2] if r_pcap else nan,
             "max_rel_loss_diff_pyg_captured": drift_pcap, "pyg_captured_note": note_pcap}
        summary.append(s)
        record("train", f"{m} on {gname}: step-0 gradients",
               not missing and s["worst_step0_grad_rel_l2"] <= TOL_GRAD,
               f"worst parameter gradient rel L2 {s['worst_step0_grad_rel_l2']:.2e}"
               + (f"; no gradient in gop for {missing}" if missing else ""))
        # within TOL_LOSS, or within twice what PyG differs from itself
        # (its scatter atomics: GIN with a trainable eps on pubmed drifts
        # 3e-3 between two PyG runs)
        record("train", f"{m} on {gname}: loss curve", drift <= max(TOL_LOSS, 2 * drift_pyg),
               f"max relative difference over {STEPS} steps {drift:.2e} (PyG vs itself "
               f"{drift_pyg:.2e}); final loss PyG {l_pyg[-1]:.4f}, gop {l_gop[-1]:.4f}")
        record("train", f"{m} on {gname}: accuracy", abs(r_pyg[2] - r_gop[2]) <= TOL_ACC,
               f"test accuracy PyG {r_pyg[2]:.4f}, gop {r_gop[2]:.4f}")
        if r_cap:
            # against PyG captured where it captures: Adam(capturable=True)
            # rounds its step differently from the eager Adam, and both
            # captured runs drift from the eager ones alike (H100 session
            # 11: GIN on pubmed, gop captured 2.5e-2 and PyG captured 2.4e-2
            # from PyG eager, 5e-4 from each other); else against PyG eager
            ref, l_ref = ("PyG captured", l_pcap) if r_pcap else ("PyG", l_pyg)
            d_ref = max(abs(a - b) / abs(b) for a, b in zip(l_cap, l_ref))
            record("train", f"{m} on {gname}: loss curve, gop captured",
                   d_ref <= max(TOL_LOSS, 2 * drift_pyg),
                   f"max relative difference from {ref} over {STEPS} steps {d_ref:.2e} (PyG "
                   f"vs itself {drift_pyg:.2e}); final loss {ref} {l_ref[-1]:.4f}, gop "
                   f"captured {l_cap[-1]:.4f}")
            record("train", f"{m} on {gname}: accuracy, gop captured",
                   abs(r_pyg[2] - r_cap[2]) <= TOL_ACC,
                   f"test accuracy PyG {r_pyg[2]:.4f}, gop captured {r_cap[2]:.4f}")
        print(f"     {m} on {gname}: epoch PyG {r_pyg[3]:.2f} ms, gop {r_gop[3]:.2f} ms "
              f"({s['speedup']:.2f}x; forward + loss PyG {r_pyg[6]:.2f} ms, gop "
              f"{r_gop[6]:.2f} ms); peak torch memory PyG {s['peak_mb_pyg']:.0f} MB, "
              f"gop {s['peak_mb_gop']:.0f} MB (+{s['device_growth_mb_gop']:.0f} MB device "
              f"growth); gop under the default mapping {r_base[3]:.2f} ms "
              f"({s['speedup_default']:.2f}x, forward {r_base[6]:.2f} ms, loss within "
              f"{s['max_rel_loss_diff_default']:.1e})", flush=True)
        if r_cap:
            print(f"     {m} on {gname}: gop captured {r_cap[3]:.2f} ms "
                  f"({s['speedup_captured']:.2f}x PyG eager; loss within {drift_cap:.1e}, "
                  f"accuracy {r_cap[2]:.4f}, peak "
                  f"{s['peak_mb_gop_captured']:.0f} MB); PyG captured "
                  + (f"{r_pcap[3]:.2f} ms (gop captured "
                     f"{s['speedup_captured_vs_pyg_captured']:.2f}x it)" if r_pcap
                     else note_pcap), flush=True)
        del ref, ref2, mine
        if dev != "cpu":
            torch.cuda.empty_cache()
    return curves


# ---- the training's kernels on the GPU: carried, and timed one by one ----

def check_packs(g, gname):
    """Every kernel of plan_calls() x plan_variants() on this graph loaded
    and prepared on the GPU before anything is timed. This gop has no LLVM,
    so each must come from the carried packs: a missing one is named here
    (the preparation and the run disagree), not met halfway through."""
    missing, n = [], 0
    for m, c, sched, joint in each_variant(g):
        try:
            c.prepare(sched, joint)
            n += 1
        except gop.GopError as e:
            lines = [ln for ln in str(e).splitlines() if "error" in ln] or [str(e)]
            missing.append(f"{m}: {c.op.name} {c.ext} schedule "
                           f"{'own' if sched == gplan.OWN else sched} joint {joint}: "
                           f"{lines[0][:200]}")
    record("packs", f"{gname}: every kernel of the training plan is carried", not missing,
           f"{n} operator calls prepared (forward and backward, chosen and default)"
           + "".join(f"\n       missing: {x}" for x in missing))
    return not missing


def median_ms(torch, fn, reps=20, warmup=3, dev="cuda"):
    for _ in range(warmup):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          if dev != "cpu" else (_Clock(), _Clock()) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    if dev != "cpu":
        torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


def time_ops(torch, g, gname, rows, dev="cuda", reps=20):
    """Each distinct gop call of the training on this graph, forward and
    backward (joint, and per input where there are several), under the
    default mapping and under the call's schedule (SCHEDULE resolved):
    which derived operators the chooser's pick helps, and which it hurts."""
    seen = set()
    for m in MODELS:
        for c in plan_calls(g, m):
            key = (c.op.name, id(c.graph), tuple(sorted(c.ext.items())), c.wrt)
            if key in seen:
                continue
            seen.add(key)
            gen = torch.Generator(device=dev).manual_seed(0)
            xs = [torch.rand(s.shape(c.graph, c.ext), generator=gen, device=dev) + 0.5
                  for s in c.op.inputs]
            for joint in ((True, False) if len(c.wrt) > 1 else (True,)):
                row = {"graph": gname, "model": m, "op": c.op.name,
                       "extents": " ".join(f"{k}={v}" for k, v in sorted(c.ext.items())),
                       "wrt": ",".join(c.wrt), "joint": joint}
                for label, sched in (("default", None), ("chosen", c.schedule)):
                    fs = c.kernels(sched, joint)
                    row[f"schedule_{label}"] = "; ".join(f"{k[0]}: {k[1] or 'default'}"
                                                         for k in fs)
                    y = c.op(c.graph, *xs, schedule=sched)
                    outs = list(y) if isinstance(y, tuple) else [y]
                    row[f"fwd_ms_{label}"] = median_ms(
                        torch, lambda: c.op(c.graph, *xs, schedule=sched), reps, dev=dev)
                    gr = c.gradient(joint)
                    if gr is None:
                        row[f"bwd_ms_{label}"] = ""
                        continue
                    dy = [torch.randn(o.shape, generator=gen, device=dev) for o in outs]
                    bs = gop.core.backward_schedule(sched)
                    row[f"bwd_ms_{label}"] = median_ms(
                        torch, lambda: gr(c.graph, xs, outs, dy, schedule=bs), reps, dev=dev)
                rows.append(row)
                b_d, b_c = row["bwd_ms_default"], row["bwd_ms_chosen"]
                print(f"     ops {gname} {c.op.name} {row['extents']} wrt {row['wrt'] or '-'}"
                      f"{'' if joint else ' (per input)'}: forward {row['fwd_ms_default']:.3f}"
                      f" -> {row['fwd_ms_chosen']:.3f} ms"
                      + (f", backward {b_d:.3f} -> {b_c:.3f} ms ({b_d / b_c:.2f}x)"
                         if b_d != "" else "")
                      + f" [{row['schedule_chosen']}]", flush=True)


# ---- output ----

def svg_curves(path, gname, curves):
    """Loss against step, PyG solid and gop dashed, one colour per model."""
    W, H, L, R, T, B = 640, 400, 60, 130, 30, 40
    allv = [v for a, b in curves.values() for v in a + b if math.isfinite(v)]
    if not allv:
        return
    lo, hi = min(allv), max(allv)
    hi = hi if hi > lo else lo + 1

    def px(i, v):
        return (L + (W - L - R) * i / (STEPS - 1), T + (H - T - B) * (hi - v) / (hi - lo))

    colours = {"gcn": "#1f77b4", "gat": "#d62728", "sage": "#2ca02c", "gin": "#9467bd"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="18" text-anchor="middle">training loss on {gname}: '
           f'PyG (solid) and gop (dashed)</text>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        _, y = px(0, v)
        out.append(f'<text x="{L - 5}" y="{y + 4:.1f}" text-anchor="end">{v:.3f}</text>')
    for i in range(0, STEPS, 10):
        x, _ = px(i, lo)
        out.append(f'<text x="{x:.1f}" y="{H - B + 15}" text-anchor="middle">{i}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 5}" text-anchor="middle">step</text>')
    for n, (m, (a, b)) in enumerate(curves.items()):
        c = colours.get(m, "black")
        for vals, dash in ((a, ""), (b, ' stroke-dasharray="6,4"')):
            pts = " ".join(f"{px(i, v)[0]:.1f},{px(i, v)[1]:.1f}" for i, v in enumerate(vals)
                           if math.isfinite(v))
            out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5"{dash} '
                       f'points="{pts}"/>')
        y = T + 20 * n
        out.append(f'<line x1="{W - R + 10}" y1="{y}" x2="{W - R + 40}" y2="{y}" '
                   f'stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{W - R + 45}" y="{y + 4}">{m}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_csv(path, rows):
    if not rows:
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _cell(v, fmt, note=""):
    """A table cell: the value, or (NaN: not run) the note why, '|' escaped."""
    if isinstance(v, float) and math.isnan(v):
        return (note or "-").replace("|", "\\|")[:160]
    return fmt.format(v)


def _geomean(vals):
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def _captured_line(rows, key):
    """The summary of gop captured in `rows`: its geometric mean speedup over
    PyG eager, and over PyG captured where PyG captured (also into results,
    as geomean_speedup_captured{key} and ..._vs_pyg_captured{key})."""
    cap = [s["speedup_captured"] for s in rows if not math.isnan(s["speedup_captured"])]
    if not cap:
        notes = sorted({s["gop_captured_note"] for s in rows if s["gop_captured_note"]})
        return f"gop captured: not measured ({'; '.join(notes) or 'no run'})"
    g = results[f"geomean_speedup_captured{key}"] = _geomean(cap)
    out = f"gop captured: {g:.2f}x PyG eager ({len(cap)} of {len(rows)})"
    both = [s["speedup_captured_vs_pyg_captured"] for s in rows
            if not math.isnan(s["speedup_captured_vs_pyg_captured"])]
    if both:
        gb = results[f"geomean_speedup_captured_vs_pyg_captured{key}"] = _geomean(both)
        out += f", {gb:.2f}x PyG captured (the {len(both)} where PyG captured)"
    else:
        out += ", PyG captured nowhere"
    return out


def write_report(out, summary, orows=()):
    lines = report_head(results, "gop training vs PyG")
    if summary:
        lines += [f"## full-batch training, {STEPS} Adam steps", "",
                  f"gop trains with schedule={SCHEDULE!r}; 'default' is the same gop model "
                  "under the default mapping, timed in the same run. 'captured': the whole "
                  "step (forward, loss, backward, Adam capturable=True) captured once as a "
                  "CUDA graph (gop.train.capture_step) and replayed; its speedup is over PyG "
                  "eager; PyG captured the same way where it captures (else why not).", "",
                  "| graph | model | epoch ms PyG | epoch ms gop | speedup | epoch ms gop "
                  "default (speedup) | epoch ms gop captured | captured speedup over PyG | "
                  "epoch ms PyG captured | forward ms PyG | "
                  "forward ms gop | peak MB PyG | peak MB gop (+device) | peak MB gop captured | "
                  "acc PyG | acc gop | acc gop captured | "
                  "max rel loss diff (PyG rerun) | max rel loss diff captured |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for s in summary:
            lines.append(
                f"| {s['graph']} | {s['model']} | {s['epoch_ms_pyg']:.2f} | "
                f"{s['epoch_ms_gop']:.2f} | {s['speedup']:.2f}x | "
                f"{s['epoch_ms_gop_default']:.2f} ({s['speedup_default']:.2f}x) | "
                f"{_cell(s['epoch_ms_gop_captured'], '{:.2f}', s['gop_captured_note'])} | "
                f"{_cell(s['speedup_captured'], '{:.2f}x')} | "
                f"{_cell(s['epoch_ms_pyg_captured'], '{:.2f}', s['pyg_captured_note'])} | "
                f"{s['forward_ms_pyg']:.2f} | "
                f"{s['forward_ms_gop']:.2f} | {s['peak_mb_pyg']:.0f} | "
                f"{s['peak_mb_gop']:.0f} (+{s['device_growth_mb_gop']:.0f}) | "
                f"{_cell(s['peak_mb_gop_captured'], '{:.0f}')} | "
                f"{s['acc_pyg']:.4f} | {s['acc_gop']:.4f} | "
                f"{_cell(s['acc_gop_captured'], '{:.4f}')} | {s['max_rel_loss_diff']:.1e} "
                f"({s['max_rel_loss_diff_pyg_rerun']:.1e}) | "
                f"{_cell(s['max_rel_loss_diff_captured'], '{:.1e}')} |")
        for m in MODELS:
            sp = [s["speedup"] for s in summary if s["model"] == m]
            sd = [s["speedup_default"] for s in summary if s["model"] == m]
            if sp:
                gm, gd = _geomean(sp), _geomean(sd)
                results[f"geomean_speedup_{m}"] = gm
                results[f"geomean_speedup_default_{m}"] = gd
                lines.append(f"\n{m}: geometric mean epoch speedup over PyG {gm:.2f}x "
                             f"(default mapping: {gd:.2f}x); " + _captured_line(
                                 [s for s in summary if s["model"] == m], f"_{m}"))
        lines.append("\nall models: " + _captured_line(summary, ""))
    if orows:
        lines += ["", "## each gop call of the training, default mapping -> chosen schedule",
                  "", "| graph | op | extents | wrt | joint | forward ms | backward ms | "
                  "chosen schedules |", "| --- | --- | --- | --- | --- | ---: | ---: | --- |"]
        for r in orows:
            b = (f"{r['bwd_ms_default']:.3f} -> {r['bwd_ms_chosen']:.3f}"
                 if r["bwd_ms_default"] != "" else "")
            lines.append(f"| {r['graph']} | {r['op']} | {r['extents']} | {r['wrt']} | "
                         f"{r['joint']} | {r['fwd_ms_default']:.3f} -> {r['fwd_ms_chosen']:.3f}"
                         f" | {b} | {r['schedule_chosen']} |")
    lines += report_checks(results)
    with open(os.path.join(out, "train.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    results["summary"] = summary
    with open(os.path.join(out, "train.json"), "w") as f:
        json.dump(results, f, indent=1)


def main():
    global STEPS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prepare", action="store_true")
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--out", default="train-out")
    ap.add_argument("--graphs", default="pubmed ogbn-arxiv")
    ap.add_argument("--small", default="cora", help="graph of the gradcheck section")
    ap.add_argument("--skip", default="", help="sections to skip: gradcheck, train, ops")
    ap.add_argument("--models", default=" ".join(MODELS), help="models to train")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: a smoke test of this script on the interpreter, no GPU")
    ap.add_argument("--steps", type=int, default=STEPS, help="training steps")
    a = ap.parse_args()
    STEPS = a.steps
    dev = a.device
    if a.prepare:
        return prepare(a.datasets, a.graphs.split())
    import torch
    import torch_geometric as tg
    import torch_geometric.nn  # noqa: F401
    import gop.nn  # noqa: F401
    import gop.train  # noqa: F401
    os.makedirs(a.out, exist_ok=True)
    ready, what = start(results, torch, tg.__version__,
                        tolerances={"gradcheck_rel_l2": TOL_GRAD, "loss_rel": TOL_LOSS,
                                    "accuracy_abs": TOL_ACC})
    print(f"== gop {gop.__version__} on {what}; torch {torch.__version__}, PyG {tg.__version__}",
          flush=True)
    if dev == "cuda" and not ready:
        record("setup", "GPU", False, what)
        write_report(a.out, [])
        return 1
    skip = set(a.skip.split())
    models = tuple(a.models.split())
    summary, rows, grows, orows = [], [], [], []
    if "gradcheck" not in skip:
        t0 = time.time()
        small = os.path.join(a.datasets, f"{a.small}.mtx.gz")
        g = gop.Graph.open(small if os.path.exists(small) else "rmat:12:8")
        try:
            gradcheck(torch, g, grows, dev=dev)
        except Exception as e:  # noqa: BLE001 - a section's crash is its failure
            import traceback
            traceback.print_exc()
            record("gradcheck", "section", False, f"{type(e).__name__}: {e}")
        write_csv(os.path.join(a.out, "gradcheck.csv"), grows)
        print(f"== gradcheck: {time.time() - t0:.1f} s", flush=True)
    for gname in a.graphs.split():
        path = graph_path(a.datasets, gname)
        if not os.path.exists(path):
            record("train", gname, False, f"{path} is missing")
            continue
        if not ({"train", "ops"} - skip):
            break
        if not check_packs(gop.Graph.open(path), gname):
            continue
        if "train" not in skip:
            t0 = time.time()
            try:
                curves = train_graph(torch, tg, path, gname, rows, summary, dev=dev,
                                     models=models)
                svg_curves(os.path.join(a.out, f"loss_{gname}.svg"), gname, curves)
            except Exception as e:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                record("train", gname, False, f"{type(e).__name__}: {e}")
            print(f"== train {gname}: {time.time() - t0:.1f} s", flush=True)
        if "ops" not in skip:
            t0 = time.time()
            try:
                time_ops(torch, gop.Graph.open(path), gname, orows, dev=dev,
                         reps=20 if dev == "cuda" else 2)
            except Exception as e:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                record("ops", gname, False, f"{type(e).__name__}: {e}")
            print(f"== ops {gname}: {time.time() - t0:.1f} s", flush=True)
    write_csv(os.path.join(a.out, "train.csv"), rows)
    write_csv(os.path.join(a.out, "train_summary.csv"), summary)
    write_csv(os.path.join(a.out, "ops.csv"), orows)
    write_report(a.out, summary, orows)
    return finish(results)


if __name__ == "__main__":
    sys.exit(main())
