"""Graphs and tensors sharded over the GPUs of a host (docs/multigpu.md).

One process per GPU (torchrun starts them), a torch.distributed process
group over NCCL between them. Every process opens the same whole graph and
computes the same partition (gop_graph_partition: contiguous destination
ranges balanced by in-edges, or METIS parts); process k then holds

  - the vertices it owns (their rows of every vertex tensor: `x_own`),
  - the in-edges of those vertices (their rows of every edge tensor),
  - its halo: the remote source rows those edges read, fetched from their
    owners with one NCCL all-to-all per aggregation (only the rows needed,
    each once), and sent back the same way, added, in the backward.

An aggregation runs as MGG runs it, in two work classes: the in-edges whose
source is local go to a kernel that starts at once, while the halo rows
travel; the in-edges from the halo go to a second kernel once they have
arrived, adding into the same rows. Operators that do not add (max, min)
run once on the part's whole graph after the exchange.

    import torch.distributed as dist, gop, gop.distributed as gd
    dist.init_process_group("nccl")                # torchrun sets the rank
    g = gop.Graph.open("rmat:22:16")               # the same graph everywhere
    sg = gd.ShardedGraph(g)                        # this rank's part
    x = sg.shard(x_whole)                          # or features made per part
    y = sg.aggregate(gop.stdlib.copy_u_sum, x)     # this rank's rows of Y
    y.sum().backward()                             # x.grad, halo shares added

Partition (no torch) is what every rank computes; it is also what
`gopc graph --partition P` prints.
"""
import ctypes

import numpy as np

from ._context import GopError, _b, _ctx, _diag, _lock
from ._lib import lib
from .graph import Graph


class _PartInfo(ctypes.Structure):
    _fields_ = [("num_own", ctypes.c_int64), ("num_halo", ctypes.c_int64),
                ("num_edges", ctypes.c_int64), ("num_remote_edges", ctypes.c_int64),
                ("rows", ctypes.POINTER(ctypes.c_int32)),
                ("eids", ctypes.POINTER(ctypes.c_int64)),
                ("halo_from", ctypes.POINTER(ctypes.c_int32))]


_SIGS = {
    "gop_graph_partition": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                              ctypes.c_char_p]),
    "gop_partition_free": (None, [ctypes.c_void_p]),
    "gop_partition_parts": (ctypes.c_int, [ctypes.c_void_p]),
    "gop_partition_cut": (ctypes.c_int64, [ctypes.c_void_p]),
    "gop_partition_owner": (ctypes.POINTER(ctypes.c_int32), [ctypes.c_void_p]),
    "gop_partition_part": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                          ctypes.POINTER(_PartInfo)]),
    "gop_partition_graph": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int]),
}


def _fn(name):
    try:
        f = getattr(lib, name)
    except AttributeError:
        raise GopError(f"this libgop has no {name}: it predates partitions; rebuild gop") \
            from None
    f.restype, f.argtypes = _SIGS[name]
    if lib.gop_struct_size(b"GopPartInfo") != ctypes.sizeof(_PartInfo):
        raise GopError("this libgop's GopPartInfo differs from gop.distributed's: the "
                       "package and the library come from different versions")
    return f


class Partition:
    """A graph's destinations over `parts` parts (method "edges" or "metis"),
    computed on the host from the whole graph; deterministic, so every rank
    computes the same one. part(k) gives part k's maps as NumPy arrays:
    rows (own global ids, then halo ids grouped by owner), eids (its edges'
    global ids, increasing), halo_from (P + 1 offsets into the halo)."""

    def __init__(self, graph, parts, method="edges"):
        if not isinstance(graph, Graph):
            raise TypeError(f"Partition: a gop.Graph, got {type(graph).__name__}")
        if not isinstance(parts, int) or isinstance(parts, bool):
            raise TypeError(f"Partition: parts must be an int, got {parts!r}")
        self.graph, self.parts, self.method = graph, parts, method
        with _lock:
            h = _fn("gop_graph_partition")(_ctx, graph._h, parts, _b(method))
            if not h:
                raise GopError(f"partition of {graph.name or 'graph'} into {parts}: {_diag()}")
        self._h = h
        self.cut = _fn("gop_partition_cut")(h)
        n = graph.num_nodes
        self.owner = np.ctypeslib.as_array(_fn("gop_partition_owner")(h), (n,)).copy() \
            if n else np.zeros(0, np.int32)
        self._parts = [self._read(k) for k in range(parts)]
        self._graphs = {}

    def _read(self, k):
        pi = _PartInfo()
        with _lock:
            if _fn("gop_partition_part")(self._h, k, ctypes.byref(pi)) != 0:
                raise GopError(_diag())
        nrows, ne = pi.num_own + pi.num_halo, pi.num_edges

        def arr(p, n, dt):
            return np.ctypeslib.as_array(p, (n,)).copy() if n else np.zeros(0, dt)
        return {"num_own": pi.num_own, "num_halo": pi.num_halo, "num_edges": ne,
                "num_remote_edges": pi.num_remote_edges,
                "rows": arr(pi.rows, nrows, np.int32), "eids": arr(pi.eids, ne, np.int64),
                "halo_from": arr(pi.halo_from, self.parts + 1, np.int32)}

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            try:
                _fn("gop_partition_free")(h)
            except Exception:  # noqa: BLE001 (interpreter shutdown: the library may be gone)
                pass

    def part(self, k):
        return self._parts[k]

    def part_graph(self, k):
        """Part k as a gop.Graph: own vertices first, then the halo; its edges
        in the whole graph's edge-id order (made once)."""
        if k not in self._graphs:
            with _lock:
                h = _fn("gop_partition_graph")(self._h, k)
                self._graphs[k] = Graph(h, f"{self.graph.name or 'graph'}#{k}/{self.parts}")
        return self._graphs[k]

    def classes(self, k):
        """Part k's edges as MGG's two work classes: (local graph, positions
        of its edges in the part's edge order, remote graph, positions).
        The local graph has the part's own vertices and the edges whose source
        is one of them; the remote graph's sources are the halo rows (0 is
        the first halo row), its destinations the own vertices, and it has
        max(own, halo) vertices, since a gop graph is square."""
        p = self._parts[k]
        ei = self.part_graph(k).edge_index
        nown, nhalo = p["num_own"], p["num_halo"]
        local = ei[0] < nown
        lpos, rpos = np.nonzero(local)[0], np.nonzero(~local)[0]
        gl = Graph.from_arcs(ei[0][lpos], ei[1][lpos], nown, f"part {k} local")
        gr = Graph.from_arcs(ei[0][rpos] - nown, ei[1][rpos], max(nown, nhalo, 1),
                             f"part {k} remote")
        return gl, lpos, gr, rpos

    def send_rows(self, k):
        """What part k sends in an exchange: for each part q (in order), the
        positions among k's own rows of the rows q's halo takes from k, in
        q's halo order. A list of P int64 arrays (empty for q == k)."""
        mine = self._parts[k]["rows"][:self._parts[k]["num_own"]]
        out = []
        for q in range(self.parts):
            p = self._parts[q]
            hf, nown = p["halo_from"], p["num_own"]
            wanted = p["rows"][nown + hf[k]:nown + hf[k + 1]]
            pos = np.searchsorted(mine, wanted)
            if q != k and wanted.size and not np.array_equal(mine[pos], wanted):
                raise GopError(f"partition: part {q}'s halo names rows part {k} does not own")
            out.append(pos.astype(np.int64))
        return out

    def report(self):
        """The numbers `gopc graph --partition` prints, as a dict."""
        parts = [{k2: (int(v) if np.isscalar(v) else None) for k2, v in p.items()
                  if k2 in ("num_own", "num_halo", "num_edges", "num_remote_edges")}
                 for p in self._parts]
        mean = self.graph.num_edges / self.parts if self.parts else 0
        return {"parts": self.parts, "method": self.method, "cut": int(self.cut),
                "edges": self.graph.num_edges, "per_part": parts,
                "balance": max(p["num_edges"] for p in parts) / mean if mean else 1.0}


# ---- torch: sharded tensors over a process group ----

def _torch():
    import torch
    import torch.distributed as dist
    return torch, dist


class _Plan:
    """The exchange of one ShardedGraph: send positions and counts."""

    def __init__(self, send_idx, send_counts, recv_counts, group):
        self.send_idx, self.send_counts, self.recv_counts = send_idx, send_counts, recv_counts
        self.group = group
        self.pending = None


def _exchange(plan, rows, counts_out, counts_in, out=None, async_op=False):
    """One all-to-all of `rows` (counts_out to each rank, in rank order)
    into `out` (made when None: counts_in rows from each rank): (out, the
    collective's work, or None when it was waited for)."""
    _, dist = _torch()
    if out is None:
        out = rows.new_empty((sum(counts_in),) + tuple(rows.shape[1:]))
    work = dist.all_to_all_single(out, rows.contiguous(), output_split_sizes=counts_in,
                                  input_split_sizes=counts_out, group=plan.group,
                                  async_op=async_op)
    return out, work


def _halo_function():
    torch, _ = _torch()

    class HaloExchange(torch.autograd.Function):
        """x_own -> the halo rows this rank's edges read (forward: one
        all-to-all; backward: the reverse all-to-all, shares added into the
        rows that were sent). Returns before the rows have arrived when
        `overlap`; plan.pending.wait() orders the current stream after them."""

        @staticmethod
        def forward(ctx, x_own, plan, overlap):
            ctx.plan, ctx.n = plan, x_own.shape[0]
            send = x_own.index_select(0, plan.send_idx)
            halo, work = _exchange(plan, send, plan.send_counts, plan.recv_counts,
                                   async_op=overlap)
            plan.pending = work
            return halo

        @staticmethod
        def backward(ctx, grad_halo):
            plan = ctx.plan
            back, _ = _exchange(plan, grad_halo, plan.recv_counts, plan.send_counts)
            gx = grad_halo.new_zeros((ctx.n,) + tuple(grad_halo.shape[1:]))
            gx.index_add_(0, plan.send_idx, back)
            return gx, None, None

    return HaloExchange


_HALO = None


def _dom(spec):
    """The domain of an operator's tensor: 'src', 'dst', 'edge' or None."""
    d = spec.dims[0] if spec.dims else None
    return d if d in ("src", "dst", "edge") else None


# operators whose message is X[src(e)] (times an edge factor W[e]): an
# in-edge v <- v with W = 1 adds row v of the source tensor unchanged
_CARRY_OPS = ("copy_u_sum", "u_mul_e_sum", "u_mul_e_sum_full")


def _sum_of_mean(op):
    """The stdlib *_sum operator a stdlib *_mean one is the sum of (divided
    by the in-degree), else None."""
    from . import stdlib
    if op.library is stdlib and op.name.endswith("_mean") and op.name[:-5] + "_sum" in stdlib:
        return stdlib[op.name[:-5] + "_sum"]
    return None


def _additive(op):
    """Whether an operator adds over in-edges into destinations with nothing
    else (DGL's *_sum): its two work classes' results may be added."""
    return op.name.endswith("_sum") and all(_dom(s) == "dst" for s in op.outputs)


# how aggregate() moves the halo of an operator whose remote class carries
# the local result: one all-to-all (the default), or P - 1 rounds of
# pairwise transfers with each peer's class run as soon as its rows are in.
# Rounds measured 1.03-1.06x faster at F = 256 on 3 and 4 GPUs and slower
# at F = 64 and 128 (docs/multigpu.md): an option, not the default
_EXCHANGES = ("all_to_all", "rounds")


# the symmetric heaps the peer, copy-engine and push transports can take their
# buffers from: torch's own (CUDA virtual memory mapped into every peer) or
# NVSHMEM's (nvshmem_malloc, bootstrapped by torch with NVSHMEM's unique id);
# a process uses one, fixed by its first symmetric buffer
_HEAPS = ("cuda", "nvshmem")
_HEAP_IN_USE = None
# NVSHMEM's heap is one offset space: its allocations and frees are
# collective and must come in the same order on every rank, which Python's
# garbage collection does not promise (a ShardedGraph dropped on one rank
# before another). Its buffers are kept here until the process ends, and
# not freed then either: at exit (_leave_nvshmem) each gets one more
# reference that is never dropped, so the interpreter's teardown frees
# none of them (collective frees racing NVSHMEM's own finalisation, rank by
# rank, hung a 4-GPU run after its last result) and the driver takes the
# memory back with the process.
_NVSHMEM_KEEP = []


def _leave_nvshmem():
    """atexit: every kept NVSHMEM buffer and handle referenced once more,
    for good (see _NVSHMEM_KEEP)."""
    for pair in _NVSHMEM_KEEP:
        for obj in pair:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _keep_nvshmem(buf, hdl):
    if not _NVSHMEM_KEEP:  # the first: _leave_nvshmem at exit
        import atexit
        atexit.register(_leave_nvshmem)  # after torch's: runs before them
    _NVSHMEM_KEEP.append((buf, hdl))


def _heap_name(heap):
    """The heap a ShardedGraph asks for: `heap`, else GOP_SYMMETRIC_HEAP,
    else "cuda"; an unknown name is refused naming where it came from."""
    import os
    where = "ShardedGraph: heap"
    if heap is None:
        heap, where = os.environ.get("GOP_SYMMETRIC_HEAP", "cuda"), "GOP_SYMMETRIC_HEAP"
    if heap not in _HEAPS:
        raise ValueError(f"{where} must be one of {', '.join(_HEAPS)}, got {heap!r}")
    return heap


def _use_heap(heap):
    """Makes torch's symmetric memory allocate from `heap` in this process
    (before its first symmetric buffer); refuses a second, different heap."""
    global _HEAP_IN_USE
    if _HEAP_IN_USE == heap:
        return
    if _HEAP_IN_USE is not None:
        raise GopError(f"symmetric memory: this process already takes its buffers from the "
                       f"{_HEAP_IN_USE} heap, not {heap} (one heap a process: give every "
                       "ShardedGraph the same heap)")
    import torch.distributed._symmetric_memory as symm
    if heap == "nvshmem":
        import torch
        c10d = torch._C._distributed_c10d
        if not (hasattr(symm, "set_backend") and
                getattr(c10d, "_is_nvshmem_available", lambda: False)()):
            raise GopError("symmetric memory: heap 'nvshmem' needs a PyTorch built with "
                           "NVSHMEM and its library (nvidia-nvshmem) on this machine")
        try:
            symm.set_backend("NVSHMEM")
        except Exception as e:  # a buffer of another heap exists already
            raise GopError(f"symmetric memory: cannot switch to NVSHMEM: {e}") from None
    _HEAP_IN_USE = heap


class ShardedGraph:
    """This rank's part of `graph` over the ranks of `group` (default: the
    whole world). Every rank must pass the same graph and method."""

    def __init__(self, graph, group=None, method="edges", device=None, exchange="all_to_all",
                 heap=None):
        torch, dist = _torch()
        if exchange not in _EXCHANGES:
            raise ValueError(f"ShardedGraph: exchange must be one of {', '.join(_EXCHANGES)}, "
                             f"got {exchange!r}")
        self.exchange = exchange
        self.heap = _heap_name(heap)
        global _HALO
        if _HALO is None:
            _HALO = _halo_function()
        if not dist.is_initialized():
            raise GopError("ShardedGraph: torch.distributed is not initialised "
                           "(dist.init_process_group, e.g. under torchrun)")
        self.group = group
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.device = torch.device(device) if device is not None else (
            torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available()
            else torch.device("cpu"))
        if self.device.type == "cuda":
            # gop launches on one device a process (GOP_CUDA_DEVICE, read when
            # it first touches the GPU): this rank's
            import os
            want = str(self.device.index or 0)
            had = os.environ.setdefault("GOP_CUDA_DEVICE", want)
            if had != want:
                raise GopError(f"ShardedGraph: rank {self.rank} runs on {self.device}, but "
                               f"GOP_CUDA_DEVICE={had}: set it to the rank's device "
                               "(LOCAL_RANK under torchrun) or leave it unset")
        self.whole = graph
        self.partition = p = Partition(graph, self.world, method)
        me = p.part(self.rank)
        self.num_own, self.num_halo = int(me["num_own"]), int(me["num_halo"])
        self.num_edges = int(me["num_edges"])
        dev = self.device
        self.rows = torch.from_numpy(me["rows"][:self.num_own].astype(np.int64)).to(dev)
        self.halo_rows = torch.from_numpy(me["rows"][self.num_own:].astype(np.int64)).to(dev)
        self.eids = torch.from_numpy(me["eids"]).to(dev)
        self.graph = p.part_graph(self.rank)
        self.local, lpos, self.remote, rpos = p.classes(self.rank)
        self.local_pos = torch.from_numpy(lpos).to(dev)
        self.remote_pos = torch.from_numpy(rpos).to(dev)
        sends = p.send_rows(self.rank)
        hf = me["halo_from"]
        self.plan = _Plan(torch.from_numpy(np.concatenate(sends)).to(dev),
                          [int(s.size) for s in sends],
                          [int(hf[q + 1] - hf[q]) for q in range(self.world)], group)
        # in-degree of the own rows (every in-edge is here): what mean divides by
        deg = np.bincount(self.graph.edge_index[1], minlength=self.num_own)[:self.num_own]
        self.in_degree = torch.from_numpy(deg.astype(np.float32)).to(dev)
        self._gather = None

    def __repr__(self):
        return (f"ShardedGraph(rank {self.rank}/{self.world}: {self.num_own} vertices, "
                f"{self.num_edges} in-edges, halo {self.num_halo})")

    # -- tensors --

    def shard(self, x):
        """This rank's rows of a whole vertex tensor [|V|, ...]."""
        return x.index_select(0, self.rows.to(x.device))

    def shard_edges(self, w):
        """This rank's rows of a whole edge tensor [|E|, ...] (its in-edges)."""
        return w.index_select(0, self.eids.to(w.device))

    def halo(self, x_own, overlap=False):
        """The halo rows of a vertex tensor given by its own rows (the
        all-to-all; differentiable). With overlap the call returns at once
        and plan.pending.wait() must precede any use of the result."""
        return _HALO.apply(x_own, self.plan, overlap)

    def unshard(self, y_own):
        """The whole vertex tensor from every rank's rows (an all-gather;
        for checks and outputs, not differentiable)."""
        torch, dist = _torch()
        n = torch.tensor([self.num_own], device=y_own.device)
        sizes = [torch.zeros_like(n) for _ in range(self.world)]
        dist.all_gather(sizes, n, group=self.group)
        m = int(max(s.item() for s in sizes))
        pad = y_own.new_zeros((m,) + tuple(y_own.shape[1:]))
        pad[:self.num_own] = y_own
        parts = [torch.empty_like(pad) for _ in range(self.world)]
        dist.all_gather(parts, pad.contiguous(), group=self.group)
        out = y_own.new_empty((self.whole.num_nodes,) + tuple(y_own.shape[1:]))
        for q in range(self.world):
            pq = self.partition.part(q)
            rows = torch.from_numpy(pq["rows"][:pq["num_own"]].astype(np.int64)).to(out.device)
            out[rows] = parts[q][:rows.numel()]
        return out

    # -- operators --

    def aggregate(self, op, *inputs, overlap=True, schedule=None, chunk=None, **extents):
        """`op` on this rank's part: vertex inputs as own rows ([num_own,
        ...]; src inputs get their halo rows by the exchange), edge inputs as
        the part's edges (shard_edges order). Returns the outputs: dst
        outputs as own rows, edge outputs in the part's edge order.
        Additive operators (*_sum) run in MGG's two classes, the local one
        while the halo travels (overlap=False waits first); *_mean runs as
        its sum divided by the in-degree; the others on the part's graph
        after the exchange. Differentiable where `op` is.

        Without a gradient, a wide vertex tensor goes through in column
        chunks of `chunk` features (default: the widest power of two whose
        staging buffers take at most half the GPU's free memory and whose
        rows x features stay below 2^31, so 32-bit kernels address them; the
        narrowest over the ranks, agreed on the first call of each width):
        features too wide for one GPU's memory run on their shards."""
        torch, _ = _torch()
        if len(inputs) != len(op.inputs):
            raise TypeError(f"{op.name}: {len(op.inputs)} inputs, got {len(inputs)}")
        for s, x in zip(op.inputs, inputs):
            want = {"src": self.num_own, "dst": self.num_own,
                    "edge": self.num_edges}.get(_dom(s))
            if want is not None and x.shape[0] != want:
                raise ValueError(f"{op.name}: input {s.name} on {_dom(s)} needs {want} rows "
                                 f"on rank {self.rank} (its own "
                                 f"{'edges' if _dom(s) == 'edge' else 'vertices'}), got "
                                 f"{x.shape[0]}")
        if any(_dom(s) == "src" for s in op.outputs):
            raise GopError(f"{op.name}: an output on the sources is summed over parts; "
                           "differentiate through aggregate() instead")
        grad = torch.is_grad_enabled() and any(getattr(x, "requires_grad", False)
                                               for x in inputs)
        summ = _sum_of_mean(op)
        if summ is not None and all(_dom(s) == "dst" for s in op.outputs):
            y = self.aggregate(summ, *inputs, overlap=overlap, schedule=schedule,
                               chunk=chunk, **extents)
            inv = self._inverse_degree(y)
            return y * inv if grad else y.mul_(inv)
        kw = dict(schedule=schedule, **extents)
        if self.world == 1:  # the whole graph, in its own numbering: no halo
            return op(self.graph, *inputs, **kw)
        srcs = [i for i, s in enumerate(op.inputs) if _dom(s) == "src"]
        if not grad and len(srcs) == 1 and inputs[srcs[0]].dim() == 2 and \
                all(_dom(s) in ("src", "edge") for s in op.inputs) and \
                all(_dom(s) == "dst" for s in op.outputs) and len(op.outputs) == 1:
            return self._aggregate_chunked(op, inputs, srcs[0], overlap, kw, chunk)
        if _additive(op) and srcs:
            halos = [self.halo(inputs[i], overlap=overlap) for i in srcs]
            loc = [self._class_input(s, x, self.local_pos, None) for s, x in zip(op.inputs,
                                                                                  inputs)]
            y = op(self.local, *loc, **kw)
            if self.plan.pending is not None:
                self.plan.pending.wait()
                self.plan.pending = None
            hmap = dict(zip(srcs, halos))
            n = self.remote.num_nodes
            rem = [self._class_input(s, x, self.remote_pos, hmap.get(i), n)
                   for i, (s, x) in enumerate(zip(op.inputs, inputs))]
            yr = op(self.remote, *rem, **kw)
            return y + yr[:self.num_own]
        # the part's whole graph: own rows then halo rows
        full = []
        for s, x in zip(op.inputs, inputs):
            if _dom(s) == "src":
                full.append(torch.cat([x, self.halo(x)]))
            elif _dom(s) == "dst":
                full.append(torch.cat([x, x.new_zeros((self.num_halo,) + tuple(x.shape[1:]))]))
            else:
                full.append(x)
        out = op(self.graph, *full, **kw)
        outs = out if isinstance(out, tuple) else (out,)
        res = tuple(o[:self.num_own] if _dom(s) == "dst" else o
                    for s, o in zip(op.outputs, outs))
        return res if isinstance(out, tuple) else res[0]

    def _staging(self, kind, rows, F, dtype):
        """A [rows, F] buffer, made once per (kind, F, dtype) and kept in
        self._staged, which the column chunks trim and count."""
        torch, _ = _torch()
        staged = self.__dict__.setdefault("_staged", {})
        if (kind, F, dtype) not in staged:
            staged[(kind, F, dtype)] = torch.empty((rows, F), dtype=dtype, device=self.device)
        return staged[(kind, F, dtype)]

    def _buffer(self, F, dtype):
        """[num_own + max(num_own, num_halo), F]: the own rows, then the halo
        rows, received in place, then rows the remote class's square graph
        counts but no edge reads."""
        return self._staging("rows", self.num_own + max(self.num_own, self.num_halo, 1),
                             F, dtype)

    def features(self, F, dtype=None):
        """A [num_own, F] tensor for this rank's rows of a vertex tensor,
        sitting where aggregate() gathers the halo: an aggregation of it
        copies no own rows (any other tensor is copied there first)."""
        torch, _ = _torch()
        return self._buffer(F, dtype or torch.float32)[:self.num_own]

    def chunk_columns(self, F, dtype=None, chunk=None):
        """The column chunk aggregate() takes for a [num_own, F] tensor."""
        torch, _ = _torch()
        if chunk is not None:
            if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
                raise ValueError(f"aggregate: chunk must be a positive number of features, "
                                 f"got {chunk!r}")
            return min(chunk, F)
        # the tallest buffer a kernel indexes: the own rows and the halo
        # (or the remote class's square graph)
        rows = self.num_own + max(self.num_own, self.num_halo, 1)
        esz = torch.empty((), dtype=dtype or torch.float32).element_size()

        # the exchange by rounds stages at most every halo row twice and
        # every own row once a peer
        rounds = 2 * self.num_halo + self.world * self.num_own if self._by_rounds() else 0

        def staging(c):  # features, received rows, sent rows, class results
            return esz * c * (4 * rows + int(self.plan.send_idx.numel()) + rounds)
        budget = None
        if self.device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(self.device)
            free += torch.cuda.memory_reserved(self.device) - \
                torch.cuda.memory_allocated(self.device)
            # what earlier calls staged is in use but comes back
            free += sum(b.numel() * b.element_size()
                        for b in self.__dict__.get("_staged", {}).values())
            budget = free // 2
        def fits(c):
            return rows * c < 2**31 and (budget is None or staging(c) <= budget)
        if fits(F):
            return F
        c = 1 << (F.bit_length() - 1)  # the widest power of two below F
        while c > 1 and not fits(c):
            c //= 2
        return c

    def _aggregate_chunked(self, op, inputs, si, overlap, kw, chunk):
        """_aggregate_buffered over column chunks of the vertex tensor (and
        of edge tensors as wide): each chunk's staging buffers are reused."""
        x = inputs[si]
        F = x.shape[1]
        if chunk is not None:  # as every argument, the same on every rank
            C = self.chunk_columns(F, x.dtype, chunk)
        else:
            # every rank must go through the same chunks (each is an
            # exchange): the narrowest any rank picks, agreed on the first
            # call of a width (one collective, then none)
            agreed = self.__dict__.setdefault("_chunks", {})
            if (F, x.dtype) not in agreed:
                torch, dist = _torch()
                c = torch.tensor([self.chunk_columns(F, x.dtype)], device=self.device)
                dist.all_reduce(c, op=dist.ReduceOp.MIN, group=self.group)
                agreed[(F, x.dtype)] = int(c.item())
            C = agreed[(F, x.dtype)]
        if C >= F:
            return self._aggregate_buffered(op, inputs, si, overlap, kw)
        # staged buffers of other widths are let go: the wide case is the
        # one that needs the memory
        staged = self.__dict__.get("_staged", {})
        for key in [k for k in staged if k[1] != C]:
            del staged[key]
        y = x.new_empty((self.num_own, F))
        for c0 in range(0, F, C):
            c1 = min(F, c0 + C)
            part = [x[:, c0:c1] if i == si else
                    w[:, c0:c1].contiguous() if _dom(s) == "edge" and w.dim() == 2 and
                    w.shape[1] == F else w
                    for i, (s, w) in enumerate(zip(op.inputs, inputs))]
            y[:, c0:c1] = self._aggregate_buffered(op, part, si, overlap, kw)
        return y

    def _aggregate_buffered(self, op, inputs, si, overlap, kw):
        """aggregate() when no gradient is asked for: the halo lands in the
        buffer right after the own rows, so the part's graph (or the remote
        class) reads it in place, with no concatenation or padding."""
        x = inputs[si]
        nown, nhalo = self.num_own, self.num_halo
        buf = self._buffer(x.shape[1], x.dtype)
        if x.data_ptr() != buf.data_ptr():
            buf[:nown].copy_(x)
        send = buf[:nown].index_select(0, self.plan.send_idx)
        if _additive(op) and overlap and self._carries(op) and self._by_rounds():
            return self._aggregate_rounds(op, inputs, si, buf[:nown], send, kw)
        if _additive(op) and overlap and self._carries(op):
            # the local class writes its rows just ahead of where the halo
            # lands; the remote class reads them back as the source of one
            # extra in-edge per row (v <- v, a factor of 1) and so adds
            # them in: no separate pass adds the two classes' results
            acc = self._acc_buffer(x.shape[1], x.dtype)
            _, work = _exchange(self.plan, send, self.plan.send_counts, self.plan.recv_counts,
                                out=acc[nown:nown + nhalo], async_op=True)
            loc = [buf[:nown] if i == si else x.index_select(0, self.local_pos)
                   for i, x in enumerate(inputs)]
            op(self.local, *loc, out=acc[:nown], **kw)  # while the halo travels
            work.wait()
            g, ones = self._carry_graph()
            rem = [acc if i == si else self._carried_edges(x, ones)
                   for i, x in enumerate(inputs)]
            return op(g, *rem, **kw)[:nown]
        _, work = _exchange(self.plan, send, self.plan.send_counts, self.plan.recv_counts,
                            out=buf[nown:nown + nhalo], async_op=True)
        if _additive(op) and overlap:
            loc = [buf[:nown] if i == si else x.index_select(0, self.local_pos)
                   for i, x in enumerate(inputs)]
            y = op(self.local, *loc, **kw)  # while the halo travels
            work.wait()
            n = self.remote.num_nodes
            rem = [buf[nown:nown + n] if i == si else x.index_select(0, self.remote_pos)
                   for i, x in enumerate(inputs)]
            return y.add_(op(self.remote, *rem, **kw)[:nown])
        work.wait()
        full = [buf[:nown + nhalo] if i == si else x for i, x in enumerate(inputs)]
        return op(self.graph, *full, **kw)[:nown]

    def _by_rounds(self):
        return self.exchange == "rounds" and self.world > 1

    def _round_plan(self):
        """The exchange by rounds, made once. In round r (1 .. P-1) this rank
        sends to (rank + r) % P and receives from q = (rank - r) % P; each
        round with rows to receive has a class: its graph's sources are
        [the halo rows from q | the previous class's result] (own vertex v
        takes the in-edge v <- n_q + v with a factor of 1, then its in-edges
        from q), its destinations the own rows, and it writes [its result |
        n_q rows no edge reads]. All classes share one staging buffer laid
        out H1 C0 | H2 C1 G1 | H3 C2 G2 ...: Hr (the halo from round r's
        peer) lands where no class writes, each class reads Hr and the
        previous result C(r-1) side by side, and its output (Cr and the
        unread rows Gr) sits right after the next halo. The last class
        writes a fresh tensor. Returns a dict: sends (per round: the
        receiver and the slice of the packed send rows), classes (per
        round with rows to receive: round, peer, graph, rows, edge positions
        in the part's order, where its halo lands, where it reads, where it
        writes or None), local (where the local class writes), rows (the
        buffer's height)."""
        if getattr(self, "_rounds", None) is None:
            torch, _ = _torch()
            nown, P = self.num_own, self.world
            ei = self.graph.edge_index
            hf = self.partition.part(self.rank)["halo_from"]
            so = np.concatenate([[0], np.cumsum(self.plan.send_counts)]).astype(np.int64)
            own = np.arange(nown, dtype=np.int64)
            sends, classes = [], []
            for r in range(1, P):
                d, q = (self.rank + r) % P, (self.rank - r) % P
                sends.append((r, d, int(so[d]), int(so[d + 1]), q, int(hf[q + 1] - hf[q])))
                lo, hi = nown + int(hf[q]), nown + int(hf[q + 1])
                n = hi - lo
                if n == 0:
                    continue
                pos = np.nonzero((ei[0] >= lo) & (ei[0] < hi))[0]
                g = Graph.from_arcs(np.concatenate([n + own, ei[0][pos] - lo]),
                                    np.concatenate([own, ei[1][pos]]), nown + n,
                                    f"part {self.rank} round {r} from {q}")
                classes.append([r, q, g, n, torch.from_numpy(pos).to(self.device)])
            # the layout: class i's halo at h, its read [h, h + n + nown),
            # the previous class's write [h + n, h + n + nown + n_prev)
            at, prev = 0, 0
            local = None
            for i, c in enumerate(classes):
                n = c[3]
                h = at
                if i == 0:
                    local = h + n
                else:
                    classes[i - 1].append(h + n)  # where the previous class writes
                c += [h, h + n]
                at = h + n + nown + prev
                prev = n
            if classes:
                classes[-1].append(None)
            self._rounds = {"sends": sends, "classes": classes, "local": local,
                            "rows": max(at, 1)}
        return self._rounds

    def _aggregate_rounds(self, op, inputs, si, x, send, kw):
        """_aggregate_buffered's carried sum with the halo by rounds: every
        round's transfer is queued at once (NCCL runs them in order on its
        stream), the local class runs while the first travels, and each
        peer's class runs as soon as its rows are in, while the next
        round's travel. x: the own rows of inputs[si], contiguous."""
        torch, dist = _torch()
        nown, F = self.num_own, x.shape[1]
        plan = self._round_plan()
        classes = plan["classes"]
        loc = [x if i == si else w.index_select(0, self.local_pos) for i, w in enumerate(inputs)]
        if not classes:  # no halo: the local class is the whole answer
            return op(self.local, *loc, **kw)
        buf = self._staging("rounds", plan["rows"], F, x.dtype)
        halo_at = {c[0]: c[5] for c in classes}
        works = {}
        for r, d, a, b, q, n in plan["sends"]:
            ops = []
            if b > a:
                ops.append(dist.P2POp(dist.isend, send[a:b], self._global(d), self.group))
            if n:
                h = halo_at[r]
                ops.append(dist.P2POp(dist.irecv, buf[h:h + n], self._global(q), self.group))
            works[r] = dist.batch_isend_irecv(ops) if ops else []
        la = plan["local"]
        op(self.local, *loc, out=buf[la:la + nown], **kw)  # while the first round travels
        y = None
        for r, q, g, n, pos, h, rd, wr in classes:
            for w in works.pop(r):
                w.wait()
            ins = [buf[h:h + n + nown] if i == si else
                   torch.cat([w.new_ones((nown,) + tuple(w.shape[1:])), w.index_select(0, pos)])
                   for i, w in enumerate(inputs)]
            if wr is None:
                y = op(g, *ins, **kw)[:nown]
            else:
                op(g, *ins, out=buf[wr:wr + nown + n], **kw)
        for ws in works.values():  # rounds that only send
            for w in ws:
                w.wait()
        return y

    def _global(self, r):
        """A rank of this graph's group as a global rank (what P2POp takes)."""
        _, dist = _torch()
        return r if self.group is None else dist.get_global_rank(self.group, r)

    def _carries(self, op):
        """Whether the remote class can add the local class's rows in as an
        extra in-edge: an operator whose message is the source row times an
        edge factor (or the row alone), so that a factor of 1 passes it."""
        from . import stdlib
        return op.library is stdlib and op.name in _CARRY_OPS

    def _acc_buffer(self, F, dtype):
        """[num_own + num_halo, F]: the local class's result rows, then the
        halo rows, received in place: the sources of the carrying remote
        class."""
        return self._staging("carried", self.num_own + self.num_halo, F, dtype)

    def _carried_edges(self, w, ones):
        """An edge tensor of the carrying remote class: a factor of 1 for
        each of its `ones` leading in-edges v <- v, then the remote edges'."""
        torch, _ = _torch()
        return torch.cat([w.new_ones((ones,) + tuple(w.shape[1:])),
                          w.index_select(0, self.remote_pos)])

    def _inverse_degree(self, y):
        """1 / in-degree (1 where none) of the own rows, shaped to scale
        y's rows: what a mean divides its sum by."""
        return (1.0 / self.in_degree.clamp(min=1.0)).view((-1,) + (1,) * (y.dim() - 1))

    def _carry_graph(self):
        """The remote class with the local result carried in: sources are
        rows of _acc_buffer (own row v is source v, halo row h is
        num_own + h), each own vertex first takes the in-edge v <- v, then
        its remote in-edges in the part's order. (graph, count of the
        carrying edges, which lead the edge order), made once."""
        if getattr(self, "_carry", None) is None:
            nown = self.num_own
            ei = self.graph.edge_index
            rpos = self.remote_pos.cpu().numpy()
            own = np.arange(nown, dtype=np.int64)
            self._carry = (Graph.from_arcs(np.concatenate([own, ei[0][rpos]]),
                                           np.concatenate([own, ei[1][rpos]]),
                                           max(nown + self.num_halo, 1),
                                           f"part {self.rank} remote, local carried"), nown)
        return self._carry

    def _class_input(self, spec, x, pos, halo, n=None):
        torch, _ = _torch()
        if _dom(spec) == "edge":
            return x.index_select(0, pos)
        if _dom(spec) in ("src", "dst"):
            rows = halo if halo is not None else x
            if _dom(spec) == "dst" and n is None:
                return x
            if n is not None and rows.shape[0] < n:  # the remote graph is square
                rows = torch.cat([rows, rows.new_zeros((n - rows.shape[0],) +
                                                       tuple(rows.shape[1:]))])
            return rows
        return x

    # -- the second transport: a peer's rows read over NVLink --

    def _peer_setup(self, F, dtype):
        """Symmetric buffers ([max own rows, F] on every rank, each mapped
        into every peer's address space by torch's symmetric memory) and
        one remote class per peer, its sources numbered as that peer's own
        rows. Made once per (F, dtype)."""
        torch, _ = _torch()
        key = (F, dtype)
        peer = getattr(self, "_peer", None)
        if peer is None:
            peer = self._peer = {"graphs": None, "bufs": {}}
        if peer["graphs"] is None:
            p, me = self.partition, self.partition.part(self.rank)
            nown = self.num_own
            m = max(p.part(q)["num_own"] for q in range(self.world))
            ei = self.graph.edge_index
            hf = me["halo_from"]
            graphs = []
            for q in range(self.world):
                if q == self.rank:
                    continue
                lo, hi = nown + hf[q], nown + hf[q + 1]
                pos = np.nonzero((ei[0] >= lo) & (ei[0] < hi))[0]
                qown = p.part(q)["rows"][:p.part(q)["num_own"]]
                src = np.searchsorted(qown, me["rows"][ei[0][pos]])
                g = Graph.from_arcs(src, ei[1][pos], max(m, 1), f"part {self.rank} from {q}")
                graphs.append((q, g, torch.from_numpy(pos).to(self.device)))
            peer["graphs"], peer["rows"] = graphs, int(m)
        if key not in peer["bufs"]:
            peer["bufs"][key] = self._symmetric(peer["rows"], F, dtype)
        return peer

    def aggregate_peer(self, op, x_own, *edge_inputs, schedule=None):
        """An additive operator (*_sum) with the remote classes reading each
        peer's rows in place over NVLink (no staging, no exchange): this
        rank's rows go to its symmetric buffer, every rank waits for every
        other, the local class and one class per peer run, and a second
        wait keeps a peer from overwriting rows still being read. Forward
        only; x_own [num_own, F]."""
        if not _additive(op):
            raise GopError(f"{op.name}: the peer transport takes *_sum operators")
        F = x_own.shape[1]
        peer = self._peer_setup(F, x_own.dtype)
        buf, hdl, views = peer["bufs"][(F, x_own.dtype)]
        buf[:self.num_own].copy_(x_own)
        hdl.barrier(channel=0)
        we = [w.index_select(0, self.local_pos) for w in edge_inputs]
        y = op(self.local, x_own, *we, schedule=schedule)
        for q, g, pos in peer["graphs"]:
            yq = op(g, views[q], *[w.index_select(0, pos) for w in edge_inputs],
                    schedule=schedule)
            y = y + yq[:self.num_own]
        hdl.barrier(channel=1)
        return y

    # -- the third transport: the halo pulled by copy engines --

    def _ce_setup(self, F, dtype):
        """For aggregate_ce: a symmetric send buffer on every rank ([the
        most rows any rank sends, F], each rank's sends grouped by receiver
        in rank order, as the all-to-all sends them), its peers' views, and
        where in each peer's buffer this rank's halo rows sit. Made once
        per (F, dtype)."""
        torch, dist = _torch()
        ce = self.__dict__.setdefault("_ce", {})
        if "offsets" not in ce:
            counts = torch.tensor(self.plan.send_counts, dtype=torch.int64, device=self.device)
            every = torch.empty(self.world * self.world, dtype=torch.int64, device=self.device)
            dist.all_gather_into_tensor(every, counts, group=self.group)
            every = every.view(self.world, self.world).cpu().numpy()  # [sender, receiver]
            starts = np.concatenate([np.zeros((self.world, 1), np.int64),
                                     np.cumsum(every, axis=1)], axis=1)
            # from sender q: its rows for this rank begin at starts[q, rank]
            ce["offsets"] = [int(starts[q, self.rank]) for q in range(self.world)]
            ce["rows"] = max(int(every.sum(axis=1).max()), 1)
        if (F, dtype) not in ce:
            ce[(F, dtype)] = self._symmetric(ce["rows"], F, dtype)
        return ce

    def _symmetric(self, rows, F, dtype):
        """A [rows, F] buffer in torch's symmetric memory on every rank of
        the group, its handle, and each peer's buffer as a tensor this
        rank's kernels can read and write (over NVLink): (buf, handle,
        {peer: view}). Every rank must call it, in the same order."""
        _, dist = _torch()
        import torch.distributed._symmetric_memory as symm
        _use_heap(self.heap)
        name = (self.group or dist.group.WORLD).group_name
        if hasattr(symm, "enable_symm_mem_for_group"):
            symm.enable_symm_mem_for_group(name)
        buf = symm.empty((rows, F), dtype=dtype, device=self.device)
        hdl = symm.rendezvous(buf, name)
        if self.heap == "nvshmem":
            _keep_nvshmem(buf, hdl)
        views = {q: hdl.get_buffer(q, (rows, F), dtype)
                 for q in range(self.world) if q != self.rank}
        return buf, hdl, views

    def _side_streams(self):
        """One high-priority stream per peer (made once): the transfers of
        the copy-engine and push transports, each peer's beside the
        others' and ahead of the local class for the SMs."""
        torch, _ = _torch()
        if getattr(self, "_sides", None) is None:
            self._sides = {q: torch.cuda.Stream(self.device, priority=-1)
                           for q in range(self.world) if q != self.rank}
        return self._sides

    def _carried_remote(self, op, acc, edge_inputs, schedule):
        """The carrying remote class over `acc` (the local class's rows,
        then the halo): the final own rows."""
        g, ones = self._carry_graph()
        rem = [self._carried_edges(w, ones) for w in edge_inputs]
        return op(g, acc, *rem, schedule=schedule)[:self.num_own]

    def _carrying_transport(self, what, op):
        """The sum a transport that carries the local result runs for `op`
        (op itself, or a mean's sum), and whether the result is a mean."""
        summ = _sum_of_mean(op)
        if summ is not None and summ.name in _CARRY_OPS:
            return summ, True
        if not self._carries(op):
            raise GopError(f"{op.name}: the {what} transport takes copy_u_sum and "
                           "u_mul_e_sum (and their means)")
        if self.device.type != "cuda":
            raise GopError(f"the {what} transport runs on GPUs (symmetric memory)")
        return op, False

    def aggregate_ce(self, op, x_own, *edge_inputs, schedule=None):
        """copy_u_sum or u_mul_e_sum (and their means) with the halo pulled
        by the copy engines instead of NCCL's copy kernels, so that the
        transfer takes no SMs from the local class running beside it: each
        rank packs the rows its peers need into its symmetric buffer, and
        after a barrier each rank copies its halo from every peer's buffer
        (one memcpy a peer, each on its own stream) while the local class
        runs; a second barrier keeps a buffer from being refilled while it
        is read. Forward only; x_own [num_own, F]."""
        torch, _ = _torch()
        summ, mean = self._carrying_transport("copy-engine", op)
        F, nown = x_own.shape[1], self.num_own
        ce = self._ce_setup(F, x_own.dtype)
        buf, hdl, views = ce[(F, x_own.dtype)]
        acc = self._acc_buffer(F, x_own.dtype)
        torch.index_select(x_own, 0, self.plan.send_idx, out=buf[:self.plan.send_idx.numel()])
        hdl.barrier(channel=0)
        main = torch.cuda.current_stream(self.device)
        hf = self.partition.part(self.rank)["halo_from"]
        sides = self._side_streams()
        for q, view in views.items():
            n = int(hf[q + 1] - hf[q])
            sides[q].wait_stream(main)
            if n:
                a = ce["offsets"][q]
                with torch.cuda.stream(sides[q]):
                    acc[nown + int(hf[q]):nown + int(hf[q + 1])].copy_(view[a:a + n])
        we = [w.index_select(0, self.local_pos) for w in edge_inputs]
        summ(self.local, x_own, *we, out=acc[:nown], schedule=schedule)
        for side in sides.values():
            main.wait_stream(side)
        y = self._carried_remote(summ, acc, edge_inputs, schedule)
        hdl.barrier(channel=1)
        return y.mul_(self._inverse_degree(y)) if mean else y

    # -- the fourth transport: the halo pushed into the peers' buffers --

    def _push_setup(self, F, dtype):
        """For aggregate_push: a symmetric buffer on every rank laid out as
        _acc_buffer ([num_own + num_halo] rows, the most of any rank), the
        peers' views, and for each peer q the slice of this rank's send
        rows q reads and where they land in q's buffer (q's own rows, then
        its halo grouped by sender). Made once per (F, dtype)."""
        push = self.__dict__.setdefault("_push", {})
        if "slices" not in push:
            p = self.partition
            so = np.concatenate([[0], np.cumsum(self.plan.send_counts)])
            push["slices"] = {}
            for q in range(self.world):
                if q == self.rank or not self.plan.send_counts[q]:
                    continue
                pq = p.part(q)
                at = int(pq["num_own"] + pq["halo_from"][self.rank])
                push["slices"][q] = (self.plan.send_idx[int(so[q]):int(so[q + 1])], at)
            push["rows"] = max(max(p.part(q)["num_own"] + p.part(q)["num_halo"]
                                   for q in range(self.world)), 1)
        if (F, dtype) not in push:
            push[(F, dtype)] = self._symmetric(push["rows"], F, dtype)
        return push

    def aggregate_push(self, op, x_own, *edge_inputs, schedule=None):
        """copy_u_sum or u_mul_e_sum (and their means) with each rank
        writing the rows a peer needs straight into that peer's buffer over
        NVLink (one gather a peer, on its own high-priority stream: the
        packing and the transfer are one pass, and every peer's at once),
        while the local class runs into the same buffer's own rows; a
        barrier after the pushes says every halo has landed, a second at
        the end keeps a buffer from being written while it is read.
        Forward only; x_own [num_own, F]."""
        torch, _ = _torch()
        summ, mean = self._carrying_transport("push", op)
        F, nown = x_own.shape[1], self.num_own
        push = self._push_setup(F, x_own.dtype)
        buf, hdl, views = push[(F, x_own.dtype)]
        main = torch.cuda.current_stream(self.device)
        sides = self._side_streams()
        for q, (idx, at) in push["slices"].items():
            sides[q].wait_stream(main)
            with torch.cuda.stream(sides[q]):
                torch.index_select(x_own, 0, idx, out=views[q][at:at + idx.numel()])
        first = next(iter(sides.values()))
        for q, side in sides.items():
            if side is not first:
                first.wait_stream(side)
        with torch.cuda.stream(first):  # every peer's rows are here once it passes
            hdl.barrier(channel=0)
        we = [w.index_select(0, self.local_pos) for w in edge_inputs]
        summ(self.local, x_own, *we, out=buf[:nown], schedule=schedule)
        main.wait_stream(first)
        y = self._carried_remote(summ, buf[:nown + self.num_halo], edge_inputs, schedule)
        hdl.barrier(channel=1)
        return y.mul_(self._inverse_degree(y)) if mean else y

    # -- the baseline users have today --

    def allgather_graph(self):
        """This rank's edges over a whole-feature layout, for the all-gather
        baseline: sources numbered as rows of the all-gathered tensor
        (rank q's rows at q * max_own, in its own order), destinations as own
        rows. (graph, max_own), made once."""
        if self._gather is None:
            p = self.partition
            m = max(p.part(q)["num_own"] for q in range(self.world))
            where = np.empty(self.whole.num_nodes, np.int64)
            for q in range(self.world):
                pq = p.part(q)
                where[pq["rows"][:pq["num_own"]]] = q * m + np.arange(pq["num_own"])
            ei = self.whole.edge_index[:, p.part(self.rank)["eids"]]
            dst = where[ei[1]] - self.rank * m
            g = Graph.from_arcs(where[ei[0]], dst, max(self.world * m, 1),
                                f"part {self.rank} over all-gathered rows")
            self._gather = (g, int(m))
        return self._gather

    def features_allgather(self, F, dtype=None):
        """A [num_own, F] tensor in the all-gather's send buffer (its
        aggregation copies no own rows)."""
        torch, _ = _torch()
        return self._gather_bufs(F, dtype or torch.float32)[0][:self.num_own]

    def _gather_bufs(self, F, dtype):
        torch, _ = _torch()
        _, m = self.allgather_graph()
        key = (F, dtype)
        bufs = self.__dict__.setdefault("_agbufs", {})
        if key not in bufs:
            bufs[key] = (torch.zeros((m, F), dtype=dtype, device=self.device),
                         torch.empty((self.world * m, F), dtype=dtype, device=self.device))
        return bufs[key]

    def aggregate_allgather(self, op, x_own, *rest, schedule=None, **extents):
        """The baseline: all-gather every rank's rows, then `op` on this
        rank's edges over the whole tensor (what DGL/PyG full-graph code on
        several GPUs does); *_mean as its sum over the in-degree, as
        aggregate() does. Forward only; op's first input on src, the rest
        on edges."""
        _, dist = _torch()
        from . import stdlib
        if op.name.endswith("_mean") and op.name[:-5] + "_sum" in stdlib:
            y = self.aggregate_allgather(stdlib[op.name[:-5] + "_sum"], x_own, *rest,
                                         schedule=schedule, **extents)
            return y.mul_(self._inverse_degree(y))
        g, m = self.allgather_graph()
        pad, whole = self._gather_bufs(x_own.shape[1], x_own.dtype)
        if x_own.data_ptr() != pad.data_ptr():
            pad[:self.num_own].copy_(x_own)
        dist.all_gather_into_tensor(whole, pad, group=self.group)
        y = op(g, whole, *rest, schedule=schedule, **extents)
        return y[:self.num_own]


# ---- layers and training on a sharded graph ----

def sync_grads(module, group=None):
    """Adds every parameter's gradient over the ranks (the parameters are
    replicated; each rank's loss is its share of the whole one)."""
    _, dist = _torch()
    for p in module.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, group=group)


def _layers():
    torch, _ = _torch()
    from . import nn as gnn, stdlib

    class ShardedGCNConv(torch.nn.Module):
        """gop.nn.GCNConv (PyG's GCNConv: self-loops, symmetric
        normalisation) on a ShardedGraph: the edge weights and self-loop
        weights of the whole graph's gcn_norm, this rank's share."""

        def __init__(self, in_channels, out_channels, bias=True, schedule=None):
            super().__init__()
            ref = gnn.GCNConv(in_channels, out_channels, bias=bias)
            self.lin, self.bias, self.schedule = ref.lin, ref.bias, schedule

        def forward(self, x, sg):
            w, s = _gcn_weights(sg)
            h = self.lin(x)
            y = sg.aggregate(stdlib.u_mul_e_sum, h, w, schedule=self.schedule)
            y = y + h * s.view(-1, 1)
            return y + self.bias if self.bias is not None else y

    class ShardedSAGEConv(torch.nn.Module):
        """gop.nn.SAGEConv with the mean aggregator (PyG's SAGEConv:
        lin_l(mean of neighbours) + lin_r(root)) on a ShardedGraph."""

        def __init__(self, in_channels, out_channels, bias=True, schedule=None):
            super().__init__()
            ref = gnn.SAGEConv(in_channels, out_channels, bias=bias)
            self.lin_l, self.lin_r, self.schedule = ref.lin_l, ref.lin_r, schedule

        def forward(self, x, sg):
            agg = sg.aggregate(stdlib.copy_u_mean, x, schedule=self.schedule)
            return self.lin_l(agg) + self.lin_r(x)

    return ShardedGCNConv, ShardedSAGEConv


def _gcn_weights(sg):
    torch, _ = _torch()
    if getattr(sg, "_gcn", None) is None:
        w, s = sg.whole.gcn_norm()
        eids, rows = sg.eids.cpu().numpy(), sg.rows.cpu().numpy()
        sg._gcn = (torch.from_numpy(w[eids]).to(sg.device),
                   torch.from_numpy(s[rows]).to(sg.device))
    return sg._gcn


def __getattr__(name):
    if name in ("ShardedGCNConv", "ShardedSAGEConv"):
        gcn, sage = _layers()
        globals().update(ShardedGCNConv=gcn, ShardedSAGEConv=sage)
        return globals()[name]
    raise AttributeError(f"module 'gop.distributed' has no attribute {name!r}")
