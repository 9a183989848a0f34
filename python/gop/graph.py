"""Graphs: opened from files or generators, or made from arcs, PyG's
edge_index or a SciPy matrix; held by libgop once.

A CUDA edge_index of DEVICE_BUILD_MIN_EDGES edges or more is built on the
GPU (build_arrays: torch's stable sorts, counts and prefix sums, in the
current stream), and libgop adopts the device arrays (gop_graph_from_device)
with no copy of the edges through the host; only a dozen numbers (the
degree statistics, and a range check) come back. A smaller one is copied to
the host and built there, which is faster at that size. A graph made from
arrays is freed, with the runs made on it, when its Python object goes: a
training loop that builds a graph per mini-batch holds one at a time
(docs/graph-format.md).
"""
import ctypes
import itertools
import os
import weakref

from . import _lib
from ._context import GopError, _b, _ctx, _diag, _lock
from ._lib import lib


_kept = [0]  # graphs _release could not free (tests read it)
# every Graph by its key (Graph._torch_key, "g1", "g2", ...: gop.torch_ops
# passes graphs to custom operators as these strings), held weakly
_by_key = weakref.WeakValueDictionary()
_next_key = itertools.count(1)


def graph_by_key(key):
    """The live gop.Graph whose _torch_key is `key`, else None."""
    return _by_key.get(key)

# Graph.from_edge_index builds a CUDA edge_index of at least this many edges
# on the GPU, and a smaller one on the host (one copy of the edges to the
# host, then graph/graph.c). The device build costs a near-fixed 0.9-1.9 ms
# (a few dozen small kernels and one synchronisation) until its bandwidth
# term takes over in the millions of edges; the host path costs a fixed
# ~0.1-0.3 ms plus about 30 ns an edge and as much again a vertex. On an
# H200, timing both on random edge_index tensors (median of 8): with as many
# vertices as edges (a sampled mini-batch's shape) device 1.40 / host 0.66 ms
# at 10K edges, 1.37 / 1.29 at 20K, 1.33 / 2.36 at 35K, 1.44 / 3.01 at 50K;
# with 7 edges a vertex (ogbn-arxiv's) 0.90 / 0.56 at 20K, 0.95 / 0.97 at
# 35K, 0.92 / 1.34 at 50K. Adding the first copy_u_sum run (which uploads
# a host-built graph) moves neither crossing: 20K to 35K edges, near which
# the two differ by a few tenths of a ms. Earlier runs agree: a 9K-edge
# mini-batch 1.94 ms on the device against 0.75 ms copied and built on the
# host, ogbn-arxiv's 1.17M edges 1.67 against 29.3 + 5.5 ms. Both paths give
# the same graph, bit for bit (its neighbour-group tables too, in
# destination order); a host-built one also takes the host-side calls.
DEVICE_BUILD_MIN_EDGES = 25_000


def _is_cuda(t):
    """Whether t is a torch tensor on a CUDA device (the tests stand in)."""
    return getattr(getattr(t, "device", None), "type", None) == "cuda"


def builds_on_device(edge_index, device_build=None):
    """Whether Graph.from_edge_index(edge_index, device_build=...) builds on
    the GPU: device_build when True or False, else (None) a CUDA tensor of
    DEVICE_BUILD_MIN_EDGES edges or more. Any other device_build is refused."""
    if device_build is None:
        if not _is_cuda(edge_index):
            return False
        shape = tuple(edge_index.shape)
        return len(shape) == 2 and shape[1] >= DEVICE_BUILD_MIN_EDGES
    if isinstance(device_build, bool):
        return device_build
    raise TypeError(f"device_build must be None (by size: on the GPU from "
                    f"{DEVICE_BUILD_MIN_EDGES} edges of a CUDA edge_index), True or False, "
                    f"got {device_build!r}")


def _release(handle, runs, after=()):
    """Frees a graph's runs, then the graph, then the graphs of `after` (its
    reversed graph, which libgop keeps while the graph names it)
    (weakref.finalize's callback)."""
    try:
        with _lock:
            for r in runs:
                lib.gop_run_free(r)
            for h in (handle, *after):
                if lib.gop_graph_free(_ctx, h) != 0:
                    # a run made outside Operator (none is) keeps it with the
                    # context; its refusal is no error of the caller's next call
                    lib.gop_clear_diagnostics(_ctx)
                    _kept[0] += 1
    except Exception:  # interpreter shutdown: the context goes with the process
        pass


def by_key(keys, other, bounds, idx):
    """One side of a graph's index, with torch on the keys' device and no
    synchronisation: (ptr [V+1] and order [E] in dtype idx, other[order]
    (int32), the int64 degrees [V]) for int32 keys in 0..V-1 and bounds =
    arange(V + 1) (int32). The sort is stable, so a vertex's entries keep
    their edge-id order, as the host's counting sort leaves them; the
    offsets are where each vertex's run of the sorted keys starts."""
    import torch
    keys_sorted, order = torch.sort(keys, stable=True)
    ptr = torch.searchsorted(keys_sorted, bounds)
    return ptr.to(idx), order.to(idx), other[order], ptr[1:] - ptr[:-1]


def build_arrays(edge_index, num_nodes=None):
    """The arrays and statistics of gop's graph for PyG's edge_index [2, E]
    (a torch tensor of any integer dtype), computed with torch on the
    tensor's device: ({name: tensor}, {statistic: number}). The arrays are
    the host build's (graph/graph.c), bit for bit: COO src and dst (int32),
    the CSR by destination (in_ptr, in_eid, in_src) and CSC by source
    (out_ptr, out_eid, out_dst), each vertex's edges in edge-id order (a
    stable sort), offsets and edge ids in the width libgop runs the graph
    with (gop_graph_device_index_bits), and the int32 degrees. One
    synchronisation fetches the statistics (and num_nodes, when not given,
    costs one more)."""
    import torch
    ei = edge_index
    if ei.dim() != 2 or ei.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {list(ei.shape)}")
    if ei.dtype.is_floating_point or ei.dtype == torch.bool:
        raise ValueError(f"edge_index must hold integers, not {ei.dtype}")
    ne = ei.size(1)
    if num_nodes is None:
        num_nodes = int(ei.max()) + 1 if ne else 0
    nv = int(num_nodes)
    if nv < 0 or nv >= 2 ** 31:
        raise ValueError(f"graph: {nv} vertices (vertex ids are int32)")
    dev = ei.device
    idx = torch.int64 if lib.gop_graph_device_index_bits(nv, ne) == 64 else torch.int32
    i64 = ei.to(torch.int64)
    # checked with the statistics (one synchronisation): ids in range
    lo = i64.min() if ne else torch.zeros((), dtype=torch.int64, device=dev)
    hi = i64.max() if ne else torch.full((), -1, dtype=torch.int64, device=dev)
    src, dst = i64[0].clamp(0, max(nv - 1, 0)), i64[1].clamp(0, max(nv - 1, 0))
    src32, dst32 = src.to(torch.int32), dst.to(torch.int32)

    bounds = torch.arange(nv + 1, dtype=torch.int32, device=dev)
    in_ptr, in_eid, in_src, in_deg = by_key(dst32, src32, bounds, idx)
    out_ptr, out_eid, out_dst, out_deg = by_key(src32, dst32, bounds, idx)
    summary = torch.stack([
        lo, hi,
        in_deg.max() if nv else torch.zeros((), dtype=torch.int64, device=dev),
        out_deg.max() if nv else torch.zeros((), dtype=torch.int64, device=dev),
        ((in_deg == 0) & (out_deg == 0)).sum(),
        (src == dst).sum(),
        (src - dst).abs().sum(),
        (in_eid == torch.arange(ne, dtype=idx, device=dev)).all().to(torch.int64),
        (in_deg * in_deg).sum(),
        # the reversed graph's (reversed_arrays): its in-degrees are these
        (out_eid == torch.arange(ne, dtype=idx, device=dev)).all().to(torch.int64),
        (out_deg * out_deg).sum(),
    ] + group_counts(in_deg) + group_counts(out_deg)).tolist()
    # the variance of the in-degree from exact integer sums (the host sums
    # (deg - mean)^2 in doubles: equal to a few units in the last place)
    var = (summary[8] - ne * ne / nv) / nv if nv else 0.0
    out_var = (summary[10] - ne * ne / nv) / nv if nv else 0.0
    k = len(GROUP_SIZES)
    if ne and (summary[0] < 0 or summary[1] >= nv):
        bad = summary[0] if summary[0] < 0 else summary[1]
        raise GopError(f"graph: edge_index holds vertex {bad}, outside 0..{nv - 1}")
    arrays = {"src": src32, "dst": dst32, "in_ptr": in_ptr, "in_eid": in_eid,
              "in_src": in_src, "out_ptr": out_ptr, "out_eid": out_eid,
              "out_dst": out_dst, "in_deg": in_deg.to(torch.int32),
              "out_deg": out_deg.to(torch.int32)}
    stats = {"num_vertices": nv, "num_edges": ne, "index_bits": 64 if idx == torch.int64 else 32,
             "in_degree_max": summary[2], "out_degree_max": summary[3],
             "isolated": summary[4], "self_loops": summary[5],
             "aes": summary[6] / ne if ne else 0.0,
             "in_degree_std": max(var, 0.0) ** 0.5,
             "csr_edges": bool(summary[7]),
             "group_counts": {G: (summary[11 + 2 * i], summary[12 + 2 * i])
                              for i, G in enumerate(GROUP_SIZES)},
             "reversed": {"in_degree_std": max(out_var, 0.0) ** 0.5,
                          "csr_edges": bool(summary[9]),
                          "group_counts": {G: (summary[11 + 2 * k + 2 * i],
                                               summary[12 + 2 * k + 2 * i])
                                           for i, G in enumerate(GROUP_SIZES)}}}
    return arrays, stats


def reversed_arrays(arrays, stats):
    """build_arrays' arrays and statistics of the reversed graph (every arc
    turned round, edge ids kept: what an operator scheduled with transpose()
    runs on, docs/scheduling.md), with no copy: its CSR by destination is the
    graph's CSC by source, its COO the graph's with src and dst exchanged.
    None when `stats` lacks what build_arrays adds for it."""
    r = stats.get("reversed")
    if r is None:
        return None
    swap = {"src": "dst", "dst": "src", "in_ptr": "out_ptr", "in_eid": "out_eid",
            "in_src": "out_dst", "out_ptr": "in_ptr", "out_eid": "in_eid",
            "out_dst": "in_src", "in_deg": "out_deg", "out_deg": "in_deg"}
    rarrays = {k: arrays[v] for k, v in swap.items()}
    rstats = dict(stats, in_degree_max=stats["out_degree_max"],
                  out_degree_max=stats["in_degree_max"], **r)
    del rstats["reversed"]
    return rarrays, rstats


# The group sizes of the tuner's space (tune/space.c: 1 to 32, and 64)
# whose table sizes build_arrays fetches with its statistics, so that
# build_groups makes such a table without waiting for the GPU; another G
# costs it one synchronisation.
GROUP_SIZES = (1, 2, 4, 8, 16, 32, 64)


def group_counts(in_deg, sizes=GROUP_SIZES, chunk=1 << 22):
    """For each G of `sizes`: the rows of the neighbour-group table of a
    graph of in-degrees `in_deg` (sum of ceil(deg / G)) and the destinations
    no group owns (in-degree 0 or above G), as 0-d tensors (a list). All
    sizes at once over [len(sizes), chunk] blocks of the degrees: a few
    kernels a block, not a few per size (a mini-batch's device build
    launches these)."""
    import torch
    dev = in_deg.device
    G = torch.tensor(sizes, dtype=torch.int64).to(dev, non_blocking=True).view(-1, 1)
    rows = torch.zeros(len(sizes), dtype=torch.int64, device=dev)
    unowned = torch.zeros(len(sizes), dtype=torch.int64, device=dev)
    for a in range(0, max(in_deg.numel(), 1), chunk):
        d = in_deg[a:a + chunk].to(torch.int64).view(1, -1)
        rows += ((d + (G - 1)) // G).sum(1)
        unowned += ((d == 0) | (d > G)).sum(1)
    return [x for pair in zip(rows, unowned) for x in pair]


def build_groups(in_ptr, G, distance=0, classes=0, threshold=0, counts=None,
                 in_degree_max=None):
    """GNNAdvisor's neighbour-group table of the graph whose CSR offsets by
    destination are `in_ptr` (a torch tensor, int32 or int64: the width of
    the positions returned), built with torch on its device in the current
    stream: graph/groups.c's table for (G, distance, classes, threshold), bit
    for bit, in destination order (the community order is the host's only).
    `threshold` is the resolved one (a two-class table's: the mean in-degree
    rounded up where the schedule gives none; libgop passes it so).
    `counts` = (rows, unowned) when known (build_arrays' group_counts), and
    `in_degree_max` (for 3 to 8 classes) spare the one synchronisation that
    fetches them. Returns {name: tensor} (dst, first, end, vptr, vrow,
    unowned, class_rows, class_min; the last two of `classes` entries, on
    the device) and the row and unowned counts."""
    import torch
    dev, idx = in_ptr.device, in_ptr.dtype
    nv = in_ptr.numel() - 1
    i64 = torch.int64
    p = in_ptr.to(i64)
    deg = p[1:] - p[:-1]
    nrows = (deg + (G - 1)) // G
    unowned_mask = (deg == 0) | (deg > G)
    if counts is None or (classes > 2 and in_degree_max is None):
        got = torch.stack([nrows.sum(), unowned_mask.sum(),
                           deg.max() if nv else torch.zeros((), dtype=i64, device=dev)]).tolist()
        counts, in_degree_max = (got[0], got[1]), got[2]
    n, nunowned = int(counts[0]), int(counts[1])
    vptr = torch.zeros(nv + 1, dtype=i64, device=dev)
    torch.cumsum(nrows, 0, out=vptr[1:])
    # the rows in destination order: vertex, and which of its rows
    row_v = torch.repeat_interleave(torch.arange(nv, dtype=i64, device=dev), nrows,
                                    output_size=n)
    first = p[row_v] + (torch.arange(n, dtype=i64, device=dev) - vptr[row_v]) * G
    end = torch.minimum(first + G, p[row_v + 1])
    # the destinations no group owns, in increasing order, placed without
    # asking how many (one slot past the end takes the others)
    slot = torch.where(unowned_mask, torch.cumsum(unowned_mask, 0) - 1,
                       torch.full_like(deg, nunowned))
    unowned = torch.empty(nunowned + 1, dtype=torch.int32, device=dev)
    unowned.scatter_(0, slot, torch.arange(nv, dtype=torch.int32, device=dev))
    out = {"vptr": vptr.to(idx), "unowned": unowned[:nunowned]}
    if not distance:
        out.update(dst=row_v.to(torch.int32), first=first.to(idx), end=end.to(idx),
                   vrow=torch.arange(n, dtype=idx, device=dev),
                   class_rows=torch.zeros(0, dtype=i64, device=dev),
                   class_min=torch.zeros(0, dtype=torch.int32, device=dev))
        return out, n, nunowned
    K = classes
    int32_max = 2 ** 31 - 1
    if K == 2:  # heavy: in-degree above the threshold
        cls_min = torch.tensor([threshold + 1, 0], dtype=i64, device=dev)
    else:
        # rows by in-degree; a degree with `above` rows of heavier
        # destinations goes to class K * above // n, and a class's least
        # degree is its bound (an empty class repeats the one before)
        maxdeg = int(in_degree_max)
        by_deg = torch.zeros(maxdeg + 1, dtype=i64, device=dev).scatter_add_(0, deg, nrows)
        above = n - torch.cumsum(by_deg, 0)
        q = (K * above) // max(n, 1)
        degs = torch.arange(maxdeg + 1, dtype=i64, device=dev)
        bound = torch.where((by_deg > 0) & (degs >= 1), degs, torch.full_like(degs, int32_max))
        cls_min = torch.full((K,), int32_max, dtype=i64, device=dev)
        cls_min.scatter_reduce_(0, q.clamp(0, K - 1), bound, reduce="amin")
        cls_min = torch.cummin(cls_min, 0).values
    # graph_groups_class: the first class whose bound the degree reaches
    # (the bounds fall with the class, so: how many it does not reach)
    cls = (deg.unsqueeze(1) < cls_min[:K - 1].unsqueeze(0)).sum(1)
    cls_rows = torch.zeros(K, dtype=i64, device=dev).scatter_add_(0, cls, nrows)
    # each row's place in its class (destination order within a class) ...
    start = torch.zeros(nv, dtype=i64, device=dev)
    for c in range(K):
        mine = torch.where(cls == c, nrows, torch.zeros_like(nrows))
        start = torch.where(cls == c, torch.cumsum(mine, 0) - mine, start)
    row_c = cls[row_v]
    j = start[row_v] + (torch.arange(n, dtype=i64, device=dev) - vptr[row_v])
    # ... and in the table: `distance` rows of each class in turn from the
    # lead (the light class of two, else the heaviest), a class that ran
    # out skipped; chunk b of class c follows every class's chunks before
    # round b, and round b's chunks of the classes before c
    b, o = j // distance, j % distance
    lead = 1 if K == 2 else 0
    turn = (torch.arange(K, device=dev) - lead) % K
    pos = o
    for c in range(K):
        left = cls_rows[c] - b * distance
        pos = pos + torch.minimum(cls_rows[c], b * distance)
        pos = pos + torch.where(turn[c] < turn[row_c], left.clamp(0, distance),
                                torch.zeros_like(left))
    out["dst"] = torch.empty(n, dtype=torch.int32, device=dev).scatter_(
        0, pos, row_v.to(torch.int32))
    out["first"] = torch.empty(n, dtype=idx, device=dev).scatter_(0, pos, first.to(idx))
    out["end"] = torch.empty(n, dtype=idx, device=dev).scatter_(0, pos, end.to(idx))
    out["vrow"] = pos.to(idx)
    out["class_rows"] = cls_rows
    out["class_min"] = cls_min.to(torch.int32)
    return out, n, nunowned


def _group_builder(in_ptr, stats, tables):
    """libgop's builder of the group tables of a graph built on the device
    (GopGroupBuilder): build_groups on its in_ptr, each table kept in
    `tables` (by G, distance, classes, threshold) as long as the graph. It
    runs in the current stream, inside the libgop call that launches the
    first kernel needing the table; the sizes of the tuner's group sizes
    come from build_arrays, so those tables need no synchronisation."""
    import torch
    counts = stats.get("group_counts", {})
    width = 64 if in_ptr.dtype == torch.int64 else 32

    def build(_user, tp, why, why_size):
        try:
            t = tp.contents
            if t.index_bits != width:
                raise ValueError(f"positions of {t.index_bits} bits asked of a graph built "
                                 f"with {width}-bit offsets")
            key = (t.group_size, t.distance, t.classes, t.threshold)
            if key not in tables:
                tables[key] = build_groups(in_ptr, *key, counts=counts.get(t.group_size),
                                           in_degree_max=stats.get("in_degree_max"))
            arrays, n, nunowned = tables[key]
            t.rows, t.unowned_count, t.order = n, nunowned, 0
            for k in ("dst", "first", "end", "vptr", "vrow", "unowned"):
                setattr(t, k, arrays[k].data_ptr() if arrays[k].numel() else 0)
            # class_rows and class_min stay on the device (group_table
            # returns them): reading them would wait for the GPU
            return 0
        except Exception as e:  # noqa: BLE001 - reported through libgop
            msg = f"{type(e).__name__}: {e}".encode()[:max(why_size - 1, 0)]
            ctypes.memmove(why, msg + b"\0", len(msg) + 1)
            return -1
    return build


def _adopt(arrays, stats, name):
    """gop_graph_from_device on build_arrays' arrays and statistics: the
    graph's handle (NULL after reporting). Called with _lock held."""
    if lib.gop_struct_size(b"GopDeviceGraph") != ctypes.sizeof(_lib.DeviceGraph):
        raise GopError("graph: this libgop's GopDeviceGraph differs from the package's "
                       "(a package and library of different versions)")
    d = _lib.DeviceGraph()
    for f, _ in d._fields_:
        if f in arrays:
            setattr(d, f, arrays[f].data_ptr())
        elif f in stats:
            setattr(d, f, stats[f])
    return lib.gop_graph_from_device(_ctx, ctypes.byref(d), _b(name))


class Graph:
    """A graph: vertices 0..num_nodes-1 and arcs src -> dst, edge ids in the
    order given. Operators aggregate over the in-edges of each destination
    (PyG's source-to-target flow). Held by gop once; its device copy is made
    at the first GPU call and kept with it."""

    def __init__(self, handle, name=None, owned=False):
        if not handle:
            raise GopError(f"graph: {_diag()}")
        self._h = handle
        # the runs made on it (Operator._run), freed with it when owned
        self._runs = []
        # graphs freed after it: its reversed graph built on the device
        self._after = []
        if owned:
            weakref.finalize(self, _release, handle, self._runs, self._after).atexit = False
        info = _lib.GraphInfo()
        lib.gop_graph_info(handle, ctypes.byref(info))
        self.num_nodes, self.num_edges = info.num_vertices, info.num_edges
        self.info = {f: getattr(info, f) for f, _ in info._fields_}
        self.name = name
        self.device_built = False  # from_device_arrays: adopted GPU arrays
        self._memo = {}  # derived arrays (GCN weights, self-loop graph ...)
        self._torch_key = f"g{next(_next_key)}"
        _by_key[self._torch_key] = self

    @classmethod
    def open(cls, spec):
        """A Matrix Market or SNAP file (plain or .gz), or a generator:
        'rmat:SCALE:EDGEFACTOR[:SEED]', 'grid:WxH', 'ring:N:D',
        'powerlaw:N:D:G[:SEED]', 'community:N:D:K:MIX[:SEED]' (docs/graphs.md)."""
        with _lock:
            return cls(lib.gop_graph_open(_ctx, _b(os.fspath(spec))), str(spec))

    @classmethod
    def from_arcs(cls, src, dst, num_nodes=None, name=None):
        import numpy as np
        src = np.ascontiguousarray(np.asarray(src), dtype=np.int64)
        dst = np.ascontiguousarray(np.asarray(dst), dtype=np.int64)
        if src.ndim != 1 or src.shape != dst.shape:
            raise ValueError(f"graph: src and dst must be 1-D and of one length, got "
                             f"{src.shape} and {dst.shape}")
        if num_nodes is None:
            num_nodes = int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
        with _lock:
            h = lib.gop_graph_from_arcs(_ctx, num_nodes, src.size, src.ctypes.data,
                                        dst.ctypes.data, _b(name) if name else None)
            return cls(h, name, owned=True)

    @classmethod
    def from_edge_index(cls, edge_index, num_nodes=None, device_build=None):
        """PyG's edge_index [2, E] (row 0 sources, row 1 targets; torch or
        NumPy, any integer dtype); edge ids follow its columns.

        Where it is built (builds_on_device): device_build=None, the
        default, builds a CUDA tensor of DEVICE_BUILD_MIN_EDGES (25,000)
        edges or more on the GPU, and anything else on the host, a smaller
        CUDA tensor by one copy of its edges to the host, which is faster
        at that size (a mini-batch's); True builds on the GPU (a torch
        tensor; libgop refuses one not in gop's device's memory), False on
        the host. The graph is the same either way, bit for bit, and
        `device_built` says which it was. A device-built graph lives on the
        GPU only: CUDA tensors run on it, neighbour-group schedules too
        (their tables built on the GPU when first used: build_groups), but
        CPU tensors (the interpreter) and the host-side calls (reordering,
        partitions, tuning, writing it) refuse it. A host-built one has
        them all, so a small batch built on the host gains them; its arrays
        are uploaded at its first GPU run."""
        ei = edge_index
        if builds_on_device(ei, device_build):
            if not hasattr(ei, "detach"):
                raise TypeError(f"device_build=True needs a torch tensor on the GPU, "
                                f"got {type(ei).__name__}")
            return cls.from_device_arrays(*build_arrays(ei.detach(), num_nodes),
                                          edge_index=ei.detach())
        if hasattr(ei, "detach"):
            ei = ei.detach().cpu().numpy()
        import numpy as np
        ei = np.asarray(ei)
        if ei.ndim != 2 or ei.shape[0] != 2:
            raise ValueError(f"edge_index must have shape [2, E], got {list(ei.shape)}")
        return cls.from_arcs(ei[0], ei[1], num_nodes, "edge_index")

    @classmethod
    def from_device_arrays(cls, arrays, stats, name="edge_index", edge_index=None):
        """A graph on build_arrays' CUDA arrays, which libgop adopts as they
        are (kept alive by the graph); edge_index, when given, is what the
        edge_index property returns (copied to the host when asked). With
        build_arrays' statistics the graph also gets its reversed graph on
        the same arrays (reversed_arrays), what the sums' gradients run on
        under transpose()."""
        tables = {}
        builder = _lib.GroupBuilder(_group_builder(arrays["in_ptr"], stats, tables))
        rev = reversed_arrays(arrays, stats)
        with _lock:
            g = cls(_adopt(arrays, stats, name), name, owned=True)
            # its neighbour-group tables are built on the device when a
            # schedule first asks for one (build_groups), and kept here
            if lib.gop_graph_set_group_builder(_ctx, g._h, builder, None) != 0:
                raise GopError(f"graph: {_diag()}")
            if rev is not None:
                # the reversed graph on the same arrays (no copy), for the
                # operators that walk out-edges (a sum's gradient) under
                # transpose(); freed after the graph (_release's `after`)
                rtables = {}
                rbuilder = _lib.GroupBuilder(_group_builder(rev[0]["in_ptr"], rev[1], rtables))
                rh = _adopt(rev[0], rev[1], f"{name}, reversed")
                if not rh:
                    raise GopError(f"graph: {_diag()}")
                g._after.append(rh)
                if (lib.gop_graph_set_group_builder(_ctx, rh, rbuilder, None) != 0 or
                        lib.gop_graph_set_reversed(_ctx, g._h, rh) != 0):
                    raise GopError(f"graph: {_diag()}")
                g._reversed = (rtables, rbuilder)
        g._device = (arrays, edge_index)
        g._tables, g._builder = tables, builder
        g.device_built = True
        return g

    def group_table(self, G, distance=0, classes=0, threshold=0):
        """The neighbour-group table a schedule's group(e, G) (and
        interleave(distance, classes, threshold)) runs over, as its kernels
        get it: a dict of NumPy arrays (dst, first, end, vptr, vrow,
        unowned, class_rows, class_min; positions int64) for a graph built
        on the host, of the device's torch tensors (positions in the graph's
        index width) for one built on the device; and rows, unowned_count,
        threshold (resolved), order (0 destination, 1 community)."""
        t = _lib.GroupTable()
        with _lock:
            if lib.gop_graph_group_table(_ctx, self._h, G, distance, classes, threshold,
                                         ctypes.byref(t)) != 0:
                raise GopError(f"group_table: {_diag()}")
        out = {"rows": t.rows, "unowned_count": t.unowned_count, "threshold": t.threshold,
               "order": t.order}
        if t.on_device:
            arrays, _, _ = self._tables[(G, distance, classes, t.threshold)]
            out.update(arrays)
            # what libgop holds is what was built (the kernels get these)
            for k in ("dst", "first", "end", "vptr", "vrow", "unowned"):
                if arrays[k].numel() and getattr(t, k) != arrays[k].data_ptr():
                    raise GopError(f"group_table: libgop holds another {k} than the builder's")
            return out
        import numpy as np

        def host(addr, n, dtype):
            if not n:
                return np.zeros(0, dtype=dtype)
            ptr = ctypes.cast(addr, ctypes.POINTER(np.ctypeslib.as_ctypes_type(dtype)))
            return np.ctypeslib.as_array(ptr, (n,)).copy()
        nv = self.num_nodes
        out.update(dst=host(t.dst, t.rows, np.int32), first=host(t.first, t.rows, np.int64),
                   end=host(t.end, t.rows, np.int64), vptr=host(t.vptr, nv + 1, np.int64),
                   vrow=host(t.vrow, t.rows, np.int64),
                   unowned=host(t.unowned, t.unowned_count, np.int32),
                   class_rows=np.array(t.class_rows[:t.classes], dtype=np.int64),
                   class_min=np.array(t.class_min[:t.classes], dtype=np.int32))
        return out

    @classmethod
    def from_scipy(cls, matrix):
        """A SciPy sparse matrix: an arc row -> col for each stored entry
        (PyG's from_scipy_sparse_matrix convention), in COO order."""
        coo = matrix.tocoo()
        if coo.shape[0] != coo.shape[1]:
            raise ValueError(f"the matrix must be square, got {coo.shape}")
        return cls.from_arcs(coo.row, coo.col, coo.shape[0], "scipy")

    @property
    def edge_index(self):
        """[2, E] int64 NumPy array (a copy)."""
        import numpy as np
        dev = self.__dict__.get("_device")
        if dev is not None:  # built on the device: its own arrays, brought over
            if dev[1] is not None:
                return dev[1].cpu().long().numpy()
            return np.stack([dev[0]["src"].cpu().numpy(),
                             dev[0]["dst"].cpu().numpy()]).astype(np.int64)
        s, d = ctypes.c_void_p(), ctypes.c_void_p()
        n = lib.gop_graph_arcs(self._h, ctypes.byref(s), ctypes.byref(d))
        out = np.empty((2, n), dtype=np.int64)
        if n:
            out[0] = np.ctypeslib.as_array(ctypes.cast(s, ctypes.POINTER(ctypes.c_int32)), (n,))
            out[1] = np.ctypeslib.as_array(ctypes.cast(d, ctypes.POINTER(ctypes.c_int32)), (n,))
        return out

    def gcn_norm(self):
        """PyG's gcn_norm with add_remaining_self_loops, for gop's
        gcn_propagate: (W, S) as float32 NumPy arrays, W[e] =
        1/sqrt(deg(src) deg(dst)) (0 on the graph's own self-loops, which the
        one added per vertex replaces), S[v] = 1/deg(v) (that self-loop's
        weight), deg counting in-edges plus the self-loop. Computed once."""
        if "gcn_norm" not in self._memo:
            import numpy as np
            ei = self.edge_index
            src, dst = ei[0], ei[1]
            loop = src == dst
            deg = np.ones(self.num_nodes, dtype=np.float64)
            np.add.at(deg, dst[~loop], 1.0)
            w = np.where(loop, 0.0, 1.0 / np.sqrt(deg[src] * deg[dst])).astype(np.float32)
            # setdefault: threads that computed it at once all get the first
            self._memo.setdefault("gcn_norm", (w, (1.0 / deg).astype(np.float32)))
        return self._memo["gcn_norm"]

    def gcn_graph(self):
        """GCNConv's propagation as one weighted sum: (G, W), G
        with_self_loops()'s graph (this graph's edges that are not
        self-loops and one self-loop per vertex, as PyG's
        add_remaining_self_loops, with edge ids in CSR order: kernels read W
        in order, with no edge-id load), and W [G.num_edges] float32 (NumPy)
        gcn_norm's weights in G's edge order: 1/sqrt(deg(src) deg(dst)) on
        the edges, 1/deg(v) on v's self-loop. The self-loop term is then a
        term of the sum, not a pass of its own. Made once."""
        if "gcn_graph" not in self._memo:
            import numpy as np
            w, s = self.gcn_norm()
            _, _, keep, order = self._self_loop_arcs()
            wt = np.concatenate([w[keep], s])
            # setdefault: threads that made it at once all get the first
            self._memo.setdefault("gcn_graph", (self.with_self_loops(),
                                                np.ascontiguousarray(wt[order])))
        return self._memo["gcn_graph"]

    def with_self_loops(self):
        """This graph without its self-loops and with one added per vertex
        (PyG's remove_self_loops + add_self_loops, as GATConv does), its
        arcs sorted by destination so that its edge ids are CSR positions:
        GAT's attention keeps its per-edge scores to itself, so their order
        is gop's to choose, and in CSR order a destination's scores are
        read in order (no edge-id load, no gather by id). GCN's gcn_graph
        runs on the same graph. Made once."""
        if "self_loops" not in self._memo:
            src, dst, _, order = self._self_loop_arcs()
            # setdefault: threads that made it at once all get the first (the
            # others' copies are freed with their last reference)
            self._memo.setdefault("self_loops", Graph.from_arcs(
                src[order], dst[order], self.num_nodes,
                f"{self.name or 'graph'} with self-loops"))
        return self._memo["self_loops"]

    def _self_loop_arcs(self):
        """(src, dst, keep, order): the arcs of with_self_loops() before
        sorting (this graph's edges where `keep`, its edge mask, is true,
        then one self-loop per vertex) and the stable order by destination
        that numbers them in CSR order."""
        import numpy as np
        ei = self.edge_index
        keep = ei[0] != ei[1]
        v = np.arange(self.num_nodes, dtype=np.int64)
        src = np.concatenate([ei[0][keep], v])
        dst = np.concatenate([ei[1][keep], v])
        return src, dst, keep, np.argsort(dst, kind="stable")

    def __repr__(self):
        return f"Graph({self.name or ''} nodes={self.num_nodes}, edges={self.num_edges})"


# A BatchGraph's pad edges: one pad vertex for every PAD_EDGES_PER_ROW edges
# of capacity, so that the edges a small batch leaves over spread over
# many rows instead of making one row of thousands (a tail in every kernel).
PAD_EDGES_PER_ROW = 64


def batch_pad_rows(max_edges):
    """The pad vertices a BatchGraph of max_edges edges has."""
    return max(1, -(-max_edges // PAD_EDGES_PER_ROW))


def padded_edges(edge_index, max_nodes, max_edges):
    """The [2, max_edges] int32 edge list a BatchGraph holds for a batch:
    the batch's edges (ids as they are), then pad edges, edge k a self-loop
    on pad vertex max_nodes + k % batch_pad_rows(max_edges). Pad edges
    reach pad vertices only, so a batch vertex's in- and out-edges, in
    edge-id order, are the batch's own."""
    import torch
    e = edge_index.size(1)
    pad = (max_nodes + torch.arange(max_edges, device=edge_index.device)
           % batch_pad_rows(max_edges)).to(torch.int32)
    out = torch.stack([pad, pad])
    out[:, :e] = edge_index
    return out


def gcn_norm_into(src, dst, w, s):
    """Graph.gcn_norm with torch on the arcs' device, into w [E] and s [V]
    (float32, in place; no synchronisation): the degrees count in-edges
    that are not self-loops plus one, in float64 as the host's, so that the
    result is the host's bit for bit."""
    import torch
    loop = src == dst
    deg = torch.ones(s.numel(), dtype=torch.float64, device=s.device)
    deg.index_add_(0, dst.long(), (~loop).to(torch.float64))
    w.copy_(torch.where(loop, 0.0, 1.0 / torch.sqrt(deg[src.long()] * deg[dst.long()])))
    s.copy_(1.0 / deg)


def pad_rows(what, t, count, total, out=None, fill=0, device=None):
    """t, a tensor of `count` rows, padded to `total` rows with `fill`: into
    `out` (in place; of shape [total, *t.shape[1:]]) or a new tensor on
    `device` (default t's). ValueError, named `what`, for a t of another
    row count or an out of another shape."""
    import torch
    if not torch.is_tensor(t) or t.dim() < 1 or t.size(0) != count:
        raise ValueError(f"{what}: a tensor of {count} rows (the batch's) expected, got "
                         f"{list(t.shape) if torch.is_tensor(t) else type(t).__name__}")
    if out is None:
        out = torch.empty((total,) + tuple(t.shape[1:]), dtype=t.dtype,
                          device=device if device is not None else t.device)
    elif not torch.is_tensor(out) or tuple(out.shape) != (total,) + tuple(t.shape[1:]):
        raise ValueError(f"{what}: out must have shape {[total] + list(t.shape[1:])}, got "
                         f"{list(out.shape) if torch.is_tensor(out) else type(out).__name__}")
    with torch.no_grad():
        out[:count].copy_(t)
        out[count:].fill_(fill)
    return out


def check_batch(edge_index, num_nodes, max_nodes, max_edges, check=True):
    """BatchGraph.load's checks of a batch: (num_nodes, edges) as ints, or
    the error (TypeError, ValueError for what is not a batch at all,
    GopError for one that does not fit or holds an id outside
    0..num_nodes-1; that last only when check, with one synchronisation
    on a CUDA tensor)."""
    import torch
    ei = edge_index
    if not torch.is_tensor(ei):
        raise TypeError(f"BatchGraph.load: edge_index must be a torch tensor, got "
                        f"{type(ei).__name__}")
    if ei.dim() != 2 or ei.size(0) != 2:
        raise ValueError(f"BatchGraph.load: edge_index must have shape [2, E], got "
                         f"{list(ei.shape)}")
    if ei.dtype.is_floating_point or ei.dtype == torch.bool or ei.is_complex():
        raise ValueError(f"BatchGraph.load: edge_index must hold integers, not {ei.dtype}")
    if torch.is_tensor(num_nodes) and num_nodes.numel() == 1 and \
            not num_nodes.dtype.is_floating_point and num_nodes.dtype != torch.bool:
        num_nodes = int(num_nodes)
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int):
        raise TypeError(f"BatchGraph.load: num_nodes must be an int, got {num_nodes!r}")
    n, e = num_nodes, ei.size(1)
    if n < 0 or n > max_nodes:
        raise GopError(f"BatchGraph.load: a batch of {n} vertices; this graph holds "
                       f"0..{max_nodes} (make a larger BatchGraph)")
    if e > max_edges:
        raise GopError(f"BatchGraph.load: a batch of {e} edges; this graph holds at "
                       f"most {max_edges} (make a larger BatchGraph)")
    if e and n == 0:
        raise GopError(f"BatchGraph.load: {e} edges on 0 vertices")
    if check and e:
        lo, hi = torch.stack([ei.min(), ei.max()]).tolist()
        if lo < 0 or hi >= n:
            raise GopError(f"BatchGraph.load: edge_index holds vertex "
                           f"{lo if lo < 0 else hi}, outside 0..{n - 1}")
    return n, e


def self_loop_edges(edges, pad, num_nodes, out=None):
    """The edge list of a BatchGraph's with_self_loops(), from its padded
    edges [2, E] (int32) and pad edges `pad` [2, E]: its own self-loops
    turned into the pad edge of their position (PyG's remove_self_loops:
    pad edges reach pad vertices only), then one self-loop on every vertex
    0..num_nodes-1 (add_self_loops): [2, E + num_nodes], into `out` when
    given (in place, no synchronisation)."""
    import torch
    e = edges.size(1)
    if out is None:
        out = torch.empty((2, e + num_nodes), dtype=torch.int32, device=edges.device)
    loop = edges[0] == edges[1]
    torch.where(loop, pad, edges, out=out[:, :e])
    out[:, e:] = torch.arange(num_nodes, dtype=torch.int32, device=edges.device)
    return out


class _InPlaceGraph(Graph):
    """A graph on the GPU over an edge buffer [2, E] (int32: rows src, dst)
    whose index (CSR by destination, CSC by source, degrees) is rebuilt in
    place by _index_arrays, so that libgop, which adopted the arrays once,
    and the runs made on the graph read each new content at the same
    addresses."""

    def _adopt_buffer(self, edges, nv, name):
        import torch
        self._edges = edges
        arrays, stats = build_arrays(edges, nv)
        arrays["src"], arrays["dst"] = edges[0], edges[1]
        stats["csr_edges"] = False  # a batch's edge ids need not be in CSR order
        self._arrays = arrays
        self._bounds = torch.arange(nv + 1, dtype=torch.int32, device=edges.device)
        with _lock:
            Graph.__init__(self, _adopt(arrays, stats, name), name, owned=True)
        self._device = (arrays, None)
        self.device_built = True

    def _index_arrays(self):
        a, src, dst = self._arrays, self._edges[0], self._edges[1]
        for side, keys, other, nbr in (("in", dst, src, "in_src"), ("out", src, dst, "out_dst")):
            ptr, order, ids, deg = by_key(keys, other, self._bounds, a["in_ptr"].dtype)
            a[f"{side}_ptr"].copy_(ptr)
            a[f"{side}_eid"].copy_(order)
            a[nbr].copy_(ids)
            a[f"{side}_deg"].copy_(deg)


class _SelfLoops(_InPlaceGraph):
    """A BatchGraph's with_self_loops(): the same vertices, its edges less
    their self-loops (turned into pad edges) plus one self-loop a vertex
    (self_loop_edges), rebuilt with the BatchGraph's index at every load.
    It keeps no reference to the BatchGraph, which holds it (_refill is
    given it): no reference cycle keeps either's GPU arrays alive."""

    def __init__(self, parent):
        nv = parent.num_nodes
        edges = self_loop_edges(parent._edges, parent._pad, nv)
        self._adopt_buffer(edges, nv, f"{parent.name or 'batch'} with self-loops")

    def _refill(self, parent):
        self_loop_edges(parent._edges, parent._pad, self.num_nodes, out=self._edges)
        self._index_arrays()

    def with_self_loops(self):
        return self


class BatchGraph(_InPlaceGraph):
    """A graph of fixed capacity on the GPU whose edges load() replaces, in
    place, with each mini-batch's: the same device arrays and the same
    runs serve every batch, so a training step over it can be captured
    into a CUDA graph once and replayed for every later batch
    (gop.train.CapturedBatches does both; docs/graph-format.md, "Captured mini-batches").

        g = gop.BatchGraph(max_nodes=12_000, max_edges=12_000)
        g.load(batch.edge_index, batch.num_nodes)     # in the current stream
        x = g.node_rows(batch.x)                       # [g.num_nodes, F]

    It has num_nodes = max_nodes + pad_rows vertices and num_edges =
    max_edges edges whatever the batch: vertices 0..n-1 are the batch's
    (the rest up to max_nodes have no edges), edges 0..e-1 are the batch's
    and the others are pad edges, self-loops on the pad vertices
    (padded_edges), so the batch's vertices aggregate exactly what they
    would on the batch's own graph. Node tensors have num_nodes rows
    (node_rows pads them), edge tensors num_edges (edge_rows).

    load() builds the arrays with torch in the current stream (a stable
    sort per side, as build_arrays) without waiting for the GPU, except the
    range check of the ids (check=True: one synchronisation on a CUDA
    edge_index; check=False clamps them instead). On its first call the
    build is captured into a CUDA graph (capture=True), so that later
    loads launch it as one. GCN's normalisation (gcn_weights) and the
    self-loop graph GATConv runs on (with_self_loops) are rebuilt with it
    once they have been asked for (a model that uses neither pays for
    neither).
    Refused: the host's gcn_norm (made once from one batch) and schedules
    that need neighbour-group tables (a table's size depends on the
    degrees).
    The schedule choice reads the statistics of the graph at creation
    (all pad edges), not of a batch."""

    def __init__(self, max_nodes, max_edges, device=None, capture=True, name="batch"):
        import torch
        for what, v in (("max_nodes", max_nodes), ("max_edges", max_edges)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"BatchGraph: {what} must be an int >= 1, got {v!r}")
        dev = torch.device(device) if device is not None else torch.device("cuda")
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise GopError("BatchGraph: needs a GPU, and torch sees none (CUDA is not "
                           "available); on the CPU, build each batch's graph with "
                           "Graph.from_edge_index")
        if dev.type != "cuda":
            raise ValueError(f"BatchGraph: its arrays live on the GPU, not on {dev}; on the "
                             f"CPU, build each batch's graph with Graph.from_edge_index")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        pad = batch_pad_rows(max_edges)
        nv = max_nodes + pad
        if nv >= 2 ** 31:
            raise ValueError(f"BatchGraph: {max_nodes} + {pad} pad vertices: vertex ids "
                             f"are int32")
        self.max_nodes, self.max_edges, self.pad_rows = max_nodes, max_edges, pad
        empty = torch.zeros((2, 0), dtype=torch.int32, device=dev)
        self._pad = padded_edges(empty, max_nodes, max_edges)
        # rows 0 and 1 of the edge buffer are the graph's src and dst arrays
        self._adopt_buffer(self._pad.clone(), nv, name)
        # GCN's normalisation of the loaded batch (gcn_weights) and the
        # self-loop graph (with_self_loops): made on first use, then rebuilt
        # with the index at every load
        self._gcn = None
        self._loops = None
        self._cuda_graph, self._capture = None, bool(capture)
        self.batch_nodes = self.batch_edges = 0

    def load(self, edge_index, num_nodes, check=True):
        """Makes the graph the batch's: edge_index [2, e] (PyG's; torch, any
        integer dtype, any device), num_nodes n; e <= max_edges and n <=
        max_nodes, else GopError (nothing changes). check=True refuses a
        vertex id outside 0..n-1 (one synchronisation on a CUDA tensor);
        check=False clamps it into the range instead."""
        import torch
        ei = edge_index
        n, e = check_batch(ei, num_nodes, self.max_nodes, self.max_edges, check)
        with torch.no_grad():
            # clamped before the narrowing to int32, which would wrap an id
            # past 2^31 into the range instead
            self._edges[:, :e].copy_(ei if check or not e else ei.clamp(0, n - 1))
            self._edges[:, e:].copy_(self._pad[:, e:])
            self._build_index()
        self.batch_nodes, self.batch_edges = n, e
        return self

    def _build_index(self):
        import torch
        if self._cuda_graph is None and self._capture:
            # the first build warms the sort up on a side stream (as torch's
            # capture requires), then is captured; every load replays it
            cur = torch.cuda.current_stream(self._edges.device)
            side = torch.cuda.Stream(self._edges.device)
            side.wait_stream(cur)
            with torch.cuda.stream(side):
                self._index_arrays()
            cur.wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self._index_arrays()
            self._cuda_graph = g
        if self._cuda_graph is not None:
            self._cuda_graph.replay()
        else:
            self._index_arrays()

    def _index_arrays(self):
        super()._index_arrays()
        if self._gcn is not None:
            gcn_norm_into(self._edges[0], self._edges[1], *self._gcn)
        if self._loops is not None:
            self._loops._refill(self)

    def node_rows(self, t, out=None, fill=0):
        """t (a node tensor of the loaded batch: batch_nodes rows) padded to
        num_nodes rows with `fill`: into out (a static buffer; copied in
        place) or a new tensor on the graph's device."""
        return pad_rows("BatchGraph.node_rows", t, self.batch_nodes, self.num_nodes, out, fill,
                        self._edges.device)

    def edge_rows(self, t, out=None, fill=0):
        """t (an edge tensor of the loaded batch, batch_edges rows) padded
        to num_edges rows with `fill`, as node_rows."""
        return pad_rows("BatchGraph.edge_rows", t, self.batch_edges, self.num_edges, out, fill,
                        self._edges.device)

    @property
    def edge_index(self):
        """The loaded batch's edges, [2, batch_edges] int64 NumPy (a copy)."""
        return self._edges[:, :self.batch_edges].cpu().long().numpy()

    def gcn_weights(self):
        """GCN's normalisation of the loaded batch, as Graph.gcn_norm's (W,
        S) but as float32 tensors on the graph's device, rewritten in place
        by each load (so a captured step reads the batch's): W [num_edges]
        (0 on self-loops, pad edges included), S [num_nodes]. Made from
        the loaded batch on the first call; from then on every load
        rebuilds them with the index (its captured build taken again)."""
        if self._gcn is None:
            import torch
            dev = self._edges.device
            self._gcn = (torch.zeros(self.num_edges, dtype=torch.float32, device=dev),
                         torch.ones(self.num_nodes, dtype=torch.float32, device=dev))
            with torch.no_grad():
                gcn_norm_into(self._edges[0], self._edges[1], *self._gcn)
            self._cuda_graph = None  # the next load captures the build with it
        return self._gcn

    def gcn_norm(self):
        raise GopError("BatchGraph: gcn_norm would be made from one batch's edges and kept, "
                       "but a BatchGraph's edges change with each load; gcn_weights() gives "
                       "the loaded batch's, on the GPU")

    def with_self_loops(self):
        """The loaded batch's graph without its self-loops and with one
        added per vertex (PyG's remove_self_loops + add_self_loops, as
        GATConv does), a graph of the same vertices rebuilt in place with
        this one at every load: num_edges + num_nodes edges, the batch's
        self-loops turned into pad edges."""
        if self._loops is None:
            self._loops = _SelfLoops(self)
            self._cuda_graph = None  # the next load captures the build of both
        return self._loops

    def __repr__(self):
        return (f"BatchGraph(max_nodes={self.max_nodes}, max_edges={self.max_edges}, "
                f"batch of {self.batch_nodes} nodes and {self.batch_edges} edges)")
