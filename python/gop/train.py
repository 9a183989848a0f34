"""A whole training step captured into a CUDA graph and replayed.

A training epoch of a small GNN is mostly host time: Python, autograd's
bookkeeping, torch's dispatch and gop's per-call checks, around kernels of
a few microseconds each. gop launches its kernels with the CUDA driver API
on torch's current stream, without waiting on the host and without
allocating once a call has been prepared, so one step (forward, loss,
backward through gop.autograd's Functions, optimizer step) can be captured
with torch.cuda.graph and replayed as one graph launch:

    opt = torch.optim.Adam(model.parameters(), lr=0.01, capturable=True)
    idx = train_mask.nonzero().squeeze(1)       # indices: a mask would sync
    y_train = y[idx]

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x, g).index_select(0, idx), y_train)
        loss.backward()
        opt.step()
        return loss

    step_graph = gop.train.capture_step(step, optimizer=opt, model=model)
    for epoch in range(100):
        loss = step_graph.replay()              # one step; loss is overwritten next time

capture_step(step_fn, ...) is in its docstring; CaptureError is what it
raises when the step cannot be captured.

Mini-batches (a new sampled subgraph each step) are captured the same way
over a gop.BatchGraph, a graph of fixed capacity whose edges each batch
replaces in place: CapturedBatches keeps the graph and static input
buffers, captures the step at the first batch and replays it for every
later one, capturing again, larger, when a batch outgrows them
(docs/graph-format.md, "Captured mini-batches"):

    run = gop.train.CapturedBatches(
        lambda g, x, y: sage_step(g, x, y), optimizer=opt, model=model,
        batch_size=1024)
    for batch in loader:                         # PyG's NeighborLoader
        loss = run(batch.edge_index, batch.num_nodes, nodes={"x": batch.x},
                   seeds={"y": batch.y[:batch.batch_size]})
"""
import copy

import torch

from .graph import BatchGraph, check_batch

__all__ = ["capture_step", "CapturedStep", "CaptureError", "CapturedBatches"]


class CaptureError(RuntimeError):
    """A step that cannot be captured into a CUDA graph (work that waits on
    the host, such as .item(), a boolean mask or torch.nonzero, or an
    allocation outside torch's allocator during the capture). cause: the
    first line of torch's (or the driver's, or gop's) own message; error:
    that first exception itself (a gop.GopError where a gop call failed)."""

    def __init__(self, message, cause="", error=None):
        super().__init__(message)
        self.cause, self.error = cause, error


class CapturedStep:
    """A captured training step (capture_step's result). replay() runs the
    step once on the GPU, in the current stream, and returns what step_fn
    returned at the capture (the same tensors each time, overwritten by
    each replay: clone what must be kept). Attributes: graph (the
    torch.cuda.CUDAGraph), outputs (step_fn's return value), warmup (the
    number of warm-up steps run before the capture), restored (whether
    the state was put back after them)."""

    def __init__(self, graph, outputs, warmup, restored, stream):
        self.graph, self.outputs = graph, outputs
        self.warmup, self.restored = warmup, restored
        self.stream = stream  # the side stream of warm-up and capture (kept alive)

    def replay(self):
        self.graph.replay()
        return self.outputs

    __call__ = replay

    def __repr__(self):
        return (f"<gop captured step: {self.warmup} warm-up step(s), "
                f"{'state restored' if self.restored else 'state kept'} before capture>")


# Optimizers whose per-parameter state, made at the first step, starts at
# zero (and NAdam's mu_product at one): a state the warm-up made is reset
# to that, in place, which is what the first eager step would have made.
_FRESH = {"Adam": {}, "AdamW": {}, "Adamax": {}, "RAdam": {}, "RMSprop": {},
          "NAdam": {"mu_product": 1.0}, "SGD": {}}


def _fresh_values(opt):
    """The {state key: initial value} overrides of `opt`'s class (others:
    zero), or None when capture_step does not know its initial state."""
    for cls in type(opt).__mro__:
        if cls.__module__.startswith("torch.optim") and cls.__name__ in _FRESH:
            return _FRESH[cls.__name__]
    return None


def _tensors(model, optimizer):
    """(name, tensor) of every parameter and buffer the step touches that
    capture_step knows of: the model's state_dict and the optimizer's
    parameters, each once."""
    out, seen = [], set()
    if model is not None:
        for k, t in model.state_dict(keep_vars=True).items():
            if torch.is_tensor(t) and id(t) not in seen:
                seen.add(id(t))
                out.append((k, t))
    if optimizer is not None:
        for gi, group in enumerate(optimizer.param_groups):
            for pi, p in enumerate(group["params"]):
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append((f"param_groups[{gi}]['params'][{pi}]", p))
    return out


def _check_optimizer(optimizer):
    for group in optimizer.param_groups:
        if "capturable" in group and not group["capturable"] and not group.get("fused"):
            name = type(optimizer).__name__
            raise ValueError(
                f"gop.train.capture_step: the {name} optimizer was built with "
                f"capturable=False, which keeps its step count on the host: a captured "
                f"step would replay one fixed update. Build it with capturable=True, e.g. "
                f"torch.optim.{name}(model.parameters(), lr=..., capturable=True)")


def _check_devices(tensors):
    for name, t in tensors:
        if not t.is_cuda:
            raise ValueError(
                f"gop.train.capture_step: {name} is on {t.device}: a CUDA graph captures "
                f"CUDA work only (gop runs CPU tensors on its interpreter, which cannot be "
                f"captured). Move the model and the data to the GPU, or train eagerly")
    if not torch.cuda.is_available():
        raise ValueError("gop.train.capture_step: CUDA is not available: a CUDA graph "
                         "captures CUDA work only; train eagerly")


def _first_line(e):
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def _root(e):
    """The first error of a chain: a step that fails inside the capture
    raises there, and torch's capture_end then raises again (its context
    is the first)."""
    seen = set()
    while id(e) not in seen:
        seen.add(id(e))
        nxt = e.__cause__ or e.__context__
        if nxt is None:
            break
        e = nxt
    return e


def _after_failed_capture(pool, current):
    """Where the step failed inside the capture, torch.cuda.graph's exit
    raises from capture_end before it puts the caller's stream back and
    before the caching allocator stops routing the capture stream to the
    graph's pool (then every later allocation asks the driver whether the
    stream still captures): both are undone here, quietly where there is
    nothing to undo."""
    try:
        torch._C._cuda_endAllocateToPool(torch.cuda.current_device(), pool)
    except Exception:  # noqa: BLE001 - capture_end did it, or this torch has no such call
        pass
    torch.cuda.set_stream(current)


class _Snapshot:
    """What a warm-up step changes, copied before it and written back in
    place after it: the model's parameters and buffers, the optimizer's
    per-parameter state and hyperparameters, the CPU and CUDA random
    number generators."""

    def __init__(self, tensors, optimizer):
        self.optimizer = optimizer
        with torch.no_grad():
            self.tensors = [(t, t.detach().clone()) for _, t in tensors]
            self.state = {}
            if optimizer is not None:
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        st = optimizer.state.get(p)
                        self.state[p] = None if not st else {
                            k: (v.detach().clone() if torch.is_tensor(v) else copy.deepcopy(v))
                            for k, v in st.items()}
                self.groups = [{k: (v.detach().clone() if torch.is_tensor(v)
                                    else copy.deepcopy(v))
                                for k, v in g.items() if k != "params"}
                               for g in optimizer.param_groups]
        self.rng_cpu = torch.get_rng_state()
        self.rng_cuda = torch.cuda.get_rng_state() if torch.cuda.is_available() else None

    def restore(self):
        with torch.no_grad():
            for t, v in self.tensors:
                t.detach().copy_(v)
            opt = self.optimizer
            if opt is not None:
                fresh = _fresh_values(opt) or {}
                for p, saved in self.state.items():
                    st = opt.state.get(p)
                    if not st:
                        continue
                    for k, v in list(st.items()):
                        if saved is not None and k in saved:
                            s = saved[k]
                            if torch.is_tensor(v) and torch.is_tensor(s) and v.shape == s.shape:
                                v.copy_(s)
                            else:
                                st[k] = s
                        elif saved is None and torch.is_tensor(v):
                            v.fill_(fresh.get(k, 0.0))  # what the first eager step makes
                for g, saved in zip(opt.param_groups, self.groups):
                    for k, s in saved.items():
                        v = g.get(k)
                        if torch.is_tensor(v) and torch.is_tensor(s) and v.shape == s.shape:
                            v.copy_(s)
                        else:
                            g[k] = s
        torch.set_rng_state(self.rng_cpu)
        if self.rng_cuda is not None:
            torch.cuda.set_rng_state(self.rng_cuda)


def capture_step(step_fn, warmup=3, *, optimizer, model=None, restore=True, pool=None,
                 capture_error_mode="global"):
    """Captures one training step into a CUDA graph: returns a CapturedStep
    whose replay() runs it again (and .graph, the torch.cuda.CUDAGraph).

    step_fn() is one step: optimizer.zero_grad(set_to_none=True), forward,
    loss, loss.backward(), optimizer.step(); it returns what replay() will
    return (the loss tensor, say). optimizer: the optimizer step_fn steps,
    which must have been built with capturable=True (Adam, AdamW: otherwise
    it counts steps on the host and ValueError says so); None for a step
    that updates nothing. model: the torch.nn.Module trained (its buffers
    are restored after the warm-up too; see restore).

    What is captured: every kernel one call of step_fn queues on the
    capture stream, torch's (the dense layers, the loss, the optimizer's
    foreach kernels) and gop's (each operator's memsets and launches,
    queued by the driver API on torch's current stream, and the derived
    backward operators that gop.autograd runs on the stream autograd gives
    them). What is not: the host code. Python runs only during the warm-up
    and the capture (warmup + 1 times); a replay launches the same kernels
    on the same addresses. So:
      * the inputs (features, labels, indices, the graph) must be static:
        tensors that stay alive at the same address; to train on new data,
        .copy_() it into them before replay();
      * the outputs are static too: each replay overwrites them;
      * nothing in the step may wait on the host (.item(), .cpu(), printing
        a tensor, a boolean mask index or torch.nonzero): index with an
        index tensor made once outside. Such a step raises CaptureError
        ("not capturable", with torch's message);
      * gop's calls must be prepared before the capture (kernels loaded,
        device temporaries allocated): the warm-up does it. The graph then
        uses those temporaries and the gop.Graph's device arrays: keep the
        graph alive, and do not run the same gop calls on another stream
        while a replay runs;
      * the tensors must be CUDA tensors: CPU tensors (gop's interpreter)
        raise ValueError before anything runs.

    warmup: steps run before the capture on a side stream, as torch's
    whole-network capture requires (lazy initialisation: the optimizer's
    state, cuBLAS workspaces, gop's kernels and temporaries). They are
    real steps, but with restore=True (the default) they leave no trace:
    the model's parameters and buffers, the optimizer's state and
    hyperparameters and the CPU and CUDA random generators are copied
    before them and written back, in place (the same tensors, so the
    graph captures the addresses the model uses), after them; optimizer
    state the warm-up created (a fresh optimizer) is reset to what its
    first step creates (zeros; NAdam's mu_product one). The first replay()
    is then the step an eager loop would have taken first, and a captured
    run's loss curve is comparable step for step with an eager one from
    the same initial state (up to the order of float atomics; a step that
    draws random numbers, dropout, draws other ones in a replay than
    eagerly: torch's graph-safe generator). (Parameters' .grad are left as
    the warm-up made them: step_fn zeroes them.) restore=False keeps the
    warm-up's updates. restore=True knows the initial state of torch's Adam, AdamW,
    Adamax, RAdam, NAdam, RMSprop and SGD (with dampening 0); another
    optimizer whose state is empty raises ValueError (run one eager step
    first, so that its state exists and is copied, or pass restore=False).
    warmup=0 is allowed only where step_fn has already run eagerly in this
    process and the optimizer's state exists (otherwise the capture would
    record its initialisation and every replay would start from zero).

    pool: a memory pool handle for torch.cuda.graph (torch.cuda.graph_pool_handle(),
    or another graph's .pool(), to share memory with it); default a new one.
    capture_error_mode: torch.cuda.graph's ("global", as torch: any thread's
    potentially unsafe CUDA call during the capture is an error;
    "thread_local"; "relaxed"). gop's only driver call during a capture
    that is not queued on the stream is cuPointerGetAttributes, once per
    new tensor address (the capture's memory pool is new); should a driver
    count that as unsafe, the CaptureError names a GopError, and "relaxed"
    is the way round it.
    """
    if not callable(step_fn):
        raise TypeError("gop.train.capture_step: step_fn must be callable")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"gop.train.capture_step: warmup must be an int >= 0, got {warmup!r}")
    if optimizer is not None:
        _check_optimizer(optimizer)
    tensors = _tensors(model, optimizer)
    if optimizer is not None:
        params = [p for g in optimizer.param_groups for p in g["params"]]
        empty = [p for p in params if not optimizer.state.get(p)]
        if warmup == 0 and empty:
            raise ValueError("gop.train.capture_step: warmup=0, but the optimizer has not "
                             "stepped yet: its state would be created inside the capture "
                             "and reset by every replay; use warmup >= 1")
        if restore and empty and _fresh_values(optimizer) is None:
            raise ValueError(f"gop.train.capture_step: restore=True does not know the "
                             f"initial state of {type(optimizer).__name__}: run one eager "
                             f"step first (its state is then copied and restored), or pass "
                             f"restore=False (the warm-up steps then count)")
        if (restore and empty and isinstance(optimizer, torch.optim.SGD)
                and any(g.get("momentum", 0) and g.get("dampening", 0)
                        for g in optimizer.param_groups)):
            raise ValueError("gop.train.capture_step: restore=True: SGD with momentum and "
                             "dampening starts its buffer from the first gradient, which "
                             "cannot be reset in place: run one eager step first, or pass "
                             "restore=False")
    _check_devices(tensors)
    snap = _Snapshot(tensors, optimizer) if restore and warmup else None

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            step_fn()
    torch.cuda.current_stream().wait_stream(stream)
    if snap is not None:
        snap.restore()
        del snap

    graph = torch.cuda.CUDAGraph()
    current = torch.cuda.current_stream()
    # a pool of its own unless given one: named here, so that a failed
    # capture can be unhooked from it
    pool = torch.cuda.graph_pool_handle() if pool is None else pool
    try:
        # the warm-up's stream: whatever it initialised lazily per stream
        # (cuBLAS workspaces, gop's stream check) is what the capture finds
        with torch.cuda.graph(graph, pool=pool, stream=stream,
                              capture_error_mode=capture_error_mode):
            outputs = step_fn()
    except Exception as e:  # noqa: BLE001 - re-raised with what it means
        _after_failed_capture(pool, current)
        root = _root(e)
        cause = _first_line(root)
        also = f"\n(then, ending the capture: {_first_line(e)})" if root is not e else ""
        hint = ("a captured step must not wait on the host: no .item(), .cpu(), boolean "
                "mask indexing or torch.nonzero; every gop call prepared by the warm-up")
        if type(root).__name__ == "GopError" and capture_error_mode != "relaxed":
            hint += (f"; a gop call failed under capture_error_mode={capture_error_mode!r}: "
                     f"try capture_error_mode='relaxed'")
        raise CaptureError(
            f"gop.train.capture_step: the step is not capturable into a CUDA graph: "
            f"{type(root).__name__}: {str(root).strip()}{also}\n({hint})",
            cause, root) from e
    return CapturedStep(graph, outputs, warmup, bool(restore and warmup), stream)


def capacity(need, given, growth):
    """CapturedBatches' capacity for a batch of `need` (vertices or edges):
    `given` (the one asked for, or the last graph's) where it holds the
    batch, else growth times the batch (and at least `given`)."""
    if given and need <= given:
        return given
    return max(given or 0, int(need * growth) + 1)


class CapturedBatches:
    """A mini-batch training step captured once and replayed for every
    batch: step_fn(graph, **inputs) is one step (zero_grad, forward, loss,
    backward, optimizer.step(); it returns what a call returns, the loss
    say), over a gop.BatchGraph and static inputs, which each call fills
    with the batch's:

      * nodes: {name: tensor of the batch's num_nodes rows} (features),
        padded to graph.num_nodes rows with zeros;
      * seeds: {name: tensor of at most batch_size rows} (the seeds'
        labels: NeighborLoader puts the seeds first), padded to batch_size
        rows with seed_fill (default -100, cross_entropy's ignore_index,
        so that a short last batch's loss is over its own seeds).

    The first call makes the BatchGraph (max_nodes and max_edges, default
    `growth` times the first batch's), the buffers, and captures the step
    with capture_step (warmup steps that leave no trace; the optimizer must
    be capturable=True); a batch larger than the graph makes a larger one
    (growth times the batch) and captures again (`captures` counts them).
    Every call: the batch's edges loaded into the graph (BatchGraph.load,
    with its range check when check=True), the inputs copied into the
    buffers, one replay. The returned tensors are overwritten by the next
    call. step_fn must read the batch only through its arguments (the
    loss of the seeds: its first batch_size rows)."""

    def __init__(self, step_fn, *, optimizer, model=None, batch_size, max_nodes=None,
                 max_edges=None, growth=1.25, seed_fill=-100, warmup=3, check=True,
                 device=None):
        if not callable(step_fn):
            raise TypeError("gop.train.CapturedBatches: step_fn must be callable")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"gop.train.CapturedBatches: batch_size must be an int >= 1, "
                             f"got {batch_size!r}")
        if not isinstance(growth, (int, float)) or not growth >= 1.0:
            raise ValueError(f"gop.train.CapturedBatches: growth must be a number >= 1, "
                             f"got {growth!r}")
        if optimizer is not None:
            _check_optimizer(optimizer)
        self.step_fn, self.optimizer, self.model = step_fn, optimizer, model
        self.batch_size, self.growth, self.seed_fill = batch_size, float(growth), seed_fill
        self.warmup, self.check, self.device = warmup, check, device
        self._max = (max_nodes, max_edges)
        self.graph, self.step, self.inputs, self.captures = None, None, {}, 0

    def _make(self, num_nodes, num_edges, nodes, seeds):
        # the old capture first (it replays into the old graph's arrays)
        self.step, self.inputs, self.graph = None, {}, None
        mn, me = self._max
        mn, me = capacity(num_nodes, mn, self.growth), capacity(num_edges, me, self.growth)
        self._max = (mn, me)
        self.graph = BatchGraph(mn, me, device=self.device)
        dev = self.graph._edges.device
        for k, t in nodes.items():
            self.inputs[k] = torch.zeros((self.graph.num_nodes,) + tuple(t.shape[1:]),
                                         dtype=t.dtype, device=dev)
        for k, t in seeds.items():
            self.inputs[k] = torch.full((self.batch_size,) + tuple(t.shape[1:]),
                                        self.seed_fill, dtype=t.dtype, device=dev)

    def __call__(self, edge_index, num_nodes, nodes, seeds=None):
        seeds = seeds or {}
        if not isinstance(nodes, dict) or not isinstance(seeds, dict):
            raise TypeError("gop.train.CapturedBatches: nodes and seeds must be dicts "
                            "{name: tensor}")
        both = set(nodes) & set(seeds)
        if both:
            raise ValueError(f"gop.train.CapturedBatches: {sorted(both)} both a node and a "
                             f"seed input")
        for k, t in seeds.items():
            if not torch.is_tensor(t) or t.dim() < 1 or t.size(0) > self.batch_size:
                raise ValueError(f"gop.train.CapturedBatches: seeds[{k!r}] must be a tensor "
                                 f"of at most batch_size = {self.batch_size} rows, got "
                                 f"{list(t.shape) if torch.is_tensor(t) else type(t).__name__}")
        # the batch's form (types, shape) before a graph is sized for it;
        # its fit and ids are load's
        n, e = check_batch(edge_index, num_nodes, 2 ** 31 - 1, 2 ** 63 - 1, check=False)
        g = self.graph
        if g is None or n > g.max_nodes or e > g.max_edges:
            self._make(n, e, nodes, seeds)
            g = self.graph
        if set(self.inputs) != set(nodes) | set(seeds):
            raise ValueError(f"gop.train.CapturedBatches: inputs {sorted(set(nodes) | set(seeds))}"
                             f", but the step was captured with {sorted(self.inputs)}")
        g.load(edge_index, n, check=self.check)
        with torch.no_grad():
            for k, t in nodes.items():
                g.node_rows(t, out=self.inputs[k])
            for k, t in seeds.items():
                buf = self.inputs[k]
                if tuple(buf.shape[1:]) != tuple(t.shape[1:]):
                    raise ValueError(f"gop.train.CapturedBatches: seeds[{k!r}] has rows of "
                                     f"{list(t.shape[1:])}, the captured step "
                                     f"{list(buf.shape[1:])}")
                buf[:t.size(0)].copy_(t)
                buf[t.size(0):].fill_(self.seed_fill)
        if self.step is None:
            inputs, graph, fn = self.inputs, g, self.step_fn
            self.step = capture_step(lambda: fn(graph, **inputs), self.warmup,
                                     optimizer=self.optimizer, model=self.model)
            self.captures += 1
        return self.step.replay()

    def __repr__(self):
        return (f"<gop captured batches: {self.captures} capture(s), graph "
                f"{self.graph!r}>")
